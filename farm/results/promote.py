"""`farm cases promote [CASE_ID ...] [--run RUN] -o FILE`: failures found by a run, into a case
file, so that they run every time from now on (`farm run --cases FILE`).

Without case ids it takes the failed explored cases of the run (default: the newest run);
`--failed` takes every failed case. The file is created, or the cases are added to it (a case
already there is kept once); the format follows its suffix.
"""

from __future__ import annotations

from pathlib import Path

from farm.results.store import RunStore
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import UsageError
from suites import casefile, explore
from suites.case import Case
from suites.caseset import Selection, find_case


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="farm cases promote", description=__doc__.split("\n\n")[0])
    parser.add_argument("case_ids", nargs="*", metavar="CASE_ID")
    parser.add_argument("--run", help="the run the failures come from (default: the newest)")
    parser.add_argument(
        "--failed", action="store_true", help="every failed case of the run, not only explored"
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the case file")
    parser.add_argument("--store", help="the run store (default: $FARM_STORE or runs/)")
    args = parser.parse_args(argv)
    casefile.file_kind(Path(args.output))  # an unknown suffix stops here

    with RunStore(args.store, create=False) as store:
        run = store.run_or_latest(args.run)
        rows = store.result_rows(run["run_id"])
    selection = Selection.from_json(run.get("selection"), run["tier"])
    in_run = {c.id: c for c in _run_cases(selection)}
    if args.case_ids:
        wanted = list(args.case_ids)
    else:
        failed = [r["case_id"] for r in rows if r["outcome"] == "failed"]
        wanted = [cid for cid in failed if args.failed or explore.is_explored(cid)]
        if not wanted:
            kind = "failed" if args.failed else "failed explored"
            FarmConsole().print(f"run {run['run_id']} has no {kind} case: nothing to promote")
            return 0
    cases = [in_run.get(cid) or find_case(cid, selection.files) for cid in wanted]
    path = Path(args.output)
    before = casefile.load(path) if path.exists() else []
    merged = {c.id: c for c in before}
    added = [c for c in cases if c.id not in merged]
    merged.update((c.id, c) for c in added)
    casefile.dump(list(merged.values()), path, source=f"promoted from run {run['run_id']}")
    console = FarmConsole()
    for case in added:
        console.print(f"  + {case.id}", highlight=False, markup=False)
    console.print(
        f"{len(added)} case(s) promoted from run {run['run_id']} into {path} "
        f"({len(merged)} in the file); run them with `farm run --cases {path}`",
        highlight=False,
        markup=False,
    )
    return 0


def _run_cases(selection: Selection) -> list[Case]:
    """The run's cases, when its case files are still where the run put them."""
    try:
        return selection.cases()
    except UsageError:
        return []
