"""The main thread's waits for the farm's threads take a signal that the kernel gave to the
thread waited for (farm/util/waits.py): its handler runs while that thread still works, not once it
is done. The signal is sent to the thread itself (pthread_kill), as the kernel may; the thread
works until the test lets it go, or for a minute at most, so that a wait that cannot take the
signal fails the test instead of hanging it. (The pause before the signal is no verdict's
condition: it only makes a wait that cannot take it found more surely.)"""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from farm.util import waits
from tests.requirements import need


class Stopped(Exception):
    pass


@pytest.fixture
def stop_handler():
    """SIGUSR1's handler raises Stopped, having noted whether the work was still going."""
    need(
        threading.current_thread() is threading.main_thread(),
        "the main thread (signal handlers are its own)",
    )
    working = threading.Event()
    seen: list[bool] = []

    def stop(signum, frame):
        seen.append(working.is_set())
        raise Stopped

    old = signal.signal(signal.SIGUSR1, stop)
    yield working, seen
    signal.signal(signal.SIGUSR1, old)


def signal_from_inside(waiting: threading.Event, release: threading.Event):
    """The work, which gives itself SIGUSR1 once the main thread is about to wait for it (and
    a little after: a handler run before the wait began would prove nothing)."""

    def run(working: threading.Event) -> None:
        working.set()
        waiting.wait(60)
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        release.wait(60)
        working.clear()

    return run


def wait_for(kind: str, run, working: threading.Event, pool: ThreadPoolExecutor):
    """The work started in a thread of its own (join) or of ``pool`` (result_of); its wait."""
    if kind == "join":
        thread = threading.Thread(target=run, args=(working,), daemon=True)
        thread.start()
        return lambda: waits.join(thread)
    future = pool.submit(run, working)
    return lambda: waits.result_of(future)


@pytest.mark.parametrize("kind", ["join", "result_of"])
def test_a_wait_takes_a_signal_given_to_the_thread_it_waits_for(stop_handler, kind):
    working, seen = stop_handler
    waiting, release = threading.Event(), threading.Event()
    with ThreadPoolExecutor(1) as pool:
        wait = wait_for(kind, signal_from_inside(waiting, release), working, pool)
        try:
            with pytest.raises(Stopped):
                waiting.set()
                wait()
        finally:
            release.set()
    assert seen == [True]


def test_result_of_gives_the_result_and_the_error():
    with ThreadPoolExecutor(1) as pool:
        assert waits.result_of(pool.submit(lambda: 42)) == 42
        with pytest.raises(TimeoutError):  # the work's own, not the wait's
            waits.result_of(pool.submit(lambda: (_ for _ in ()).throw(TimeoutError())))
