"""`farm run`: build, health, deploy, run the selection through pytest (farm/run/runner.py),
then store the records, judge the run against its baseline, write its outputs, summary, triage
and report; its exit code.

How the run ends (its exit code, the status and code the store and summary say) is decided in
farm/run/finish.py, which says the rules (README.md, the paragraph on `farm run`'s exit codes).
A run whose process is killed outright is found by the next farm command, its written records
imported and the run marked aborted (farm/results/store/runs.py recover_orphans).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import signal
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
from rich.console import Console
from rich.markup import escape

from farm.agent.record import ResultRecord
from farm.cli.judging import (
    degraded,
    judgement,
    make_report,
    print_gate,
    print_triage,
    say_the_run,
    summary_extra,
    with_trend,
)
from farm.pool.health import checks as health
from farm.results.store import RunStore, StoreLocation, timestamps
from farm.run import fault_injection, prepare, runner, scratch
from farm.run import shard as shard_mod
from farm.run.finish import RunFacts, RunOutcome, decide
from farm.run.metadata import RunMetadata
from farm.run.outputs import JUNIT_XML, SUMMARY_JSON, RunOutputs
from farm.run.plan import Plan
from farm.run.records_file import RecordFiles
from farm.run.runner import SessionEnd
from farm.util import interrupts, paths, run_dir, targets
from farm.util.console import FarmConsole
from farm.util.errors import StoreError
from farm.util.interrupts import interruptible, shielded
from farm.util.visible import visible
from suites import footprint
from suites.case import Case
from suites.caseset import Selection as CaseSelection


def run(
    chosen: CaseSelection,
    inventory: str | None = None,
    backend: str | None = None,
    *,
    target: str | None = None,
    plant_bug: str = "",
    jobs: int | None = None,
    case_timeout: float = 60.0,
    report: bool = True,
    extra_pytest: list[str] | None = None,
    console: Console | None = None,
    progress: bool = True,
    history_runs: int | None = None,
    shard: str | None = None,
    run_group: str | None = None,
    json_summary: str | None = None,
    coverage: bool = False,
) -> int:
    """Run the selection ``chosen`` on the pool; the exit code. ``coverage``: the operator's gcov
    build (`farm coverage`, farm/cli/coverage_command.py). ``shard`` ("K/N") and
    ``run_group``: run one shard of the logical run ``run_group`` (farm/run/shard.py; merged by
    farm merge, farm/cli/merge_command.py). ``json_summary``: a file the run's summary.json is
    copied to (:func:`say_the_run`)."""
    console = console or FarmConsole(stderr=True)
    extra_pytest = extra_pytest or []
    backend = targets.backend_for(target, backend)
    part, group = runner.check_options(
        case_timeout=case_timeout,
        jobs=jobs,
        target=target,
        backend=backend,
        extra_pytest=extra_pytest,
        shard=shard,
        run_group=run_group,
    )
    cases = chosen.cases()  # a bad case file stops here: nothing half-parsed ever runs
    cases = shard_mod.pick(cases, part)
    pool = prepare.load_pool(inventory)  # a bad inventory stops here too
    fault_injection.install()
    with run_dir.refusals_as_errors():  # a runs directory that takes no write: one line
        # pytest's JUnit is raw material written outside the runs directory: the run's
        # junit.xml is made from it and the records (reconcile.junit), and a full runs directory
        # cannot make pytest's writer fail inside its hooks.
        scratch.sweep(scratch.JUNIT)
        staging = scratch.make(scratch.JUNIT)
    try:
        with run_dir.refusals_as_errors():
            plan, cases, store_path, meta = _prepare(
                console,
                chosen,
                cases,
                pool,
                inventory,
                backend,
                target,
                plant_bug,
                case_timeout,
                shard=str(part or ""),
                run_group=group,
                coverage=coverage,
            )
        code = _run_session(
            console,
            plan,
            chosen,
            cases,
            store_path,
            meta,
            pytest_junit=staging / JUNIT_XML,
            jobs=jobs,
            report=report,
            extra_pytest=extra_pytest,
            progress=progress,
            history_runs=history_runs,
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if plan.run_group and code in (0, 1, 2):
        from farm.cli import merge_command

        merge_command.after_shard(console, store_path, plan.run_group, report, history_runs)
    say_the_run(console, plan, store_path, code, json_summary)
    return code


def _prepare(
    console,
    chosen,
    cases,
    pool,
    inventory,
    backend,
    target,
    plant_bug,
    case_timeout,
    shard="",
    run_group="",
    coverage=False,
) -> tuple[Plan, list[Case], StoreLocation, RunMetadata]:
    """Store, package, health checks and deploy, the plan; the run begun in the store."""
    from farm.results.store import check_store_while, default_location

    footprint.refuse_oversized(cases, footprint.pool_budgets(pool.hosts))  # before any host
    store_path = default_location()
    # A store that cannot take the results is refused before any host; only the scan of the
    # whole file (it reads all of it: a store's history) runs while the package is built and
    # the hosts are checked, and refuses a corrupt store before anything is written into it.
    store_scan = check_store_while(store_path, create=True, write=True)
    plan = runner.deploy(
        console,
        chosen,
        cases,
        pool,
        inventory,
        backend,
        target,
        plant_bug,
        case_timeout,
        shard=shard,
        run_group=run_group,
        coverage=coverage,
    )
    with runner.removed_unless_begun(plan):
        store_scan.result()
        meta = RunMetadata.from_plan(plan, started=timestamps.now())  # UTC: a shared store
        with RunStore(store_path) as store:  # sorts runs by it
            for run_id, n in store.recover_orphans():
                console.print(f"run {run_id}: its process had died; {n} records imported, aborted")
            store.begin_run(meta)
    return plan, cases, store_path, meta


def _run_session(
    console: Console,
    plan: Plan,
    chosen: CaseSelection,
    cases: list[Case],
    store_path: StoreLocation,
    meta: RunMetadata,
    *,
    pytest_junit: Path,
    jobs: int | None,
    report: bool,
    extra_pytest: list[str],
    progress: bool,
    history_runs: int | None,
) -> int:
    """The begun run: pytest on the pool, then store, outputs, summary and report."""
    from farm.results.store.heartbeat import heartbeat

    # The records are parsed as the workers write them: the tail after the last case is shorter.
    records = RecordFiles(plan.run_dir)
    session = runner.run_session(
        console,
        plan,
        chosen,
        cases,
        pytest_junit=pytest_junit,
        jobs=jobs,
        report=report,
        extra_pytest=extra_pytest,
        progress=progress,
        alongside=(heartbeat(store_path, plan.run_id), records.following()),
    )
    try:
        # From here until the store and the outputs hold the run, a signal only says so: the run
        # is stored whole, as what it was (a stop in between left it 'running', no summary).
        with contextlib.ExitStack() as storing:
            late = storing.enter_context(shielded(console))
            return _after_session(
                console,
                plan,
                chosen,
                cases,
                store_path,
                meta,
                session,
                late_signals=late,
                pytest_junit=pytest_junit,
                report=report,
                extra_pytest=extra_pytest,
                history_runs=history_runs,
                records_read=records,
                stored=storing.close,
            )
    finally:
        if session.allure is not None:
            session.allure.discard()  # when no report took it


def collect_records(
    run_dir: Path,
    cases: list[Case],
    drop_missing: bool = False,
    stopped_by: str = "pytest stopped early (-x)",
    files: RecordFiles | None = None,
) -> tuple[list[ResultRecord], list[str]]:
    """Exactly one record per case (farm/run/runner.py complete_records) from the run's records
    files: ``files`` as far as they were read while it ran (the rest is read here)."""
    found, notes = (files or RecordFiles(run_dir)).read(final=True)
    by_id = cast(dict[str, ResultRecord], found)
    return runner.complete_records(by_id, notes, cases, drop_missing, stopped_by)


def _after_session(
    console: Console,
    plan: Plan,
    chosen: CaseSelection,
    cases: list[Case],
    store_path: StoreLocation,
    meta: RunMetadata,
    session: SessionEnd,
    *,
    late_signals: list[int],
    pytest_junit: Path,
    report: bool,
    extra_pytest: list[str],
    history_runs: int | None,
    records_read: RecordFiles | None = None,
    stored: Callable[[], None] = lambda: None,
) -> int:
    """What the session left: one record per case stored, the outputs made to hold exactly the
    stored cases, the summary, the report; the exit code. `late_signals`: those that came after
    the session, while the run was being stored (farm/util/interrupts.py shielded): one that
    came before the run's outcome was decided stops it as one during the session would, one
    after it leaves the run as decided, without its report; `stored`: called once the store,
    the outputs and the terminal hold the run (signals stop the command again from then on)."""
    s = session
    _say_how_pytest_ended(console, s, chosen, extra_pytest)
    tier_size = len(cases)
    if not s.errors.errors:
        # The run's cases are those pytest selected (-k, -m, --lf deselect the others); none
        # when pytest stopped before collecting (a usage error, say).
        cases = [c for c in cases if c.id in (s.selection.case_ids or ())]
    records = _records_of(console, plan, cases, s, records_read)
    # The Allure results hold the stored cases before the plots are drawn into them.
    outputs = RunOutputs(plan, records, s.selection.nodeids, {c.id: c for c in cases})
    allure_fault = outputs.allure()  # made whatever the session's fault: they hold the run
    fault = s.fault or allure_fault
    drawing = None
    if report and s.interrupted is None and fault is None:
        from farm.run.case_plots import BackgroundDrawing

        drawing = BackgroundDrawing(plan.run_dir / "allure-results")
    quarantined, quarantine_fault = _quarantined_during(console, plan)
    fault = fault or quarantine_fault
    outcomes = Counter(r["outcome"] for r in records)
    # A stop that came while the run was being stored, before this, stops it as one during the
    # session would.
    stop = s.interrupted if s.interrupted is not None else next(iter(late_signals), None)
    facts = RunFacts(
        failed=outcomes["failed"],
        broken=outcomes["broken"],
        infrastructure=(
            *runner.infrastructure_events(plan, quarantined),
            *(["pytest could not run the suites"] if s.pytest_broke else []),
        ),
        refused=s.refused,
        cut_short=fault is not None and len(records) < len(cases),  # by its runs directory
        stop=stop,
        # A run of fewer cases than its tier (-k, -m, --lf, -x) is never the tier's baseline;
        # nor is one shard (its merged run may be).
        subset=s.stopped or len(records) < tier_size or bool(plan.shard),
        fault=fault,
    )
    outcome = decide(facts)
    if outcome.interruption is not None:
        console.print(
            f"[red]interrupted by {signal.Signals(outcome.interruption).name}[/]: storing the "
            f"{len(records)} cases that finished; the run is marked interrupted"
        )
    try:
        with RunStore(store_path) as store:
            texts = records_read.texts(records) if records_read is not None else None
            store.add_results(plan.run_id, records, texts)
            store.finish_run(
                plan.run_id,
                int(outcome.stored_code),
                status=outcome.status,
                subset=outcome.subset,
            )
    except StoreError as exc:
        console.print(
            f"[red]error:[/] {escape(str(exc))} (the records stay in {plan.run_dir / 'records'})",
            highlight=False,
        )
        if drawing is not None:
            drawing.join()
        return int(decide(dataclasses.replace(facts, store_refused=True)).exit_code)
    gate, followup, judged = [], None, None
    # An empty shard has nothing to judge (its merged run is judged whole).
    if outcome.judgeable and (records or not plan.shard):
        run = meta.judged_as(outcome.status, outcome.subset)
        facts, judged = judgement(console, store_path, run, records, facts)
        outcome = decide(facts)
        if judged is not None:
            gate, followup = judged.gate, judged.triage
    extra = summary_extra(gate, followup)
    if s.lost_notes:
        extra["workers_lost"] = s.lost_notes
    written_fault = outputs.rest(
        pytest_junit, int(outcome.stored_code), quarantined, meta.as_dict(), extra
    )
    facts = dataclasses.replace(facts, fault=facts.fault or written_fault)
    outcome = decide(facts)
    if drawing is not None:
        if judged is not None and outcome.fault is None:
            judged = with_trend(store_path, plan.tier, judged)
        drawn = drawing.join()
        if judged is not None:
            judged = dataclasses.replace(judged, plots_drawn=drawn)
    code = int(outcome.exit_code)
    if outcome.fault is not None:
        console.print(
            f"[bold red]error:[/] {escape(outcome.fault)} ({len(records)} cases stored as run "
            f"{plan.run_id}, {outcome.status}{outputs.left_out()})",
            highlight=False,
        )
        return code
    if facts.refused:
        console.print(f"run {plan.run_id} stored as aborted, with no case (exit {code})")
        return code
    runner.print_summary(console, records, plan, code, plan.run_dir / SUMMARY_JSON)
    reporting = report and outcome.interruption is None
    # With a report, farm report prints the gate (all of its rules); the triage comes last.
    print_gate(console, [] if reporting else gate)
    stored()
    if reporting:
        code = _report(
            console,
            plan,
            store_path,
            records,
            quarantined,
            extra,
            facts,
            outcome,
            late_signals,
            history_runs,
            judged,
            s,
        )
    print_triage(console, followup)
    return code


def _say_how_pytest_ended(
    console: Console, s: SessionEnd, chosen: CaseSelection, extra_pytest: list[str]
) -> None:
    if s.pytest_code == pytest.ExitCode.NO_TESTS_COLLECTED:
        console.print(
            f"[red]no case of {escape(chosen.label)} matched the selection {extra_pytest}[/]"
        )
    elif s.refused:
        given = escape(" ".join(extra_pytest))
        console.print(
            f"[red]error:[/] pytest refused the arguments after -- ({given}), as it says above; "
            "nothing ran",
            highlight=False,
        )
    elif s.pytest_broke:
        console.print(f"[red]pytest could not run the suites (exit {s.pytest_code})[/]")


def _records_of(
    console: Console,
    plan: Plan,
    cases: list[Case],
    s: SessionEnd,
    records_read: RecordFiles | None,
) -> list[ResultRecord]:
    """One record per case the session ran (collect_records), what it noted said."""
    cut_short = s.stopped or s.interrupted is not None or s.fault is not None
    why = (
        "the run was interrupted"
        if s.interrupted is not None
        else "its runs directory refused writes"
        if s.fault is not None and not s.stopped
        else "pytest stopped early (-x)"
    )
    records, notes = collect_records(
        plan.run_dir, cases, drop_missing=cut_short, stopped_by=why, files=records_read
    )
    for note in [*s.lost_notes, *notes]:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if s.stopped:
        console.print(
            f"[yellow]stopped by -x/--maxfail after {len(records)} of {len(cases)} cases: the "
            "rest were not run; this run is a subset and never a baseline[/]"
        )
    return records


def _quarantined_during(console: Console, plan: Plan) -> tuple[dict[str, str], str | None]:
    """The hosts quarantined during the run, said and kept in the quarantine; the runs
    directory's refusal of that write, if any."""
    from farm.run.leases import RunState

    quarantined = RunState(plan.state_path).quarantined() if plan.state_path.exists() else {}
    fault = None
    for host, reason in quarantined.items():
        console.print(
            f"[red]quarantined during the run:[/] {host}: {escape(visible(reason))}",
            highlight=False,
        )
        try:
            health.Quarantine(paths.STATE_DIR).add(host, reason)
        except OSError as exc:
            if not run_dir.is_fault(exc):
                raise
            fault = fault or str(run_dir.unwritable(exc))
    return quarantined, fault


