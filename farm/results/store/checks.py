"""Refuse a store that cannot serve before anything starts: one StoreError line naming the
store (its password hidden) and the fix.

A SQLite store's integrity check (``PRAGMA quick_check``) reads the whole file: it costs what
the store's history weighs (a month of nightlies, 1.3 GB: 0.5 s from the page cache, 17 s from
the disk), and a `farm run` opens its store ten times. So the farm reads a store whole when
something other than the farm has written it since it last did, and at least every
TRUSTED_FOR_S: a record beside the store (``<store>.checked``) keeps the file's identity and
state (device, inode, size, modification and change times) as the farm found it sound, and
follows whenever one of the farm's connections to the file closes (what SQLite wrote for it).
Another program's writes, a file copied or moved into the store's place, bytes written into it:
each leaves another state, and the next open reads the file whole. Corruption that changes no
state (a failing disk) or comes within the file system's clock tick of the state kept (a few
ms) is left to SQLite, which reports a corrupt page when it reads it, as a StoreError like every
other database failure (dialects.py ``errors_named``), and to the next whole read. `farm run`
makes its whole read in a thread while its package is built and its hosts are checked
(check_store_while)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from farm.results.store.dialects import FULL_FIX, PostgresDatabase, full_disk, sqlite_fix
from farm.results.store.location import SQLITE, StoreLocation, store_location
from farm.results.store.schema import SCHEMA_VERSION, newer_than_farm
from farm.util import waits
from farm.util.errors import StoreError


class PendingScan:
    """The whole-file scan of a SQLite store, running in a thread (check_store_while)."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.error: StoreError | None = None

    def result(self) -> None:
        """Wait for the scan (a wait a signal can end); raise the StoreError it found."""
        if self.thread is not None:
            waits.join(self.thread)
        if self.error is not None:
            raise self.error


def check_store_while(
    spec: str | os.PathLike | StoreLocation, *, create: bool, write: bool = False
) -> PendingScan:
    """check_store, but the whole-file scan of a SQLite store that needs one is left to a
    thread: the other checks refuse now, the scan's verdict comes from
    ``PendingScan.result()``, before which the caller writes nothing into the store (farm run:
    the scan reads while the package is built and the hosts are checked, and a corrupt store is
    refused before the run begins)."""
    location = store_location(spec)
    if location.kind == SQLITE:
        return _check_sqlite(location, create, scan_later=True)
    check_store(location, create=create, write=write)
    return PendingScan()


def check_store(
    spec: str | os.PathLike | StoreLocation, *, create: bool, write: bool = False
) -> StoreLocation:
    """`create`: a missing store may be made here (farm run at the default or configured
    place); otherwise a missing store is an error (a typo in --store must not quietly become a
    new, empty store). `write`: the command writes into the store (farm run): a PostgreSQL role
    that may not is refused here, before anything else (a SQLite file is checked writable
    whatever `write` says)."""
    location = store_location(spec)
    if location.kind == SQLITE:
        _check_sqlite(location, create).result()
    else:
        db = PostgresDatabase(location)
        try:
            check_postgres(db, create, write)
        finally:
            db.close()
    return location


# What a run writes: its row, its results, its tier's history line (farm/results/store/).
WRITTEN_TABLES = ("runs", "results", "allure_history")


def check_postgres(db: PostgresDatabase, create: bool, write: bool = False) -> None:
    where = f"run store {db.location.display}"
    with db.errors_named():
        tables = db.tables()
        version = 0
        if "schema_version" in tables:
            row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
            version = int(row[0] or 0)
    if version > SCHEMA_VERSION:
        raise newer_than_farm(where, version)
    # A schema_version table at version 0 is a store another run is creating right now: its
    # migration holds the lock this one's will wait for.
    if "schema_version" not in tables and tables:
        raise StoreError(
            f"{where} is a database with other tables, not a farm run store: give the farm a "
            "database of its own, or a schema of its own (?options=-csearch_path%3Dfarm)"
        )
    if not version and not create:
        raise StoreError(
            f"no run store in {where}: check FARM_STORE, or run farm run (or farm store "
            "migrate) first"
        )
    if write:
        _check_postgres_writable(db, where, bool(version))


def _check_postgres_writable(db: PostgresDatabase, where: str, exists: bool) -> None:
    """Refuse a role that may not write what a run writes (or, for a new store, create its
    tables), naming the role and the grant that fixes it."""
    with db.errors_named():
        (role,) = db.execute("SELECT current_user").fetchone()
        if exists:
            lacking = [
                table
                for table in WRITTEN_TABLES
                for (allowed,) in [
                    db.execute(
                        "SELECT has_table_privilege(?, 'INSERT')"
                        " AND has_table_privilege(?, 'UPDATE')",
                        (table, table),
                    ).fetchone()
                ]
                if not allowed
            ]
        else:
            (allowed,) = db.execute(
                "SELECT has_schema_privilege(current_schema(), 'CREATE')"
            ).fetchone()
            lacking = [] if allowed else ["the schema (CREATE, to make the store's tables)"]
    if lacking:
        what = ", ".join(lacking)
        grant = (
            f"GRANT INSERT, UPDATE, DELETE ON {', '.join(WRITTEN_TABLES)} TO {role}"
            if exists
            else f"GRANT CREATE ON SCHEMA <its schema> TO {role}"
        )
        raise StoreError(
            f"{where}: role {role} may only read it (no write on {what}), and farm run writes "
            f"its results there: give FARM_STORE a role that may write, or {grant}"
        )


# A store read whole and since written by the farm alone is read whole again after this long.
TRUSTED_FOR_S = 7 * 86400
# Beside the store: the file as the farm last left it, and when the farm last read it whole.
CHECKED_SUFFIX = ".checked"


