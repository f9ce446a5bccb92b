"""A tier's cases against one build of the operator, for `farm mutate`: each case through the
agent's own path (farm.agent.execute.run_case on the build's backend: native, the library named
by $LSG_NATIVE_LIB; acl, the build's emulated ACL runtime and op-api named by $LSG_ACL_LIB_DIR,
with its C library beside them) and judged as `farm run` judges it (farm/run/session.py judged:
the suite's tiling check too), in a child process forked for the build.

A fork, not a new interpreter: the child has numpy, the golden and the cases already (a smoke
tier runs in well under a second; a fresh interpreter would take longer to start than that).
The libraries are loaded only in the child, so each mutant's are its own (ACL's runtime is
initialised once per process: a child a mutant suits it). A case that kills the
child (a kernel fault the emulation did not stop, a crash) or runs past the case timeout (a
loop that never ends) is a broken case: the child is gone or killed, the case counts as
failing, and a new child goes on from the next case.
"""

from __future__ import annotations

import faulthandler
import importlib
import multiprocessing
import os
import pkgutil
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.agent.outcome import EMULATION_POLICY
from suites.case import Case

HANG = "hang"
CRASH = "crash"
# Broken cases (a crash, a hang) after which a mutant's run stops: each costs a new child (or
# the timeout), and a mutant that breaks this many cases is killed beyond doubt.
MAX_BREAKS = 10
MESSAGE_CHARS = 200


@dataclass(frozen=True)
class Built:
    """One build of the operator as the cases run it: its C library (build_dir/<lib>.so) and
    the backend; on acl, the emulated ACL runtime and op-api of the same build (acl/lib beside)."""

    library: str
    backend: str = "native"

    @property
    def acl_lib_dir(self) -> Path | None:
        return Path(self.library).parent / "acl" / "lib" if self.backend == "acl" else None

    def libraries(self) -> list[Path]:
        """What the cases load: the C library, and on acl the ACL libraries (farm/pool/build
        ACL_LIBS: the runtime and the op-api with the aclnn layer, host code and kernel)."""
        from farm.pool.build import ACL_LIBS

        acl = self.acl_lib_dir
        return [Path(self.library)] + ([acl / name for name in ACL_LIBS] if acl else [])


@dataclass(frozen=True)
class CaseResult:
    """What a mutant's run keeps of one case."""

    case_id: str
    outcome: str  # passed | failed | broken (and the record's other outcomes)
    category: str | None
    message: str
    closeness: float | None  # farm/run/margins.py closeness: how near its limits it came
    seconds: float

    @property
    def failed(self) -> bool:
        return self.outcome != "passed"

    @property
    def policy(self) -> bool:
        """Failed only by a rule of the emulated device that CANN does not enforce."""
        return self.failed and self.category == EMULATION_POLICY

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "outcome": self.outcome,
            "category": self.category,
            "message": self.message,
            "closeness": self.closeness,
        }


class _Identity:
    """The host a case reports (run_case asks its soc and host)."""

    def __init__(self, soc: str):
        self.soc, self.host, self.devices = soc, "mutate", 1


def _one(case: Case, backend: str) -> CaseResult:
    from farm.agent.execute import run_case
    from farm.run.margins import closeness
    from farm.run.requests import case_request
    from farm.run.session import judged
    from golden.soc import representative_soc

    started = time.perf_counter()
    try:
        identity = _Identity(representative_soc(case.family).name)
        record = judged(case, run_case(case_request(case), backend, 0, identity))  # type: ignore[arg-type]
    except Exception as exc:  # the library broke the agent's path: the case is broken
        return CaseResult(case.id, "broken", "error", repr(exc)[:MESSAGE_CHARS], None, 0.0)
    return CaseResult(
        case.id,
        str(record.get("outcome")),
        record.get("category"),
        str(record.get("message") or "")[:MESSAGE_CHARS],
        closeness(record),
        time.perf_counter() - started,
    )


