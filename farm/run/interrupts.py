"""Signals while a command works: SIGINT and SIGTERM stop it as Ctrl-C does (interruptible),
and while its results are stored they only say so (shielded). `farm run` and `farm bisect`."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from rich.console import Console

from farm.agent import hostops


@contextlib.contextmanager
def interruptible(forward: bool = False) -> Iterator[list[int]]:
    """SIGTERM (a CI cancel) stops the run as Ctrl-C does; yields the signals received. Only
    the first one interrupts: pytest and its workers then wind down, and a second Ctrl-C must
    not break that half-way.

    ``forward``: the session's xdist workers are this process's children. A signal to the
    process group reaches them too; one to this pid alone (kill PID, a supervisor) would stop
    only the controller while they ran every case they were given, so it is passed on to them
    as the Ctrl-C they would have had."""
    received: list[int] = []

    def stop(signum, frame):
        received.append(signum)
        if len(received) == 1:
            if forward:
                for pid in hostops.children(os.getpid()):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGINT)
            raise KeyboardInterrupt

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    except KeyboardInterrupt:
        if not received:
            received.append(signal.SIGINT)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def shielded(console: Console) -> Iterator[None]:
    """While the results are stored, a second Ctrl-C or SIGTERM only says it is being finished
    (no traceback, no half-written run)."""

    def note(signum, frame):
        console.print(f"[yellow]{signal.Signals(signum).name}: storing the results first[/]")

    old = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
