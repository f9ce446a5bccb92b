"""The processes of a lab host (farm/pool/lab/core.py): a process's tree (its sshd, the sessions and
agents under it), signals to all of it, and the farm agents of a host's work directory, found by
their pid files and command lines, killed with their process groups.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from farm.agent import hostops
from farm.util import proc as procfs


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (farm/util/proc.py), parents first."""
    return procfs.descendants(pid)


def alive(pid: int | None) -> bool:
    """Whether the process exists and is not a zombie (farm/util/proc.py)."""
    return pid is not None and procfs.alive(pid)


def signal_all(pids: list[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _is_agent_of(pid: int, workdir: str) -> bool:
    return hostops.is_agent(procfs.cmdline(pid) or [], workdir)


def host_agents(workdir: str | os.PathLike[str]) -> list[int]:
    """The pids of the farm agents of one work directory that are alive (zombies are not): from
    their pid files and from every process's command line (Linux /proc)."""
    workdir = os.path.abspath(workdir)
    found: set[int] = set()
    folder = Path(workdir) / "agents"
    for path in folder.glob("*.json") if folder.is_dir() else []:
        try:
            pid = int(json.loads(path.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if alive(pid) and _is_agent_of(pid, workdir):
            found.add(pid)
        elif not alive(pid):
            path.unlink(missing_ok=True)  # the agent was killed before it could remove it
    for pid in procfs.pids():
        if _is_agent_of(pid, workdir) and alive(pid):
            found.add(pid)
    return sorted(found)


def kill_agents(workdir: str | os.PathLike[str], timeout: float = 5.0) -> list[int]:
    """SIGKILL every agent of a work directory with its process group (SIGCONT first, no SIGTERM:
    farm/agent/hostops.py ``kill_group``); return the pids that are still alive afterwards (none,
    unless a process cannot be killed)."""
    pids = host_agents(workdir)
    for pid in pids:
        pgid = procfs.group_of(pid)
        if pgid is None:
            continue
        if pgid != os.getpgrp():  # never our own group (an agent should always have its own)
            hostops.kill_group(pgid, None, kill_wait=0.0)  # the waiting is done below, per agent
        signal_all([pid], signal.SIGKILL)
    return [pid for pid in pids if not wait_gone(pid, timeout)]


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return not alive(pid)
