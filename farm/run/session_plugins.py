"""The pytest plugins `farm run` gives its in-process session: which cases pytest selected and
whether -x stopped it, the runs-directory faults of its workers, the workers lost mid-run,
collection errors shown with pytest's terminal off, and matplotlib imported and Allure started
while the workers run the cases."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.markup import escape

from farm.run.plugin import RUN_DIR_FAULT, case_id_of, run_dir_fault


class Selection:
    """The case ids pytest selected: from the session (no xdist) or from the first worker's
    collection (xdist: every worker collects the same items); and whether -x stopped it."""

    def __init__(self):
        self.case_ids: set[str] | None = None
        self.nodeids: dict[str, str] = {}  # case id -> its node id
        self.maxfail = 0
        self.failures = 0
        self._crash_reports: list[pytest.TestReport] = []

    @property
    def stopped_on_failure(self) -> bool:
        """-x / --maxfail N was given and reached: pytest stopped the session on purpose."""
        return self.maxfail > 0 and self.failures >= self.maxfail

    def pytest_configure(self, config):
        self.maxfail = config.getoption("maxfail", 0) or 0

    def pytest_runtest_logreport(self, report):
        # xdist's report of a worker that went down is no case failing: its case runs again.
        if report.failed and not any(report is r for r in self._crash_reports):
            self.failures += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        self._crash_reports.append(report)  # logged right after this hook

    def pytest_collection_finish(self, session):
        self._take(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if self.case_ids is None:
            self._take(ids)

    def _take(self, nodeids) -> None:
        self.nodeids = {cid: n for n in nodeids if (cid := case_id_of(n)) is not None}
        self.case_ids = set(self.nodeids)


class RunDirFaults:
    """The runs-directory faults of the session's processes: each worker's, from its
    workeroutput when it goes down, and this process's (no xdist)."""

    def __init__(self):
        self.messages: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        message = (getattr(node, "workeroutput", None) or {}).get(RUN_DIR_FAULT)
        if message:
            self.messages.append(message)

    def pytest_sessionfinish(self, session):
        message = run_dir_fault(session.config)
        if message:
            self.messages.append(message)


class LostWorkers:
    """The pytest-xdist workers that went down mid-run (killed from outside: the OOM killer, a
    signal to that process alone). xdist starts another in its place and the farm's scheduler
    gives it their cases, the one that was running included, so every case still gets its
    verdict; the run says which worker went, why, and while which case."""

    def __init__(self):
        self._lost: list[tuple[str, str, str]] = []  # (worker, why, the case it was running)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        if error is not None:
            self._lost.append((node.gateway.id, str(error), ""))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        if self._lost:  # xdist says the worker went down first, then which item it was running
            worker, why, _ = self._lost[-1]
            self._lost[-1] = (worker, why, case_id_of(crashitem) or crashitem)

    @property
    def notes(self) -> list[str]:
        return [
            f"pytest worker {worker} went down ({why})"
            + (f" while it ran {case}" if case else "")
            + "; a new worker ran its cases"
            + (", that one included" if case else "")
            for worker, why, case in self._lost
        ]


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
        self.console.print(
            f"[red]pytest internal error:[/] {escape(str(excinfo.value))}", highlight=False
        )


class PlotsPreload:
    """Under pytest-xdist this process only waits while the workers run the cases: once the
    first worker has collected (this process's own imports are done by then), matplotlib is
    imported in the background for the report's plots (farm/run/case_plots.py
    preload_in_background)."""

    def __init__(self):
        self.started = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.started:
            self.started = True
            from farm.run.case_plots import preload_in_background

            preload_in_background()


class AllurePrewarm:
    """Starts Allure for the run's report (farm/run/allure/process.py AllureProcess) as the cases
    begin, once the first worker has collected (or this process, without xdist): its modules
    load while the cases run. `allure` is None when it could not start (the report step then
    says what is missing); the runner discards it when no report is made."""

    def __init__(self):
        self.started = False
        self.allure = None

    def _start(self) -> None:
        if self.started:
            return
        self.started = True
        from farm.run.allure.process import AllureProcess
        from farm.util.errors import ToolMissing

        try:
            self.allure = AllureProcess()
        except (ToolMissing, OSError):
            self.allure = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self._start()

    def pytest_collection_finish(self, session):
        self._start()

    def discard(self) -> None:
        if self.allure is not None:
            self.allure.discard()
