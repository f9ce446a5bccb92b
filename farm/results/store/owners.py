"""Which process owns a running run, and whether it still lives: a run whose owner died
(SIGKILL, a crash, a power cut) is an orphan, closed by the next command that opens the store."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from farm.agent import hostops


def process_owner() -> str:
    """This process, as a run's owner: host, pid and the pid's start time (a reused pid is
    another process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}"


def owner_alive(owner: str | None) -> bool | None:
    """Whether a run's owner process still runs; None when it is on another machine."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname():
        return None
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    return _start_time(pid) == started and started != ""


def _start_time(pid: int) -> str:
    return hostops.start_time(pid) or ""  # "" without /proc: such an owner is never alive


def read_records(run_dir: Path) -> tuple[dict[str, dict], list[str]]:
    """The records a run's workers wrote (<run_dir>/records/*.jsonl), the last one of each case
    (the plugin appends an amended record when a suite check fails after the first), and notes
    on what could not be read (a worker killed mid-write leaves a partial line)."""
    by_id: dict[str, dict] = {}
    notes: list[str] = []
    for path in sorted((run_dir / "records").glob("*.jsonl")) if str(run_dir) else []:
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                notes.append(f"{path.name}:{line_no}: unreadable record (a worker died mid-write)")
                continue
            by_id[record["case_id"]] = record  # a later record amends an earlier one
    return by_id, notes
