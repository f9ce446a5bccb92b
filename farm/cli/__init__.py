"""`farm`: the command line. Thin: each subcommand hands its arguments to the module that does
the work, so `farm X --help` is that module's own help."""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import signal
import sys
import threading
import time
import traceback

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from farm import __version__
from farm.run import options
from farm.util import announce, command_end, interrupts
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import FarmError
from farm.util.visible import visible


def _selection_args(parser: argparse.ArgumentParser) -> None:
    """--tier, --cases, --explore (farm/run/options.py), --explore-count: what a run (or a
    listing) takes."""
    from suites.explore import DEFAULT_COUNT

    options.add_to_parser(parser, options.SELECTION)
    parser.add_argument(
        "--explore-count",
        type=int,
        default=DEFAULT_COUNT,
        help=f"how many cases --explore draws (default {DEFAULT_COUNT})",
    )


def _selection(args):
    from suites import explore
    from suites.caseset import Selection

    salt = args.explore
    if salt == "":
        salt = explore.nightly_salt(run_group=getattr(args, "run_group", None))
    return Selection(
        tier=args.tier or (None if args.cases else "smoke"),
        files=tuple(args.cases),
        explore=salt,
        explore_count=args.explore_count,
    )


def _refuse_oversized(cases, inventory: str | None) -> None:
    """A case that no host would hold is refused here as `farm run` refuses it (docs/case-files.md
    "Memory"): against the inventory's budgets, or the default budget without one."""
    from suites import footprint

    if inventory:
        from farm.pool.inventory import load_inventory

        footprint.refuse_oversized(cases, footprint.pool_budgets(load_inventory(inventory).hosts))
    else:
        footprint.refuse_oversized(cases)


