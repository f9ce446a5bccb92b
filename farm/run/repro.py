"""`farm repro CASE_ID [--host H]`: rerun one case and show everything about it.

The inputs are made from the case's seed, so the description, the tiling record and the metrics
are the same numbers on any host of the case's family. The output says which operator package
(target) ran: by default the emulated real kernel (ascendc-cpu), or --target twin.
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from farm import paths
from farm.agent.backends import BACKENDS
from farm.agent.record import ResultRecord
from farm.errors import ConfigError
from farm.run import prepare
from farm.run.dispatch import Dispatcher, SlotInfo
from farm.run.leases import RunState
from suites import matrix


def find_case(case_id: str):
    for tier in matrix.TIERS:
        for case in matrix.expand(tier):
            if case.id == case_id:
                return case
    raise ConfigError(
        f"no case {case_id!r} in any tier; list them with `farm cases --tier nightly`"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="farm repro", description=__doc__.splitlines()[0])
    parser.add_argument("case_id")
    parser.add_argument("--host", help="run on this host (default: any healthy host of the family)")
    parser.add_argument("--inventory", help="TOML inventory (default: the embedded local pool)")
    parser.add_argument("--backend", default=BACKENDS[0], choices=BACKENDS)
    from farm import build

    parser.add_argument(
        "--target",
        default=build.DEFAULT_TARGET,
        choices=build.NATIVE_TARGETS,
        help=f"the operator package to run (default {build.DEFAULT_TARGET})",
    )
    parser.add_argument("--json", action="store_true", help="print the whole record as JSON")
    args = parser.parse_args(argv)

    case = find_case(args.case_id)
    inventory = prepare.load_pool(args.inventory)
    if args.host:
        spec = inventory.host(args.host)
        if spec.family != case.family:
            raise ConfigError(
                f"host {args.host} is {spec.soc} ({spec.family}); case {case.id} runs on "
                f"{case.family}: pick a host of that family"
            )
    package = build.build_package(args.target)
    plan = prepare.prepare_pool(
        args.inventory,
        backend=args.backend,
        package=package,
        run_dir=paths.RUNS_DIR / "repro",
    )
    slots = [SlotInfo(**s) for s in plan.slots if not args.host or s["host"] == args.host]
    if not slots:
        raise ConfigError(f"no healthy host to run on: {plan.unhealthy or 'none of that family'}")
    dispatcher = Dispatcher(
        slots,
        prepare.open_channel_factory(plan),
        RunState(plan.state_path),
        plan.run_dir / "locks",
        args.backend,
    )
    try:
        record = dispatcher.run(case)
    finally:
        dispatcher.close()
    from farm.agent.execute import make_call_inputs
    from golden import inputs

    dy, y = make_call_inputs(case.to_dict())
    described = {
        name: inputs.describe_array(t) for name, t in (("dy", dy), ("y", y)) if t is not None
    }
    target = plan.package.get("target", "")
    if args.json:
        print(
            json.dumps(
                {
                    "case": case.to_dict(),
                    "target": target,
                    "inputs": described,
                    "record": record,
                },
                indent=1,
                default=str,
            )
        )
    else:
        show(Console(), case, described, record, target)
    return 0 if record["outcome"] == "passed" else 1


def show(console: Console, case, described: dict, record: ResultRecord, target: str = "") -> None:
    from farm.build import describe

    console.print(
        f"[bold]{case.id}[/]  seed {case.seed}  on {record.get('slot')} ({record.get('soc')})",
        highlight=False,
    )
    if target:
        console.print(f"target   {describe(target)}", highlight=False)
    console.print(f"expect   {case.expectation()}", highlight=False)
    for name, desc in described.items():
        console.print(f"{name:<8} {desc}", highlight=False)
    console.print(
        f"status   {record.get('status')} {record.get('reason')} {record.get('op_message') or ''}",
        highlight=False,
    )
    tiling = record.get("tiling")
    if tiling:
        table = Table(title="tiling record", show_header=False)
        for key, value in tiling.items():
            table.add_row(key, str(value))
        console.print(table)
    metrics = {
        k: v
        for k, v in (record.get("metrics") or {}).items()
        if k not in ("worst", "hist", "nonfinite")
    }
    if metrics:
        table = Table(title="metrics", show_header=False)
        for key, value in metrics.items():
            table.add_row(key, f"{value:.6g}" if isinstance(value, float) else str(value))
        console.print(table)
    worst = (record.get("metrics") or {}).get("worst") or []
    if worst:
        table = Table(title="worst elements")
        for column in worst[0]:
            table.add_column(column)
        for row in worst:
            table.add_row(*[str(v) for v in row.values()])
        console.print(table)
    for name, verdict in (record.get("standards") or {}).items():
        console.print(f"{name:<18} {verdict['reason']}", highlight=False)
    colour = "green" if record["outcome"] == "passed" else "red"
    console.print(f"[{colour}]{record['outcome']}[/] {record['message']}", highlight=False)
