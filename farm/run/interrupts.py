"""Signals while a command works: SIGINT, SIGTERM and SIGHUP stop it as Ctrl-C does
(interruptible), and while its results are stored they only say so (shielded). `farm run` and
`farm bisect`.

SIGHUP is the terminal going away (its window closed, the SSH session under it dropped): the
kernel sends it to the foreground process group, and every later write to that terminal fails
(EIO). The command stops as from SIGTERM and writes what it says from then on to /dev/null; its
files and store are what tell the outcome."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from farm.agent import hostops

if TYPE_CHECKING:  # a worker's plugin imports this module; rich is the orchestrator's
    from rich.console import Console

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def catch(handler) -> dict[int, Any]:
    """``handler`` for each stop signal this process was not started to ignore (``nohup``'s
    SIGHUP, a background job's SIGINT: those stay ignored); the handlers it replaced."""
    return {s: signal.signal(s, handler) for s in STOPS if signal.getsignal(s) != signal.SIG_IGN}


def terminal() -> int | None:
    """The device of the terminal this process writes to (asked before a hangup: after it,
    the terminal no longer answers as one), or None."""
    for fd in (2, 1, 0):
        if os.isatty(fd):
            return os.fstat(fd).st_rdev
    return None


def off_the_terminal(device: int | None) -> None:
    """Points every descriptor of this process on ``device`` at /dev/null: the terminal hung
    up, and a write to it would fail. Every one, not only stdout and stderr: pytest keeps its
    own copies of them for its terminal and the live progress."""
    if device is None:
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for name in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # the listing's own descriptor, gone meanwhile
                st = os.fstat(int(name))
                if stat.S_ISCHR(st.st_mode) and st.st_rdev == device:
                    os.dup2(null, int(name))
    finally:
        os.close(null)


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
    tty = terminal()

    def stop(signum, frame):
        if signum == signal.SIGHUP:
            off_the_terminal(tty)
        received.append(signum)
        if len(received) == 1:
            if forward:
                for pid in hostops.children(os.getpid()):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGINT)
            raise KeyboardInterrupt

    old = catch(stop)
    try:
        yield received
    except KeyboardInterrupt:
        if not received:
            received.append(signal.SIGINT)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def shielded(console: Console) -> Iterator[list[int]]:
    """While the results are stored, Ctrl-C, SIGTERM or SIGHUP only says it is being finished
    (no traceback, no half-written run); yields the signals received."""
    tty = terminal()
    received: list[int] = []

    def note(signum, frame):
        if signum == signal.SIGHUP:
            off_the_terminal(tty)
        received.append(signum)
        console.print(f"[yellow]{signal.Signals(signum).name}: storing the results first[/]")

    old = catch(note)
    try:
        yield received
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
