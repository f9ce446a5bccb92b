"""The two databases a run store can be, behind one small interface: SQL is written once, with
``?`` placeholders and SQLite's type names, and each dialect turns it into what its driver takes.

Both connections run in autocommit; a write is ``with db.transaction():`` (SQLite: BEGIN
IMMEDIATE, so that writers queue instead of failing; PostgreSQL: a transaction at READ COMMITTED,
in which one run's import locks only that run's rows). Every driver error becomes a StoreError
that names the store (its password hidden) and the fix.
"""

from __future__ import annotations

import abc
import contextlib
import datetime as _dt
import os
import re
import shlex
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from farm.results.store.location import POSTGRESQL, SQLITE, StoreLocation, redact
from farm.util.errors import StoreError
from farm.util.sizes import size_text

PG_CONNECT_TIMEOUT_S = 10
# SQLite says "database or disk is full" (SQLITE_FULL) only where a write itself fails; on a full
# disk, growing its shared-memory file (SQLITE_IOERR_SHMSIZE), truncating or syncing fail as a
# "disk I/O error". Such an error with less than this free on the store's file system is the
# disk being full, said so (a store's smallest write, its -shm file, takes 32 KiB).
FULL_BELOW_BYTES = 1 << 20
FULL_FIX = (
    "free space on that disk or set FARM_STORE elsewhere; the run's records stay in "
    "runs/<run>/records and farm runs --recover imports them"
)


class Row(tuple):
    """A result row readable by position (unpacking) and by column name, like sqlite3.Row."""

    _index: dict[str, int]

    def __new__(cls, values: Sequence[Any], index: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


def _fix_for(text: str, location: StoreLocation) -> str:
    low = text.lower()
    if "unique constraint" in low:  # the store is sound: what it holds must not be given up
        return "it holds a row of that key already (two runs given one id at once): run this again"
    if location.kind == POSTGRESQL:
        if "permission denied" in low or "read-only" in low:
            return "this role may only read: use a role that may write for farm run"
        if "password authentication" in low or "no password" in low:
            return "check the user and password in FARM_STORE (the CI secret)"
        if any(w in low for w in ("deadlock", "could not serialize", "could not obtain lock")):
            return "another runner's transaction held what this one needed: run this again"
        if "connection" in low or "could not" in low or "timeout" in low:
            return "check that the server is up and FARM_STORE names it"
        return "see the server's log"
    if "full" in low:
        return FULL_FIX
    if "readonly" in low or "read-only" in low:
        return "fix its permissions or set FARM_STORE to a writable copy"
    return sqlite_fix(text, location.path)


def free_bytes(path: os.PathLike | str | None) -> int | None:
    """What may still be written on the file system of a store's file (None: unknown)."""
    if path is None or str(path) == ":memory:":
        return None
    where = os.path.dirname(os.path.abspath(os.fspath(path)))
    try:
        st = os.statvfs(where)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def full_disk(text: str, path: os.PathLike | str | None) -> str | None:
    """``text`` (SQLite's error) said as a full disk, naming what is free where, when it is one
    (see FULL_BELOW_BYTES); None otherwise."""
    low = text.lower()
    if "disk i/o" not in low:
        return None
    free = free_bytes(path)
    if free is None or free >= FULL_BELOW_BYTES:
        return None
    where = os.path.dirname(os.path.abspath(os.fspath(path or ".")))
    return f"the disk is full ({size_text(free)} free in {where}; SQLite said: {text})"


def sqlite_fix(text: str, path: os.PathLike | str | None) -> str:
    """The fix of a SQLite store's error ``text``: a backup only for a damaged file. The store
    is sound when another process holds it, or the disk or the path failed: restoring it from
    a backup would give up what it holds for an older copy."""
    low = text.lower()
    if "locked" in low or "busy" in low:
        return (
            "another process holds its write lock (a `farm runs prune` rewriting it, a farm "
            f"command stopped with Ctrl-Z; `fuser {shlex.quote(str(path))}` names it): let it "
            "end, then run this again"
        )
    if "unable to open" in low:
        return "check that its directory exists and may be written, or set FARM_STORE elsewhere"
    if "disk i/o" in low:
        return "the disk failed a read or a write: check the disk (dmesg), then run this again"
    return "move it aside and restore it from a backup"


def store_error(location: StoreLocation, exc: BaseException) -> StoreError:
    text = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    if location.kind == SQLITE and (full := full_disk(text, location.path)):
        return StoreError(f"run store {location.display}: {full}: {FULL_FIX}")
    return StoreError(f"run store {location.display}: {text}: {_fix_for(text, location)}")


class Database(abc.ABC):
    """One connection to a store's database."""

    dialect: str
    errors: tuple[type[BaseException], ...]

    def __init__(self, location: StoreLocation):
        self.location = location

    # -- statements
    def sql(self, text: str) -> str:
        return text

    def ddl(self, text: str) -> str:
        return text

    @abc.abstractmethod
    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any: ...

    @abc.abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def script(self, sql: str) -> None:
        """DDL statement by statement, inside the caller's transaction."""
        for stmt in sql.split(";"):
            if stmt.strip():
                self.execute(self.ddl(stmt))

    @abc.abstractmethod
    def transaction(self) -> contextlib.AbstractContextManager[Database]: ...

    @abc.abstractmethod
    def lock(self, name: str) -> None:
        """Inside a transaction: wait until no other transaction holds `name`."""

    # -- the database as a whole
    def clock(self) -> _dt.datetime:
        """Now, by the clock every writer of this store shares (UTC): this machine's for a
        SQLite file, the server's for PostgreSQL, whose runners' clocks may disagree."""
        return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)

    @abc.abstractmethod
    def tables(self) -> set[str]: ...

    @abc.abstractmethod
    def size_bytes(self) -> int: ...

    @abc.abstractmethod
    def reclaim_space(self) -> None:
        """Give deleted rows' space back."""

    @abc.abstractmethod
    def close(self) -> None: ...

    @contextlib.contextmanager
    def errors_named(self) -> Iterator[None]:
        """Driver errors raised inside become StoreErrors naming the store."""
        try:
            yield
        except self.errors as exc:
            raise store_error(self.location, exc) from None


