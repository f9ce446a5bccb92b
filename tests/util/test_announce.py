"""A long step's two lines (farm/util/announce.py): "build: WHAT" as it starts, "build: done in
T" as it ends, "(cached)" when it only found its result made already, "failed after T" when it
raised; nothing at all without an announcer. The clock is the test's."""

from __future__ import annotations

import threading

import pytest

from farm.util import announce


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_step_says_its_start_and_its_end_and_whether_it_did_anything():
    clock, said = Clock(), list[str]()
    with announce.saying(said.append):
        with announce.announced("ascendc-cpu x86_64", clock=clock):
            clock.now += 42.2
        with announce.announced(lambda: "twin aarch64", clock=clock):
            announce.worked()
            clock.now += 102
    assert said == [
        "build: ascendc-cpu x86_64",
        "build: done in 42 s (cached)",
        "build: twin aarch64",
        "build: done in 1 min 42 s",
    ]


def test_a_failed_step_says_so_and_raises_on():
    clock, said = Clock(), list[str]()
    with announce.saying(said.append), pytest.raises(RuntimeError):
        with announce.announced("twin x86_64", clock=clock):
            clock.now += 3.25
            raise RuntimeError("cmake build failed")
    assert said == ["build: twin x86_64", "build: failed after 3.2 s"]


def test_without_an_announcer_nothing_is_said_and_what_is_not_even_made():
    def what() -> str:
        raise AssertionError("made for nobody")

    assert not announce.active()
    with announce.announced(what):
        announce.worked()  # outside a said step: nothing to mark


def test_the_announcer_is_the_process_s_and_each_thread_marks_its_own_step():
    """The builds for another architecture run in the deploy threads: they say their lines
    through the announcer the entry point set, each "(cached)" or not by its own work."""
    said: list[str] = []
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            said.append(line)

    def step(name: str, works: bool) -> None:
        with announce.announced(name, clock=lambda: 0.0):
            if works:
                announce.worked()

    with announce.saying(say):
        threads = [threading.Thread(target=step, args=(n, n == "b")) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(said) == sorted(
        ["build: a", "build: b", "build: done in 0.0 s (cached)", "build: done in 0.0 s"]
    )
    assert not announce.active()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.04, "0.0 s"),
        (9.94, "9.9 s"),
        (9.96, "10 s"),
        (42.4, "42 s"),
        (102, "1 min 42 s"),
        (3725, "1 h 2 min"),
    ],
)
def test_durations_read_as_a_person_says_them(seconds, text):
    assert announce.duration(seconds) == text
