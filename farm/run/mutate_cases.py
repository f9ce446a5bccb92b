"""A tier's cases against one built library, for `farm mutate`: each case through the agent's
own path (farm.agent.execute.run_case on the native backend, the library named by
$LSG_NATIVE_LIB) and judged as `farm run` judges it (farm/run/session.py judged: the suite's
tiling check too), in a child process forked for the library.

A fork, not a new interpreter: the child has numpy, the golden and the cases already (a smoke
tier runs in well under a second; a fresh interpreter would take longer to start than that).
The library is loaded only in the child, so each mutant's is its own. A case that kills the
child (a kernel fault the emulation did not stop, a crash) or runs past the case timeout (a
loop that never ends) is a broken case: the child is gone or killed, the case counts as
failing, and a new child goes on from the next case.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from suites.case import Case

HANG = "hang"
CRASH = "crash"
# Broken cases (a crash, a hang) after which a mutant's run stops: each costs a new child (or
# the timeout), and a mutant that breaks this many cases is killed beyond doubt.
MAX_BREAKS = 10
MESSAGE_CHARS = 200


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
        self.soc, self.host = soc, "mutate"


def _one(case: Case) -> CaseResult:
    from farm.agent.execute import run_case
    from farm.run.margins import closeness
    from farm.run.requests import case_request
    from farm.run.session import judged
    from golden.soc import representative_soc

    started = time.perf_counter()
    try:
        identity = _Identity(representative_soc(case.family).name)
        record = judged(case, run_case(case_request(case), "native", 0, identity))  # type: ignore[arg-type]
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


def _child(conn, library: str, cases: Sequence[Case], start: int) -> None:
    os.environ["LSG_NATIVE_LIB"] = library
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
            conn.send((i, _one(cases[i])))
    finally:
        conn.close()


def run_cases(
    library: str,
    cases: Sequence[Case],
    *,
    timeout: float,
    stop_after: int | None = None,
) -> tuple[list[CaseResult], bool]:
    """Every case against `library`, in order: the results, and whether every case ran (False
    when `stop_after` failing cases, or MAX_BREAKS broken ones, stopped it first). A case the
    child does not answer within `timeout` seconds is broken (HANG), one the child died on
    broken too (CRASH)."""
    context = multiprocessing.get_context("fork")
    results: list[CaseResult] = []
    failing = breaks = 0
    start = 0
    while start < len(cases):
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_child, args=(send, library, cases, start), daemon=True)
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
                if result.failed:
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
