"""`farm run`: build, health, deploy, run the tier through pytest, store, report, exit code.

Exit codes: 0 every case passed; 1 product failures, or a quality gate that failed although every
case passed (the farm's gate, farm/results/gate.py farm_gate, the report's Quality Gates tab: a
regression against the baseline such as a precision drift or cases gone; stored as 1 too, so that
such a run is never a baseline); 2 the run was degraded or incomplete by
infrastructure (a host quarantined, a family without a healthy slot, a case broken or lost), or
could not be stored, or was a usage error; 130 / 143 / 129 / 141 the run was interrupted by
SIGINT / SIGTERM / SIGHUP / its output's reader gone (what finished is stored, and the run is
marked interrupted: never a baseline, never a passed quality gate; a signal once the run is
stored and summarised only skips the report). A run whose process is killed outright is found
by the next farm command, its written records imported and the run marked aborted
(farm/results/store.py recover_orphans).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from farm import __version__
from farm.agent.record import ResultRecord, broken_record
from farm.pool import cann_build, health
from farm.results.store import timestamps
from farm.results.store.location import StoreLocation
from farm.run import fault_injection, outputs, prepare, run_dir, scratch
from farm.run.leases import needs_benchmark, without_torch
from farm.run.outputs import JUNIT_XML, SUMMARY_JSON, RunOutputs
from farm.run.plan import Plan
from farm.run.plugin import KeptCases, keep_cases
from farm.run.session_plugins import (
    AllurePrewarm,
    CollectionErrors,
    LostWorkers,
    PlotsPreload,
    RunDirFaults,
    Selection,
)
from farm.run.slot_table import NO_HOST_OF_FAMILY
from farm.run.timeouts import MAX_CASE_TIMEOUT
from farm.util import interrupts, paths
from farm.util.console import FarmConsole
from farm.util.errors import RunDirUnwritable, StoreError, UsageError
from farm.util.interrupts import interruptible, shielded
from farm.util.visible import visible
from suites import footprint
from suites.case import Case
from suites.caseset import Selection as CaseSelection
from suites.explore import DEFAULT_COUNT as DEFAULT_EXPLORE_COUNT

if TYPE_CHECKING:
    from collections.abc import Callable

    from farm.run.allure_process import AllureProcess
    from farm.run.records_file import RecordFiles

SUITE_FILES = ("suites/test_precision.py", "suites/test_rejection.py")
EXIT_OK, EXIT_PRODUCT, EXIT_INFRA = 0, 1, 2


def collect_records(
    run_dir: Path,
    cases: list[Case],
    drop_missing: bool = False,
    stopped_by: str = "pytest stopped early (-x)",
    files: RecordFiles | None = None,
) -> tuple[list[ResultRecord], list[str]]:
    """Exactly one record per case: the workers' records, and a broken record for any case that
    has none (a worker died). Returns the records and notes about duplicates or strays.

    ``drop_missing``: the session was stopped on purpose (-x, --maxfail) or interrupted: cases
    without a record were never run, and are left out of the run instead of counted as lost
    (``stopped_by`` says what stopped it, in the note). ``files``: the run's records files as
    far as they were read while it ran (the rest is read here).
    A later record of a case replaces an earlier one (the plugin amends a record when a check
    of the suite fails after it was written)."""
    from farm.run.records_file import RecordFiles

    found, notes = (files or RecordFiles(run_dir)).read(final=True)
    by_id = cast(dict[str, ResultRecord], found)
    wanted = {c.id for c in cases}
    for stray in sorted(set(by_id) - wanted):
        notes.append(f"record for {stray}, which is not in the tier; ignored")
        del by_id[stray]
    if drop_missing:
        not_run = [c for c in cases if c.id not in by_id]
        if not_run:
            notes.append(f"{len(not_run)} selected case(s) not run: {stopped_by}")
        cases = [c for c in cases if c.id in by_id]
    for case in cases:
        if case.id not in by_id:
            by_id[case.id] = lost_record(case)
    return [by_id[c.id] for c in cases], notes


def lost_record(case: Case) -> ResultRecord:
    return broken_record(case, "no result came back for this case (its worker died)")


def exit_code(records: list[ResultRecord], plan: Plan, quarantined_mid_run: dict) -> int:
    outcomes = Counter(r["outcome"] for r in records)
    if outcomes["broken"] or plan.unhealthy or plan.set_aside or quarantined_mid_run:
        return EXIT_INFRA
    return EXIT_PRODUCT if outcomes["failed"] else EXIT_OK


def default_workers(slots: int) -> int:
    """About one orchestrator process per core, whatever the pool's size: each keeps all the
    slots of its lane busy (farm/run/pipeline.py)."""
    return max(1, min(slots, os.cpu_count() or 1))


def pytest_args(plan: Plan, workers: int, extra: list[str], junit: Path | None = None) -> list[str]:
    """pytest's command line for the run. ``junit``: where pytest writes its JUnit (default
    the run's junit.xml; farm run has it written elsewhere and writes the run's junit.xml from
    it, farm/run/reconcile.py)."""
    results = plan.run_dir / "allure-results"
    args = [str(paths.REPO_ROOT / f) for f in SUITE_FILES]
    args += [
        "--farm-plan",
        str(plan.path),
        "--alluredir",
        str(results),
        "--junitxml",
        str(junit or plan.run_dir / JUNIT_XML),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
        # It ends every process with full garbage collections (~0.4 s a worker at nightly
        # scale, 6,700 items), on the run's critical path, to report on a terminal the farm
        # does not show.
        "-p",
        "no:unraisableexception",
        "--rootdir",
        str(paths.REPO_ROOT),
    ]
    if workers > 1:
        args += ["-n", str(workers), "--dist", "loadgroup"]
    else:
        args += ["-p", "no:xdist"]
    return args + list(extra)


def run(
    tier: str | None = "smoke",
    inventory: str | None = None,
    backend: str = "native",
    *,
    target: str | None = None,
    plant_bug: str = "",
    jobs: int | None = None,
    case_timeout: float = 60.0,
    report: bool = True,
    extra_pytest: list[str] | None = None,
    console: Console | None = None,
    progress: bool = True,
    case_files: tuple[str, ...] = (),
    explore: str | None = None,
    explore_count: int | None = None,
    history_runs: int | None = None,
    shard: str | None = None,
    run_group: str | None = None,
) -> int:
    """``shard`` ("K/N") and ``run_group``: run one shard of the logical run ``run_group``
    (farm/run/shard.py; merged by farm/results/merge.py)."""
    from farm.run import shard as shard_mod

    console = console or FarmConsole(stderr=True)
    # Mistakes stop here, before anything starts: nothing is run and nothing is stored.
    if not 0 < case_timeout <= MAX_CASE_TIMEOUT:
        raise UsageError(
            f"--case-timeout {case_timeout}: use a number of seconds above 0 and at most "
            f"{MAX_CASE_TIMEOUT:,.0f}"
        )
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: use 1 or more (1: pytest in this process)")
    if target == "ascend" and backend != "acl":
        raise UsageError(
            f"--target ascend with --backend {backend}: the CANN package runs through ACL; use "
            "--backend acl"
        )
    check_selection(extra_pytest or [])
    if (shard is None) != (run_group is None):
        raise UsageError(
            "--shard and --run-group go together: each shard names the logical run it is part "
            "of, e.g. --shard 1/4 --run-group $CI_PIPELINE_ID"
        )
    part = shard_mod.parse(shard) if shard is not None else None
    group = shard_mod.check_group(run_group) if run_group is not None else ""
    chosen = CaseSelection(
        tier=tier,
        files=tuple(case_files),
        explore=explore,
        explore_count=explore_count or DEFAULT_EXPLORE_COUNT,
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
            plan, cases, store_path, started = _prepare(
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
            )
        code = _run_session(
            console,
            plan,
            chosen,
            cases,
            store_path,
            started,
            pytest_junit=staging / JUNIT_XML,
            jobs=jobs,
            report=report,
            extra_pytest=extra_pytest or [],
            progress=progress,
            history_runs=history_runs,
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if plan.run_group and code in (EXIT_OK, EXIT_PRODUCT, EXIT_INFRA):
        from farm.results import merge_command

        merge_command.after_shard(console, store_path, plan.run_group, report, history_runs)
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
):
    """Store, package, health checks and deploy, the plan; the run begun in the store."""
    from farm.pool import build
    from farm.results.store import check_store_while, default_location

    footprint.refuse_oversized(cases, footprint.pool_budgets(pool.hosts))  # before any host
    store_path = default_location()
    # A store that cannot take the results is refused before any host; only the scan of the
    # whole file (it reads all of it: a store's history) runs while the package is built and
    # the hosts are checked, and refuses a corrupt store before anything is written into it.
    store_scan = check_store_while(store_path, create=True, write=True)
    target = target or build.DEFAULT_TARGET
    part = f" (shard {shard} of run group {escape(run_group)})" if shard else ""
    console.print(
        f"[bold]farm run[/] {escape(chosen.label)}{part}: {len(cases):,} cases, backend {backend}",
        highlight=False,
    )

    package: Path | None = None
    if target == "ascend" and not build.cann_here():
        console.print(
            "package  the CANN package, built on the pool's hosts with CANN (no CANN here)",
            highlight=False,
        )
    else:
        with console.status("building the operator package"):
            package = build.build_package(target, plant_bug=plant_bug)
        console.print(f"package  {package.name}", highlight=False)
    console.print(f"target   {build.describe(target)}", highlight=False)

    def show_host(spec, checked):
        mark = "[green]good[/]" if checked.good else "[red]quarantined[/]"
        why = "" if checked.good else ": " + escape(visible("; ".join(checked.reasons)))
        arch = ((checked.identity or {}).get("machine") or {}).get("arch")
        what = f"{spec.soc}, {spec.devices} dev" + (f", {arch}" if arch else "")
        shipped = f", package {escape(checked.package)}" if checked.package else ""
        console.print(f"host     {spec.name} ({what}{shipped}) {mark}{why}", highlight=False)
        for devices, reason in health.grouped(checked.set_aside):  # a reason said once
            said = escape(visible(reason))
            console.print(
                f"chip     {spec.name}:{devices} [yellow]set aside[/]: {said}; the host's other "
                "chips run",
                highlight=False,
            )
        for note in checked.notes if checked.good else ():  # chips not visible, Alarm accepted
            console.print(f"note     {escape(visible(note))}", highlight=False)

    # The CANN package, without CANN here: built on the pool's hosts with CANN (one builder a run:
    # it makes the source package and asks the build hosts what they are once).
    cann_builder = cann_build.builder(pool) if package is None else None

    def build_for(arch: str, cann: str | None, host: str) -> Path:  # for hosts of another arch
        if cann_builder is not None:
            built = cann_builder(arch, cann, host)
            console.print(f"package  {built.name} ({arch}, CANN {cann})", highlight=False)
            return built
        console.print(f"building the package for the {arch} hosts", highlight=False)
        built = build.build_package(target, plant_bug=plant_bug, arch=arch)
        console.print(f"package  {built.name} ({arch})", highlight=False)
        return built

    with console.status("health checks and deploy"):
        plan = prepare.prepare_pool(
            inventory,
            chosen.key,
            backend,
            selection=chosen,
            case_timeout=case_timeout,
            package=package,
            target=target,
            build_for=build_for,
            on_host=show_host,
            require_healthy=True,
        )
    try:
        # Again with what the healthy hosts say they have: a budget no host declares is bounded
        # by the host's own memory (an Atlas 200I/500 A2 board has 4-8 GB in all).
        footprint.refuse_oversized(
            cases,
            footprint.pool_budgets(
                [h for h in pool.hosts if h.name in plan.hosts],
                reported={name: h.get("memory_total") for name, h in plan.hosts.items()},
            ),
        )
        started = _begin(console, plan, cases, pool, store_scan, store_path, shard, run_group)
    except BaseException:
        # The run never began (the store refused, a stop, the output's reader gone): its
        # directory holds its plan alone, which no command would ever find.
        shutil.rmtree(plan.run_dir, ignore_errors=True)
        raise
    return plan, cases, store_path, started


def _begin(console, plan, cases, pool, store_scan, store_path, shard, run_group) -> str:
    """What the plan leaves out said, the cases kept with the plan, the run begun in the store
    (once the store's scan passed); when it began."""
    from farm.results.store import RunStore

    families_without = sorted({c.family for c in cases} - set(plan.slots_by_family()))
    in_pool = {h.family for h in pool.hosts}
    for family in families_without:
        why = "" if family in in_pool else f" ({NO_HOST_OF_FAMILY})"
        console.print(f"[red]no healthy slot of family {family}: its cases will be broken[/]{why}")
    with_torch = {s.family for s in plan.slot_infos() if s.torch}
    benchmarked = {c.family for c in cases if needs_benchmark(c)}
    for family in sorted(benchmarked - set(families_without) - with_torch):
        console.print(
            f"[yellow]benchmark-ratio cases will be broken:[/] {escape(without_torch(family))}",
            highlight=False,
        )

    if shard:  # the workers pick the same shard when they expand the selection themselves
        plan.shard, plan.run_group = shard, run_group
        plan.save()
    keep_cases(plan, cases)
    store_scan.result()
    started = timestamps.now()  # UTC: a shared store sorts runs by it
    with RunStore(store_path) as store:
        for run_id, n in store.recover_orphans():
            console.print(f"run {run_id}: its process had died; {n} records imported, aborted")
        store.begin_run(run_meta(plan, started))
    return started


def _run_session(
    console: Console,
    plan: Plan,
    chosen: CaseSelection,
    cases: list[Case],
    store_path: StoreLocation,
    started: str,
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
    from farm.run.progress import LiveProgress
    from farm.run.records_file import RecordFiles

    workers = jobs or default_workers(len(plan.slots))
    if workers > len(plan.slots):  # a worker more than the slots would have none to keep busy
        console.print(
            f"[yellow]note:[/] --jobs {workers}: {len(plan.slots)} workers, one per slot of the "
            "pool",
            highlight=False,
        )
        workers = len(plan.slots)
    errors = CollectionErrors(console)
    selection = Selection()
    faults = RunDirFaults()
    lost = LostWorkers()
    plugins = [errors, selection, faults, lost, KeptCases(plan, cases)]
    plugins += [LiveProgress(console=console, title=chosen.key)] if progress else []
    plugins += [PlotsPreload()] if report and workers > 1 else []
    allure = AllurePrewarm()
    plugins += [allure] if report else []
    args = pytest_args(plan, workers, extra_pytest, junit=pytest_junit)
    # The records are parsed as the workers write them: the tail after the last case is shorter.
    records = RecordFiles(plan.run_dir)
    # A stop in pytest's last steps (its sessionfinish: the live progress' last frame) leaves
    # pytest.main by the KeyboardInterrupt itself.
    pytest_code: int = pytest.ExitCode.INTERRUPTED
    with (
        interruptible(forward=workers > 1) as signals,
        heartbeat(store_path, plan.run_id),
        records.following(),
    ):
        try:
            pytest_code = pytest.main(args, plugins=plugins)
        except OSError as exc:  # a write of pytest's own refused by the runs directory
            if not run_dir.is_fault(exc):
                raise
            faults.messages.append(str(run_dir.unwritable(exc)))
            pytest_code = pytest.ExitCode.INTERNAL_ERROR
    if plan.shard and pytest_code == pytest.ExitCode.NO_TESTS_COLLECTED and not errors.errors:
        # A shard may hold none of the selection (N over the cases, or -k): an empty run, whole.
        console.print(f"shard {plan.shard}: no case of {escape(chosen.label)} in this shard")
        pytest_code = pytest.ExitCode.OK
        selection.case_ids = selection.case_ids or set()
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
                started,
                pytest_code=pytest_code,
                signals=signals,
                late_signals=late,
                errors=errors,
                selection=selection,
                fault=faults.messages[0] if faults.messages else None,
                pytest_junit=pytest_junit,
                report=report,
                extra_pytest=extra_pytest,
                history_runs=history_runs,
                records_read=records,
                allure=allure.allure,
                session_notes=lost.notes,
                stored=storing.close,
            )
    finally:
        allure.discard()  # when no report took it


def _after_session(
    console: Console,
    plan: Plan,
    chosen: CaseSelection,
    cases: list[Case],
    store_path: StoreLocation,
    started: str,
    *,
    pytest_code,
    signals: list[int],
    errors: CollectionErrors,
    late_signals: list[int] | None = None,
    selection: Selection,
    fault: str | None,
    pytest_junit: Path,
    report: bool,
    extra_pytest: list[str],
    history_runs: int | None,
    records_read: RecordFiles | None = None,
    allure: AllureProcess | None = None,
    session_notes: list[str] | None = None,
    stored: Callable[[], None] = lambda: None,
) -> int:
    """What the session left: one record per case stored, the outputs made to hold exactly the
    stored cases, the summary, the report; the exit code. `allure`: Allure started for the
    report (farm/run/allure_process.py AllureProcess). `late_signals`: those that came after the
    session, while the run was being stored (farm/util/interrupts.py shielded): one that came
    before the run's outcome was decided stops it as one during the session would, one after it
    leaves the run as decided, without its report; `stored`: called once the store, the outputs
    and the terminal hold the run (signals stop the command again from then on)."""
    from farm.results.store import RunStore
    from farm.run.leases import RunState

    interrupted = signals[0] if signals else None
    # -x / --maxfail stop the session on purpose (with xdist pytest then says "interrupted").
    stopped = selection.stopped_on_failure and interrupted is None
    pytest_broke = (
        bool(errors.errors) or (pytest_code not in (0, 1) and not stopped) and interrupted is None
    ) and fault is None
    # pytest's own usage error (an option after -- it does not know): the user's, not the pool's.
    refused = pytest_code == pytest.ExitCode.USAGE_ERROR and pytest_broke and not errors.errors
    if pytest_code == pytest.ExitCode.NO_TESTS_COLLECTED:
        console.print(
            f"[red]no case of {escape(chosen.label)} matched the selection {extra_pytest}[/]"
        )
    elif refused:
        given = escape(" ".join(extra_pytest))
        console.print(
            f"[red]error:[/] pytest refused the arguments after -- ({given}), as it says above; "
            "nothing ran",
            highlight=False,
        )
    elif pytest_broke:
        console.print(f"[red]pytest could not run the suites (exit {pytest_code})[/]")
    tier_size = len(cases)
    if not errors.errors:
        # The run's cases are those pytest selected (-k, -m, --lf deselect the others); none
        # when pytest stopped before collecting (a usage error, say).
        cases = [c for c in cases if c.id in (selection.case_ids or ())]
    cut_short = stopped or interrupted is not None or fault is not None
    why = (
        "the run was interrupted"
        if interrupted is not None
        else "its runs directory refused writes"
        if fault is not None and not stopped
        else "pytest stopped early (-x)"
    )
    records, notes = collect_records(
        plan.run_dir, cases, drop_missing=cut_short, stopped_by=why, files=records_read
    )
    for note in [*(session_notes or []), *notes]:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if stopped:
        console.print(
            f"[yellow]stopped by -x/--maxfail after {len(records)} of {len(cases)} cases: the "
            "rest were not run; this run is a subset and never a baseline[/]"
        )
    # The Allure results hold the stored cases before the plots are drawn into them.
    outputs = RunOutputs(plan, records, selection.nodeids, {c.id: c for c in cases})
    allure_fault = outputs.allure()
    fault = fault or allure_fault
    drawing = None
    if report and interrupted is None and fault is None:
        from farm.run.case_plots import BackgroundDrawing

        drawing = BackgroundDrawing(plan.run_dir / "allure-results")
    # A run of fewer cases than its tier (-k, -m, --lf, -x) is never the tier's baseline; nor
    # is one shard (its merged run may be).
    subset = stopped or len(records) < tier_size or bool(plan.shard)
    quarantined = RunState(plan.state_path).quarantined() if plan.state_path.exists() else {}
    for host, why in quarantined.items():
        console.print(
            f"[red]quarantined during the run:[/] {host}: {escape(visible(why))}", highlight=False
        )
        try:
            health.Quarantine(paths.STATE_DIR).add(host, why)
        except OSError as exc:
            if not run_dir.is_fault(exc):
                raise
            fault = fault or str(run_dir.unwritable(exc))
    code = EXIT_INFRA if pytest_broke else exit_code(records, plan, quarantined)
    status = "aborted" if refused else "finished"
    if fault is not None and len(records) < len(cases):
        code, status = EXIT_INFRA, "aborted"  # cut short by its runs directory, not by a signal
    if interrupted is None and late_signals:
        interrupted = late_signals[0]
    if interrupted is not None:
        code, status = 128 + interrupted, "interrupted"
        console.print(
            f"[red]interrupted by {signal.Signals(interrupted).name}[/]: storing the "
            f"{len(records)} cases that finished; the run is marked interrupted"
        )
    try:
        with RunStore(store_path) as store:
            texts = records_read.texts(records) if records_read is not None else None
            store.add_results(plan.run_id, records, texts)
            store.finish_run(plan.run_id, code, status=status, subset=subset)
    except StoreError as exc:
        console.print(
            f"[red]error:[/] {escape(str(exc))} (the records stay in {plan.run_dir / 'records'})",
            highlight=False,
        )
        if drawing is not None:
            drawing.join()
        return EXIT_INFRA
    gate, followup, judged = [], None, None
    # An empty shard has nothing to judge (its merged run is judged whole).
    to_judge = records or not plan.shard
    if interrupted is None and fault is None and status == "finished" and to_judge:
        meta = dict(run_meta(plan, started), status=status, subset=subset)
        code, judged = judgement(console, store_path, meta, records, code)
        if judged is not None:
            gate, followup = judged.gate, judged.triage
    extra = summary_extra(gate, followup)
    if session_notes:
        extra["workers_lost"] = session_notes
    written_fault = outputs.rest(pytest_junit, code, quarantined, run_meta(plan, started), extra)
    fault = fault or written_fault
    if drawing is not None:
        if judged is not None and fault is None:
            judged = with_trend(store_path, plan.tier, judged)
        drawn = drawing.join()
        if judged is not None:
            judged = dataclasses.replace(judged, plots_drawn=drawn)
    if fault is not None:
        console.print(
            f"[bold red]error:[/] {escape(fault)} ({len(records)} cases stored as run "
            f"{plan.run_id}, {status}{outputs.left_out()})",
            highlight=False,
        )
        return code if interrupted is not None else EXIT_INFRA
    if refused:
        console.print(f"run {plan.run_id} stored as aborted, with no case (exit {code})")
        return code
    print_summary(console, records, plan, code, plan.run_dir / SUMMARY_JSON)
    # With a report, farm report prints the gate (all of its rules), after the triage.
    print_judgement(console, [] if report and interrupted is None else gate, followup)
    stored()
    if report and interrupted is None:
        # A stop now leaves the run as stored and said, without its report.
        problem, stops = None, late_signals or []
        if not stops:
            with interruptible(forward=True) as stops:
                # The report takes the gate, comparison and triage made above: each is a read
                # of the whole run (the results files, the stored records) that would otherwise
                # be done twice.
                try:
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
            return degraded(plan, store_path, records, quarantined, extra)
    return code


def judge(console: Console, store_path: StoreLocation, run: dict, records: list, code: int):
    """The finished run's quality gate (farm_gate, as its report shows it) and the triage of its
    failures: (exit code, gate, (Triage, [NextSteps])). A gate that fails while every case passed
    makes the exit code 1, in the store as well."""
    code, judged = judgement(console, store_path, run, records, code)
    return (code, [], None) if judged is None else (code, judged.gate, judged.triage)


def judgement(console: Console, store_path: StoreLocation, run: dict, records: list, code: int):
    """judge's work, kept for the run's report (report.Judged; None when the store refused):
    (exit code, Judged | None)."""
    from farm.results.compare import compare
    from farm.results.gate import farm_gate, gate_exit_code
    from farm.results.report import Judged
    from farm.results.store import RunStore
    from farm.results.triage_next import with_baseline

    try:
        with RunStore(store_path) as store:
            comparison = compare(store, run["run_id"])
            followup = with_baseline(store, records, run)
        gate = farm_gate(Path(run["run_dir"]) / "allure-results", run, comparison)
        if code == EXIT_OK and gate_exit_code(gate) == EXIT_PRODUCT:
            code = EXIT_PRODUCT
            with RunStore(store_path) as store:
                store.finish_run(run["run_id"], code, status="finished", subset=run["subset"])
    except StoreError as exc:  # the run is stored; farm report can judge it later
        console.print(f"[yellow]note:[/] quality gate and triage not made: {escape(str(exc))}")
        return code, None
    return code, Judged(comparison, gate, followup)


def with_trend(store_path: StoreLocation, tier: str, judged):
    """`judged` with its report's precision trend PNG (report.Judged.trend), drawn here while
    the cases' plots are drawn in the background: off the report's path. A store or a plot that
    fails leaves it to the report, which then says why."""
    from farm.results.report import TREND_RUNS
    from farm.results.store import RunStore
    from farm.run.plots import trend_png

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


def print_judgement(console: Console, gate, followup) -> None:
    """After the summary table: the gate's failed rules and, for a run with failures, its
    triage (plain text: case ids and commands hold brackets rich would read as markup)."""
    for rule in gate:
        if not rule.success:
            console.print(f"quality gate: {rule.message}", markup=False, highlight=False)
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
    report.Judged, when this process has it; `allure`: an allure_process.AllureProcess waiting."""
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
    plan: Plan, store_path: StoreLocation, records: list[ResultRecord], quarantined, extra=None
) -> int:
    """A run whose outputs could not all be made after it was stored exits 2, and the store and
    the summary say 2 as well where they can still be written."""
    from farm.results.store import RunStore

    with contextlib.suppress(StoreError, OSError), RunStore(store_path) as store:
        store.finish_run(plan.run_id, EXIT_INFRA, status="finished")
    with contextlib.suppress(OSError):
        outputs.write_summary(plan, records, EXIT_INFRA, quarantined, extra)
    return EXIT_INFRA


def check_selection(extra: list[str]) -> None:
    """A malformed -k expression is the user's mistake: one line, before anything runs (pytest
    would otherwise report it per worker and the run would store every case as broken)."""
    from _pytest.mark.expression import Expression

    for i, arg in enumerate(extra):
        expr = None
        if arg in ("-k", "-m") and i + 1 < len(extra):
            expr = extra[i + 1]
        elif arg.startswith(("-k", "-m")) and len(arg) > 2:
            expr = arg[2:]
        if expr is not None:
            try:
                Expression.compile(expr)
            except SyntaxError as exc:
                raise UsageError(f"{arg[:2]} {expr!r} is not a valid expression: {exc}") from None


def run_meta(plan: Plan, started: str) -> dict:
    selection = CaseSelection.from_json(plan.selection, plan.tier)
    return {
        "run_id": plan.run_id,
        "tier": plan.tier,
        "label": selection.label,
        "selection": plan.selection,
        "backend": plan.backend,
        "target": plan.package.get("target", ""),
        "started_at": started,
        "package": plan.package,
        "git_commit": plan.git_commit,
        "inventory": [s.to_json() for s in plan.slots],
        "unhealthy": plan.unhealthy,
        "set_aside": plan.set_aside,
        "run_dir": str(plan.run_dir),
        "farm_version": __version__,
        **({"shard": plan.shard, "run_group": plan.run_group} if plan.shard else {}),
    }


def print_summary(console: Console, records, plan: Plan, code: int, summary_path: Path) -> None:
    outcomes = Counter(r["outcome"] for r in records)
    table = Table(title=f"run {plan.run_id}", show_header=True)
    for col in ("family", "dtype", "passed", "failed", "broken"):
        table.add_column(col, justify="right" if col not in ("family", "dtype") else "left")
    groups: dict[tuple, Counter] = {}
    for r in records:
        groups.setdefault((r["family"], r["dtype"]), Counter())[r["outcome"]] += 1
    for (family, dtype), c in sorted(groups.items()):
        table.add_row(family, dtype, str(c["passed"]), str(c["failed"]), str(c["broken"]))
    console.print(table)
    for r in [r for r in records if r["outcome"] != "passed"][:15]:
        line = f"{r['case_id']}: {r['message']}"
        console.print(f"  [red]{r['outcome']}[/] {escape(visible(line))}", highlight=False)
    verdict = {
        0: "[green]all passed[/]",
        1: "[red]product failures[/]" if outcomes["failed"] else "[red]quality gate failed[/]",
        2: "[yellow]degraded or incomplete by infrastructure[/]",
    }.get(code, "[red]interrupted: only what finished is stored[/]")
    console.print(
        f"{outcomes['passed']} passed, {outcomes['failed']} failed, {outcomes['broken']} broken"
        f" — {verdict} (exit {code})"
    )
    from farm.pool.build import describe

    console.print(f"target   {describe(plan.package.get('target', ''))}", highlight=False)
    for label, path in (
        ("summary", summary_path),
        ("allure", plan.run_dir / "allure-results"),
        ("junit", plan.run_dir / "junit.xml"),
    ):
        console.print(f"{label:<8} {path}", markup=False)
