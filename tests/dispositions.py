"""The stop signals' dispositions of a command a test starts in order to stop it.

A child inherits the signals its parent ignores: this suite started in the background of a
script (`bash .ci/run &`: SIGINT ignored) or under nohup (SIGHUP ignored) would start every farm
it tests ignoring them, and a test of Ctrl-C or of a closed terminal would test nothing. A test
that stops a command with a signal starts it with ``disposed``: each stop signal at its default,
as a shell in a terminal leaves it, but for those it names as ignored, as a script or nohup
would leave them. Set in the command's own process, before it runs (a launcher that execs it:
the pid is the command's), whatever the test process inherited."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterable, Sequence

_LAUNCH = """
import os, signal, sys
ignored = {int(s) for s in sys.argv[1].split(",") if s}
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN if s in ignored else signal.SIG_DFL)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def disposed(argv: Sequence[str], ignoring: Iterable[signal.Signals] = ()) -> list[str]:
    """``argv`` started with SIGINT, SIGTERM and SIGHUP at their defaults, those in
    ``ignoring`` ignored (as `cmd &` in a script ignores SIGINT, `nohup cmd` SIGHUP)."""
    ignored = ",".join(str(int(s)) for s in ignoring)
    return [sys.executable, "-c", _LAUNCH, ignored, *argv]


def ignored_by(pid: int) -> set[int]:
    """The signals process ``pid`` ignores (/proc/PID/status SigIgn)."""
    return _mask(pid, "SigIgn")


def pending_in(pid: int) -> set[int]:
    """The signals pending for process ``pid`` as a whole (/proc/PID/status ShdPnd): sent to
    it, not yet handled (it is stopped); an ignored signal is dropped, never pending."""
    return _mask(pid, "ShdPnd")


def _mask(pid: int, field: str) -> set[int]:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name == field:
                bits = int(value.strip(), 16)
                return {n for n in range(1, 65) if bits >> (n - 1) & 1}
    raise LookupError(f"/proc/{pid}/status has no {field}")
