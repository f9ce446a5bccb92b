"""Which process owns a running run, and whether it still lives: a run whose owner died
(SIGKILL, a crash, a power cut) is an orphan, closed by the next command that opens the store."""

from __future__ import annotations

import os
import socket

from farm.util import proc


def process_owner() -> str:
    """This process, as a run's owner: host, pid, the pid's start time (a reused pid is
    another process) and its pid namespace (containers sharing a host name, as with Docker's
    host network, each count pids of their own)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}:{_pid_namespace()}"


def owner_alive(owner: str | None) -> bool | None:
    """Whether a run's owner process still runs; None when it is on another machine, or in
    another pid namespace of this one (its pid means nothing here)."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text, _, rest = rest.partition(":")
    started, _, namespace = rest.partition(":")  # no namespace: an owner an older farm wrote
    if host != socket.gethostname() or (namespace and namespace != _pid_namespace()):
        return None
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    return _start_time(pid) == started and started != ""


def _pid_namespace() -> str:
    return proc.pid_namespace()


def _start_time(pid: int) -> str:
    return proc.start_time(pid) or ""  # "" without /proc: such an owner is never alive