def cmd_cases(argv: list[str]) -> int:
    if argv[:1] == ["import"]:
        from suites.importers import command

        return command.main(argv[1:])
    if argv[:1] == ["promote"]:
        from farm.results import promote

        return promote.main(argv[1:])
    from suites import casefile, summary

    parser = CommandParser(
        prog="farm cases",
        description="the cases of a tier, case files or an exploration; also `farm cases "
        "import` (outside suites' files) and `farm cases promote` (cases of a run into a file)",
    )
    _selection_args(parser)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--summary", action="store_true", help="coverage counts")
    group.add_argument("--json", action="store_true", help="every case as a JSON case file")
    group.add_argument(
        "-o", "--output", metavar="FILE", help="write a case file (.json .yaml .csv)"
    )
    parser.add_argument(
        "--inventory",
        metavar="FILE",
        help="refuse cases over this pool's memory_budget (default: the farm's default budget)",
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    chosen = _selection(args)
    cases = chosen.cases()
    elapsed = time.perf_counter() - started
    _refuse_oversized(cases, args.inventory)
    if args.json:
        json.dump(casefile.document(cases, chosen.label), sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    console = FarmConsole()
    if args.output:
        path = casefile.dump(cases, args.output, source=chosen.label)
        console.print(f"{len(cases):,} cases written to {path}", highlight=False, markup=False)
        return 0
    if not args.summary:
        for case in cases:
            console.print(case.id, highlight=False)
        return 0
    head = Table(title=f"{chosen.label}: expanded in {elapsed:.2f} s", show_header=False)
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


def cmd_run(argv: list[str]) -> int:
    import dataclasses

    from farm.cli import run_command
    from farm.pool import build
    from farm.results.report import add_history_runs_option
    from suites.explore import DEFAULT_COUNT as DEFAULT_EXPLORE_COUNT

    parser = CommandParser(
        prog="farm run",
        description="build, health-check, deploy, run a tier (or case files), store and "
        "report. Exit 0: all passed; 1: product failures; 2: degraded or incomplete by "
        "infrastructure, or a usage error.",
    )
    _selection_args(parser)
    options.add_to_parser(parser, options.POOL)
    parser.add_argument(
        "--plant-bug",
        default="",
        choices=build.BUG_NAMES,
        metavar="BUG",
        help=build.plant_bug_help(
            "run an operator built with a known bug (to see the farm catch it)"
        ),
    )
    parser.add_argument(
        "--jobs",
        type=int,
        help="pytest-xdist workers (default: one per core, at most one per slot; 1: pytest in "
        "this process)",
    )
    options.add_to_parser(parser, options.LIMITS)
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    add_history_runs_option(parser, default=None)  # None: farm report's default
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="plain progress lines (done/total, failed, broken, ETA; every 25 s at most) instead "
        "of the live display, as a log or a pipe gets anyway",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="run the K-th of N shards of the selection (split by estimated cost; every job "
        "computes the same split), as one shard of --run-group; farm merge makes them one run",
    )
    parser.add_argument(
        "--run-group",
        metavar="ID",
        help="the logical run this shard is part of (e.g. the CI pipeline id)",
    )
    parser.add_argument(
        "--store",
        help="run store: a SQLite file or postgresql://USER:PASSWORD@HOST/DB (default: "
        "$FARM_STORE, else runs/farm.sqlite; prefer $FARM_STORE for a URL with a password)",
    )
    parser.add_argument(
        "--json-summary",
        metavar="FILE",
        help="also write the run's summary JSON (its run_id, exit_code, outcomes, junit...) to "
        "FILE, for a CI script; the last line of stdout is run_id=<id> either way",
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest (e.g. -k)")
    args = parser.parse_args(argv)
    if args.store:  # the run's every process and command finds the store where the farm's do
        os.environ["FARM_STORE"] = args.store
    chosen = _selection(args)
    if not chosen.explore_count:  # --explore-count 0: the default count, as farm run took it
        chosen = dataclasses.replace(chosen, explore_count=DEFAULT_EXPLORE_COUNT)
    return run_command.run(
        chosen,
        args.inventory,
        args.backend,
        target=args.target,
        plant_bug=args.plant_bug,
        jobs=args.jobs,
        case_timeout=args.case_timeout,
        report=not args.no_report,
        extra_pytest=args.pytest_args,
        progress=not args.no_progress,
        history_runs=args.history_runs,
        shard=args.shard,
        run_group=args.run_group,
        json_summary=args.json_summary,
    )


# The columns of health.host_rows that `farm hosts` shows (--json gives them all).
HOSTS_SHOWN = (
    "host",
    "address",
    "arch",
    "soc",
    "devices",
    "cann",
    "driver",
    "chip",
    "judging",
    "state",
    "reason",
    "since",
)


def cmd_hosts(argv: list[str]) -> int:
    from farm.pool.health import checks as health
    from farm.run import prepare
    from farm.util import paths

    parser = CommandParser(prog="farm hosts", description="the pool and its health")
    parser.add_argument("--inventory", help="TOML inventory (default: the embedded local pool)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="deploy and health-check every host now (updates the quarantine; exit 2 when a "
        "host is bad)",
    )
    parser.add_argument(
        "--deep",
        action="store_true",
        help="first contact with CANN: build and install the CANN package as `farm run --target "
        "ascend --backend acl` does, then check on every host each assumption of the device "
        "path, a line each with the fix (exit 2 when one fails)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="the pool as JSON, typed, each host's chips under it (docs/hosts.schema.json)",
    )
    args = parser.parse_args(argv)
    if args.deep:
        return _first_contact(args.inventory, as_json=args.json)
    inventory = prepare.load_pool(args.inventory)
    healths = None
    if args.check:
        hosts = len(inventory.hosts)
        started = time.time()  # what the quarantine recorded since is what this check read
        # The package built if need be, deployed, each host checked: seconds to minutes.
        with FarmConsole(stderr=True).status(f"checking {hosts} host{'s' * (hosts != 1)}"):
            plan = prepare.prepare_pool(args.inventory, run_dir=paths.STATE_DIR / "last-check")
        healths = {
            name: health.HostHealth(name, health.BAD, [why], checked_at=started)
            for name, why in plan.unhealthy.items()
        }
        for name in plan.hosts:
            healths[name] = health.HostHealth(
                name,
                health.GOOD,
                [],
                checked_at=started,
                set_aside=health.devices_of(plan.set_aside, name),
            )
    # A check that finds a host bad is a failed check, as a run's would be: exit 2.
    code = 2 if args.check and any(h.state == health.BAD for h in (healths or {}).values()) else 0
    if args.json:  # typed, chips under their host: docs/hosts.schema.json
        json.dump(health.pool_health(inventory, paths.STATE_DIR, healths), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return code
    rows = health.host_rows(inventory, paths.STATE_DIR, healths)
    if not sys.stdout.isatty():  # pipes and logs get every character, a line a host
        from farm.results.compare_render import plain_table

        print(
            "\n".join(plain_table(HOSTS_SHOWN, [[row[c] for c in HOSTS_SHOWN] for row in rows], ""))
        )
        return code
    table = Table(title="pool" + (" (just checked)" if args.check else ""))
    for column in HOSTS_SHOWN:
        table.add_column(column, overflow="fold")
    colour = {"good": "green", "bad": "red", health.SET_ASIDE: "yellow"}
    for row in rows:
        state = row["state"]
        # Text: reasons and paths are shown as they are, never read as rich markup.
        table.add_row(
            *[
                Text(str(row[c] or ""), style=colour.get(state, "") if c == "state" else "")
                for c in HOSTS_SHOWN
            ]
        )
    FarmConsole().print(table)
    return code


def _first_contact(inventory_path: str | None, *, as_json: bool) -> int:
    """`farm hosts --check --deep`: the pool prepared for the CANN package through ACL, then
    farm/agent/first_contact.py on every host (farm/pool/first_contact.py)."""
    from farm.pool import first_contact
    from farm.run import prepare
    from farm.util import paths

    inventory = prepare.load_pool(inventory_path)
    console = FarmConsole(stderr=True)
    hosts = len(inventory.hosts)
    # Its own state (bundle, quarantine): what it finds is for a person to read, not the runs'.
    state = paths.STATE_DIR / "first-contact"
    with console.status(f"building the CANN package and checking {hosts} host(s)"):
        plan = prepare.prepare_pool(
            inventory_path,
            backend="acl",
            run_dir=state / "check",
            state_dir=state,
            target="ascend",
            with_canary=False,
        )
    with console.status("first contact: every assumption of the device path, host by host"):
        found = first_contact.check_pool(inventory, plan.hosts, plan.unhealthy, plan.set_aside)
    if as_json:
        rows = [{"host": h.host, "checks": [c.to_wire() for c in h.checks]} for h in found]
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        colour = {"ok": "green", "warn": "yellow", "fail": "red"}
        out = FarmConsole()
        width = max((len(h.host) for h in found), default=0)
        for h in found:
            for c in h.checks:
                fix = f" [dim]fix:[/] {escape(c.fix)}" if c.status != "ok" and c.fix else ""
                out.print(
                    f"{escape(h.host.ljust(width))}  [{colour[c.status]}]{c.status:4}[/]  "
                    f"{c.check:11} {escape(visible(c.detail))}{fix}",
                    highlight=False,
                )
    failed = [h.host for h in found if h.failed]
    if failed:
        console.print(f"first contact failed on {', '.join(failed)}: each line says the fix")
        return 2
    return 0


def cmd_repro(argv: list[str]) -> int:
    from farm.cli import repro_command

    return repro_command.main(argv)


def _delegate(module: str, function: str = "main"):
    def run(argv: list[str]) -> int:
        import importlib

        return getattr(importlib.import_module(module), function)(argv)

    return run


COMMANDS = {
    "run": (cmd_run, "run a tier on the pool, store the results, write the report"),
    "cases": (
        cmd_cases,
        "list cases (a tier, --cases files, --explore), write case files; import, promote",
    ),
    "hosts": (cmd_hosts, "the pool and its health (--check to check now)"),
    "merge": (
        _delegate("farm.cli.merge_command"),
        "make the shards of a sharded run (--shard, --run-group) one run",
    ),
    "repro": (cmd_repro, "rerun one case and print its inputs, tiling and metrics"),
    "shrink": (
        _delegate("farm.cli.shrink_command"),
        "the smallest case that still fails the same way",
    ),
    "bisect": (
        _delegate("farm.cli.bisect_command"),
        "find the first commit where selected cases fail",
    ),
    "coverage": (
        _delegate("farm.cli.coverage_command"),
        "line and branch coverage of the operator's real sources over a tier (gcov, gcovr)",
    ),
    "mutate": (
        _delegate("farm.cli.mutate_command"),
        "the mutation score of a tier: edits of the real sources, built and run",
    ),
    "triage": (_delegate("farm.results.triage_command"), "what a run's failures share, ranked"),
    "build": (_delegate("farm.pool.build"), "build the operator package (dist/op)"),
    "lab": (
        _delegate("farm.pool.lab.command"),
        "start or stop the local SSH lab (up | down | status)",
    ),
    "report": (_delegate("farm.results.report"), "write the HTML report of a run"),
    "runs": (
        _delegate("farm.results.commands", "main_runs"),
        "list the runs in the store and its size; prune: retention",
    ),
    "store": (
        _delegate("farm.results.store_command"),
        "the run store: info; migrate a store's history into another (SQLite to PostgreSQL)",
    ),
    "baseline": (
        _delegate("farm.results.commands", "main_baseline"),
        "set or show the baseline run",
    ),
    "compare": (
        _delegate("farm.results.commands", "main_compare"),
        "regressions of a run vs baseline",
    ),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [
        "usage: farm COMMAND [ARGS]  (farm COMMAND --help for more; farm --version)",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:

    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"farm {__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"farm: unknown command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    from farm.results.store.location import redact  # a store's password, wherever it is quoted

    with announce.saying(announce.to_stderr):  # every build says its start and end
        # command_end.run_command, never imported by its name: farm.cli.run_command, a module,
        # replaced that name here once imported (a later farm command of the process failed).
        return command_end.run_command(command, lambda: COMMANDS[command][0](rest), redact=redact)


# The exit codes of a command stopped by a signal (128 + the signal).
STOPPED = frozenset(128 + s for s in (*interrupts.STOPS, signal.SIGPIPE))


def standard_streams() -> None:
    """A standard stream the command was started without (`farm run >&-`, a supervisor that
    closes them) is /dev/null: Python leaves sys.stdout None (the command's last flush failed,
    exit 2 after a run stored as passed), and the first file the farm opened took its number,
    which its agents and workers would have written to as their own stdout."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)  # the lowest free: fd
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))


def entry() -> int:
    """The ``farm`` command (and ``python -m farm.cli``): :func:`main`, then the process ends.
    Its objects (a run's records and cases, say) are frozen first: the interpreter's
    finalization would otherwise walk them all with the cyclic garbage collector (~0.5 s after a
    nightly run) before the command returns to its caller."""
    standard_streams()
    # A terminal or log whose encoding lacks a character the farm prints (a Latin-1 locale and
    # "→", a path in another script) shows its escape instead of ending the command.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        code = main()
    except Exception:  # the farm's own failure: exit 2, never 1, which says the operator failed
        traceback.print_exc()
        print(
            f"error: the farm itself failed (the traceback above is its own: please report it); "
            f"exit {FarmError.exit_code}",
            file=sys.stderr,
        )
        code = FarmError.exit_code
    gc.freeze()
    if code in STOPPED and any(
        not t.daemon and t is not threading.main_thread() for t in threading.enumerate()
    ):
        # Stopped by a signal, its way out run: what is left is work on hosts under way in
        # threads (farm/pool/host_threads.py), which the interpreter's exit would wait for (an
        # SSH connect for its whole timeout) and a signal's default action would have ended.
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    return code
