"""No process outlives the farm command that started it.

A child the farm starts to work for it (the report's plot workers, Allure's node) is told by the
kernel to end when the farm does (Linux's PR_SET_PDEATHSIG: SIGKILL when the thread that started
it ends): a `farm merge` or `farm report` killed with SIGKILL took nothing with it, and its two
plot workers drew on for minutes. Elsewhere, and where prctl cannot be had, nothing changes.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _find_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _find_prctl()  # found here, once: a forked child calls it and imports nothing


def die_with_parent(parent: int) -> None:
    """In a child just started by process ``parent``: end (SIGKILL) when the parent does; end
    now if it already has (it died between the fork and this call)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def dying_with_this_process() -> Callable[[], None] | None:
    """A subprocess ``preexec_fn`` that makes the child end with this process (None where that
    cannot be had)."""
    if _PRCTL is None:
        return None
    parent = os.getpid()
    return lambda: die_with_parent(parent)
