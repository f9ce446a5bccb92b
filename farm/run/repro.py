"""`farm repro CASE_ID [--host H]`: rerun one case and show everything about it.

The inputs are made from the case's seed, so the description, the tiling record and the metrics
are the same numbers on any host of the case's family. The output says which operator package
(target, planted bug) ran: by default the one of the run the case last ran in, through that run's
backend, the case found in the run's copy of its case file (farm/cli/case_package.py resolves
them: a failure of a planted bug's run fails again), else the emulated real kernel (ascendc-cpu)
through the first backend.
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from farm.agent.record import ResultRecord
from farm.run import prepare
from farm.run.requests import case_request
from farm.run.session import PoolSession, add_case_file_args, add_pool_args
from farm.util import paths
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import ConfigError
from suites.caseset import find_case


def parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="farm repro", description=__doc__.split("\n\n")[0])
    parser.add_argument("case_id")
    add_case_file_args(parser)
    parser.add_argument("--host", help="run on this host (default: any healthy host of the family)")
    add_pool_args(parser, plant_bug="rerun on an operator built with a known bug", of_run=True)
    parser.add_argument(
        "--run",
        metavar="RUN",
        help="take --target and --plant-bug from this run (default: the newest run in the store "
        "that holds the case)",
    )
    parser.add_argument("--store", help="the run store (default: $FARM_STORE or runs/)")
    parser.add_argument("--json", action="store_true", help="print the whole record as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """`farm repro` with --target and --plant-bug as given (None: the defaults); the farm
    command's entry (farm/cli/repro_command.py) fills them in from the case's run first."""
    return reproduce(parser().parse_args(argv))


def reproduce(args: argparse.Namespace) -> int:
    from farm.pool import build

    target = args.target or build.DEFAULT_TARGET
    plant_bug = "" if args.plant_bug in (None, "none") else args.plant_bug
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
        target=target,
        plant_bug=plant_bug,
        host=args.host,
        run_dir=paths.RUNS_DIR / "repro",
        case_timeout=args.case_timeout,
    ) as pool:
        record = pool.run(case)
        target = pool.target_name
    from farm.agent.execute import descriptor_only, make_call_inputs
    from golden import inputs

    described = {}
    if not descriptor_only(case_request(case)):
        dy, y = make_call_inputs(case_request(case))
        described = {
            name: inputs.describe_array(t) for name, t in (("dy", dy), ("y", y)) if t is not None
        }
    if args.json:
        print(
            json.dumps(
                {
                    "case": case.to_dict(),
                    "target": target,
                    "plant_bug": plant_bug,
                    "inputs": described,
                    "record": record,
                },
                indent=1,
                default=str,
            )
        )
    else:
        show(FarmConsole(), case, described, record, target, plant_bug)
    from farm.run.finish import ExitCode  # farm run's codes

    code = {"passed": ExitCode.OK, "failed": ExitCode.PRODUCT}.get(
        record["outcome"], ExitCode.INFRA
    )
    return int(code)


def show(
    console: Console,
    case,
    described: dict,
    record: ResultRecord,
    target: str = "",
    plant_bug: str = "",
) -> None:
    from farm.pool.build import describe

    console.print(
        f"[bold]{escape(case.id)}[/]  seed {case.seed}  "
        f"on {record.get('slot')} ({record.get('soc')})",
        highlight=False,
    )
    if target:
        bug = f", planted bug {plant_bug}" if plant_bug else ""
        console.print(f"target   {describe(target)}{bug}", highlight=False, markup=False)
    # What cases, operators and standards say is text: brackets in it are not rich's markup.
    console.print(f"expect   {case.expectation()}", highlight=False, markup=False)
    if case.note:
        console.print(f"note     {case.note}", highlight=False, markup=False)
    for name, desc in described.items():
        console.print(f"{name:<8} {desc}", highlight=False, markup=False)
    console.print(
        f"status   {record.get('status')} {record.get('reason')} {record.get('op_message') or ''}",
        highlight=False,
        markup=False,
    )
    from farm.run.allure.description import device_line

    device = device_line(record)
    if device:
        console.print(device, highlight=False, markup=False)
    tiling = record.get("tiling")
    if tiling:
        table = Table(title="tiling record", show_header=False)
        for key, value in tiling.items():
            table.add_row(key, Text(str(value)))
        console.print(table)
    metrics = {
        k: v
        for k, v in (record.get("metrics") or {}).items()
        if k not in ("worst", "hist", "bound_hist", "nonfinite")
    }
    if metrics:
        table = Table(title="metrics", show_header=False)
        for key, value in metrics.items():
            table.add_row(key, Text(f"{value:.6g}" if isinstance(value, float) else str(value)))
        console.print(table)
    worst = (record.get("metrics") or {}).get("worst") or []
    if worst:
        table = Table(title="worst elements")
        for column in worst[0]:
            table.add_column(column)
        for row in worst:
            table.add_row(*[Text(str(v)) for v in row.values()])
        console.print(table)
    for name, verdict in (record.get("standards") or {}).items():
        console.print(f"{name:<18} {verdict['reason']}", highlight=False, markup=False)
    colour = "green" if record["outcome"] == "passed" else "red"
    console.print(f"[{colour}]{record['outcome']}[/] {escape(record['message'])}", highlight=False)
