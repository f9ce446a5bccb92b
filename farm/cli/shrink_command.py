"""`farm shrink CASE_ID`: the smallest case that still fails the same way.

The case is run on the pool first: it must fail (exit 1 when it passes: nothing to shrink).
Its failure is its signature: the category (precision, out_of_bounds, kernel_fault, ...) and,
for a rejection case, the status too. Then a greedy search: the smaller forms of the case
(suites/shrink.py: fewer dims, smaller extents, fewer special values, simpler values and
layouts; most reducing first) are run one by one, the first that fails the same way becomes
the case, and the search starts again from it; it stops when no smaller form fails the same way,
or after --max-tries candidates. The same pool and package give the same search.

The minimal case is written into a case file (default runs/shrinks/<case id>.json: a shrunk case
is in no tier) and recorded in the run store for the package (`farm report` links a failing case
to it); the output ends with the line that reproduces it (`farm repro ID --cases FILE ...`).

A broken outcome (the infrastructure, not the operator) is never taken for a failure: the
candidate is run once more, and when it is broken again the search stops (exit 2), keeping the
smallest failing form found so far in the case file.

Exit 0: the case fails and was shrunk (even when no smaller form fails: then the minimal case is
the case itself); 1: the case does not fail on this package; 2: usage or infrastructure errors.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from farm.run.shrink import (
    DEFAULT_MAX_TRIES,
    Record,
    ShrinkBroken,
    Signature,
    Try,
    repro_command,
    run_sure,
    search,
)
from farm.util import paths
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import ConfigError, UsageError
from suites import shrink as shrinking
from suites.case import Case


def default_case_file(case_id: str) -> Path:
    return paths.RUNS_DIR / "shrinks" / f"{case_id}.json"


def _parser() -> argparse.ArgumentParser:
    from farm.run.session import add_case_file_args, add_pool_args

    parser = CommandParser(
        prog="farm shrink",
        description="the smallest case that still fails the same way (same category; a "
        "rejection case's status too). Exit 0: shrunk; 1: the case does not fail; 2: usage or "
        "infrastructure errors.",
    )
    parser.add_argument("case_id")
    add_case_file_args(parser)
    add_pool_args(parser, plant_bug="shrink on an operator built with a known bug", of_run=True)
    parser.add_argument(
        "--run",
        metavar="RUN",
        help="take --target and --plant-bug from this run (default: the newest run in the store "
        "that holds the case)",
    )
    parser.add_argument(
        "--max-tries",
        type=int,
        default=DEFAULT_MAX_TRIES,
        metavar="N",
        help=f"run at most N candidates (default {DEFAULT_MAX_TRIES})",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the case file to write the shrunk case into (.json .yaml .csv; default "
        "runs/shrinks/<case id>.json)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    from suites import casefile
    from suites.caseset import find_case

    args = _parser().parse_args(argv)
    if args.max_tries < 0:
        raise UsageError(f"--max-tries must be 0 or more, not {args.max_tries}")
    if args.output:
        casefile.file_kind(Path(args.output))  # a suffix it cannot write: said now, not later
    case = find_case(args.case_id, tuple(args.cases))  # the case first: its id names the file
    out_file = Path(args.output) if args.output else default_case_file(case.id)
    console = FarmConsole(stderr=args.json, highlight=False)
    started = time.perf_counter()
    from farm.cli.case_package import resolve

    package = resolve(
        case.id, args.run, args.target, args.plant_bug, backend=args.backend, take_case_files=False
    )
    if package.note:
        console.print(package.note, markup=False)
    args.target, args.plant_bug, args.backend = package.target, package.plant_bug, package.backend

    from farm.run.session import PoolSession

    with PoolSession(
        args.inventory,
        backend=args.backend,
        target=args.target,
        plant_bug=args.plant_bug,
        run_dir=paths.RUNS_DIR / "shrink",
        case_timeout=args.case_timeout,
    ) as pool:
        if case.family not in pool.families():
            raise ConfigError(
                f"no healthy host of family {case.family} in the pool: case {case.id} cannot run"
            )
        assert pool.plan is not None
        package_sha = pool.plan.package.get("sha256", "")
        target = pool.target_name or args.target
        where = f"{target}" + (f", planted bug {args.plant_bug}" if args.plant_bug else "")
        console.print(f"[bold]{escape(case.id)}[/]  {shrinking.describe(case)}  on {where}")

        def run(c: Case) -> Record:
            return pool.run(c)

        first = run_sure(run, case)
        signature = Signature.of(case, first)
        if signature is None:
            return _does_not_fail(console, args, case, first, target)
        console.print(
            f"fails: [red]{escape(signature.text)}[/]  {escape(str(first.get('message') or ''))}"
        )

        def show(step: Try) -> None:
            colour = {"same": "red", "passed": "green", "different": "yellow"}[step.verdict]
            words = {
                "same": "fails the same way",
                "passed": "passes",
                "different": f"fails another way ({step.record.get('category')})",
            }[step.verdict]
            console.print(
                f"  {step.n:>3}  {escape(shrinking.describe(step.case)):<32} "
                f"[{colour}]{escape(words)}[/]  {escape(step.case.id)}"
            )

        try:
            found = search(case, signature, run, max_tries=args.max_tries, on_try=show)
        except ShrinkBroken as exc:
            if exc.search is None or exc.search.shrunk.id == case.id:
                raise
            best = replace(exc.search.shrunk, origin=f"farm shrink of {case.id} (stopped)")
            written = casefile.dump([best], out_file, source=f"farm shrink {case.id} on {where}")
            raise ShrinkBroken(
                f"{exc.message}; it is written to {written}, not recorded in the store"
            ) from None
    shrunk = replace(found.shrunk, origin=f"farm shrink of {case.id}")
    written = casefile.dump([shrunk], out_file, source=f"farm shrink {case.id} on {where}")
    from farm.results.store import RunStore

    with RunStore() as store:
        store.add_shrink(
            case.id,
            package_sha,
            shrunk.to_dict(),
            signature.category,
            target,
            numel_before=case.numel,
            tried=found.tried,
        )
    line = repro_command(
        shrunk.id,
        written,
        target=target,
        plant_bug=args.plant_bug,
        inventory=args.inventory,
        backend=args.backend,
    )
    seconds = time.perf_counter() - started
    if args.json:
        print(
            json.dumps(
                {
                    "case_id": case.id,
                    "shrunk_id": shrunk.id,
                    "shrunk": shrunk.to_dict(),
                    "category": signature.category,
                    "status": signature.status,
                    "elements_before": shrinking.elements(case),
                    "elements_after": shrinking.elements(shrunk),
                    "numel_before": case.numel,
                    "numel_after": shrunk.numel,
                    "tried": found.tried,
                    "steps": found.steps,
                    "exhausted": found.exhausted,
                    "tries": [t.to_json() for t in found.tries],
                    "case_file": str(written),
                    "package_sha256": package_sha,
                    "target": target,
                    "plant_bug": args.plant_bug,
                    "repro": line,
                    "seconds": round(seconds, 3),
                },
                indent=1,
                allow_nan=False,
            )
        )
        return 0
    if shrunk.id == case.id:
        console.print(
            f"no smaller form fails the same way ({found.tried} candidates): the minimal case is "
            f"{escape(case.id)} itself"
        )
    else:
        before, after = shrinking.describe(case), shrinking.describe(shrunk)
        console.print(
            f"shrunk {escape(before)} to [bold]{escape(after)}[/] in {found.steps} steps, "
            f"{found.tried} candidates"
        )
    if found.exhausted:
        console.print(
            f"[yellow]stopped after --max-tries {args.max_tries} candidates[/]: a smaller form "
            "may still fail the same way (raise --max-tries, or shrink the shrunk case)"
        )
    console.print(f"minimal  [bold]{escape(shrunk.id)}[/]  ({seconds:.1f} s)")
    console.print(f"written  {escape(str(written))}")
    console.print(f"repro    {escape(line)}")
    return 0


def _does_not_fail(console: Console, args, case: Case, record: Record, target: str) -> int:
    message = str(record.get("message") or "")
    if args.json:
        print(
            json.dumps(
                {
                    "case_id": case.id,
                    "outcome": record.get("outcome"),
                    "message": message,
                    "target": target,
                    "plant_bug": args.plant_bug,
                    "shrunk_id": None,
                }
            )
        )
    console.print(
        f"[green]{escape(str(record.get('outcome')))}[/]: {escape(case.id)} does not fail on this "
        f"package ({escape(message)}): nothing to shrink"
    )
    return 1
