"""What `farm mutate` (farm/cli/mutate_command.py) does with each mutant (farm/run/mutants.py):
build it in a scratch copy of the operator's sources, compare the library with the original's,
run the tier's cases against it (farm/run/mutate_cases.py), and say what became of it.

    stillborn   it does not compile
    equivalent  its library is the original's, byte for byte once stripped: nothing to run
                (and after the run, a survivor reviewed as equivalent in op/mutants_explained.toml:
                farm/results/mutants_explained.py, `equivalent_by` "review")
    killed      at least one case fails or breaks (weak: fewer than WEAK_KILL cases; policy-only:
                every failing case was refused by an emulation policy, a rule of the emulated
                device that CANN does not enforce, and none caught it through the results)
    survived    every case passes; it keeps the cases that came closest to failing

Each job (--jobs) is a process with its own Workspace: a scratch directory (farm/run/scratch.py:
removed on the way out, also on Ctrl-C, and by the next command when its process died) holding
a copy of op/ and a build directory, built once whole (about 15 s) and then incrementally: a
mutant rebuilds only the file it edits (1.5 s for the tiling, 3.5 s for the kernel's three
dtypes). The mutants go to the jobs file by file, so a workspace restores a file (one more
compile) only when its next mutant is of another file.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import queue
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.run import scratch
from farm.run.bisect import build_error_line
from farm.run.mutants import Mutant
from farm.run.mutate_cases import OUTPUT_POLICY_OFF, Built, CaseResult, run_cases
from farm.util.errors import BuildError, FarmError
from suites.case import Case

KILLED, SURVIVED, EQUIVALENT, STILLBORN = "killed", "survived", "equivalent", "stillborn"
STATUSES = (KILLED, SURVIVED, EQUIVALENT, STILLBORN)
WEAK_KILL = 3  # a kill by fewer failing cases than this is weak
CLOSEST = 3  # the cases a survivor keeps
FAILING_KEPT = 20  # the failing case ids a kill keeps (the count is kept whole)
POLICY_RERUN = 10  # a policy-only kill's cases run again without the output policies


@dataclass
class Outcome:
    """What became of one mutant."""

    mutant: Mutant
    status: str
    failing: int = 0  # cases that failed or broke
    complete: bool = True  # every case ran (False: stopped after --stop-after failing cases)
    failing_cases: list[dict[str, Any]] = field(default_factory=list)
    policy_failing: int = 0  # of `failing`: refused by an emulation policy alone
    policy_cases: list[str] = field(default_factory=list)
    # A case that fails through its results (with the policies, or without the output ones:
    # `without_policy`, caught_without_policy) where some case failed by a policy.
    caught_by: dict[str, Any] | None = None
    closest: list[dict[str, Any]] = field(default_factory=list)
    build_error: str = ""
    seconds: float = 0.0
    build_seconds: float = 0.0
    source_line: str = ""

    @property
    def weak(self) -> bool:
        return self.status == KILLED and self.complete and self.failing < WEAK_KILL

    @property
    def policy_only(self) -> bool:
        """Killed only by emulation policies: CANN would run it, and no result caught it, with
        the policies or without the output ones (caught_without_policy)."""
        return self.status == KILLED and self.policy_failing == self.failing and not self.caught_by

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.mutant.to_dict(),
            "status": self.status,
            "weak": self.weak,
            "failing": self.failing,
            "complete": self.complete,
            "failing_cases": self.failing_cases,
            "policy_only": self.policy_only,
            "policy_failing": self.policy_failing,
            "policy_cases": self.policy_cases,
            "caught_by": self.caught_by,
            "closest": self.closest,
            "build_error": self.build_error,
            "seconds": round(self.seconds, 3),
            "build_seconds": round(self.build_seconds, 3),
            "source_line": self.source_line,
        }


@dataclass(frozen=True)
class Baseline:
    """The original operator's run of the cases: what a mutant is measured against."""

    cases: list[Case]  # the cases it passes (the ones a mutant is judged by)
    failing: list[str]  # the ids of those it fails already (left out: a kill there says nothing)
    closeness: dict[str, float | None]


def baseline(built: Built, cases: Sequence[Case], timeout: float) -> Baseline:
    results, _ = run_cases(built, cases, timeout=timeout)
    passed = {r.case_id for r in results if not r.failed}
    return Baseline(
        [c for c in cases if c.id in passed],
        [r.case_id for r in results if r.failed],
        {r.case_id: r.closeness for r in results},
    )


# -- the scratch copy of the sources -----------------------------------------------------------


def fingerprint_all(built: Built) -> str:
    """The fingerprints of every library the cases load: equal only where each is the same."""
    return " ".join(fingerprint(library) for library in built.libraries())


