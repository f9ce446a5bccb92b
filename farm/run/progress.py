"""Live progress of a run in the terminal: done/total, failures, per-host activity, ETA.

A pytest plugin for the controller process: under xdist the workers' reports arrive here with
the host each case ran on (the farm puts it in the report's user_properties).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

import pytest
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from farm.util.console import FarmConsole


class LiveProgress:
    def __init__(self, console: Console | None = None, title: str = "farm run"):
        self.console = console or FarmConsole(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task(title, total=None, tally="")
        self.outcomes: Counter[str] = Counter()
        self.per_host: dict[str, Counter] = defaultdict(Counter)
        self.last_case: dict[str, str] = {}
        self.live: Live | None = None
        self.started = time.monotonic()

    # -- pytest hooks ---------------------------------------------------------------------

    def pytest_collection_finish(self, session):
        self._total(len(session.items))

    @pytest.hookimpl(optionalhook=True)  # pytest in this process (one worker) has no xdist
    def pytest_xdist_node_collection_finished(self, node, ids):
        self._total(len(ids))

    def pytest_sessionstart(self, session):
        self.live = Live(
            self._render(), console=self.console, refresh_per_second=4, transient=False
        )
        self.live.start()

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        props = dict(report.user_properties)
        outcome = props.get("farm_outcome") or ("passed" if report.passed else "failed")
        host = props.get("farm_host") or "-"
        self.outcomes[outcome] += 1
        self.per_host[host][outcome] += 1
        self.last_case[host] = report.nodeid.split("[", 1)[-1].rstrip("]")
        self.progress.update(self.task, advance=1, tally=self._tally())
        if self.live:
            self.live.update(self._render())

    def pytest_sessionfinish(self, session):
        if self.live:
            self.live.update(self._render())
            self.live.stop()
            self.live = None
            if not self.console.is_terminal:  # a log or pipe: rich ends its last frame there
                self.console.line()  # without a line end, and the next line ran into it

    # -- drawing --------------------------------------------------------------------------

    def _total(self, n: int) -> None:
        if self.progress.tasks[0].total is None:
            self.progress.update(self.task, total=n)

    def _tally(self) -> str:
        colours = {"passed": "green", "failed": "red", "broken": "yellow"}
        return "  ".join(
            f"[{colours.get(k, 'white')}]{k} {v}[/]" for k, v in sorted(self.outcomes.items())
        )

    def _render(self):
        hosts = Table(box=None, padding=(0, 2), show_edge=False)
        for column in ("host", "done", "failed", "broken", "last case"):
            hosts.add_column(column)
        for host in sorted(self.per_host):
            c = self.per_host[host]
            hosts.add_row(
                host,
                str(sum(c.values())),
                str(c["failed"]),
                str(c["broken"]),
                self.last_case.get(host, ""),
            )
        return Group(self.progress, hosts)
