"""A run's progress in a log (farm/run/progress.py PlainProgress): with --no-progress or on
output that is no terminal, a nightly shard printed nothing between its host lines and its end.
Now a line comes at a steady pace: at least every 30 s of run time however long its cases take,
never two within 10 s. The clock is the test's: a simulated run of five minutes, no sleeping."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from farm.run import progress
from farm.run.progress import LiveProgress, PlainProgress, progress_plugin

RUN = 300.0  # five simulated minutes


class Simulated:
    """The test's clock, and the progress thread's sleep: each wait moves the clock on and hands
    the progress the reports of the cases that ended meanwhile; it says the session ended once
    the run's time is up."""

    def __init__(self, ends: Iterable[tuple[float, str]], until: float = RUN):
        self.now = 0.0
        self.ends = sorted(ends)
        self.until = until
        self.plain: PlainProgress | None = None

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        assert self.plain is not None
        self.now += seconds
        while self.ends and self.ends[0][0] <= self.now:
            _, outcome = self.ends.pop(0)
            self.plain.pytest_runtest_logreport(report(outcome))
        return self.now >= self.until


class Lines(Console):
    """A console that keeps each line with the simulated time it was printed at."""

    def __init__(self, sim: Simulated):
        super().__init__(file=io.StringIO(), width=200)
        self.sim = sim
        self.said: list[tuple[float, str]] = []

    def print(self, *objects: Any, **kwargs: Any) -> None:
        self.said.append((self.sim.now, " ".join(str(o) for o in objects)))


def report(outcome: str, when: str = "call") -> SimpleNamespace:
    return SimpleNamespace(
        when=when,
        outcome="passed" if outcome == "passed" else "failed",
        passed=outcome == "passed",
        nodeid="suites/test_precision.py::test_precision[c1]",
        user_properties=[("farm_outcome", outcome), ("farm_host", "emu-a2-01")],
    )


def run(ends: Iterable[tuple[float, str]], total: int) -> list[tuple[float, str]]:
    """The lines of a simulated run: its session starts at 0 and ends at RUN."""
    sim = Simulated(ends)
    console = Lines(sim)
    plain = PlainProgress(console, clock=sim.clock, wait=sim.wait)
    sim.plain = plain
    plain.pytest_xdist_node_collection_finished(None, [f"t[{i}]" for i in range(total)])
    plain.started = plain._last_line = sim.clock()  # pytest_sessionstart, without its thread
    plain.beat()  # the thread's loop, in this thread: it ends when the session does
    plain.pytest_sessionfinish(None)
    return console.said


def gaps(said: list[tuple[float, str]]) -> list[float]:
    times = [0.0] + [t for t, _ in said] + [RUN]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def test_a_five_minute_run_prints_a_line_at_least_every_30_seconds():
    # 40 cases, one ending every 7 s, every tenth failing.
    ends = [(7.0 * (i + 1), "failed" if i % 10 == 9 else "passed") for i in range(40)]
    said = run(ends, total=40)
    assert len(said) >= RUN // 30
    assert max(gaps(said)) <= 30
    assert min(b - a for (a, _), (b, _) in zip(said, said[1:], strict=False)) >= 10
    assert all(line.startswith("progress ") for _, line in said)


def test_a_long_case_keeps_the_lines_coming():
    """Three cases, the second running four minutes: no report for minutes, lines all the same."""
    said = run([(5.0, "passed"), (250.0, "passed"), (260.0, "broken")], total=3)
    assert max(gaps(said)) <= 30
    quiet = [line for t, line in said if 5 < t < 250]
    assert quiet
    assert all(line.startswith("progress 1/3 cases, 0 failed, 0 broken") for line in quiet)


def test_a_failure_is_said_soon_after_the_last_line():
    """A line every 25 s; a failure 2 s after one is said 10 s after it, not 25."""
    said = run([(1.0, "passed"), (27.0, "failed")], total=5)
    times = [t for t, _ in said]
    assert times[:3] == [1.0, 26.0, 36.0]
    assert said[2][1].startswith("progress 2/5 cases, 1 failed, 0 broken, 36 s in")


def test_the_first_case_back_is_said_at_once():
    """A log shows the cases began to come back (and `farm run | head` finds its reader gone
    while the run runs, not after it is stored: tests/e2e/test_interrupts.py)."""
    said = run([(3.0, "passed"), (4.0, "passed")], total=7)
    assert said[0] == (3.0, "progress 1/7 cases, 0 failed, 0 broken, 3.0 s in, about 18 s left")
    assert all(t >= 13.0 for t, _ in said[1:])


def test_the_line_says_count_failures_broken_and_time_left():
    sim = Simulated([])
    plain = PlainProgress(Lines(sim), clock=sim.clock, wait=sim.wait)
    plain.pytest_collection_finish(SimpleNamespace(items=list(range(290))))
    plain.outcomes.update({"passed": 114, "failed": 3, "broken": 3})
    assert plain.line(130.0) == (
        "progress 120/290 cases, 3 failed, 3 broken, 2 min 10 s in, about 3 min 4 s left"
    )
    assert PlainProgress(Lines(sim), clock=sim.clock).line(30.0) == (
        "progress 0/? cases, 0 failed, 0 broken, 30 s in (collecting the cases)"
    )


def test_a_setup_that_passed_and_a_teardown_are_no_case_ends():
    sim = Simulated([])
    plain = PlainProgress(Lines(sim), clock=sim.clock, wait=sim.wait)
    plain.pytest_runtest_logreport(report("passed", when="setup"))
    plain.pytest_runtest_logreport(report("passed", when="teardown"))
    plain.pytest_runtest_logreport(report("broken", when="setup"))
    plain.pytest_runtest_logreport(report("passed"))
    assert dict(plain.outcomes) == {"broken": 1, "passed": 1}


def test_the_thread_says_a_line_and_ends_with_the_session(monkeypatch):
    """pytest_sessionstart starts the thread; sessionfinish ends it (the real Event's wait)."""
    monkeypatch.setattr(progress, "WAKE", 0.001)
    sim = Simulated([])
    sim.now = 0.0
    console = Lines(sim)
    plain = PlainProgress(console, clock=sim.clock)
    plain.pytest_sessionstart(None)
    sim.now = 26.0  # the thread sees the clock past EVERY at its next wake
    for _ in range(5000):
        if console.said:
            break
        plain._ended.wait(0.001)
    plain.pytest_sessionfinish(None)
    assert plain._thread is None
    assert [line for _, line in console.said] == [
        "progress 0/? cases, 0 failed, 0 broken, 26 s in (collecting the cases)"
    ]


@pytest.mark.parametrize(
    ("terminal", "live", "chosen"),
    [
        (True, True, LiveProgress),
        (True, False, PlainProgress),  # --no-progress: lines, for a log
        (False, True, PlainProgress),  # a pipe, a CI log
        (False, False, PlainProgress),
    ],
)
def test_the_live_bar_is_for_a_terminal_and_lines_for_the_rest(terminal, live, chosen):
    console = Console(file=io.StringIO(), force_terminal=terminal)
    assert type(progress_plugin(console, "smoke", live=live)) is chosen


def test_no_progress_says_what_it_prints(capsys):
    from farm import cli

    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "--no-progress plain progress lines" in text
