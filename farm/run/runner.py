"""`farm run`: build, health, deploy, run the tier through pytest, store, report, exit code.

Exit codes: 0 every case passed; 1 product failures; 2 the run was degraded or incomplete by
infrastructure (a host quarantined, a family without a healthy slot, a case broken or lost).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from farm import __version__, paths
from farm.agent.record import FAILURE_FIELDS, ResultRecord, broken_record
from farm.pool import health
from farm.run import prepare
from farm.run.plan import Plan
from suites import matrix
from suites.case import Case

SUITE_FILES = ("suites/test_precision.py", "suites/test_rejection.py")
EXIT_OK, EXIT_PRODUCT, EXIT_INFRA = 0, 1, 2
# What a run leaves in runs/<run id>/ besides records/ and allure-results/ (the report's
# directory is farm.results.report.default_report_dir).
JUNIT_XML = "junit.xml"
SUMMARY_JSON = "summary.json"


def collect_records(
    run_dir: Path, cases: list[Case], drop_missing: bool = False
) -> tuple[list[ResultRecord], list[str]]:
    """Exactly one record per case: the workers' records, and a broken record for any case that
    has none (a worker died). Returns the records and notes about duplicates or strays.

    ``drop_missing``: the session was stopped on purpose (-x, --maxfail): cases without a record
    were never run, and are left out of the run instead of counted as lost."""
    by_id: dict[str, ResultRecord] = {}
    notes: list[str] = []
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                notes.append(f"{path.name}:{line_no}: unreadable record (a worker died mid-write)")
                continue
            if record["case_id"] in by_id:
                notes.append(f"case {record['case_id']} had two records; kept the last")
            by_id[record["case_id"]] = record
    wanted = {c.id for c in cases}
    for stray in sorted(set(by_id) - wanted):
        notes.append(f"record for {stray}, which is not in the tier; ignored")
        del by_id[stray]
    if drop_missing:
        not_run = [c for c in cases if c.id not in by_id]
        if not_run:
            notes.append(f"{len(not_run)} selected case(s) not run: pytest stopped early (-x)")
        cases = [c for c in cases if c.id in by_id]
    for case in cases:
        if case.id not in by_id:
            by_id[case.id] = lost_record(case)
    return [by_id[c.id] for c in cases], notes


def lost_record(case: Case) -> ResultRecord:
    return broken_record(case, "no result came back for this case (its worker died)")


def exit_code(records: list[ResultRecord], plan: Plan, quarantined_mid_run: dict) -> int:
    outcomes = Counter(r["outcome"] for r in records)
    if outcomes["broken"] or plan.unhealthy or quarantined_mid_run:
        return EXIT_INFRA
    return EXIT_PRODUCT if outcomes["failed"] else EXIT_OK


def default_workers(pool, slots: int) -> int:
    """One worker per slot; but when every host is this machine (emulated or on loopback), the
    workers, agents and sshds share its cores, and more workers than cores only slow it down
    (benchmarks/RESULTS.md: 2 workers beat 5 on 2 cores)."""
    local = all(
        h.transport == "local" or (h.address or "").startswith(("127.", "localhost"))
        for h in pool.hosts
    )
    cap = (os.cpu_count() or 1) if local else slots
    return max(1, min(slots, cap))


def pytest_args(plan: Plan, workers: int, extra: list[str]) -> list[str]:
    results = plan.run_dir / "allure-results"
    args = [str(paths.REPO_ROOT / f) for f in SUITE_FILES]
    args += [
        "--farm-plan",
        str(plan.path),
        "--alluredir",
        str(results),
        "--junitxml",
        str(plan.run_dir / JUNIT_XML),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
        "--rootdir",
        str(paths.REPO_ROOT),
    ]
    if workers > 1:
        args += ["-n", str(workers), "--dist", "loadgroup"]
    else:
        args += ["-p", "no:xdist"]
    return args + list(extra)


def run(
    tier: str = "smoke",
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
) -> int:
    from farm import build
    from farm.results.store import RunStore, default_store_path
    from farm.run.leases import RunState
    from farm.run.progress import LiveProgress

    console = console or Console(stderr=True, soft_wrap=True)  # messages stay one line
    cases = matrix.expand(tier)  # a bad tier stops here, before anything starts
    pool = prepare.load_pool(inventory)  # so does a bad inventory
    target = target or build.DEFAULT_TARGET
    console.print(f"[bold]farm run[/] tier {tier}: {len(cases):,} cases, backend {backend}")

    with console.status("building the operator package"):
        package = build.build_package(target, plant_bug=plant_bug)
    console.print(f"package  {package.name}", highlight=False)
    console.print(f"target   {build.describe(target)}", highlight=False)

    def show_host(spec, checked):
        mark = "[green]good[/]" if checked.good else "[red]quarantined[/]"
        why = "" if checked.good else ": " + "; ".join(checked.reasons)
        console.print(
            f"host     {spec.name} ({spec.soc}, {spec.devices} dev) {mark}{why}", highlight=False
        )

    with console.status("health checks and deploy"):
        plan = prepare.prepare_pool(
            inventory,
            tier,
            backend,
            case_timeout=case_timeout,
            package=package,
            on_host=show_host,
            require_healthy=True,
        )
    families_without = sorted({c.family for c in cases} - set(plan.slots_by_family()))
    for family in families_without:
        console.print(f"[red]no healthy slot of family {family}: its cases will be broken[/]")

    started = _dt.datetime.now().isoformat(timespec="seconds")
    store_path = default_store_path()
    with RunStore(store_path) as store:
        store.begin_run(run_meta(plan, started))

    workers = jobs or default_workers(pool, len(plan.slots))
    errors = CollectionErrors(console)
    selection = Selection()
    plugins = [errors, selection]
    plugins += [LiveProgress(console=console, title=tier)] if progress else []
    pytest_code = pytest.main(pytest_args(plan, workers, extra_pytest or []), plugins=plugins)
    # -x / --maxfail stop the session on purpose (with xdist pytest then says "interrupted").
    stopped = selection.stopped_on_failure
    pytest_broke = bool(errors.errors) or (pytest_code not in (0, 1) and not stopped)
    if pytest_code == pytest.ExitCode.NO_TESTS_COLLECTED:
        console.print(f"[red]no case of tier {tier} matched the selection {extra_pytest}[/]")
    elif pytest_broke:
        console.print(f"[red]pytest could not run the suites (exit {pytest_code})[/]")
    if not errors.errors:
        # The run's cases are those pytest selected (-k, -m, --lf deselect the others); none
        # when pytest stopped before collecting (a usage error, say).
        cases = [c for c in cases if c.id in (selection.case_ids or ())]

    records, notes = collect_records(plan.run_dir, cases, drop_missing=stopped)
    for note in notes:
        console.print(f"[yellow]note:[/] {note}")
    quarantined = RunState(plan.state_path).quarantined() if plan.state_path.exists() else {}
    for host, why in quarantined.items():
        health.Quarantine(paths.STATE_DIR).add(host, why)
        console.print(f"[red]quarantined during the run:[/] {host}: {why}")
    code = EXIT_INFRA if pytest_broke else exit_code(records, plan, quarantined)
    with RunStore(store_path) as store:
        store.add_results(plan.run_id, records)
        store.finish_run(plan.run_id, code)
    summary_path = write_summary(plan, records, code, quarantined)
    from farm.results.allure_glue import write_results_extras

    write_results_extras(plan.run_dir / "allure-results", run_meta(plan, started))
    print_summary(console, records, plan, code, summary_path)
    if report:
        from farm.results import report as report_mod

        report_mod.main([plan.run_id, "--store", str(store_path)])
    return code


def run_meta(plan: Plan, started: str) -> dict:
    return {
        "run_id": plan.run_id,
        "tier": plan.tier,
        "backend": plan.backend,
        "target": plan.package.get("target", ""),
        "started_at": started,
        "package": plan.package,
        "git_commit": plan.git_commit,
        "inventory": plan.slots,
        "unhealthy": plan.unhealthy,
        "run_dir": str(plan.run_dir),
        "farm_version": __version__,
    }


def write_summary(plan: Plan, records: list[ResultRecord], code: int, quarantined: dict) -> Path:
    outcomes = Counter(r["outcome"] for r in records)
    summary = {
        "run_id": plan.run_id,
        "tier": plan.tier,
        "backend": plan.backend,
        "target": plan.package.get("target", ""),
        "exit_code": code,
        "cases": len(records),
        "outcomes": dict(outcomes),
        "categories": dict(Counter(r["category"] for r in records if r["category"])),
        "unhealthy_hosts": plan.unhealthy,
        "quarantined_during_run": quarantined,
        "failures": [
            {k: r.get(k) for k in FAILURE_FIELDS} for r in records if r["outcome"] != "passed"
        ],
        "allure_results": str(plan.run_dir / "allure-results"),
        "junit": str(plan.run_dir / JUNIT_XML),
    }
    path = plan.run_dir / SUMMARY_JSON
    path.write_text(json.dumps(summary, indent=1))
    return path


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
        console.print(f"  [red]{r['outcome']}[/] {r['case_id']}: {r['message']}", highlight=False)
    verdict = {
        0: "[green]all passed[/]",
        1: "[red]product failures[/]",
        2: "[yellow]degraded or incomplete by infrastructure[/]",
    }[code]
    console.print(
        f"{outcomes['passed']} passed, {outcomes['failed']} failed, {outcomes['broken']} broken"
        f" — {verdict} (exit {code})"
    )
    from farm.build import describe

    console.print(f"target   {describe(plan.package.get('target', ''))}", highlight=False)
    console.print(f"summary  {summary_path}")
    console.print(f"allure   {plan.run_dir / 'allure-results'}")
    console.print(f"junit    {plan.run_dir / 'junit.xml'}")


class Selection:
    """The case ids pytest selected: from the session (no xdist) or from the first worker's
    collection (xdist: every worker collects the same items); and whether -x stopped it."""

    def __init__(self):
        self.case_ids: set[str] | None = None
        self.maxfail = 0
        self.failures = 0

    @property
    def stopped_on_failure(self) -> bool:
        """-x / --maxfail N was given and reached: pytest stopped the session on purpose."""
        return self.maxfail > 0 and self.failures >= self.maxfail

    def pytest_configure(self, config):
        self.maxfail = config.getoption("maxfail", 0) or 0

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failures += 1

    def pytest_collection_finish(self, session):
        self._take(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if self.case_ids is None:
            self._take(ids)

    def _take(self, nodeids) -> None:
        from farm.run.plugin import case_id_of

        self.case_ids = {cid for cid in map(case_id_of, nodeids) if cid is not None}


class CollectionErrors:
    """With pytest's terminal off, collection errors and internal errors still reach people."""

    def __init__(self, console: Console):
        self.console = console
        self.errors = 0

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors += 1
            self.console.print(f"[red]collection error[/] in {report.nodeid}:")
            self.console.print(str(report.longrepr), highlight=False, markup=False)

    def pytest_internalerror(self, excrepr, excinfo):
        self.errors += 1
        self.console.print(f"[red]pytest internal error:[/] {excinfo.value}", highlight=False)
