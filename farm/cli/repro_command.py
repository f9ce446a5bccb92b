"""`farm repro`'s entry: the package, backend and case files of the case's run first
(farm/cli/case_package.py: a failure of a planted bug's run is rerun on that bug, of an acl run
through acl, a case of a case file found in the run's copy of it; said in one line), then the
rerun (farm/run/repro.py)."""

from __future__ import annotations

from farm.cli.case_package import resolve
from farm.util.console import FarmConsole


def main(argv: list[str] | None = None) -> int:
    from farm.run import repro

    args = repro.parser().parse_args(argv)
    package = resolve(
        args.case_id, args.run, args.target, args.plant_bug, args.store, args.backend, args.cases
    )
    if package.note:  # on stderr with --json, whose stdout is the record
        FarmConsole(stderr=args.json).print(package.note, highlight=False, markup=False)
    args.target, args.plant_bug = package.target, package.plant_bug or "none"
    args.backend, args.cases = package.backend, list(package.case_files)
    return repro.reproduce(args)
