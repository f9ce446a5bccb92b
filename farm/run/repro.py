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
from farm.run.session import PoolSession


def find_case(case_id: str, case_files: tuple[str, ...] = ()):
    from suites.caseset import find_case as find

    return find(case_id, case_files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="farm repro", description=__doc__.splitlines()[0])
    parser.add_argument("case_id")
    parser.add_argument(
        "--cases",
        action="append",
        default=[],
        metavar="FILE",
        help="the case file the case came from (tier and explored cases are found without)",
    )
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
    parser.add_argument("--plant-bug", default="", choices=build.PLANT_BUGS, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the whole record as JSON")
    args = parser.parse_args(argv)

    case = find_case(args.case_id, tuple(args.cases))
    if args.host:
        spec = prepare.load_pool(args.inventory).host(args.host)
        if spec.family != case.family:
            raise ConfigError(
                f"host {args.host} is {spec.soc} ({spec.family}); case {case.id} runs on "
                f"{case.family}: pick a host of that family"
            )
    with PoolSession(
        args.inventory,
        backend=args.backend,
        target=args.target,
        plant_bug=args.plant_bug,
        host=args.host,
        run_dir=paths.RUNS_DIR / "repro",
    ) as pool:
        record = pool.run(case)
        target = pool.target_name
    from farm.agent.execute import descriptor_only, make_call_inputs
    from golden import inputs

    described = {}
    if not descriptor_only(case.to_dict()):
        dy, y = make_call_inputs(case.to_dict())
        described = {
            name: inputs.describe_array(t) for name, t in (("dy", dy), ("y", y)) if t is not None
        }
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
    if case.note:
        console.print(f"note     {case.note}", highlight=False)
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
