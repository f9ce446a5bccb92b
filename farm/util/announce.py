"""One line when a long step starts and one when it ends, wherever it happens:

    build: ascendc-cpu x86_64
    build: done in 42 s (cached)

A build (farm/pool/build/package.py build_package, farm/pool/cann_build.py build_on) is
:func:`announced`; what says the lines is the process's announcer, set once by the entry point
that owns the output (:func:`saying`: the farm command, `python -m farm.pool.build`, the pytest
plugin's controller). Without one (a library call, a test) a build is silent. The announcer is
the process's, not a thread's: the builds for other architectures run in the threads that deploy
to their hosts (farm/run/packages.py), and say their lines too.

"(cached)": the step did nothing but find its result made already (the CMake build stamp
current, the CANN package in dist/op); the step's code says when it did work (:func:`worked`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Say = Callable[[str], None]

_say: Say | None = None  # the process's announcer (saying); None: silent
_worked: ContextVar[list[bool] | None] = ContextVar("farm_announce_worked", default=None)


def to_stderr(line: str) -> None:
    """The command line's announcer: a line on stderr, at once (a log shows it when it happens,
    in order with the command's other lines)."""
    print(line, file=sys.stderr, flush=True)


@contextmanager
def saying(say: Say | None) -> Iterator[None]:
    """``say`` announces the steps of this process until the block ends (None: none does)."""
    global _say
    before, _say = _say, say
    try:
        yield
    finally:
        _say = before


def active() -> bool:
    """Whether a step's lines are said (what a line costs to make is spent only then)."""
    return _say is not None


def worked() -> None:
    """The announced step running in this thread did real work: its end is no "(cached)"."""
    flag = _worked.get()
    if flag is not None:
        flag.append(True)


def duration(seconds: float) -> str:
    """0.4 s, 42 s, 1 min 42 s, 1 h 3 min."""
    if round(seconds, 1) < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


@contextmanager
def announced(
    what: str | Callable[[], str],
    *,
    step: str = "build",
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[None]:
    """ "<step>: <what>" as the block starts; "<step>: done in T" as it ends ("(cached)" unless
    it :func:`worked`), "<step>: failed after T" when it raises. ``what`` may be a function, called
    only when the lines are said."""
    say = _say
    if say is None:
        yield
        return
    say(f"{step}: {what() if callable(what) else what}")
    flag: list[bool] = []
    token = _worked.set(flag)
    started = clock()
    try:
        yield
    except BaseException:
        say(f"{step}: failed after {duration(clock() - started)}")
        raise
    finally:
        _worked.reset(token)
    say(f"{step}: done in {duration(clock() - started)}" + ("" if flag else " (cached)"))


__all__ = ["Say", "active", "announced", "duration", "saying", "to_stderr", "worked"]
