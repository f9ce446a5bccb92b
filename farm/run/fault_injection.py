"""A runs directory that refuses writes, for tests, without a real full or read-only disk.

``FARM_FAULT_RUNS_DIR=<ERRNO>[:<when>]`` (ERRNO: ENOSPC, EROFS, EACCES, ...) makes every write
under the runs directory ($FARM_RUNS) fail with that errno, in the orchestrator and in every
pytest worker (they inherit the variable), as a disk that is full or read-only would:

    <when> absent       from the start
    <when> a file path  while that file exists (a test creates it once N records exist: the
                        disk "fills" at a point the test controls, not after a sleep)
    <when> "report"     from the report step on (the orchestrator calls :func:`enter`)

It is an audit hook (sys.addaudithook), so it refuses the writes of the real code paths: the
records writer, allure-pytest's file writer, pytest's JUnit writer, the summary, the report step,
and SQLite opening a store that lives there. Root ignores chmod, so this is also how the tests
make a read-only directory where CI runs as root. Reading and deleting still work, as on a full
disk. Nothing happens without the variable.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
from pathlib import Path

from farm.util import paths
from farm.util.run_dir import is_inside

ENV = "FARM_FAULT_RUNS_DIR"
REPORT = "report"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_state: dict[str, object] = {}


def install() -> bool:
    """Install the hook when $FARM_FAULT_RUNS_DIR asks for one (once a process). Returns whether
    a fault is configured."""
    spec = os.environ.get(ENV, "")
    if not spec:
        return False
    if _state:
        return True
    name, _, when = spec.partition(":")
    code = getattr(errno, name.strip(), None)
    if not isinstance(code, int):
        raise ValueError(f"{ENV}={spec!r}: {name!r} is not an errno name (ENOSPC, EROFS, ...)")
    _state.update(code=code, when=when, runs=Path(paths.RUNS_DIR), phase="")
    sys.addaudithook(_hook)
    return True


def enter(phase: str) -> None:
    """The orchestrator enters a phase of the run (``report``)."""
    if _state:
        _state["phase"] = phase


def _active() -> bool:
    when = str(_state.get("when") or "")
    if not when:
        return True
    if when == REPORT:
        return _state.get("phase") == REPORT
    return os.path.exists(when)


def _refuse(path) -> None:
    code = int(_state["code"])  # type: ignore[call-overload]
    raise OSError(code, os.strerror(code), os.fsdecode(path))


def _hook(event: str, args: tuple) -> None:
    if event not in ("open", "os.mkdir", "os.rename", "os.link", "sqlite3.connect"):
        return
    runs = _state["runs"]
    if event == "open":
        path, mode, flags = args
        if not isinstance(path, (str, bytes, os.PathLike)):
            return  # a file descriptor
        writes = any(c in str(mode) for c in "wax+") if mode is not None else flags & _WRITE_FLAGS
        if writes and is_inside(path, runs) and _active():  # type: ignore[arg-type]
            _refuse(path)
    elif event == "os.mkdir":
        path = args[0]
        if isinstance(path, (str, bytes, os.PathLike)) and not os.path.exists(path):
            if is_inside(path, runs) and _active():  # type: ignore[arg-type]
                _refuse(path)
    elif event in ("os.rename", "os.link"):
        if is_inside(args[1], runs) and _active():  # type: ignore[arg-type]
            _refuse(args[1])
    else:  # a store in the runs directory cannot be written either
        database = os.fsdecode(args[0])
        if database.startswith("file:"):  # an URI: read-only openings read on
            if "mode=ro" in database:
                return
            database = database[5:].split("?", 1)[0]
        if database != ":memory:" and is_inside(database, runs) and _active():  # type: ignore[arg-type]
            full = _state["code"] in (errno.ENOSPC, errno.EDQUOT)
            raise sqlite3.OperationalError(
                "database or disk is full" if full else "attempt to write a readonly database"
            )
