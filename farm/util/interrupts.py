"""Signals while a command works: SIGINT, SIGTERM and SIGHUP stop any command as Ctrl-C does,
so that its way out runs (stopping, farm/cli); `farm run` and `farm bisect` stop in their own
way inside that: what finished is kept (interruptible), and while their results are stored a
signal only says so (shielded).

SIGHUP is the terminal going away (its window closed, the SSH session under it dropped): the
kernel sends it to the foreground process group, and every later write to that terminal fails
(EIO). The command stops as from SIGTERM and writes what it says from then on to /dev/null; its
files and store are what tell the outcome. A pipe whose reader went away (`farm run | head`) is
met on the next write, never by a signal (output_gone): it stops the command as SIGPIPE would.

A stop signal this process was started ignoring stays ignored (catch): `farm run &` in a script
ignores Ctrl-C, as every background job of a non-interactive shell does, and `nohup farm run`
the terminal's hangup. What the command passes on to its children (interruptible) is a signal it
caught itself, never one they may have inherited as ignored."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import threading
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from farm.util import proc

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


def _onto_null(same: Callable[[os.stat_result], bool]) -> None:
    """Points every descriptor of this process whose file is ``same`` at /dev/null. Every one,
    not only stdout and stderr: pytest keeps its own copies of them."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in proc.own_descriptors():
            with contextlib.suppress(OSError):  # the listing's own descriptor, gone meanwhile
                if same(os.fstat(fd)):
                    os.dup2(null, fd)
    finally:
        os.close(null)


def off_the_terminal(device: int | None) -> None:
    """The terminal ``device`` hung up: a write to it would fail."""
    if device is not None:
        _onto_null(lambda st: stat.S_ISCHR(st.st_mode) and st.st_rdev == device)


def off_the_pipe(fd: int) -> None:
    """The reader of the pipe (or socket) ``fd`` writes to went away: a write would fail."""
    st = os.fstat(fd)
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        _onto_null(lambda other: (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino))


# The handlers of the interruptible and shielded blocks this process is in, innermost last.
_handlers: list[Callable[[int, Any], None]] = []


def output_gone() -> None:
    """The reader of this command's output went away (EPIPE; farm/util/console.py). In a block that
    stops on signals, it stops as if on SIGPIPE; elsewhere BrokenPipeError (farm/cli: exit
    141). No SIGPIPE handler is installed for it: Python ignores SIGPIPE so that a write to a
    closed socket (an SSH host gone) is an error of that write, never a stop of the command."""
    if _handlers and threading.current_thread() is threading.main_thread():
        _handlers[-1](signal.SIGPIPE, None)
        return
    raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


@contextlib.contextmanager
def _caught(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for the stop signals (catch) while the block runs, the previous ones after."""
    old = catch(handler)
    try:
        yield
    finally:
        for s, previous in old.items():
            signal.signal(s, previous)


@contextlib.contextmanager
def _handling(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """_caught, and ``handler`` is also what output_gone calls."""
    with _caught(handler):
        _handlers.append(handler)
        try:
            yield
        finally:
            _handlers.remove(handler)


@contextlib.contextmanager
def stopping() -> Iterator[list[int]]:
    """Any command: SIGTERM and SIGHUP raise KeyboardInterrupt as SIGINT does, where their
    default action ends the process where it stands, its way out never run (a report's work
    directory left beside the report, a child process left running); yields the signals
    received, the last one the command's exit code less 128. Outside the main thread (a test's
    call) it changes nothing: only that thread takes signals."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    tty = terminal()

    def stop(signum, frame):
        if signum == signal.SIGHUP:
            off_the_terminal(tty)
        received.append(signum)
        raise KeyboardInterrupt

    with _caught(stop):  # not _handling: outside run and bisect a closed pipe is exit 141 alone
        yield received


def passed_on(signum: int, caught: Collection[int]) -> int:
    """The signal that passes the stop ``signum`` on to this process's children, of the stop
    signals it ``caught``: the same one, which they cannot have inherited as ignored (a handler
    is the default again in a child, an ignore stays: farm run's workers are started while it
    catches them); for a closed pipe (SIGPIPE, which Python ignores, output_gone), SIGTERM or
    the next one caught. Never SIGINT for another stop: a background job ignores it, and with it
    every child it starts."""
    if signum in caught:
        return signum
    return next((s for s in (signal.SIGTERM, signal.SIGHUP) if s in caught), signal.SIGTERM)


@contextlib.contextmanager
def interruptible(forward: bool = False) -> Iterator[list[int]]:
    """SIGTERM (a CI cancel) stops the run as Ctrl-C does; yields the signals received. Only
    the first one interrupts: pytest and its workers then wind down, and a second Ctrl-C must
    not break that half-way.

    ``forward``: the session's xdist workers are this process's children. A signal to the
    process group reaches them too; one to this pid alone (kill PID, a supervisor) would stop
    only the controller while they ran every case they were given, so it is passed on to them
    (passed_on: the signal itself, which their plugin takes as Ctrl-C, farm/run/plugin.py). Not
    as SIGINT: a farm started in the background by a script, or by nohup from one, inherits
    SIGINT ignored, and so do its workers; they ran on to the end of the tier."""
    received: list[int] = []
    tty = terminal()

    def stop(signum, frame):
        if signum == signal.SIGHUP:
            off_the_terminal(tty)
        received.append(signum)
        if len(received) == 1:
            if forward:
                caught = [s for s in STOPS if signal.getsignal(s) is stop]
                passed = passed_on(signum, caught)
                for pid in proc.children(os.getpid()):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, passed)
            raise KeyboardInterrupt

    try:
        with _handling(stop):
            yield received
    except KeyboardInterrupt:
        if not received:
            received.append(signal.SIGINT)


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

    with _handling(note):
        yield received
