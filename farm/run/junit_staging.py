"""Where pytest writes a run's JUnit before the run's own junit.xml is made from it (runner.py
says why outside the runs directory): a directory in the machine's temporary directory, named
after the process that made it. A process that dies without removing its own (SIGKILL, the OOM
killer, a CI job killed after its grace period) leaves it behind, with the JUnit of every case it
ran; the next `farm run` on the machine removes each one whose process is gone."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from farm.results.store.owners import owner_alive, process_owner

PREFIX = "farm-junit-"


def make() -> Path:
    """A new staging directory of this process."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{process_owner()}-"))


def left_by_the_dead(where: Path | None = None) -> list[Path]:
    """The staging directories in ``where`` (the temporary directory) whose process is gone.
    One of another machine or pid namespace sharing the directory, or of an older farm (its
    name says no owner) or of a machine without /proc (no start time), is never counted: nothing
    here can tell that it is not in use."""
    found = []
    for path in Path(where or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        # The owner, then "-" and mkdtemp's suffix, which has no "-" of its own.
        owner, dash, _ = path.name[len(PREFIX) :].rpartition("-")
        started = owner.split(":")[2] if owner.count(":") >= 3 else ""
        if dash and started and owner_alive(owner) is False and path.is_dir():
            found.append(path)
    return found


def sweep() -> None:
    for path in left_by_the_dead():
        shutil.rmtree(path, ignore_errors=True)  # another user's: theirs to remove
