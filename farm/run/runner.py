"""`farm run`'s pytest session on the pool: the options checked before anything starts, the
package built and the pool health-checked and deployed to (:func:`deploy`), the suites run
through pytest on the plan's slots (:func:`run_session`), and what the session left
(:class:`SessionEnd`, the cases' records made whole: :func:`complete_records`).

The command around it (farm/cli/run_command.py) stores the run, judges it, writes its outputs
and report; how the run ends (its exit code, status) is decided in farm/run/finish.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from farm.agent.record import ResultRecord, broken_record
from farm.pool import cann_build
from farm.pool.health import checks as health
from farm.pool.inventory import Inventory
from farm.run import prepare
from farm.run import shard as shard_mod
from farm.run.leases import needs_benchmark, without_torch
from farm.run.outputs import JUNIT_XML
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
from farm.util import paths, run_dir
from farm.util.errors import UsageError
from farm.util.interrupts import interruptible
from farm.util.visible import visible
from suites import footprint
from suites.case import Case
from suites.caseset import Selection as CaseSelection

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

SUITE_FILES = ("suites/test_precision.py", "suites/test_rejection.py", "suites/test_layers.py")


def check_options(
    *,
    case_timeout: float,
    jobs: int | None,
    target: str | None,
    backend: str,
    extra_pytest: list[str],
    shard: str | None,
    run_group: str | None,
) -> tuple[shard_mod.Shard | None, str]:
    """`farm run`'s options checked before anything starts (nothing is run or stored when one
    is wrong: a UsageError, one line); the shard and its run group, when it is one."""
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
    check_selection(extra_pytest)
    if (shard is None) != (run_group is None):
        raise UsageError(
            "--shard and --run-group go together: each shard names the logical run it is part "
            "of, e.g. --shard 1/4 --run-group $CI_PIPELINE_ID"
        )
    part = shard_mod.parse(shard) if shard is not None else None
    group = shard_mod.check_group(run_group) if run_group is not None else ""
    return part, group


def complete_records(
    found: dict[str, ResultRecord],
    notes: list[str],
    cases: list[Case],
    drop_missing: bool = False,
    stopped_by: str = "pytest stopped early (-x)",
) -> tuple[list[ResultRecord], list[str]]:
    """Exactly one record per case: the workers' records (``found``, by case id, as the run's
    records files were read), and a broken record for any case that has none (a worker died).
    Returns the records and ``notes`` (what the reading noted) with notes about strays.

    ``drop_missing``: the session was stopped on purpose (-x, --maxfail) or interrupted: cases
    without a record were never run, and are left out of the run instead of counted as lost
    (``stopped_by`` says what stopped it, in the note).
    A later record of a case replaces an earlier one (the plugin amends a record when a check
    of the suite fails after it was written)."""
    by_id = dict(found)
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


def infrastructure_events(plan: Plan, quarantined: dict[str, str]) -> tuple[str, ...]:
    """What degraded the run before and while it ran, one line each (farm/run/finish.py)."""
    return (
        *(f"host {h} unhealthy: {why}" for h, why in plan.unhealthy.items()),
        *(f"chip {s} set aside: {why}" for s, why in plan.set_aside.items()),
        *(f"host {h} quarantined during the run: {why}" for h, why in quarantined.items()),
    )


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


def deploy(
    console: Console,
    chosen: CaseSelection,
    cases: list[Case],
    pool: Inventory,
    inventory: str | None,
    backend: str,
    target: str | None,
    plant_bug: str,
    case_timeout: float,
    shard: str = "",
    run_group: str = "",
    coverage: bool = False,
) -> Plan:
    """The package built (`coverage`: its gcov build), the pool's hosts health-checked and
    deployed to, the plan made and saved with its cases; what it leaves out said. A failure
    after the plan was made removes its run directory (it would hold a plan alone, which no
    command would ever find)."""
    from farm.pool import build

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
            package = build.build_package(target, plant_bug=plant_bug, coverage=coverage)
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
        # The build says its lines (farm/util/announce.py).
        built = build.build_package(target, plant_bug=plant_bug, arch=arch, coverage=coverage)
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
            pool=pool,
        )
    with removed_unless_begun(plan):
        # Again with what the healthy hosts say they have: a budget no host declares is bounded
        # by the host's own memory (an Atlas 200I/500 A2 board has 4-8 GB in all).
        footprint.refuse_oversized(
            cases,
            footprint.pool_budgets(
                [h for h in pool.hosts if h.name in plan.hosts],
                reported={name: h.get("memory_total") for name, h in plan.hosts.items()},
            ),
        )
        families_without = sorted({c.family for c in cases} - set(plan.slots_by_family()))
        in_pool = {h.family for h in pool.hosts}
        for family in families_without:
            why = "" if family in in_pool else f" ({NO_HOST_OF_FAMILY})"
            console.print(
                f"[red]no healthy slot of family {family}: its cases will be broken[/]{why}"
            )
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
    return plan


@contextlib.contextmanager
def removed_unless_begun(plan: Plan):
    """The run never began (a refusal, the store refused, a stop, the output's reader gone):
    its directory, which holds its plan alone and no command would ever find, is removed."""
    try:
        yield
    except BaseException:
        shutil.rmtree(plan.run_dir, ignore_errors=True)
        raise


@dataclass
class SessionEnd:
    """What the pytest session left: pytest's exit code, the stops it took, its plugins'
    findings."""

    pytest_code: int
    signals: list[int]  # the stops received while it ran (the first one interrupted it)
    errors: CollectionErrors
    selection: Selection
    faults: list[str]  # writes the runs directory refused
    lost_notes: list[str] = field(default_factory=list)  # workers lost
    allure: AllurePrewarm | None = None

    @property
    def interrupted(self) -> int | None:
        return self.signals[0] if self.signals else None

    @property
    def fault(self) -> str | None:
        return self.faults[0] if self.faults else None

    @property
    def stopped(self) -> bool:
        """-x / --maxfail stopped the session on purpose (with xdist pytest then says
        "interrupted")."""
        return self.selection.stopped_on_failure and self.interrupted is None

    @property
    def pytest_broke(self) -> bool:
        """pytest could not run the suites (a collection error, an internal error, an exit code
        of its own), neither stopped on purpose nor by a signal nor by the runs directory."""
        own_code = self.pytest_code not in (0, 1) and not self.stopped
        return (
            bool(self.errors.errors) or own_code and self.interrupted is None
        ) and self.fault is None

    @property
    def refused(self) -> bool:
        """pytest's own usage error (an option after -- it does not know): the user's, not the
        pool's; nothing ran."""
        return (
            self.pytest_code == pytest.ExitCode.USAGE_ERROR
            and self.pytest_broke
            and not self.errors.errors
        )


def run_session(
    console: Console,
    plan: Plan,
    chosen: CaseSelection,
    cases: list[Case],
    *,
    pytest_junit: Path,
    jobs: int | None,
    report: bool,
    extra_pytest: list[str],
    progress: bool,
    alongside: Sequence[AbstractContextManager] = (),
) -> SessionEnd:
    """pytest on the pool's slots for the begun run. ``alongside``: what runs while it does
    (the store's heartbeat, the reading of the records files as the workers write them)."""
    from farm.run.progress import progress_plugin

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
    # The live bar on a terminal; plain lines in a log or with --no-progress.
    plugins.append(progress_plugin(console, chosen.key, live=progress))
    plugins += [PlotsPreload()] if report and workers > 1 else []
    allure = AllurePrewarm()
    plugins += [allure] if report else []
    args = pytest_args(plan, workers, extra_pytest, junit=pytest_junit)
    # A stop in pytest's last steps (its sessionfinish: the live progress' last frame) leaves
    # pytest.main by the KeyboardInterrupt itself.
    pytest_code: int = pytest.ExitCode.INTERRUPTED
    with contextlib.ExitStack() as running:
        signals = running.enter_context(interruptible(forward=workers > 1))
        for context in alongside:
            running.enter_context(context)
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
    return SessionEnd(
        pytest_code=pytest_code,
        signals=signals,
        errors=errors,
        selection=selection,
        faults=faults.messages,
        lost_notes=lost.notes,
        allure=allure if report else None,
    )


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
