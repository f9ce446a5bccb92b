"""`farm report`: the Allure 3 report of a stored run, and its exit code, the farm's quality gate.

The entry is a typed call: `make_report(ReportRequest(...))`, which `farm run` (its report step)
and `farm merge` make; `main(argv)` (the `farm report` command) only parses its arguments into a
ReportRequest. The parts, by job:

    farm/results/gate.py              the quality gate (farm_gate) that decides the exit code
    farm/results/report_generate.py   Allure 3's generation of the report (generate)
    farm/results/report_history.py    the tier's history each report reads and adds its line to
    farm/results/allure_input.py      what Allure reads of the run's allure-results
    farm/results/report_out_dir.py    which directory a report may replace
    farm/results/report_single_file.py  index.html made the whole report, when small enough
    farm/results/report_serve.py      `farm report --open`: the report served on 127.0.0.1
    farm/results/run_paths.py         where a stored run's directory, results and report are
    farm/run/allure/process.py        the Allure 3 process (started early by `farm run`)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.results import coverage_files
from farm.results.gate import GateRule, farm_gate, gate_exit_code
from farm.results.report_generate import generate
from farm.results.report_history import HISTORY_RUNS
from farm.results.report_out_dir import check_out_dir
from farm.results.run_paths import default_report_dir, default_results_dir, run_dir_of
from farm.results.store.location import StoreLocation
from farm.results.store.stored_history import StoredHistory
from farm.run.allure.process import AllureProcess
from farm.util.argparsing import CommandParser, make_output_dir, whole_number
from farm.util.console import FarmConsole
from farm.util.errors import ToolMissing

TREND_RUNS = 20  # the runs the precision trend plot shows
# farm report's exit code when it made no report (an unknown run, Allure missing or failing).
EXIT_NO_REPORT = 2


@dataclass(frozen=True)
class ReportRequest:
    """What a report is asked for: `farm report`'s arguments, parsed (main), or what `farm run`
    and `farm merge` ask for their run. The defaults are farm report's."""

    # The run; None: the newest run that finished.
    run: str | None = None
    # The store: a SQLite path, a postgresql:// URL or a location; None: $FARM_STORE or
    # runs/farm.sqlite.
    store: str | os.PathLike | StoreLocation | None = None
    # The allure-results directory; None: <run dir>/allure-results (run_paths.run_dir_of).
    results: Path | None = None
    # The report's directory, replaced whole (report_out_dir.check_out_dir); None:
    # <run dir>/report.
    out: Path | None = None
    # The run compared with; None: the tier's baseline.
    baseline: str | None = None
    # How many times its baseline's error a case's may grow; None: the comparison's default
    # (farm/results/compare.py DEFAULT_DRIFT_FACTOR).
    drift_factor: float | None = None
    # The runs the precision trend plot shows.
    trend_runs: int = TREND_RUNS
    # False: the report reads and keeps no history (--no-history).
    history: bool = True
    # The reports the tier's history keeps, which each case's History tab shows.
    history_runs: int = HISTORY_RUNS
    # False: the gate leaves out its noRegressions rule (--no-regression-gate).
    regression_gate: bool = True


@dataclass(frozen=True)
class Judged:
    """What `farm run` has already worked out of the run it stored, with farm report's defaults
    (the tier's baseline, the default drift factor, the regression gate on): the comparison, the
    quality gate (farm_gate) and the triage (Triage, [NextSteps]). Its report takes them as they
    are: each costs a read of the whole run (its results files, its stored records)."""

    comparison: Any
    gate: list[GateRule]
    triage: Any
    # The precision trend PNG of the tier's last TREND_RUNS runs, this one's included (`farm run`
    # draws it while its cases' plots are drawn); None: the report draws it.
    trend: bytes | None = None
    # Every pending error-distribution plot is drawn (`farm run` drew them while it stored the
    # records): the report does not look for them again.
    plots_drawn: bool = False


def takes_judged(request: ReportRequest, judged: Judged, run_id: str) -> bool:
    """Whether `judged` (farm run's, of the run it stored) stands for the report's comparison,
    gate and triage: only where the request asks for the defaults it was made with."""
    from farm.results.compare import DEFAULT_DRIFT_FACTOR

    factor = request.drift_factor
    defaults = request.baseline is None and factor in (None, DEFAULT_DRIFT_FACTOR)
    return defaults and request.regression_gate and judged.comparison.run_id == run_id


