"""Scratch directories of a command in the machine's temporary directory (pytest's JUnit
before the run's own junit.xml is made from it, farm/cli/run_command.py; a bisect's worktree
and build, bisect.py; a mutate job's sources and build, mutate.py), named after the process
that made them. A process that dies without removing its own (SIGKILL, the OOM killer, a CI
job killed after its grace period) leaves it behind, a worktree and its build or the JUnit of
every case it ran; the next command of the kind on the machine removes each one whose process is
gone (sweep)."""

from __future__ import annotations

import hashlib
import shutil
import socket
import tempfile
from pathlib import Path

from farm.run.owners import owner_alive, process_owner

JUNIT = "farm-junit-"
BISECT = "farm-bisect-"
MUTATE = "farm-mutate-"  # a `farm mutate` job's copy of op/ and its build (farm/run/mutate.py)


def make(prefix: str) -> Path:
    """A new scratch directory of this process: <prefix><tag>-<mkdtemp's suffix>, the tag
    naming the process in nothing a build tool reads as more than a name (make takes a ':'
    for a rule's)."""
    host, pid, started, namespace = process_owner().split(":", 3)
    tag = f"{_host_hash(host)}.{pid}.{started}.{''.join(c for c in namespace if c.isdigit())}"
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{tag}-"))


def _host_hash(host: str) -> str:
    return hashlib.sha256(host.encode()).hexdigest()[:8]


def _owner(tag: str) -> str:
    """The run owner (owners.process_owner) a directory's tag names; "" for one of another
    machine (a temporary directory shared over the network), or without a start time or a pid
    namespace (a machine without /proc), whose liveness nothing here can tell."""
    host, pid, started, namespace = (tag.split(".") + ["", "", "", ""])[:4]
    if host != _host_hash(socket.gethostname()) or not (pid and started and namespace):
        return ""
    return f"{socket.gethostname()}:{pid}:{started}:pid:[{namespace}]"


def left_by_the_dead(prefix: str, where: Path | None = None) -> list[Path]:
    """The scratch directories of ``prefix`` in ``where`` (the temporary directory) whose
    process is gone. One of another machine or pid namespace sharing the directory, of an older
    farm (its name says no owner) or of a machine without /proc (no start time), is never
    counted: nothing here can tell that it is not in use."""
    found = []
    for path in Path(where or tempfile.gettempdir()).glob(f"{prefix}*"):
        # The tag, then "-" and mkdtemp's suffix, which has no "-" of its own.
        tag, dash, _ = path.name[len(prefix) :].rpartition("-")
        owner = _owner(tag) if dash else ""
        if owner and owner_alive(owner) is False and path.is_dir():
            found.append(path)
    return found


def sweep(prefix: str) -> None:
    for path in left_by_the_dead(prefix):
        shutil.rmtree(path, ignore_errors=True)  # another user's: theirs to remove