def _file(stat: os.stat_result) -> list[int]:
    """The file's identity and state: device, inode, size, modification and change times."""
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def _checked_path(path: Path) -> Path:
    return path.with_name(path.name + CHECKED_SUFFIX)


def _record(path: Path) -> tuple[list[int], float] | None:
    """The record beside the store: (the file as the farm last left it, when it last read the
    file whole); None if there is none that reads."""
    try:
        record = json.loads(_checked_path(path).read_text(encoding="utf-8"))
        return list(record["file"]), float(record["checked_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _trusted(path: Path, stat: os.stat_result) -> bool:
    """The farm read the store whole less than TRUSTED_FOR_S ago and was the last to write it
    (the file is as its record says)."""
    record = _record(path)
    return (
        record is not None
        and record[0] == _file(stat)
        and 0 <= time.time() - record[1] < TRUSTED_FOR_S
    )


def _keep_record(path: Path, stat: os.stat_result, checked_at: float) -> None:
    """The record beside the store, written whole; none where its directory refuses it (the
    next open then reads the store whole)."""
    text = json.dumps({"file": _file(stat), "checked_at": checked_at})
    target = _checked_path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def integrity(db: sqlite3.Connection) -> str:
    """SQLite's quick_check of the whole file: "ok", or the first problem it found."""
    return str(db.execute("PRAGMA quick_check").fetchone()[0])


def closed_by_this_process(path: Path) -> None:
    """One of this process's connections to the SQLite store at ``path`` has closed. It was
    opened sound (every open checks: the record matched, or the file was read whole), so the
    file as it is now is what SQLite wrote for it: the record follows, its last whole read kept
    (a store with no record of the same file stays without one)."""
    try:
        stat = path.stat()
    except OSError:
        return
    record = _record(path)
    if record is None or record[0][:2] != _file(stat)[:2] or record[0] == _file(stat):
        return  # none, another file's, or only read
    _keep_record(path, stat, record[1])


def _unreadable(where: str, exc: sqlite3.DatabaseError, path: Path) -> StoreError:
    full = full_disk(str(exc), path)
    if full:
        return StoreError(f"{where}: {full}: {FULL_FIX}")
    return StoreError(f"{where} cannot be read ({exc}): {sqlite_fix(str(exc), path)}")


def _unsound(where: str, status: str) -> StoreError:
    """The check's first problem (SQLite lists them all, one a line, after a heading)."""
    problems = [line for line in status.splitlines() if line and not line.startswith("***")]
    first = problems[0] if problems else status.strip()
    more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
    return StoreError(
        f"{where} failed its integrity check ({first}{more}): move it aside and restore it"
    )


def _scan(path: Path, where: str, stat: os.stat_result, pending: PendingScan) -> None:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            status = integrity(db)
        finally:
            db.close()
        if status != "ok":
            pending.error = _unsound(where, status)
    except sqlite3.DatabaseError as exc:
        pending.error = _unreadable(where, exc, path)
    if pending.error is None:
        _keep_record(path, stat, time.time())


def _check_sqlite(location: StoreLocation, create: bool, scan_later: bool = False) -> PendingScan:
    assert location.path is not None
    p = location.path
    done = PendingScan()
    if str(p) == ":memory:":
        return done
    where = f"run store {p}"
    if not p.exists():
        if not create:
            raise StoreError(
                f"no {where}: check the path (--store / FARM_STORE), or run farm run first"
            )
        probe = p.parent if str(p.parent) else p.cwd()
        try:  # root passes every access check, and still cannot make a directory in /proc
            probe.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create {where}: cannot make {probe} ({exc.strerror}); set FARM_STORE "
                "(and FARM_RUNS) to a writable place"
            ) from None
        if not os.access(probe, os.W_OK | os.X_OK):
            raise StoreError(
                f"cannot create {where}: {probe} is not writable; fix its permissions or set "
                "FARM_STORE (and FARM_RUNS) to a writable place"
            )
        return done
    if p.is_dir():
        raise StoreError(f"{where} is a directory: give the store's file, e.g. {p}/farm.sqlite")
    stat = p.stat()
    if stat.st_size == 0:
        raise StoreError(f"{where} is an empty file, not a run store: remove it or restore it")
    sound = _trusted(p, stat)
    if not sound:
        with open(p, "rb") as f:
            magic = f.read(16)
        if magic != b"SQLite format 3\x00":
            raise StoreError(
                f"{where} is not a SQLite database (corrupt or another file): move it aside and "
                "restore it from a backup, or point FARM_STORE elsewhere"
            )
    if not os.access(p, os.W_OK) or not os.access(p.parent, os.W_OK | os.X_OK):
        raise StoreError(
            f"{where} is read-only (the file or its directory): fix its permissions or set "
            "FARM_STORE to a writable copy"
        )
    try:
        db = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=10)
        try:
            status = "ok" if sound or scan_later else integrity(db)
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            version = 0
            if "schema_version" in tables:
                version = int(
                    db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
                )
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise _unreadable(where, exc, p) from None
    if status != "ok":
        raise _unsound(where, status)
    if version > SCHEMA_VERSION:
        raise newer_than_farm(where, version)
    if tables and "runs" not in tables:
        raise StoreError(f"{where} is a SQLite database but not a farm run store")
    if sound:
        return done
    if not scan_later:
        _keep_record(p, stat, time.time())
        return done
    done.thread = threading.Thread(
        target=_scan, args=(p, where, stat, done), name="farm-store-scan", daemon=True
    )
    done.thread.start()
    return done