def requested_run(store, request: ReportRequest, location) -> dict | None:
    """The run `request` names, else the last one that finished (an interrupted run is no
    report's default); an unknown run is a UsageError; None, said on stderr, when the store has
    no finished run."""
    from farm.results.arguments import unknown_run

    run = store.get_run(request.run) if request.run else store.latest_run(finished=True)
    if run is None and request.run:
        raise unknown_run(f"unknown run {request.run!r}", location)
    if run is None:
        print(
            f"farm report: no finished run in the store {location}; `farm run` makes one",
            file=sys.stderr,
        )
    return run


def make_report(
    request: ReportRequest, judged: Judged | None = None, allure: AllureProcess | None = None
) -> int:
    """The report `request` asks for, and its exit code: the farm's quality gate (farm_gate,
    the report's Quality Gates tab): 0 when every rule passes, 1 otherwise, 2 (EXIT_NO_REPORT)
    when the run did not finish or the report could not be made (each said on stderr). A runs
    directory that refuses the report's files is a RunDirUnwritable; an unknown run or an --out
    that is no report's directory a UsageError.

    `judged`: the run's Judged, when the caller has it (farm run); `allure`: Allure already
    started and waiting (AllureProcess)."""
    from farm.results.compare import DEFAULT_DRIFT_FACTOR, compare
    from farm.results.compare_render import summary_line
    from farm.results.store import open_existing, store_location
    from farm.results.triage_next import run_triage

    if request.out is not None:  # before any work, not after it
        out = Path(request.out).resolve()
        check_out_dir(out)
        make_output_dir(out, "--out")

    location = store_location(request.store)
    drift = DEFAULT_DRIFT_FACTOR if request.drift_factor is None else request.drift_factor
    with open_existing(location) as store:
        run = requested_run(store, request, location)
        if run is None:
            return EXIT_NO_REPORT
        run_id, tier = run["run_id"], run["tier"]
        if judged is not None and not takes_judged(request, judged, run_id):
            judged = None
        try:
            comp = (
                compare(store, run_id, request.baseline, drift)
                if judged is None
                else judged.comparison
            )
        except KeyError as exc:
            print(f"farm report: {exc.args[0]}", file=sys.stderr)
            return EXIT_NO_REPORT
        except ValueError as exc:  # a bad --drift-factor
            print(f"farm report: {exc}", file=sys.stderr)
            return EXIT_NO_REPORT
        trend = judged.trend if judged is not None and request.trend_runs == TREND_RUNS else None
        series = store.metric_series(tier, request.trend_runs) if trend is None else None
        # bisected from --baseline
        triage = run_triage(store, run_id, comp.baseline_id) if judged is None else judged.triage
    results = Path(request.results) if request.results else default_results_dir(run, location)
    from farm.results.shrink_links import link_shrinks
    from farm.util import run_dir

    out = Path(request.out) if request.out else default_report_dir(run, location)
    history = StoredHistory(location, tier, run_id) if request.history else None
    try:
        # Allure's generation and the plots take seconds (tens for the full tier): a spinner
        # on a terminal says what the wait is; in a log or pipe it prints nothing.
        with FarmConsole(stderr=True).status(f"making the report of run {run_id}"):
            link_shrinks(results, location, run)  # a failing case's shrunk form (farm shrink)
            gate = (
                farm_gate(results, run, comp, regression_gate=request.regression_gate)
                if judged is None
                else judged.gate
            )
            code, index = generate(
                results,
                out,
                history,
                report_name=f"LogSoftmaxGrad {tier} {run_id}",
                comparison=comp,
                trend_series=series,
                trend=trend,
                run_meta=run,
                gate=gate,
                triage=triage,
                history_limit=request.history_runs,
                allure=allure,
                plots_drawn=judged is not None and judged.plots_drawn,
                # `farm coverage`'s page of the run, when it measured one
                extra_attachments=coverage_files.attachments(run_dir_of(run, location)),
            )
    except (ToolMissing, FileNotFoundError) as exc:
        print(f"farm report: {exc}", file=sys.stderr)
        return EXIT_NO_REPORT
    except OSError as exc:  # a full or read-only disk where the report is written
        if not run_dir.is_fault(exc):
            raise
        then = f"then make the report with farm report {run_id} (the run's results are stored)"
        raise run_dir.unwritable(exc, then=then) from None
    if code != 0:
        print(f"farm report: allure generate failed with exit code {code}", file=sys.stderr)
        return EXIT_NO_REPORT
    print(report_line(index, run_id))
    print(summary_line(comp))  # the tables: the report's regression summary, farm compare
    for rule in gate:
        if not rule.success:
            print(f"quality gate: {rule.message}")
    verdict = gate_exit_code(gate)
    if verdict == 0:
        print("quality gate: passed")
    return verdict


