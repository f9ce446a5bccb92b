"""The run store: every run and every case result, in a SQLite file (the embedded default) or
in a PostgreSQL database a team's runners share (`--store postgresql://…` or $FARM_STORE).

One row per run (its metadata, exit code and summary counts), one row per (run, case) with the
columns the comparisons query plus the full result record as JSON, one baseline per tier, the
shrinks and bisects, each tier's Allure history, and the measurements of `farm mutate` and
`farm coverage`. The parts, by job:

    location.py        where the store is (a path or a URL), and its name with the password hidden
    dialects.py        the two databases behind one interface
    schema.py          the versioned schema, one definition for both, and its migrations
    checks.py          a store that cannot serve is refused before anything starts
    rows.py            records and runs as rows, both ways
    runs.py            runs and results; orphans' recovery (owners.py: whose run is alive)
    baselines.py       baselines and retention
    investigations.py  shrinks and bisects
    trends.py          the precision trend
    measures.py        what farm mutate and farm coverage measured (measure_rows.py: the records)
    history.py         Allure history (stored_history.py: one report's view of it)
    transfer.py        a store's whole history copied to another (farm store migrate)
    runstore.py        RunStore, all of the above on one connection
"""

from farm.agent.record import METRIC_COLUMNS
from farm.results.store.checks import check_store, check_store_while
from farm.results.store.investigations import BISECT_STATUSES, BISECT_VERDICTS
from farm.results.store.location import (
    StoreLocation,
    default_location,
    parse_location,
    redact,
    store_location,
)
from farm.results.store.measure_rows import MEASURE_KINDS, Measure, MutantNote
from farm.results.store.rows import RUN_STATUSES, dumps
from farm.results.store.runstore import RunStore, open_existing
from farm.results.store.schema import MIGRATIONS, RUN_ROWS, SCHEMA_VERSION, migrate, schema_version
from farm.results.store.stored_history import StoredHistory
from farm.run.owners import owner_alive, process_owner
from farm.run.records_file import read_records

__all__ = [
    "BISECT_STATUSES",
    "BISECT_VERDICTS",
    "MEASURE_KINDS",
    "METRIC_COLUMNS",
    "MIGRATIONS",
    "RUN_ROWS",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "Measure",
    "MutantNote",
    "RunStore",
    "StoreLocation",
    "StoredHistory",
    "check_store",
    "check_store_while",
    "default_location",
    "dumps",
    "migrate",
    "open_existing",
    "owner_alive",
    "parse_location",
    "process_owner",
    "read_records",
    "redact",
    "schema_version",
    "store_location",
]
