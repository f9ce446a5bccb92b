"""The progress of a run: done/total, failures, broken cases, ETA.

Pytest plugins for the controller process: under xdist the workers' reports arrive here with the
host each case ran on (the farm puts it in the report's user_properties).

- :class:`LiveProgress`, on a terminal: a live bar with a row per host.
- :class:`PlainProgress`, in a log (output that is no terminal, or `farm run --no-progress`):
  a line at a steady pace, at least every :data:`EVERY` seconds of the run however long its
  cases take, and :data:`SOONEST` seconds after the last when a case has failed or broken since:

      progress 120/290 cases, 3 failed, 0 broken, 2 min 10 s in, about 3 min 4 s left

:func:`progress_plugin` picks one.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from farm.util.announce import duration
from farm.util.console import FarmConsole

EVERY = 25.0  # seconds between two plain lines at most (a log shows the run alive)
SOONEST = 10.0  # and at least: a failure or broken case said this soon after the last line
WAKE = 1.0  # how often the plain progress' thread looks at the clock


def progress_plugin(console: Console, title: str, *, live: bool) -> LiveProgress | PlainProgress:
    """The live bar on a terminal, unless ``live`` is False (--no-progress); plain lines
    otherwise: a log, a pipe, a CI job."""
    if live and console.is_terminal:
        return LiveProgress(console=console, title=title)
    return PlainProgress(console)


def counted_outcome(report) -> str | None:
    """The outcome a case's report counts for (passed, failed, broken, ...), or None for a report
    that is no case's end (its setup passed, its teardown)."""
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return None
    props = dict(report.user_properties)
    return props.get("farm_outcome") or ("passed" if report.passed else "failed")


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
        outcome = counted_outcome(report)
        if outcome is None:
            return
        host = dict(report.user_properties).get("farm_host") or "-"
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


class PlainProgress:
    """Progress lines for a log: one at least every :data:`EVERY` seconds from the session's
    start to its end, one :data:`SOONEST` seconds after the last when a case failed or broke
    since, never two closer. A thread looks at the clock every :data:`WAKE` seconds, so a line
    comes while a long case runs too.

    ``clock`` and ``wait`` are the time and the thread's sleep (``wait(seconds)`` returns True
    when the session has ended): a test gives its own, and :meth:`beat` runs in its thread."""

    def __init__(
        self,
        console: Console,
        *,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], bool] | None = None,
    ):
        self.console = console
        self.clock = clock
        self._ended = threading.Event()
        self.wait = wait or self._ended.wait
        self.total: int | None = None
        self.outcomes: Counter[str] = Counter()
        self.started = clock()
        self._last_line = self.started
        self._bad_at_last_line = 0
        self._said_first = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # -- pytest hooks ---------------------------------------------------------------------

    def pytest_collection_finish(self, session):
        self._total(len(session.items))

    @pytest.hookimpl(optionalhook=True)  # pytest in this process (one worker) has no xdist
    def pytest_xdist_node_collection_finished(self, node, ids):
        self._total(len(ids))

    def pytest_sessionstart(self, session):
        with self._lock:
            self.started = self._last_line = self.clock()
        self._thread = threading.Thread(target=self.beat, name="farm-progress", daemon=True)
        self._thread.start()

    def pytest_runtest_logreport(self, report):
        outcome = counted_outcome(report)
        if outcome is not None:
            with self._lock:
                self.outcomes[outcome] += 1
            self.tick()

    def pytest_sessionfinish(self, session):
        self.stop()

    def pytest_unconfigure(self, config):  # a session that never finished (an internal error)
        self.stop()

    # -- the pace -------------------------------------------------------------------------

    def beat(self) -> None:
        """Until the session ends: a line whenever one is due (:meth:`tick`)."""
        while not self.wait(WAKE):
            self.tick()

    def stop(self) -> None:
        self._ended.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def tick(self) -> None:
        """Print the line if it is due. The first case's end is said at once: a log shows the
        cases began to come back (and a reader gone from a pipe is found while the run runs, not
        after it is stored)."""
        with self._lock:
            now = self.clock()
            since = now - self._last_line
            bad = self.outcomes["failed"] + self.outcomes["broken"]
            first = sum(self.outcomes.values()) == 1 and not self._said_first
            if not (first or since >= EVERY or (bad > self._bad_at_last_line and since >= SOONEST)):
                return
            self._said_first = True
            self._last_line, self._bad_at_last_line = now, bad
            line = self.line(now)
        self.console.print(line, highlight=False, markup=False)

    def line(self, now: float) -> str:
        """progress 120/290 cases, 3 failed, 0 broken, 2 min 10 s in, about 3 min 4 s left"""
        done = sum(self.outcomes.values())
        elapsed = now - self.started
        total = "?" if self.total is None else str(self.total)
        text = (
            f"progress {done}/{total} cases, {self.outcomes['failed']} failed, "
            f"{self.outcomes['broken']} broken, {duration(elapsed)} in"
        )
        if done and self.total is not None and done < self.total:
            text += f", about {duration(elapsed / done * (self.total - done))} left"
        elif self.total is None:
            text += " (collecting the cases)"
        return text

    def _total(self, n: int) -> None:
        with self._lock:
            if self.total is None:
                self.total = n
