"""`farm bisect --good REV --bad REV (-k EXPR | --cases FILE | CASE_ID ...)`: the first commit
where the selected cases fail.

The cases are resolved once, from this checkout (-k: a pytest-style expression over the case ids
of --tier, default smoke; --cases: case files; CASE_IDs: single cases of any tier, exploration or
the --cases files). The operator is built at each commit in a scratch worktree of the repository
(this checkout, or --repo: another git repository with the operator sources under op/; the
worktree is removed afterwards, also on Ctrl-C and on errors) into one build directory, so that
CMake rebuilds only what changed from commit to commit; each step deploys its own package to the
pool and runs the cases there.

A commit is bad when any selected case fails, good when all pass. A commit whose operator does
not build is skipped, as `git bisect skip` does; when skipped commits leave more than one
candidate, the answer is that range (inconclusive). A case that comes back broken (the
infrastructure, not the operator) is run once more; broken twice stops the bisect: a step is
never called good or bad on a broken result. The endpoints are checked first: --good must pass
and --bad must fail. Then a binary search over `git rev-list --first-parent --ancestry-path
good..bad`: about log2(n) builds for n commits.

Every step and the result are stored in the run store; `farm bisect --show [ID]` prints one
(default the newest).

Exit 0: the first bad commit was found; 1: inconclusive (skipped commits); 2: usage or
infrastructure errors, or endpoints that are not good and bad; 130/143/129: interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.markup import escape

from farm.run import scratch
from farm.util import paths
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
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
                f"({_few(step.failing)}): pick an older --good commit, or fewer cases"
            )
        raise BisectError(
            f"the --bad commit {sha[:12]} ({step.subject}) passes every selected case: nothing "
            "to bisect; pick a --bad commit where they fail, or other cases"
        )
    while (index := find.next()) is not None:
        judged(commits[index], MIDPOINT)
    return find.result()


def _few(ids: Sequence[str], n: int = 3) -> str:
    more = f" and {len(ids) - n} more" if len(ids) > n else ""
    return ", ".join(ids[:n]) + more


# -- git ---------------------------------------------------------------------------------------


class Git:
    """git in one repository; every failure is a UsageError naming the command."""

    def __init__(self, repo: str | Path):
        self.repo = Path(repo).resolve()
        if not self.repo.is_dir():
            raise UsageError(f"--repo {repo}: no such directory")
        proc = self.run("rev-parse", "--show-toplevel", check=False)
        if proc.returncode != 0:
            raise UsageError(f"--repo {repo}: not a git repository ({_last(proc.stderr)})")
        self.repo = Path(proc.stdout.strip())

    def run(self, *args: str, check: bool = True, cwd: Path | None = None):
        try:
            proc = subprocess.run(
                ["git", *args], cwd=cwd or self.repo, capture_output=True, text=True
            )
        except OSError as exc:
            raise UsageError(f"git cannot be run: {exc}") from None
        if check and proc.returncode != 0:
            raise UsageError(f"git {' '.join(args)} failed in {self.repo}: {_last(proc.stderr)}")
        return proc

    def __call__(self, *args: str) -> str:
        return self.run(*args).stdout.strip()

    def resolve(self, rev: str, option: str) -> str:
        proc = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if proc.returncode != 0:
            raise UsageError(f"{option} {rev}: no such commit in {self.repo}")
        return proc.stdout.strip()

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.run("merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    def between(self, good: str, bad: str) -> list[str]:
        """good..bad along the first parents, oldest first: the commits a bisect searches."""
        out = self("rev-list", "--first-parent", "--ancestry-path", "--reverse", f"{good}..{bad}")
        return out.split()

    def subject(self, sha: str) -> str:
        return self("log", "-1", "--format=%s", sha)

    def author(self, sha: str) -> str:
        return self("log", "-1", "--format=%an <%ae>, %ad", "--date=iso", sha)

    def stat_line(self, sha: str) -> str:
        """The summary line of `git show --stat` (files changed, insertions, deletions)."""
        lines = self("show", "--stat", "--format=", sha).splitlines()
        return lines[-1].strip() if lines else "no changes"


def _last(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no output"


def build_error_line(text: str) -> str:
    """The line of a build's output that says what is wrong: the first compiler or CMake error
    (make's own "Error 2" lines after it say nothing), else the last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if "error:" in line or line.startswith("CMake Error") or "FATAL_ERROR" in line:
            return line
    return lines[-1] if lines else "no output"


@contextmanager
def scratch_worktree(git: Git, sha: str) -> Iterator[Path]:
    """A detached worktree of `git`'s repository at `sha` in a temporary directory, with a
    sibling build directory (yielded as <tmp>/src; <tmp>/build beside it). Removed afterwards,
    whatever happens; one a killed bisect left is removed first (farm/run/scratch.py), and
    git's record of it after."""
    scratch.sweep(scratch.BISECT)
    tmp = scratch.make(scratch.BISECT)
    src = tmp / "src"
    try:
        git("worktree", "add", "--detach", str(src), sha)
        yield src
    finally:
        git.run("worktree", "remove", "--force", str(src), check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        git.run("worktree", "prune", check=False)


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


# -- the command -------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    from farm.run.session import add_case_file_args, add_pool_args

    parser = CommandParser(
        prog="farm bisect",
        description="find the first commit where the selected cases fail: build the operator "
        "at each commit (a scratch worktree), run the cases on the pool, binary search. Exit 0: "
        "found; 1: inconclusive (skipped commits that do not build); 2: usage or infrastructure "
        "errors, endpoints that are not good and bad.",
    )
    parser.add_argument("case_ids", nargs="*", metavar="CASE_ID", help="cases to judge by")
    parser.add_argument("--good", metavar="REV", help="a commit where the cases pass")
    parser.add_argument("--bad", metavar="REV", help="a later commit where they fail")
    parser.add_argument("-k", metavar="EXPR", help="pytest-style -k over the case ids of --tier")
    parser.add_argument("--tier", help="the tier -k selects from (default smoke)")
    add_case_file_args(
        parser, help="the cases of a case file (repeatable; with CASE_IDs: where to find them)"
    )
    parser.add_argument(
        "--repo",
        help="the git repository to bisect (default this checkout); its op/ is built",
    )
    add_pool_args(parser, backend=False, target_help="the operator package to build at each commit")
    parser.add_argument("--store", help="the run store (default $FARM_STORE or runs/farm.sqlite)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--show",
        nargs="?",
        const="",
        metavar="ID",
        help="print a stored bisect and its steps (default the newest)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.show is not None:
        return show(args.show or None, args.store, args.json)
    if not args.good or not args.bad:
        raise UsageError("--good REV and --bad REV are both needed (or --show)")
    git = Git(args.repo or paths.REPO_ROOT)
    good, bad = git.resolve(args.good, "--good"), git.resolve(args.bad, "--bad")
    if good == bad:
        raise UsageError(f"--good and --bad are the same commit {good[:12]}")
    if not git.is_ancestor(good, bad):
        raise UsageError(
            f"--good {args.good} ({good[:12]}) is not an ancestor of --bad {args.bad} "
            f"({bad[:12]}): a bisect needs good before bad"
        )
    commits = git.between(good, bad)
    if not commits or commits[-1] != bad:
        raise UsageError(f"no first-parent path from --good {args.good} to --bad {args.bad}")
    cases, selection = select(args.k, args.tier, args.cases, args.case_ids)
    selection.update(
        repo=str(git.repo), target=args.target, inventory=args.inventory, commits=len(commits)
    )
    return _bisect(args, git, good, commits, cases, selection)


def _bisect(args, git: Git, good: str, commits: list[str], cases, selection) -> int:
    from farm.results.store import RunStore
    from farm.util.interrupts import interruptible, shielded

    console = FarmConsole(stderr=args.json, highlight=False)
    bad = commits[-1]
    started = time.perf_counter()
    steps: list[Step] = []
    with RunStore(args.store) as store:
        bisect_id = store.begin_bisect(good, bad, selection)
        console.print(
            f"[bold]bisect {bisect_id}[/]: {len(commits)} commits after {good[:12]} up to "
            f"{bad[:12]} in {escape(str(git.repo))}; {len(cases)} case"
            f"{'s' if len(cases) != 1 else ''}, target {args.target}; "
            f"{max_builds(len(commits))} builds after the 2 endpoint checks (more when commits "
            "do not build)"
        )

        def on_step(step: Step) -> None:
            steps.append(step)
            store.add_bisect_step(bisect_id, step.sha, step.subject, step.verdict, step.detail())
            console.print(_step_line(len(steps), step))

        result: Result | None = None
        error: FarmError | None = None
        with interruptible() as signals:
            try:
                with scratch_worktree(git, good) as worktree:
                    judge = Stepper(
                        git,
                        worktree,
                        cases,
                        target=args.target,
                        inventory=args.inventory,
                        out_dir=paths.RUNS_DIR / "bisect" / bisect_id,
                        case_timeout=args.case_timeout,
                    )
                    with console.status("building and running") as status:

                        def judged(sha: str, role: str) -> Step:
                            status.update(f"{role} {sha[:12]}: building and running the cases")
                            return judge(sha, role)

                        result = search(good, commits, judged, on_step)
            except FarmError as exc:
                error = exc
            except Exception as exc:  # a bug: the bisect is closed, then the traceback
                store.finish_bisect(bisect_id, FAILED, None, f"internal error: {exc!r}")
                raise
        seconds = time.perf_counter() - started
        with shielded(console):
            if signals:
                import signal as _signal

                name = _signal.Signals(signals[0]).name
                message = f"interrupted by {name} after {len(steps)} steps"
                store.finish_bisect(bisect_id, INTERRUPTED, None, message)
                console.print(f"[yellow]{message}[/]: the steps so far are stored ({bisect_id})")
                return 128 + int(signals[0])
            if error is not None or result is None:
                message = str(error) if error is not None else "stopped"
                store.finish_bisect(bisect_id, FAILED, None, message)
                if args.json:
                    _print_json(bisect_id, FAILED, good, commits, steps, seconds, message=message)
                raise BisectError(f"{message} (bisect {bisect_id})") from None
            return _finish(
                console, args, store, git, bisect_id, good, commits, steps, result, seconds
            )


def _finish(console, args, store, git, bisect_id, good, commits, steps, result, seconds) -> int:
    judged = {s.sha: s for s in steps}
    if result.status == FOUND:
        sha = result.candidates[0]
        failing = judged[sha].failing
        first: dict[str, Any] = {
            "sha": sha,
            "subject": git.subject(sha),
            "author": git.author(sha),
            "stat": git.stat_line(sha),
            "failing": failing,
        }
        message = f"first bad commit {sha[:12]} ({first['subject']}) after {len(steps)} builds"
        store.finish_bisect(bisect_id, FOUND, sha, message)
        if args.json:
            _print_json(bisect_id, FOUND, good, commits, steps, seconds, first_bad=first)
            return 0
        console.print(f"[bold red]first bad commit[/] [bold]{sha}[/]")
        console.print(f"  subject  {escape(first['subject'])}")
        console.print(f"  author   {escape(first['author'])}")
        console.print(f"  changes  {escape(first['stat'])}")
        console.print(f"  fails    {escape(', '.join(failing))}")
        console.print(
            f"{len(steps)} builds ({_counts(steps)}) over {len(commits)} commits in "
            f"{seconds:.1f} s; stored as {bisect_id} (`farm bisect --show {bisect_id}`)"
        )
        return 0
    listed = [
        {
            "sha": sha,
            "subject": git.subject(sha),
            "verdict": judged[sha].verdict if sha in judged else "untested",
        }
        for sha in result.candidates
    ]
    message = (
        f"inconclusive: the first bad commit is one of {len(listed)} commits "
        f"{listed[0]['sha'][:12]}..{listed[-1]['sha'][:12]} (skipped: they do not build)"
    )
    store.finish_bisect(bisect_id, INCONCLUSIVE, None, message)
    if args.json:
        _print_json(bisect_id, INCONCLUSIVE, good, commits, steps, seconds, candidates=listed)
        return 1
    console.print(
        f"[yellow]inconclusive[/]: skipped commits (their operator does not build) leave "
        f"{len(listed)} candidates for the first bad commit:"
    )
    for c in listed:
        console.print(f"  {c['sha'][:12]}  {c['verdict']:<8} {escape(c['subject'])}")
    console.print(
        f"{len(steps)} builds ({_counts(steps)}) in {seconds:.1f} s; stored as {bisect_id}"
    )
    return 1


def _counts(steps: Sequence[Step]) -> str:
    return ", ".join(f"{sum(s.verdict == v for s in steps)} {v}" for v in VERDICTS)


def _print_json(bisect_id, status, good, commits, steps, seconds, **extra) -> None:
    out = {
        "bisect_id": bisect_id,
        "status": status,
        "good": good,
        "bad": commits[-1],
        "commits": len(commits),
        "builds": len(steps),
        "max_builds": max_builds(len(commits)) + 2,
        "steps": [s.to_json() for s in steps],
        "seconds": round(seconds, 3),
        "first_bad": None,
        **extra,
    }
    print(json.dumps(out, indent=1, allow_nan=False))


_COLOURS = {GOOD: "green", BAD: "red", SKIP: "yellow"}


def _step_line(n: int, step: Step) -> str:
    colour = _COLOURS.get(step.verdict, "white")
    if step.verdict == BAD:
        why = f"{len(step.failing)} failing: {_few(step.failing)}"
    elif step.verdict == SKIP:
        why = "does not build: " + build_error_line(step.build_error)
    else:
        why = "all pass"
    left = f"  {step.left} left" if step.left is not None and step.role == MIDPOINT else ""
    return (
        f"  {n:>2}  {step.sha[:12]}  [{colour}]{step.verdict:<4}[/]  {step.role:<13}  "
        f"{escape(step.subject[:50]):<50}  {escape(why)}  ({step.seconds:.1f} s){left}"
    )


def _row_detail(row: Mapping[str, Any]) -> dict[str, Any]:
    detail = row.get("detail")
    return detail if isinstance(detail, dict) else {}


def show(bisect_id: str | None, store_path: str | None, as_json: bool) -> int:
    """`farm bisect --show [ID]`: a stored bisect (default the newest) and its steps."""
    from farm.results.store import RunStore

    with RunStore(store_path, create=False) as store:
        rows = store.bisects(limit=None)
        if bisect_id:
            rows = [r for r in rows if r["bisect_id"] == bisect_id]
            if not rows:
                raise UsageError(f"no bisect {bisect_id!r} in the store: list them with --show")
        if not rows:
            raise UsageError("no bisect in the store yet: run farm bisect first")
        row = rows[0]
        step_rows = store.bisect_steps(row["bisect_id"])
    if as_json:
        out = {k: v for k, v in row.items() if k != "selection_json"}
        out["steps"] = [{k: v for k, v in s.items() if k != "detail_json"} for s in step_rows]
        print(json.dumps(out, indent=1, default=str))
        return 0
    console = FarmConsole(highlight=False)
    selection = row.get("selection") or {}
    ids = selection.get("cases") or []
    console.print(f"[bold]bisect {row['bisect_id']}[/]  {row['status']}")
    console.print(f"  good     {row['good']}")
    console.print(f"  bad      {row['bad']}")
    console.print(f"  repo     {escape(str(selection.get('repo', '')))}")
    console.print(
        f"  cases    {len(ids)}: {escape(_few(ids))}"
        + (f"  (-k {escape(selection['k'])})" if selection.get("k") else "")
    )
    console.print(f"  target   {selection.get('target', '')}")
    console.print(f"  started  {row['started_at']}  ended {row.get('ended_at') or '-'}")
    if row.get("first_bad"):
        console.print(f"  [bold red]first bad[/] {row['first_bad']}")
    if row.get("message"):
        console.print(f"  result   {escape(row['message'])}")
    console.print(f"  steps    {len(step_rows)}")
    for s in step_rows:
        detail = _row_detail(s)
        step = Step(
            s["commit_sha"],
            s.get("subject") or "",
            str(detail.get("role", "")),
            s["verdict"],
            failing=list(detail.get("failing") or []),
            build_error=str(detail.get("build_error") or ""),
            seconds=float(detail.get("seconds") or 0.0),
            left=detail.get("left"),
        )
        console.print(_step_line(int(s["step"]) + 1, step))
    return 0
