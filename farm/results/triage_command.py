"""`farm triage [RUN] [--json] [--group N -o FILE]`: what a run's failures share that its passing
cases do not (farm/results/triage.py), each group with its counts and the command that reruns
exactly its cases; --group N -o FILE writes group N's cases to a case file (`farm run --cases
FILE` runs them)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from farm.results import triage
from farm.results.store import RunStore
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import UsageError


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="farm triage", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", metavar="RUN", help="the run (default: the newest)")
    parser.add_argument("--json", action="store_true", help="the groups and their cases as JSON")
    parser.add_argument("--group", type=int, metavar="N", help="with -o: the N-th group's cases")
    parser.add_argument("-o", "--output", metavar="FILE", help="with --group: the case file")
    parser.add_argument("--store", help="the run store (default: $FARM_STORE or runs/)")
    args = parser.parse_args(argv)
    if (args.group is None) != (args.output is None):
        raise UsageError("--group N and -o FILE go together (the file gets group N's cases)")

    with RunStore(args.store, create=False) as store:
        run = store.run_or_latest(args.run)
        result = triage.triage_run(store, run["run_id"])
    if args.group is not None:
        return _write_group(run, result, args.group, Path(args.output))
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    console = FarmConsole()
    console.print(
        f"run {run['run_id']}: {result.failures:,} failed, {result.passes:,} passed",
        highlight=False,
    )
    for line in result.lines():
        console.print(line, highlight=False, markup=False)
    return 0


def _write_group(run: dict, result: triage.Triage, number: int, path: Path) -> int:
    from suites import casefile
    from suites.caseset import Selection, find_case

    if not 1 <= number <= len(result.groups):
        raise UsageError(
            f"run {run['run_id']} has no group {number} (it has {len(result.groups)}; "
            "list them with `farm triage RUN`)"
        )
    casefile.file_kind(path)  # an unknown suffix stops here
    group = result.groups[number - 1]
    selection = Selection.from_json(run.get("selection"), run["tier"])
    try:
        by_id = {c.id: c for c in selection.cases()}
    except UsageError:  # the run's case files are gone: each case is looked up on its own
        by_id = {}
    cases = [by_id.get(cid) or find_case(cid, selection.files) for cid in group.case_ids]
    casefile.dump(cases, path, source=f"triage group {number} of run {run['run_id']}")
    rerun = shlex.join(["farm", "run", "--cases", str(path), *triage.operator_arguments(run)])
    FarmConsole().print(  # on the run's package: a planted bug's failures pass on the real one
        f"{len(cases):,} cases of group {number} ({group.text}) written to {path}; "
        f"run them with `{rerun}`",
        highlight=False,
        markup=False,
    )
    return 0