def fingerprint(library: Path) -> str:
    """The sha256 of the library stripped of its symbols, debug info and build id: two builds
    with the same code, whatever their sources' comments or spacing, have the same."""
    stripped = library.with_name(library.name + ".stripped")
    try:
        subprocess.run(
            ["objcopy", "--strip-all", "-R", ".note.gnu.build-id", str(library), str(stripped)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BuildError(
            f"objcopy could not strip {library} ({exc}): install binutils (apt-get install "
            "binutils)"
        ) from None
    try:
        return hashlib.sha256(stripped.read_bytes()).hexdigest()
    finally:
        stripped.unlink(missing_ok=True)


class Workspace:
    """A scratch copy of op/ and its build directory; one mutant's edit at a time. On the acl
    backend the build has the copy's emulated ACL runtime and op-api too (its aclnn layer)."""

    def __init__(self, op_dir: Path, backend: str = "native"):
        self.backend = backend
        scratch.sweep(scratch.MUTATE)
        self.root = scratch.make(scratch.MUTATE)
        try:
            self.op = self.root / "op"
            shutil.copytree(op_dir, self.op)
            self.build_dir = self.root / "build"
            self.original_texts: dict[str, str] = {}
            self.edited: str | None = None
            self.original = fingerprint_all(self.build())
        except BaseException:
            self.close()
            raise

    def build(self) -> Built:
        from farm.pool import build

        library = build.build_native(
            "ascendc-cpu",
            build_dir=self.build_dir,
            source_dir=self.op,
            acl=self.backend == "acl",
        )
        return Built(str(library), self.backend)

    def text(self, file: str) -> str:
        if file not in self.original_texts:
            self.original_texts[file] = (self.op / file).read_text()
        return self.original_texts[file]

    def put(self, mutant: Mutant) -> str:
        """Write the mutant's edit (the file it edited before, if another, put back); returns
        the mutated line."""
        original = self.text(mutant.file)
        mutated = mutant.apply(original)
        if self.edited not in (None, mutant.file):
            self.restore()
        (self.op / mutant.file).write_text(mutated)
        self.edited = mutant.file
        return mutant.source_line(original)

    def restore(self) -> None:
        if self.edited is not None:
            (self.op / self.edited).write_text(self.original_texts[self.edited])
            self.edited = None

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def evaluate(
    space: Workspace,
    mutant: Mutant,
    base: Baseline,
    *,
    timeout: float,
    stop_after: int | None,
) -> Outcome:
    """Build the mutant in `space`, compare, run: its Outcome."""
    started = time.perf_counter()
    line = space.put(mutant)
    try:
        built = space.build()
    except BuildError as exc:
        return Outcome(
            mutant,
            STILLBORN,
            build_error=build_error_line(str(exc).replace(f"{space.op}/", "op/")),
            seconds=time.perf_counter() - started,
            build_seconds=time.perf_counter() - started,
            source_line=line,
        )
    build_seconds = time.perf_counter() - started
    if fingerprint_all(built) == space.original:
        return Outcome(
            mutant,
            EQUIVALENT,
            seconds=time.perf_counter() - started,
            build_seconds=build_seconds,
            source_line=line,
        )
    results, complete = run_cases(built, base.cases, timeout=timeout, stop_after=stop_after)
    failed = [r for r in results if r.failed]
    policy = [r for r in failed if r.policy]
    caught = caught_by(failed) if policy else None
    if policy and caught is None:
        caught = caught_without_policy(built, base, policy, timeout)
    outcome = Outcome(
        mutant,
        KILLED if failed else SURVIVED,
        failing=len(failed),
        complete=complete,
        failing_cases=[r.to_dict() for r in failed[:FAILING_KEPT]],
        policy_failing=len(policy),
        policy_cases=[r.case_id for r in policy[:FAILING_KEPT]],
        caught_by=caught,
        seconds=time.perf_counter() - started,
        build_seconds=build_seconds,
        source_line=line,
    )
    if not failed:
        outcome.closest = closest(results, base)
    return outcome


def caught_by(failed: Sequence[CaseResult]) -> dict[str, Any] | None:
    """A case that catches the mutant through its results, not by an emulation policy: a
    precision or rejection failure (outcome failed) first, else a break (a crash, a hang); None
    where every failing case rests on a policy."""
    through = [r for r in failed if not r.policy]
    ranked = sorted(through, key=lambda r: r.outcome != "failed")  # stable: the first one of each
    return ranked[0].to_dict() if ranked else None


def caught_without_policy(
    built: Built, base: Baseline, policy: Sequence[CaseResult], timeout: float
) -> dict[str, Any] | None:
    """A kill every failing case of which an emulation policy refused: its policy cases again
    on the device without its output policies (OUTPUT_POLICY_OFF: as CANN's runs, an element
    nothing writes keeping the storage's NaN, the last of two writes winning). The first that
    then fails through its results, marked `without_policy`; None when none does (a kill that
    rests on the policy alone)."""
    ids = {r.case_id for r in policy[:POLICY_RERUN]}
    again, _ = run_cases(
        built, [c for c in base.cases if c.id in ids], timeout=timeout, env=OUTPUT_POLICY_OFF
    )
    found = caught_by([r for r in again if r.failed])
    return {**found, "without_policy": True} if found else None


def closest(results: Sequence[CaseResult], base: Baseline, n: int = CLOSEST) -> list[dict]:
    """The cases that came closest to failing: the most moved toward their limits from the
    original's run first, then the nearest to them."""

    def key(r: CaseResult) -> tuple[float, float]:
        now = r.closeness if r.closeness is not None else -math.inf
        before = base.closeness.get(r.case_id)
        return (now - before if before is not None and r.closeness is not None else 0.0, now)

    measured = [r for r in results if r.closeness is not None]
    return [
        {"case_id": r.case_id, "closeness": r.closeness, "baseline": base.closeness.get(r.case_id)}
        for r in sorted(measured, key=key, reverse=True)[:n]
    ]


# -- the jobs ----------------------------------------------------------------------------------


class _Stop(BaseException):
    """SIGTERM in a job: its way out (the workspace removed) runs as on Ctrl-C."""


def _raise_stop(signum, frame) -> None:
    raise _Stop(signum)


def _job(
    op_dir: Path, backend: str, base: Baseline, tasks, results, timeout: float, stop_after
) -> None:
    signal.signal(signal.SIGTERM, _raise_stop)
    space = None
    try:
        space = Workspace(op_dir, backend)
        while (task := tasks.get()) is not None:
            index, data = task
            mutant = Mutant.from_dict(data)
            try:
                outcome = evaluate(space, mutant, base, timeout=timeout, stop_after=stop_after)
                results.put((index, outcome.to_dict()))
            except ValueError as exc:  # the mutant's line is not in the sources any more
                results.put((index, {"error": str(exc)}))
        results.put(None)
    except (KeyboardInterrupt, _Stop):
        pass
    except BaseException as exc:
        results.put(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        for stop in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop, signal.SIG_IGN)  # the removal runs to its end
        if space is not None:
            space.close()


class JobError(FarmError):
    """A job could not go on (its workspace did not build, ...): the command's one error line."""


def run_mutants(
    mutants: Sequence[Mutant],
    base: Baseline,
    op_dir: Path,
    *,
    jobs: int,
    timeout: float,
    stop_after: int | None = None,
    backend: str = "native",
) -> Iterator[dict[str, Any]]:
    """Each mutant's outcome (as to_dict), as the jobs finish them. Closing the iterator (or an
    exception in the caller) stops the jobs; their workspaces go with them."""
    context = multiprocessing.get_context("fork")
    tasks = context.Queue()
    results = context.Queue()
    for index, mutant in enumerate(mutants):
        tasks.put((index, mutant.to_dict()))
    jobs = max(1, min(jobs, len(mutants)))
    for _ in range(jobs):
        tasks.put(None)
    workers = [
        context.Process(
            target=_job, args=(op_dir, backend, base, tasks, results, timeout, stop_after)
        )
        for _ in range(jobs)
    ]
    for w in workers:
        w.start()
    stopped = True
    try:
        done = 0
        while done < jobs:
            try:
                item = results.get(timeout=1.0)
            except queue.Empty:
                if not any(w.is_alive() for w in workers):
                    codes = ", ".join(str(w.exitcode) for w in workers)
                    raise JobError(
                        f"every job of farm mutate ended before its mutants did (exit {codes}); "
                        "run it again (see the lines above)"
                    ) from None
                continue
            if item is None:
                done += 1
            elif item[0] == "error":
                raise JobError(item[1])
            else:
                yield item[1]
        stopped = False
    finally:
        for w in workers:
            # A job that is done, or stopped by the same Ctrl-C, is removing its copy.
            w.join(5 if stopped else 30)
            if w.is_alive():
                w.terminate()  # SIGTERM: its workspace is removed on the way out
        for w in workers:
            w.join(30)
            if w.is_alive():
                w.kill()
                w.join()
        # The mutants no job took stay in the queue's pipe: exit without waiting to send them.
        for q in (tasks, results):
            q.cancel_join_thread()
            q.close()


def summarize(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The counts and the score: killed / (every mutant that is neither equivalent nor
    stillborn; reviewed equivalents are equivalent); strong_score counts only the kills by
    WEAK_KILL cases or more; killable_score leaves out the survivors explained as unreached (an
    `explained` key: why no case of the farm reaches them)."""
    counts = {s: sum(o.get("status") == s for o in outcomes) for s in STATUSES}
    weak = sum(bool(o.get("weak")) for o in outcomes)
    policy_only = sum(bool(o.get("policy_only")) for o in outcomes)
    judged = counts[KILLED] + counts[SURVIVED]
    # Survivors with a reviewed reason no case can kill them (op/mutants_explained.toml)
    explained = sum(o.get("status") == SURVIVED and bool(o.get("explained")) for o in outcomes)
    killable = judged - explained
    return {
        "mutants": len(outcomes),
        **counts,
        "weak": weak,
        "policy_only": policy_only,
        "judged": judged,
        "score": counts[KILLED] / judged if judged else None,
        "strong_score": (counts[KILLED] - weak) / judged if judged else None,
        "explained": explained,
        "reviewed_equivalent": sum(o.get("equivalent_by") == "review" for o in outcomes),
        "killable_score": counts[KILLED] / killable if killable else None,
        # The kills a case's results make, not an emulation policy alone (what CANN would see).
        "results_score": (counts[KILLED] - policy_only) / judged if judged else None,
    }
