"""`farm`: the command line. Thin: each subcommand hands over to the module that does the work."""

from __future__ import annotations

import argparse
import json
import sys
import time

from rich.console import Console
from rich.table import Table


def _cmd_cases(args) -> int:
    from suites import matrix, summary

    started = time.perf_counter()
    cases = matrix.expand(args.tier)
    elapsed = time.perf_counter() - started
    if args.json:
        json.dump([c.to_dict() for c in cases], sys.stdout, indent=None)
        sys.stdout.write("\n")
        return 0
    console = Console()
    if not args.summary:
        for case in cases:
            console.print(case.id, highlight=False)
        return 0
    head = Table(title=f"tier {args.tier}: expanded in {elapsed:.2f} s", show_header=False)
    for key, value in summary.totals(cases).items():
        head.add_row(key, f"{value:,}")
    console.print(head)
    for name, counts in summary.coverage(cases).items():
        table = Table(title=name, title_justify="left")
        table.add_column(name)
        table.add_column("cases", justify="right")
        for key, value in counts.items():
            table.add_row(key, f"{value:,}")
        console.print(table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="farm", description="Precision and regression test farm for LogSoftmaxGrad"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    cases = sub.add_parser("cases", help="list the cases of a tier, or its coverage")
    cases.add_argument("--tier", default="smoke", help="smoke | nightly | full")
    group = cases.add_mutually_exclusive_group()
    group.add_argument("--summary", action="store_true", help="coverage counts")
    group.add_argument("--json", action="store_true", help="every case as JSON")
    cases.set_defaults(func=_cmd_cases)
    return parser


def main(argv: list[str] | None = None) -> int:
    from farm.errors import FarmError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FarmError, ValueError) as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