def _child(conn, built: Built, cases: Sequence[Case], start: int, env: dict[str, str]) -> None:
    # Before anything loads a library: the acl backend finds the build's runtime by these.
    os.environ.update(env)
    os.environ["LSG_NATIVE_LIB"] = built.library
    if built.acl_lib_dir is not None:
        os.environ["LSG_ACL_LIB_DIR"] = str(built.acl_lib_dir)
    # No core file of a crash: writing one takes longer than the cases.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.disable()  # a crash is a case's outcome here, not a traceback to print
    # What the library or the emulated device prints would interleave with the progress lines.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        for i in range(start, len(cases)):
            conn.send((i, None))  # the case starts: its timeout counts from here
            conn.send((i, _one(cases[i], built.backend)))
    finally:
        conn.close()


# The emulated device without its output policies (every output element written exactly once,
# by one core: op/ascendc_cpu/src/device.cpp), as CANN's device runs: what a kill those policies
# made would show in the results.
OUTPUT_POLICY_OFF = {"LSG_EMU_OUTPUT_POLICY": "off"}

# The packages whose code judges a case: preload() imports every module of them.
_JUDGING = ("farm.agent", "farm.run", "farm.util", "golden", "suites")


def preload() -> None:
    """Import, in the process that forks the jobs and each mutant's child, every module a case
    may run, so that the children run the code of the command's start whatever the checkout
    becomes during a long run: a merge in the middle of one made the children import a newer
    farm that the scratch builds of the start did not fit, and every case broke ("killed").
    Only Python modules: the libraries load in each child, from its own build."""
    for name in _JUDGING:
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, f"{name}."):
            if not module.name.rsplit(".", 1)[-1].startswith(("test_", "conftest")):
                importlib.import_module(module.name)


def run_cases(
    built: Built,
    cases: Sequence[Case],
    *,
    timeout: float,
    stop_after: int | None = None,
    env: dict[str, str] | None = None,
) -> tuple[list[CaseResult], bool]:
    """Every case against `built`, in order: the results, and whether every case ran (False
    when `stop_after` failing cases, or MAX_BREAKS broken ones, stopped it first). A case the
    child does not answer within `timeout` seconds is broken (HANG), one the child died on
    broken too (CRASH). `stop_after` counts the cases that fail through their results, not by an
    emulation policy alone: a kill that rests on a policy runs every case, so that whether a
    case catches it through the results is known. `env`: set in the child before anything
    loads (OUTPUT_POLICY_OFF: the emulated device without its output policies)."""
    context = multiprocessing.get_context("fork")
    results: list[CaseResult] = []
    failing = breaks = 0
    start = 0
    while start < len(cases):
        receive, send = context.Pipe(duplex=False)
        child = context.Process(
            target=_child, args=(send, built, cases, start, env or {}), daemon=True
        )
        child.start()
        send.close()
        try:
            while start < len(cases):
                try:
                    receive.recv()  # the case started (the child's start-up is not timed)
                    if not receive.poll(timeout):
                        results.append(_broken(cases[start], HANG, f"no answer in {timeout:g} s"))
                        break
                    index, result = receive.recv()
                except EOFError:
                    child.join(5)
                    results.append(_broken(cases[start], CRASH, f"exit {child.exitcode}"))
                    break
                results.append(result)
                start = index + 1
                if result.failed and not result.policy:
                    failing += 1
                    if stop_after is not None and failing >= stop_after:
                        return results, start >= len(cases)
            else:
                continue
            start += 1  # past the broken case
            failing += 1
            breaks += 1
            if breaks >= MAX_BREAKS or (stop_after is not None and failing >= stop_after):
                return results, start >= len(cases)
        finally:
            receive.close()
            if child.is_alive():
                child.kill()
            child.join()
    return results, True


def _broken(case: Case, category: str, why: str) -> CaseResult:
    return CaseResult(case.id, "broken", category, f"the case {why}", None, 0.0)
