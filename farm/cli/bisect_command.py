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
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape

from farm.run.bisect import (
    BAD,
    FAILED,
    FOUND,
    GOOD,
    INCONCLUSIVE,
    INTERRUPTED,
    MIDPOINT,
    SKIP,
    VERDICTS,
    BisectError,
    Result,
    Step,
    Stepper,
    build_error_line,
    few,
    max_builds,
    search,
    select,
)
from farm.run.bisect_git import Git, scratch_worktree
from farm.util import paths
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import FarmError, UsageError

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
        why = f"{len(step.failing)} failing: {few(step.failing)}"
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
        f"  cases    {len(ids)}: {escape(few(ids))}"
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
