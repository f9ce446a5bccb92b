"""The search of `farm bisect` (farm/cli/bisect_command.py) and what judges one commit.

``search``: pure; the endpoints first (--good must pass, --bad must fail), then a binary search
over the commits between, a commit whose operator does not build skipped as `git bisect skip`
does. ``Stepper``: checks a commit out in the scratch worktree (farm/run/bisect_git.py), builds
its operator into the one build directory (incremental) and runs the cases on the pool; a case
broken twice is a BisectError, never a verdict. ``select``: the cases to judge each commit by
(-k over a tier, case files, or case ids).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.run.bisect_git import Git
from farm.util.errors import BuildError, ConfigError, FarmError, UsageError
from suites.case import Case

GOOD, BAD, SKIP = "good", "bad", "skip"
VERDICTS = (GOOD, BAD, SKIP)
FOUND, INCONCLUSIVE, FAILED, INTERRUPTED = "found", "inconclusive", "failed", "interrupted"
ENDPOINT_GOOD, ENDPOINT_BAD, MIDPOINT = "good endpoint", "bad endpoint", "step"
BUILD_ERROR_LINES = 12  # the last lines of a failed build kept with its step


class BisectError(FarmError):
    """The bisect cannot go on: an endpoint that is not what it was said to be, or a broken
    (infrastructure) result twice."""


# -- the search: pure ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """Where the search ended. `candidates`: the commits the first bad one may be (oldest first;
    one when found, else the skipped commits and the first known bad one after them)."""

    status: str  # FOUND | INCONCLUSIVE
    candidates: tuple[str, ...]

    @property
    def first_bad(self) -> str | None:
        return self.candidates[0] if self.status == FOUND else None


class Search:
    """Binary search for the first bad commit among `commits`: oldest first, every one a
    descendant of a known good commit, the last one known bad (`git rev-list --reverse
    good..bad`). Positions lo < i <= hi may hold it: lo is the last known good (-1: the good
    endpoint), hi the first known bad. next() is the position to test (the middle one; beside it
    when that one was skipped), None when nothing is left to test; then result()."""

    def __init__(self, commits: Sequence[str]):
        if not commits:
            raise ValueError("nothing to search: no commit between good and bad")
        self.commits = tuple(commits)
        self.lo, self.hi = -1, len(self.commits) - 1
        self.skipped: set[int] = set()

    def untested(self) -> list[int]:
        """The positions that could still be tested: between the last good and the first bad,
        not skipped."""
        return [i for i in range(self.lo + 1, self.hi) if i not in self.skipped]

    def next(self) -> int | None:
        left = self.untested()
        if not left:
            return None
        middle = (self.lo + self.hi) // 2
        return min(left, key=lambda i: (abs(i - middle), i))

    def record(self, index: int, verdict: str) -> None:
        if not self.lo < index < self.hi:
            raise ValueError(f"position {index} is outside the search ({self.lo}, {self.hi})")
        if verdict == GOOD:
            self.lo = index
        elif verdict == BAD:
            self.hi = index
        elif verdict == SKIP:
            self.skipped.add(index)
        else:
            raise ValueError(f"verdict {verdict!r}: use one of {', '.join(VERDICTS)}")

    @property
    def done(self) -> bool:
        return not self.untested()

    @property
    def left(self) -> int:
        """How many commits may still be the first bad one."""
        return self.hi - self.lo

    def builds_left(self) -> int:
        """At most this many more builds when nothing more is skipped."""
        return math.ceil(math.log2(self.left)) if self.left > 1 else 0

    def result(self) -> Result:
        if not self.done:
            raise ValueError("the search is not done")
        status = FOUND if self.left == 1 else INCONCLUSIVE
        return Result(status, self.commits[self.lo + 1 : self.hi + 1])


def max_builds(n: int) -> int:
    """The builds a search over n commits needs at most when none is skipped (endpoints not
    counted): ceil(log2(n))."""
    return math.ceil(math.log2(n)) if n > 1 else 0


@dataclass
class Step:
    """One commit built and judged. `role`: an endpoint check or a step of the search."""

    sha: str
    subject: str
    role: str
    verdict: str
    failing: list[str] = field(default_factory=list)  # the cases that failed (verdict bad)
    build_error: str = ""  # the build's last lines (verdict skip)
    seconds: float = 0.0
    build_seconds: float = 0.0
    package: str = ""
    left: int | None = None  # commits that may be the first bad one after this step

    def detail(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": self.role,
            "seconds": round(self.seconds, 3),
            "build_seconds": round(self.build_seconds, 3),
        }
        if self.failing:
            out["failing"] = list(self.failing)
        if self.build_error:
            out["build_error"] = self.build_error
        if self.package:
            out["package"] = self.package
        if self.left is not None:
            out["left"] = self.left
        return out

    def to_json(self) -> dict[str, Any]:
        return {"sha": self.sha, "subject": self.subject, "verdict": self.verdict, **self.detail()}


Judge = Callable[[str, str], Step]  # (sha, role) -> the step: build the commit, run the cases


def search(
    good: str,
    commits: Sequence[str],
    judge: Judge,
    on_step: Callable[[Step], None] | None = None,
) -> Result:
    """Check the endpoints (`good` must be good, commits[-1] bad), then binary-search `commits`
    (good..bad, oldest first). `judge` builds and runs a commit; every step goes to `on_step`.
    An endpoint that is not what it should be is a BisectError."""
    if not commits:
        raise UsageError("no commit between --good and --bad")
    bad = commits[-1]
    find = Search(commits)

    def judged(sha: str, role: str) -> Step:
        step = judge(sha, role)
        if role == MIDPOINT:
            find.record(commits.index(sha), step.verdict)
        step.left = find.left
        if on_step is not None:
            on_step(step)
        return step

    for sha, role, want in ((good, ENDPOINT_GOOD, GOOD), (bad, ENDPOINT_BAD, BAD)):
        step = judged(sha, role)
        if step.verdict == want:
            continue
        which = "--good" if want == GOOD else "--bad"
        if step.verdict == SKIP:
            raise BisectError(
                f"the {which} commit {sha[:12]} ({step.subject}) does not build: "
                f"{build_error_line(step.build_error)}; pick an endpoint whose operator builds"
            )
        if want == GOOD:
            raise BisectError(
                f"the --good commit {sha[:12]} ({step.subject}) already fails the selected cases "
                f"({few(step.failing)}): pick an older --good commit, or fewer cases"
            )
        raise BisectError(
            f"the --bad commit {sha[:12]} ({step.subject}) passes every selected case: nothing "
            "to bisect; pick a --bad commit where they fail, or other cases"
        )
    while (index := find.next()) is not None:
        judged(commits[index], MIDPOINT)
    return find.result()


def few(ids: Sequence[str], n: int = 3) -> str:
    more = f" and {len(ids) - n} more" if len(ids) > n else ""
    return ", ".join(ids[:n]) + more


def build_error_line(text: str) -> str:
    """The line of a build's output that says what is wrong: the first compiler or CMake error
    (make's own "Error 2" lines after it say nothing), else the last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if "error:" in line or line.startswith("CMake Error") or "FATAL_ERROR" in line:
            return line
    return lines[-1] if lines else "no output"


# -- building and running one commit -----------------------------------------------------------


class Stepper:
    """Judges commits: checks each out in the one worktree, builds it into the one build
    directory (incremental), runs the cases on the pool with that package."""

    def __init__(
        self,
        git: Git,
        worktree: Path,
        cases: Sequence[Case],
        *,
        target: str,
        inventory: str | None,
        out_dir: Path,
        case_timeout: float = 60.0,
    ):
        self.git, self.worktree, self.cases = git, worktree, list(cases)
        self.target, self.inventory, self.out_dir = target, inventory, out_dir
        self.build_dir = worktree.parent / "build"
        self.case_timeout = case_timeout
        self.builds = 0

    def __call__(self, sha: str, role: str) -> Step:
        from farm.pool import build

        started = time.perf_counter()
        subject = self.git.subject(sha)
        # In the worktree (never the repository's own checkout): only the changed files get a
        # new mtime, so the build directory rebuilds only what they touch.
        self.git.run("checkout", "--quiet", "--force", "--detach", sha, cwd=self.worktree)
        step_dir = self.out_dir / f"{self.builds:02d}-{sha[:12]}"
        self.builds += 1
        try:
            package = build.build_package(
                self.target,
                out_dir=step_dir,
                build_dir=self.build_dir,
                source_dir=self.worktree / "op",
            )
        except BuildError as exc:
            text = str(exc).replace(f"{self.worktree}/", "")  # op/...: paths as in the repository
            lines = text.strip().splitlines()
            kept = lines[-BUILD_ERROR_LINES:]
            first = build_error_line(text)
            if first not in (line.strip() for line in kept):  # the error itself, then the end
                kept = [first, "...", *kept]
            return Step(
                sha,
                subject,
                role,
                SKIP,
                build_error="\n".join(kept),
                seconds=time.perf_counter() - started,
                build_seconds=time.perf_counter() - started,
            )
        built = time.perf_counter() - started
        failing = self.run_cases(sha, package, step_dir)
        return Step(
            sha,
            subject,
            role,
            BAD if failing else GOOD,
            failing=failing,
            seconds=time.perf_counter() - started,
            build_seconds=built,
            package=str(package),
        )

    def run_cases(self, sha: str, package: Path, step_dir: Path) -> list[str]:
        """The ids of the cases that fail on `package`; a case broken twice is a BisectError."""
        from farm.run.session import PoolSession

        failing = []
        with PoolSession(
            self.inventory,
            # A commit's operator is built from its own sources without the ACL path (it needs
            # the genuine headers in each worktree): its C ABI, as the native backend calls it.
            backend="native",
            target=self.target,
            package=package,
            run_dir=step_dir / "session",
            case_timeout=self.case_timeout,
        ) as pool:
            missing = sorted({c.family for c in self.cases} - pool.families())
            if missing:
                raise ConfigError(
                    f"no healthy host of {', '.join(missing)} in the pool: the selected cases "
                    "cannot all run; check the pool (`farm hosts --check`) or select other cases"
                )
            for case in self.cases:
                record = pool.run(case)
                if record.get("outcome") not in ("passed", "failed"):
                    record = pool.run(case)  # broken: once more
                if record.get("outcome") not in ("passed", "failed"):
                    raise BisectError(
                        f"case {case.id} came back {record.get('outcome')} twice at commit "
                        f"{sha[:12]} ({record.get('category')}: {record.get('message')}): an "
                        "infrastructure problem, not a verdict; check the pool (`farm hosts "
                        "--check`) and bisect again"
                    )
                if record["outcome"] == "failed":
                    failing.append(case.id)
        return failing


# -- selecting the cases -----------------------------------------------------------------------


def matches(expr: str, case_id: str) -> bool:
    """pytest's -k over a case id: each identifier of EXPR is a substring of the id."""
    return _compile(expr).evaluate(_substring_of(case_id))


def _substring_of(case_id: str) -> Callable[..., bool]:
    return lambda name, **_: name in case_id


def _compile(expr: str):
    from _pytest.mark import expression

    # pytest 9 raises SyntaxError; earlier ones their own ParseError.
    errors = (SyntaxError, getattr(expression, "ParseError", SyntaxError))
    try:
        return expression.Expression.compile(expr)
    except errors as exc:
        raise UsageError(f"-k {expr!r}: {exc}") from None


def select(
    k: str | None, tier: str | None, files: Sequence[str], case_ids: Sequence[str]
) -> tuple[list[Case], dict[str, Any]]:
    """The cases to judge each commit by, and the selection as stored."""
    from suites import casefile, matrix
    from suites.caseset import find_case

    if case_ids and k:
        raise UsageError("name cases either by id or with -k, not both")
    if case_ids:
        if tier:
            raise UsageError("--tier selects cases with -k; named cases are found in any tier")
        cases = [find_case(cid, tuple(files)) for cid in dict.fromkeys(case_ids)]
        return cases, {"cases": [c.id for c in cases], "files": list(files)}
    if not k and not files:
        raise UsageError("select the cases: -k EXPR (over --tier), --cases FILE, or CASE_IDs")
    if files:
        if tier:
            raise UsageError("--tier selects cases with -k; with --cases, the files' cases")
        pool, where = casefile.load_many(files), ", ".join(files)
    else:
        tier = tier or "smoke"
        if tier not in matrix.TIERS:
            raise UsageError(f"unknown tier {tier!r}; use one of: {', '.join(matrix.TIERS)}")
        pool, where = matrix.expand(tier), f"tier {tier}"
    if k:
        expression = _compile(k)
        pool = [c for c in pool if expression.evaluate(_substring_of(c.id))]
    if not pool:
        raise UsageError(f"-k {k!r} selects no case of {where}" if k else f"no case in {where}")
    selection: dict[str, Any] = {"cases": [c.id for c in pool], "files": list(files)}
    if k:
        selection["k"] = k
    if not files:
        selection["tier"] = tier
    return pool, selection
