"""The threads that work on a pool's hosts at once (health checks, deploys), and the main
thread's waits for them, which a stop must be able to end."""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# How often a wait for a host's work lets the main thread take a signal.
SIGNAL_CHECK_S = 0.2


@contextlib.contextmanager
def host_threads(max_workers: int) -> Iterator[ThreadPoolExecutor]:
    """A thread pool that a stop does not wait for. On Ctrl-C (or SIGTERM, SIGHUP: farm/cli.py)
    the work not begun is cancelled and the work under way is left to end with the process,
    where ``with ThreadPoolExecutor`` waits for it: an SSH connect to a host that does not
    answer waits out its whole timeout (farm/cli.py entry does not wait either)."""
    pool = ThreadPoolExecutor(max_workers=max_workers)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def result_of(future: Future[T]) -> T:
    """``future.result()``, waking every SIGNAL_CHECK_S. The kernel gives a process's signal to
    any of its threads (often one waiting in an SSH socket's recv), and Python runs its handler
    only when the main thread next runs Python code: a wait without a timeout, on a host that
    never answers, took a Ctrl-C or SIGTERM only at the end of the connect's timeout."""
    while not future.done():
        concurrent.futures.wait([future], timeout=SIGNAL_CHECK_S)
    return future.result()