class SqliteDatabase(Database):
    dialect = SQLITE
    errors = (sqlite3.Error,)

    def __init__(self, location: StoreLocation, timeout: float = 60.0):
        super().__init__(location)
        assert location.path is not None
        memory = str(location.path) == ":memory:"
        with self.errors_named():
            self.conn = sqlite3.connect(str(location.path), timeout=timeout, isolation_level=None)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA foreign_keys=ON")
            if not memory:
                self.conn.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
            self.conn.execute("PRAGMA synchronous=NORMAL")

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        with self.errors_named():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def lock(self, name: str) -> None:
        """BEGIN IMMEDIATE already lets one writer in at a time."""

    def tables(self) -> set[str]:
        rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        return {r[0] for r in rows}

    def size_bytes(self) -> int:
        total = 0
        if self.location.path is None or str(self.location.path) == ":memory:":
            return 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                total += os.stat(f"{os.fspath(self.location.path)}{suffix}").st_size
        return total

    def reclaim_space(self) -> None:
        """VACUUM rewrites the file and cannot run inside a transaction; the checkpoint then
        writes the WAL back and truncates it."""
        if str(self.location.path) == ":memory:":
            return
        with self.errors_named():
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.conn.close()


# SQLite's type names in the schema, as PostgreSQL spells the same thing: SQLite's INTEGER and
# REAL are 64-bit (PostgreSQL's are 32-bit), and SQLite compares TEXT byte by byte (PostgreSQL by
# the database's locale unless told "C"), so that both sort case ids and timestamps alike.
_PG_TYPES = [
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bTEXT\b"), 'TEXT COLLATE "C"'),
]


class PostgresDatabase(Database):
    dialect = POSTGRESQL

    def __init__(self, location: StoreLocation):
        super().__init__(location)
        import psycopg

        self.errors = (psycopg.Error,)
        self._sql: dict[str, str] = {}
        with self.errors_named():
            self.conn = psycopg.connect(
                location.url,
                autocommit=True,
                connect_timeout=PG_CONNECT_TIMEOUT_S,
                application_name="farm",
                row_factory=_pg_rows,
            )

    def sql(self, text: str) -> str:
        out = self._sql.get(text)
        if out is None:
            out = self._sql[text] = text.replace("%", "%%").replace("?", "%s")
        return out

    def ddl(self, text: str) -> str:
        for pattern, name in _PG_TYPES:
            text = pattern.sub(name, text)
        return text

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self.conn.execute(self.sql(sql), tuple(args))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(self.sql(sql), [tuple(r) for r in rows])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        with self.errors_named(), self.conn.transaction():
            yield self

    def lock(self, name: str) -> None:
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("farm:" + name,))

    def clock(self) -> _dt.datetime:
        with self.errors_named():
            (now,) = self.conn.execute("SELECT now()").fetchall()[0]
        return now.astimezone(_dt.timezone.utc).replace(microsecond=0)

    def tables(self) -> set[str]:
        rows = self.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {r[0] for r in rows}

    def size_bytes(self) -> int:
        row = self.conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
        return int(row[0]) if row else 0

    def reclaim_space(self) -> None:
        """PostgreSQL's autovacuum gives deleted rows' space back by itself."""

    def close(self) -> None:
        self.conn.close()


def _pg_rows(cursor):
    index = {col.name: i for i, col in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        return Row(values, index)

    return make


def connect(location: StoreLocation, timeout: float = 60.0) -> Database:
    if location.kind == POSTGRESQL:
        return PostgresDatabase(location)
    return SqliteDatabase(location, timeout=timeout)
