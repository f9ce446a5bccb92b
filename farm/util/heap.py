"""CPython's cyclic garbage collector in a farm run's pytest session: each long-lived object
walked about once by a full collection, not by every one.

What lives as long as a session does, in every pytest process of a run (its test items and
their cases: 31,831 of each in the full tier; in the controller, pytest's JUnit reporter of
every finished case, a growing share), is walked by each full collection, and full collections
come as the heap grows: ~11 s of the full tier's CPU in its pytest processes, 2.3 s of it in the
workers' collection, before their first case (benchmarks/RESULTS.md, issue 26). So:

* :func:`collecting`: the items are made with the collector off (:func:`paused`: making them
  leaves no garbage to speak of), and what exists after them is frozen (``gc.freeze``: left
  out of every later collection; reference counting frees a frozen object as ever);
* :func:`keep_long_lived`: from then on, what survives a full collection is frozen too;
* :func:`release`: once the session is over, every object is unfrozen (the controller goes on
  to the store and the report, and what the session leaves behind is garbage then);
  :func:`settle` instead where the process ends with its session (a pytest-xdist worker): frozen,
  its objects are not walked by the interpreter's finalization either (~1.1 s a nightly run).

Only garbage in reference cycles waits for a collection, and a cycle that became garbage while
frozen waits for :func:`release`.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off while many objects are made and none is garbage (a session's items, a
    case file's cases), as it was before afterwards: run every 700 allocations, it walks them
    all again and again (two thirds of a YAML case file's load)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@contextlib.contextmanager
def collecting() -> Iterator[None]:
    """The collector off while the session's items are made; they are frozen afterwards."""
    try:
        with paused():
            yield
    finally:
        gc.freeze()


def _freeze_survivors(phase: str, info: dict) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def keep_long_lived() -> None:
    """Freeze what survives each full collection from now on."""
    if _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)


def _stop_keeping() -> None:
    while _freeze_survivors in gc.callbacks:
        gc.callbacks.remove(_freeze_survivors)


def release() -> None:
    """The session is over and the process goes on: everything back under the collector."""
    _stop_keeping()
    gc.unfreeze()


def settle() -> None:
    """The session is over and so is the process: everything stays frozen."""
    _stop_keeping()
    gc.freeze()
