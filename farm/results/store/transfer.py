"""A store's whole history copied into another, empty one: how a team moves its SQLite store onto
the shared PostgreSQL server (`farm store migrate --from runs/farm.sqlite --to postgresql://…`).

The source is never changed: a SQLite source is copied with SQLite's backup API first and the
copy brought to the current schema, so a store of any released version moves over. Every row of
every table goes over in one transaction on the target (all or nothing), in insertion order, and
each table's row count is checked on both sides before it commits.
"""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from farm.results.store.checks import check_store
from farm.results.store.dialects import Database, PostgresDatabase
from farm.results.store.location import SQLITE, StoreLocation, store_location
from farm.results.store.runstore import RunStore
from farm.util.errors import StoreError

# Parents before children (foreign keys), each with the order its rows are read in.
TABLES = (
    ("runs", "seq"),
    ("results", "run_id, case_id"),
    ("baselines", "tier"),
    ("shrinks", "case_id, package_sha256"),
    ("bisects", "started_at, bisect_id"),
    ("bisect_steps", "bisect_id, step"),
    ("allure_history", "tier, position"),
    ("measures", "started_at, measure_id"),
    ("measure_mutants", "measure_id, mutant_id"),
)
BATCH = 2000


def columns(db: Database, table: str) -> list[str]:
    cur = db.execute(f"SELECT * FROM {table} LIMIT 0")
    return [d[0] for d in cur.description]


def count(db: Database, table: str) -> int:
    return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


@contextlib.contextmanager
def opened_source(spec: str | StoreLocation) -> Iterator[RunStore]:
    """The source store at the current schema, the source itself left as it was."""
    location = store_location(spec)
    if location.kind != SQLITE:
        with RunStore(location, create=False) as store:
            yield store
        return
    check_store(location, create=False)  # a missing or corrupt file: one line, before a copy
    assert location.path is not None
    with tempfile.TemporaryDirectory(prefix="farm-store-migrate-") as tmp:
        copy = Path(tmp) / "source.sqlite"
        backup_sqlite(location.path, copy)
        with RunStore(copy, create=False) as store:
            yield store


def backup_sqlite(source: Path, copy: Path) -> None:
    """A SQLite file copied whole with SQLite's backup API (what its WAL holds included), the
    source only read."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(copy)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def copy_store(
    source: RunStore, target: RunStore, progress: Callable[[str, int], None] | None = None
) -> dict[str, int]:
    """Every row of `source` into `target` (which must hold nothing); returns rows per table."""
    busy = [t for t, _ in TABLES if count(target.db, t)]
    if busy:
        raise StoreError(
            f"run store {target.location} is not empty ({', '.join(busy)} have rows): "
            "farm store migrate fills an empty store only; give it a new database or schema"
        )
    copied: dict[str, int] = {}
    with target.db.transaction():
        for table, order in TABLES:
            cols = columns(source.db, table)
            insert = (
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
            )
            rows = source.db.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY {order}")
            n = 0
            while batch := rows.fetchmany(BATCH):
                target.db.executemany(insert, [tuple(r) for r in batch])
                n += len(batch)
                if progress:
                    progress(table, n)
            if n != count(source.db, table) or n != count(target.db, table):
                raise StoreError(f"{table}: {n} rows read, but the counts differ: nothing copied")
            copied[table] = n
        if isinstance(target.db, PostgresDatabase):  # new runs number on after the copied ones
            target.db.execute(
                "SELECT setval(pg_get_serial_sequence('runs', 'seq'),"
                " COALESCE((SELECT MAX(seq) FROM runs), 0) + 1, false)"
            )
    return copied
