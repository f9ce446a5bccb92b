"""The main thread's waits for the farm's own threads, which a signal must be able to end.

The kernel gives a process's signal to any of its threads (often one waiting in a socket's recv,
an SSH connect or a store's scan), and Python runs its handler only when the main thread next
runs Python code: a wait without a timeout took a Ctrl-C or SIGTERM only when the thread it
waited for was done (for a host that never answers, at the end of the connect's timeout). These
waits wake every SIGNAL_CHECK_S."""

from __future__ import annotations

import concurrent.futures
import threading
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")

SIGNAL_CHECK_S = 0.2


def result_of(future: Future[T]) -> T:
    """``future.result()``."""
    while not future.done():
        concurrent.futures.wait([future], timeout=SIGNAL_CHECK_S)
    return future.result()


def join(thread: threading.Thread) -> None:
    """``thread.join()``."""
    while thread.is_alive():
        thread.join(SIGNAL_CHECK_S)
