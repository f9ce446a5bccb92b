"""The RunStore: one connection to a run store, SQLite or PostgreSQL, with every part's methods."""

from __future__ import annotations

import os
import sys

from farm.results.store.baselines import Baselines
from farm.results.store.checks import check_postgres, check_store, closed_by_this_process
from farm.results.store.dialects import PostgresDatabase, connect
from farm.results.store.history import AllureHistory
from farm.results.store.investigations import Investigations
from farm.results.store.location import SQLITE, StoreLocation, store_location
from farm.results.store.measures import Measures
from farm.results.store.schema import migrate
from farm.results.store.trends import Trends
from farm.util.errors import StoreError


class RunStore(Baselines, Investigations, Trends, AllureHistory, Measures):
    """A run store. One instance per process (or thread); cheap to open (a SQLite file is read
    whole only when another program has written it since the farm last did, checks.py).

    `spec`: a SQLite path or a postgresql:// URL (farm/results/store/location.py); None: the
    default ($FARM_STORE, else runs/farm.sqlite). `create=False` refuses a store that does not
    exist yet (readers: runs, compare, report). Every database failure (full disk, read-only,
    corrupt, server down, permission) is a StoreError naming the store."""

    def __init__(
        self,
        spec: str | os.PathLike | StoreLocation | None = None,
        timeout: float = 60.0,
        create: bool = True,
    ):
        self.location = store_location(spec)
        # The SQLite file (None for a server store): what size and file checks look at.
        self.path = self.location.path
        if self.location.kind == SQLITE:
            check_store(self.location, create=create)
            if self.path is not None and str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = connect(self.location, timeout=timeout)
        try:
            if isinstance(self.db, PostgresDatabase):
                check_postgres(self.db, create)
            with self.db.errors_named():
                self.version = migrate(self.db)
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()
        if self.location.kind == SQLITE and self.path is not None and str(self.path) != ":memory:":
            closed_by_this_process(self.path)

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def size_bytes(self) -> int:
        """What the store takes: the SQLite file with its WAL, or the tables on the server."""
        with self.db.errors_named():
            return self.db.size_bytes()

    def may_write(self) -> bool:
        """Whether this connection may change the store (a read-only PostgreSQL role may not)."""
        if self.location.kind == SQLITE:
            return True
        with self.db.errors_named():
            row = self.db.execute("SELECT has_table_privilege('runs', 'UPDATE')").fetchone()
        return bool(row[0])


def open_existing(spec: str | os.PathLike | StoreLocation | None) -> RunStore:
    """The store for reading commands (runs, baseline, compare, report): it must exist, and
    the runs whose process died are closed as aborted first (a note for each on stderr), so
    that no listing shows a dead run as running. A role that may only read closes nothing."""
    store = RunStore(spec, create=False)
    try:
        if store.may_write():
            for run_id, n in store.recover_orphans():
                print(
                    f"run {run_id}: its process is gone; {n} records imported, marked aborted",
                    file=sys.stderr,
                )
    except StoreError:
        store.close()
        raise
    return store
