"""The end of a stored run, as `farm run` and `farm merge` make it: its quality gate and triage
(judgement), what summary.json adds of them, what the terminal says of them, its report, and a
run whose report was not made (degraded). Each change of the run's exit code goes through
farm/run/finish.py decide."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from farm.agent.record import ResultRecord
from farm.results.store import RunStore, StoreLocation
from farm.run import fault_injection, outputs
from farm.run.finish import RunFacts, decide
from farm.run.plan import Plan
from farm.util import run_dir as run_dir_mod
from farm.util.errors import RunDirUnwritable, StoreError


def judge(console: Console, store_path: StoreLocation, run: dict, records: list, facts: RunFacts):
    """The finished run's quality gate (farm_gate, as its report shows it) and the triage of its
    failures: (exit code, gate, (Triage, [NextSteps])). A gate that fails while every case passed
    makes the exit code 1, in the store as well."""
    facts, judged = judgement(console, store_path, run, records, facts)
    code = int(decide(facts).exit_code)
    return (code, [], None) if judged is None else (code, judged.gate, judged.triage)


def judgement(console: Console, store_path: StoreLocation, run: dict, records: list, facts):
    """judge's work, kept for the run's report (report.Judged; None when the store refused):
    (the run's facts with the gate's verdict, Judged | None). ``run``: the run's metadata with
    its stored status and subset."""
    from farm.results.compare import compare
    from farm.results.report import Judged, farm_gate, gate_exit_code
    from farm.results.triage_next import with_baseline

    try:
        with RunStore(store_path) as store:
            comparison = compare(store, run["run_id"])
            followup = with_baseline(store, records, run)
        gate = farm_gate(Path(run["run_dir"]) / "allure-results", run, comparison)
        judged_facts = dataclasses.replace(facts, gate_failed=gate_exit_code(gate) == 1)
        before, after = decide(facts), decide(judged_facts)
        if after.stored_code != before.stored_code:
            with RunStore(store_path) as store:
                store.finish_run(
                    run["run_id"], int(after.stored_code), status=after.status, subset=run["subset"]
                )
    except StoreError as exc:  # the run is stored; farm report can judge it later
        console.print(f"[yellow]note:[/] quality gate and triage not made: {escape(str(exc))}")
        return facts, None
    return judged_facts, Judged(comparison, gate, followup)


def with_trend(store_path: StoreLocation, tier: str, judged):
    """`judged` with its report's precision trend PNG (report.Judged.trend), drawn here while
    the cases' plots are drawn in the background: off the report's path. A store or a plot that
    fails leaves it to the report, which then says why."""
    from farm.results.report import TREND_RUNS
    from farm.run.trend_plot import trend_png

    try:
        with RunStore(store_path) as store:
            series = store.metric_series(tier, TREND_RUNS)
        return dataclasses.replace(judged, trend=trend_png(series)) if series else judged
    except Exception:  # noqa: BLE001 - the report draws it again and reports what failed
        return judged


def summary_extra(gate, followup) -> dict:
    """summary.json's quality_gate (each rule as the report's Quality Gates tab shows it) and
    triage (farm/results/triage_next.py triage_json)."""
    from farm.results.triage_next import triage_json

    extra: dict = {"quality_gate": [rule.to_allure() for rule in gate]} if gate else {}
    if followup is not None:
        extra["triage"] = triage_json(*followup)
    return extra


def print_gate(console: Console, gate) -> None:
    """The gate's failed rules, where no report says them (farm report prints every rule)."""
    for rule in gate:
        if not rule.success:
            console.print(f"quality gate: {rule.message}", markup=False, highlight=False)


def print_triage(console: Console, followup) -> None:
    """For a run with failures, its triage: the last block a red run prints, after its report
    and gate lines, so that what to do next is what a person reads first from the prompt up
    (plain text: case ids and commands hold brackets rich would read as markup)."""
    if followup is None or not followup[0].failures:
        return
    from farm.results.triage_next import lines

    console.print("triage   what the failures share:", highlight=False)
    for line in lines(*followup):
        console.print(line, markup=False, highlight=False)


def make_report(
    run_id: str, store_path: StoreLocation, history_runs: int | None, judged=None, allure=None
) -> str | None:
    """The run's report; None when it was made, else why not in one line (its gate and
    regressions are the report's to say: farm report prints them). `judged`: the run's
    report.Judged, when this process has it; `allure`: an allure_process.AllureProcess
    waiting."""
    from farm.results import report as report_mod
    from farm.results.report_history import HISTORY_RUNS

    # history_runs None: farm report's default
    request = report_mod.ReportRequest(
        run=run_id, store=store_path, history_runs=history_runs or HISTORY_RUNS
    )
    fault_injection.enter(fault_injection.REPORT)
    try:
        made = report_mod.make_report(request, judged=judged, allure=allure)
    except RunDirUnwritable as exc:
        return str(exc)
    if made == report_mod.EXIT_NO_REPORT:
        return f"no report was made for run {run_id} (farm report said why, above)"
    return None


def degraded(
    plan: Plan,
    store_path: StoreLocation,
    records: list[ResultRecord],
    quarantined,
    extra=None,
    facts: RunFacts | None = None,
) -> int:
    """A run whose outputs could not all be made after it was stored (its report) exits 2, and
    the store and the summary say 2 as well where they can still be written. ``facts``: what
    was known of the run until then."""
    outcome = decide(dataclasses.replace(facts or RunFacts(), report_failed=True))
    with contextlib.suppress(StoreError, OSError), RunStore(store_path) as store:
        store.finish_run(plan.run_id, int(outcome.stored_code), status=outcome.status)
    with contextlib.suppress(OSError):
        outputs.write_summary(plan, records, int(outcome.stored_code), quarantined, extra)
    return int(outcome.exit_code)


def say_the_run(
    console: Console, plan: Plan, store: StoreLocation, code: int, json_summary: str | None
) -> None:
    """The run's last lines, for a person and a script: where it is stored (the location,
    its password masked), its summary copied to ``json_summary`` (when the run wrote none: its
    run id, directory and exit code), and ``run_id=<id>`` alone on the last line of stdout."""
    console.print(f"store    {store.display}", markup=False, highlight=False)
    if json_summary:
        summary = plan.run_dir / outputs.SUMMARY_JSON
        try:
            text = summary.read_bytes()
        except FileNotFoundError:
            stub = {"run_id": plan.run_id, "run_dir": str(plan.run_dir), "exit_code": code}
            text = (json.dumps(stub, indent=1) + "\n").encode()
        try:
            run_dir_mod.write_whole(Path(json_summary), text)
        except OSError as exc:
            console.print(
                f"[red]error:[/] --json-summary {escape(json_summary)}: {escape(str(exc))}; "
                f"the run's summary is {escape(str(summary))}",
                highlight=False,
            )
    with contextlib.suppress(BrokenPipeError):  # `farm run | head`: gone before the last line
        print(f"run_id={plan.run_id}", flush=True)
