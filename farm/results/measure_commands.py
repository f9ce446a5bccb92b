"""`farm runs show ID`, `farm runs trend` and `farm runs import DIR`: the measurements of `farm
mutate` and `farm coverage` in the run store (farm/results/store/measures.py; their text,
farm/results/measure_render.py). `farm runs` itself lists them after the runs
(farm/results/commands.py)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from farm.results import measure_render, measured
from farm.results.arguments import unknown_run
from farm.results.store import MEASURE_KINDS, open_existing
from farm.util.argparsing import CommandParser, whole_number

SUBCOMMANDS = ("show", "trend", "import")


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store", default=None, help="run store (default: $FARM_STORE or runs/farm.sqlite)"
    )


def main_show(argv: Sequence[str]) -> int:
    """`farm runs show ID [--json]`: a measurement of farm mutate or farm coverage whole (its
    figures; of a mutation run every survivor with the cases that came closest, every weak and
    policy-only kill with its failing cases), or a run's facts."""
    p = CommandParser(prog="farm runs show", description=main_show.__doc__)
    _store_arg(p)
    p.add_argument("id", help="a measurement's id (mutate-..., coverage-...) or a run's")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = p.parse_args(list(argv))
    with open_existing(args.store) as store:
        measure = store.get_measure(args.id)
        run = store.get_run(args.id) if measure is None else None
        location = store.location
    if measure is not None:
        if args.json:
            print(json.dumps(measure.to_json(), indent=2, sort_keys=True))
        else:
            print("\n".join(measure_render.show_lines(measure)))
        return 0
    if run is None:
        raise unknown_run(f"no run or measurement {args.id!r}", location)
    if args.json:
        print(json.dumps({**run, "kind": "run", "stored": True}, indent=2, sort_keys=True))
        return 0
    c = run["counts"]
    print(
        f"{run['run_id']}: farm run, tier {run['tier']}, backend {run.get('backend') or '?'}, "
        f"{run['status']}, exit {run['exit_code']}\n"
        f"started {run['started_at']}, ended {run['ended_at']}, commit "
        f"{(run.get('git_commit') or '')[:12]}\n"
        f"{c['total']} cases: {c['passed']} passed, {c['failed']} failed, {c['broken']} broken "
        f"(farm compare {run['run_id']} and farm report {run['run_id']} show them)"
    )
    return 0


def main_trend(argv: Sequence[str]) -> int:
    """`farm runs trend [--tier T] [--kind mutate|coverage] [--backend B] [--limit N] [--json]`:
    the last measurements of each tier, kind and backend, oldest first, each with its change from
    the one before; only measurements of the whole tier (a subset's figures are not its)."""
    p = CommandParser(prog="farm runs trend", description=main_trend.__doc__)
    _store_arg(p)
    p.add_argument("--tier", help="default: every tier measured")
    p.add_argument("--kind", choices=MEASURE_KINDS, help="default: both")
    p.add_argument("--backend", help="default: each backend apart")
    p.add_argument("--limit", type=whole_number(1), default=20, help="measurements (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = p.parse_args(list(argv))
    with open_existing(args.store) as store:
        every = store.measures(limit=None, tier=args.tier, kind=args.kind)
        keys = sorted({(m.kind, m.tier, m.backend or "") for m in every if not m.subset})
        series = [
            store.measure_trend(kind, tier, backend or None, n=args.limit)
            for kind, tier, backend in keys
            if args.backend is None or backend == args.backend
        ]
    if args.json:
        listed = [
            {
                "kind": s[0].kind,
                "tier": s[0].tier,
                "backend": s[0].backend,
                "measurements": [m.entry() for m in s],
            }
            for s in series
            if s
        ]
        print(json.dumps(listed, indent=2, sort_keys=True))
        return 0
    if not any(series):
        print("no measurement of a whole tier yet: farm mutate and farm coverage store theirs")
        return 0
    print("\n".join(line for s in series for line in measure_render.trend_lines(s)))
    return 0


def main_import(argv: Sequence[str]) -> int:
    """`farm runs import DIR`: store the measurement whose files DIR holds (a farm mutate run
    directory, runs/mutate/<id>; or the run directory, or its coverage/, that farm coverage
    wrote), as the command would have at its end: for a store that could not take it then.
    Stored again, a measurement replaces itself."""
    p = CommandParser(prog="farm runs import", description=main_import.__doc__)
    _store_arg(p)
    p.add_argument("dir", type=Path)
    args = p.parse_args(list(argv))
    _, line = measured.import_measure(args.dir, args.store)
    print(line)
    return 0
