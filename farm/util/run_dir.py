"""A runs directory that cannot take a run's writes: what the problem is called, in one line.

Every writer of a run's files (the workers' records and Allure results, the orchestrator's JUnit,
summary and report) turns the OSError it gets into :func:`unwritable`'s RunDirUnwritable, so the
person reads one line naming the directory, what is wrong with it and the fix, whoever hit it.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from farm.util import paths
from farm.util.errors import RunDirUnwritable

# errno -> what is wrong with the directory, and what to do about it.
_PROBLEMS = {
    errno.ENOSPC: ("is full", "free space on that disk"),
    errno.EDQUOT: ("is over its disk quota", "free space or raise the quota"),
    errno.EROFS: ("is on a read-only file system", "mount it writable"),
    errno.EACCES: ("is not writable", "check its permissions"),
    errno.EPERM: ("is not writable", "check its permissions"),
}
# errnos that say the directory cannot be written, as opposed to a bug of the writer.
FAULT_ERRNOS = frozenset(_PROBLEMS)


def is_fault(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk or its permissions refuse a write (not a bug)."""
    return isinstance(exc, OSError) and exc.errno in FAULT_ERRNOS


def unwritable(
    exc: OSError, runs_dir: Path | None = None, then: str = "then rerun"
) -> RunDirUnwritable:
    """The one-line error of a write refused by the runs directory (or, when the refused path
    is elsewhere, a store set by FARM_STORE say, by that path's directory); ``then``: what to
    do once it is fixed."""
    runs = Path(runs_dir or paths.RUNS_DIR)
    problem, fix = _PROBLEMS.get(exc.errno or 0, (f"refused a write ({exc.strerror})", ""))
    fix = fix or "check the disk and its permissions"
    refused = exc.filename
    if refused is None or is_inside(refused, runs):
        where = f"runs directory {runs}"
        elsewhere = "set FARM_RUNS to another place"
    else:
        where = f"directory {Path(os.fsdecode(refused)).parent}"
        elsewhere = "use another place"
    return RunDirUnwritable(f"{where} {problem}: {fix}, or {elsewhere}, {then}")


@contextlib.contextmanager
def refusals_as_errors(runs_dir: Path | None = None) -> Iterator[None]:
    """A write the disk or its permissions refuse is a RunDirUnwritable, not a traceback."""
    try:
        yield
    except OSError as exc:
        if not is_fault(exc):
            raise
        raise unwritable(exc, runs_dir) from None


def is_inside(path: str | os.PathLike, runs_dir: Path | None = None) -> bool:
    base = os.path.realpath(runs_dir or paths.RUNS_DIR)
    target = os.path.realpath(os.fsdecode(path))
    return target == base or target.startswith(base + os.sep)


# A run writes a record and an Allure result for every case. These write them as the operating
# system's files, without Python's buffered text layers around them, whose look-ups (the file's
# status, whether it is a terminal, its position) are four more system calls a file, each of them
# slow on a busy virtual disk.


def append(path: str | os.PathLike, data: bytes) -> None:
    """Append ``data`` to ``path`` (made if missing): open, write, close."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def write_whole(path: str | os.PathLike, data: bytes) -> None:
    """Write ``path`` as a whole: into ``<path>.tmp``, renamed into place once written, so that
    no reader ever finds part of it (as allure-pytest writes its files); a write refused leaves
    neither ``path`` changed nor the temporary file behind."""
    tmp = os.fsdecode(path) + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