def report_line(index: Path, run_id: str) -> str:
    """The line that says where the report is: its page, when that is the whole report
    (report_single_file: it opens from disk), else the command that serves it."""
    from farm.results.report_single_file import is_single_file

    if is_single_file(index):
        return f"report: {index} (opens from disk)"
    return f"report: farm report --open {run_id} (serves {index.parent}: too large for one file)"


def open_report(request: ReportRequest, port: int = 0) -> int:
    """`farm report --open`: serve the run's report on 127.0.0.1 until Ctrl-C (report_serve),
    made first when the run has none; 0, or make_report's exit code 2 when none could be
    made."""
    from farm.results.report_serve import serve_report
    from farm.results.store import open_existing, store_location

    location = store_location(request.store)
    with open_existing(location) as store:
        run = requested_run(store, request, location)
    if run is None:
        return EXIT_NO_REPORT
    out = Path(request.out) if request.out else default_report_dir(run, location)
    if not (out / "index.html").is_file():
        request = dataclasses.replace(request, run=run["run_id"])
        if make_report(request) == EXIT_NO_REPORT:
            return EXIT_NO_REPORT
    return serve_report(out, port, label=f"the report of run {run['run_id']}")


# --------------------------------------------------------------------------- farm report

# --history-runs: reports the tier's history keeps.
history_runs = whole_number(1, "a number of reports")


def add_history_runs_option(parser: argparse.ArgumentParser, default: int | None) -> None:
    """--history-runs, as `farm report` and `farm run` take it."""
    parser.add_argument(
        "--history-runs",
        type=history_runs,
        default=default,
        help=f"reports the tier's history keeps, which each case's History tab shows (default "
        f"{HISTORY_RUNS}; each adds to a report's size, see reports/README.md; fewer also cuts "
        "the older ones from the tier's history)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`farm report [RUN]`: Allure report of a run with history, regression summary and trend.

    Exit code: the farm's quality gate (farm_gate, the report's Quality Gates tab): 0 when every
    rule passes (reports/quality-gate.json's, and no regression against the baseline), 1
    otherwise, 2 when the run did not finish or the report could not be generated (tools missing,
    no results; a runs directory that refuses the report's files is a RunDirUnwritable).
    With --open: the report served on 127.0.0.1 until Ctrl-C, then 0."""
    args = _parser().parse_args(argv)
    request = _request(args)
    if args.open:
        return open_report(request, args.port)
    return make_report(request)


def parse_request(argv: Sequence[str] | None) -> ReportRequest:
    """`farm report`'s arguments as a ReportRequest (argparse exits 2 on bad ones)."""
    return _request(_parser().parse_args(argv))


def _parser() -> argparse.ArgumentParser:
    from farm.results.arguments import drift_factor

    p = CommandParser(prog="farm report", description=main.__doc__)
    p.add_argument("run", nargs="?", help="default: the newest run")
    p.add_argument("--store", default=None, help="default: $FARM_STORE or runs/farm.sqlite")
    p.add_argument(
        "--results",
        help="allure-results dir (default: <run dir>/allure-results,"
        " the run dir being the run's recorded run_dir, else <store dir>/<run>)",
    )
    p.add_argument(
        "--out",
        help="report dir (default: <run dir>/report); it is replaced whole, so a new or empty "
        "one, or a report the farm wrote",
    )
    p.add_argument("--baseline", help="baseline run (default: the tier's baseline)")
    p.add_argument("--drift-factor", type=drift_factor, default=None)
    p.add_argument("--trend-runs", type=whole_number(1), default=TREND_RUNS)
    p.add_argument("--no-history", action="store_true")
    add_history_runs_option(p, default=HISTORY_RUNS)
    p.add_argument(
        "--no-regression-gate",
        action="store_true",
        help="exit 0 on regressions: the gate leaves out its noRegressions rule (the rules of "
        "reports/quality-gate.json still apply)",
    )
    p.add_argument(
        "--open",
        action="store_true",
        help="serve the run's report on 127.0.0.1 until Ctrl-C and print its URL (made first "
        "when the run has none): a report too large to be one file does not open from disk",
    )
    p.add_argument(
        "--port",
        type=whole_number(0, "a port"),
        default=0,
        help="with --open: the port (default: a free one)",
    )
    return p


def _request(args: argparse.Namespace) -> ReportRequest:
    return ReportRequest(
        run=args.run,
        store=args.store,
        results=Path(args.results) if args.results else None,
        out=Path(args.out) if args.out else None,
        baseline=args.baseline,
        drift_factor=args.drift_factor,
        trend_runs=args.trend_runs,
        history=not args.no_history,
        history_runs=args.history_runs,
        regression_gate=not args.no_regression_gate,
    )