def _report(
    console: Console,
    plan: Plan,
    store_path: StoreLocation,
    records: list[ResultRecord],
    quarantined: dict[str, str],
    extra: dict,
    facts: RunFacts,
    outcome: RunOutcome,
    late_signals: list[int],
    history_runs: int | None,
    judged,
    session: SessionEnd,
) -> int:
    """The stored run's report. A stop now leaves the run as stored and said, without its
    report, and the exit code is the run's."""
    code = int(outcome.exit_code)
    problem, stops = None, late_signals
    if not stops:
        with interruptible(forward=True) as stops:
            # The report takes the gate, comparison and triage made above: each is a read of
            # the whole run (the results files, the stored records) that would otherwise be
            # done twice.
            try:
                allure = session.allure.allure if session.allure is not None else None
                problem = make_report(plan.run_id, store_path, history_runs, judged, allure)
                sys.stdout.flush()  # its lines, buffered in a pipe
            except BrokenPipeError:  # `farm run | head`: its last lines, once it was made
                interrupts.off_the_pipe(sys.stdout.fileno())
                return code
    if stops:
        console.print(
            f"[yellow]{signal.Signals(stops[0]).name}[/]: no report was made; the run is "
            f"stored as above (farm report {plan.run_id} makes its report)",
            highlight=False,
        )
        return code
    if problem is not None:
        console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False)
        return degraded(plan, store_path, records, quarantined, extra, facts)
    return code
