"""What Linux's /proc says about processes and the machine: the farm's one reader of it.

Process questions (is a pid alive, when did it start, who are a group's or a parent's live
members, what command line, which pid namespace) serve the agent's housekeeping on a host
(farm/agent/hostops.py), the orchestrator's ownership of runs (farm/results/store/owners.py) and
the lab's clean-up; machine questions (memory, CPU flags) serve budgets and the fused judging
library's build key. Every answer degrades to "unknown" (None, [], "") where /proc is missing or
unreadable, never an error: callers decide what unknown means.

This module ships to hosts with the agent (farm/pool/deploy.py BUNDLE_PATHS): standard library
only.
"""

from __future__ import annotations

import os

MEMINFO = "/proc/meminfo"
CPUINFO = "/proc/cpuinfo"


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state first); None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def have_proc() -> bool:
    return os.path.isdir("/proc/self")


def pids() -> list[int]:
    """Every process id /proc lists (none without /proc)."""
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (kill -0; a process of another user
    counts as alive; the zombie check needs /proc)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = _stat(pid)
    return stat is None or stat[0] != b"Z"


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (``starttime`` of /proc/PID/stat, clock ticks since boot):
    tells a reused pid from the process that had it. None without such a process or /proc."""
    stat = _stat(pid)
    if stat is None or len(stat) < 20:
        return None
    return stat[19].decode("ascii", "replace")


def members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``, from /proc; without /proc,
    ``[pgid]`` while kill -0 reaches the group, else []."""
    if not have_proc():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    return _live_where(2, pgid)


def children(ppid: int) -> list[int]:
    """The live processes whose parent is ``ppid``, from /proc (none without /proc)."""
    return _live_where(1, ppid) if have_proc() else []


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (zombies included: they are still to be reaped),
    parents first; just ``[pid]`` without /proc."""
    below: dict[int, list[int]] = {}
    for entry in pids():
        stat = _stat(entry)
        if stat is not None and len(stat) > 1:
            below.setdefault(int(stat[1]), []).append(entry)
    tree, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        tree.append(p)
        todo.extend(below.get(p, []))
    return tree


def _live_where(field: int, value: int) -> list[int]:
    """The live (not zombie) processes whose /proc stat ``field`` (after the command name:
    1 the parent, 2 the process group) is ``value``."""
    found = []
    for pid in pids():
        stat = _stat(pid)
        if stat is not None and int(stat[field]) == value and stat[0] != b"Z":
            found.append(pid)
    return found


def group_of(pid: int) -> int | None:
    """The process group of ``pid``; None when there is no such process."""
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def cmdline(pid: int) -> list[str] | None:
    """The arguments process ``pid`` was started with; None when they cannot be read (gone, no
    /proc, another user's process on a hardened /proc)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def command_name(pid: int) -> str | None:
    """The command name of ``pid`` (/proc/PID/comm); None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def pid_namespace() -> str:
    """This process's pid namespace ("pid:[4026531836]"); "" where /proc does not say."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def own_descriptors() -> list[int]:
    """The file descriptors this process has open (/proc/self/fd; none without /proc)."""
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return []


def meminfo(path: str = MEMINFO) -> tuple[int | None, int | None]:
    """(MemTotal, MemAvailable) in bytes from a /proc/meminfo; None for what it does not say."""
    found: dict[str, int] = {}
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                words = value.split()
                if key in ("MemTotal", "MemAvailable") and words and words[0].isdigit():
                    scale = 1024 if words[1:2] == ["kB"] else 1
                    found[key] = int(words[0]) * scale
    except OSError:
        pass
    return found.get("MemTotal"), found.get("MemAvailable")


def cpu_features(path: str = CPUINFO) -> str | None:
    """The CPU's feature flags (x86 "flags", Arm "Features"), when every CPU has the same; None
    where they cannot be read or differ between cores."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    found = {
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.split(":", 1)[0].strip() in ("flags", "Features") and ":" in line
    }
    return found.pop() if len(found) == 1 else None
