"""The run store: every run and every case result, in one SQLite file.

One row per run (its metadata, exit code and summary counts), one row per (run, case) with the
columns the comparisons query plus the full result record as JSON, and one baseline per tier.

The schema is versioned: `MIGRATIONS[i]` takes a database from version i to i+1, and opening an
older file runs the missing steps in one transaction each. Never edit a released migration; add
one.

Run metadata (`begin_run(meta)`), all keys optional except `tier`:

    run_id          "20261129-151200-smoke-ab12" (made from the start time and tier if absent)
    tier            "smoke" | "nightly" | "full" | ...
    package_version, package_sha256   the operator package under test
                    (a nested {"package": {"version", "sha256"}} is accepted too)
    target          what the package was built for ("ascendc-cpu", "twin"; or package.target)
    git_commit
    inventory       [{"name": host, "soc": "Ascend910B3", "family": "ascend910b"}, ...]
                    or {host: soc}, or the plan's slots ({"host", "soc", "family", ...}; one
                    entry per host is kept)
    run_dir         where the run writes (farm report looks for <run_dir>/allure-results)
    backend         "native" | "torch" | ...
    farm_version
    started_at      ISO 8601 (now if absent); ended_at / exit_code are set by finish_run
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import secrets
import socket
import sqlite3
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from farm.agent import hostops
from farm.agent.record import METRIC_COLUMNS, OUTCOMES, TIMING_COLUMNS
from farm.errors import StoreError, UsageError
from farm.paths import RUNS_DIR


def default_store_path() -> Path:
    """$FARM_STORE, else farm.sqlite in the runs directory ($FARM_RUNS or the checkout's runs/)."""
    return Path(os.environ.get("FARM_STORE") or RUNS_DIR / "farm.sqlite")


def history_path_for(store_path: str | os.PathLike, tier: str) -> Path:
    """Where Allure 3's history JSONL for a tier lives: beside the run store."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(tier)) or "default"
    return Path(store_path).resolve().parent / f"allure-history-{safe}.jsonl"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def _jsonable(obj):
    """json.dumps default: numpy scalars and arrays, tuples, sets, paths."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps(obj) -> str:
    return json.dumps(obj, default=_jsonable, separators=(",", ":"), sort_keys=True)


def _num(x) -> float | None:
    """A finite float for a metric column, else None (SQLite stores NaN as NULL anyway)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


# --------------------------------------------------------------------------- schema migrations


def _script(db: sqlite3.Connection, sql: str) -> None:
    """Run DDL statement by statement (executescript would COMMIT the migration's transaction)."""
    for stmt in sql.split(";"):
        if stmt.strip():
            db.execute(stmt)


def _m1_initial(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE runs (
            run_id          TEXT PRIMARY KEY,
            tier            TEXT NOT NULL,
            package_version TEXT,
            package_sha256  TEXT,
            target          TEXT,
            git_commit      TEXT,
            backend         TEXT,
            farm_version    TEXT,
            started_at      TEXT NOT NULL,
            ended_at        TEXT,
            exit_code       INTEGER,
            meta_json       TEXT NOT NULL
        );
        CREATE TABLE results (
            run_id      TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            case_id     TEXT NOT NULL,
            family      TEXT,
            dtype       TEXT,
            schedule    TEXT,
            outcome     TEXT NOT NULL,
            category    TEXT,
            mere        REAL,
            mare        REAL,
            rmse        REAL,
            max_abs     REAL,
            host        TEXT,
            attempts    INTEGER,
            record_json TEXT NOT NULL,
            PRIMARY KEY (run_id, case_id)
        );
        CREATE TABLE baselines (
            tier   TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            set_at TEXT NOT NULL
        );
        CREATE INDEX runs_tier_started ON runs(tier, started_at);
        """,
    )


def _m2_counts_timings_inventory(db: sqlite3.Connection) -> None:
    """v2: per-run summary counts and inventory; timings and more record fields as columns."""
    for col in ("n_total", "n_passed", "n_failed", "n_broken"):
        db.execute(f"ALTER TABLE runs ADD COLUMN {col} INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE runs ADD COLUMN inventory_json TEXT NOT NULL DEFAULT '[]'")
    for col in TIMING_COLUMNS:
        db.execute(f"ALTER TABLE results ADD COLUMN {col} REAL")
    for col in ("api", "layout", "expect_kind", "soc", "slot"):
        db.execute(f"ALTER TABLE results ADD COLUMN {col} TEXT")
    db.execute("ALTER TABLE results ADD COLUMN status INTEGER")
    # Backfill the new columns from what v1 already kept.
    rows = db.execute("SELECT run_id, case_id, record_json FROM results").fetchall()
    updates = []
    for run_id, case_id, rec_json in rows:
        rec = json.loads(rec_json)
        t = rec.get("timings") or {}
        updates.append(
            (
                *(_num(t.get(c)) for c in TIMING_COLUMNS),
                rec.get("api"),
                rec.get("layout"),
                (rec.get("expect") or {}).get("kind"),
                rec.get("soc"),
                rec.get("slot"),
                rec.get("status"),
                run_id,
                case_id,
            )
        )
    db.executemany(
        "UPDATE results SET backend_s=?, golden_s=?, total_s=?, wall_s=?, api=?, layout=?,"
        " expect_kind=?, soc=?, slot=?, status=? WHERE run_id=? AND case_id=?",
        updates,
    )
    for run_id, meta_json in db.execute("SELECT run_id, meta_json FROM runs").fetchall():
        inv = _inventory(json.loads(meta_json).get("inventory"))
        db.execute("UPDATE runs SET inventory_json=? WHERE run_id=?", (dumps(inv), run_id))
        _refresh_counts(db, run_id)


def _m3_compare_indexes(db: sqlite3.Connection) -> None:
    """v3: indexes for the comparison and trend queries."""
    _script(
        db,
        """
        CREATE INDEX IF NOT EXISTS results_case ON results(case_id, run_id);
        CREATE INDEX IF NOT EXISTS results_run_outcome ON results(run_id, outcome);
        CREATE INDEX IF NOT EXISTS results_run_family_dtype ON results(run_id, family, dtype);
        CREATE INDEX IF NOT EXISTS runs_tier_ended ON runs(tier, ended_at);
        """,
    )


def _m4_no_metrics_without_compared_elements(db: sqlite3.Connection) -> None:
    """v4: no MERE/MARE/RMSE/max_abs for a result that compared no element (an empty tensor, or
    an output whose every position has the wrong NaN/inf class): golden/metrics reports 0.0
    there, which is no measurement, and pulled the trend medians and drift baselines to 0."""
    rows = db.execute(
        "SELECT run_id, case_id, record_json FROM results WHERE mere IS NOT NULL"
        " OR mare IS NOT NULL OR rmse IS NOT NULL OR max_abs IS NOT NULL"
    ).fetchall()
    nulls = [
        (run_id, case_id)
        for run_id, case_id, rec_json in rows
        if not _has_measurement(json.loads(rec_json).get("metrics") or {})
    ]
    db.executemany(
        "UPDATE results SET mere=NULL, mare=NULL, rmse=NULL, max_abs=NULL"
        " WHERE run_id=? AND case_id=?",
        nulls,
    )


def _m5_run_status(db: sqlite3.Connection) -> None:
    """v5: what a run was, not only whether it ended: running | finished | interrupted |
    aborted; whether it ran a subset of its tier (never a baseline of the whole tier); and which
    process owns a running run (so that the next command can tell an orphan from a live run)."""
    _script(
        db,
        """
        ALTER TABLE runs ADD COLUMN status TEXT;
        ALTER TABLE runs ADD COLUMN subset INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE runs ADD COLUMN owner TEXT;
        UPDATE runs SET status = CASE WHEN ended_at IS NULL THEN 'running' ELSE 'finished' END
        """,
    )


def _m6_shrinks_and_bisects(db: sqlite3.Connection) -> None:
    """v6: what `farm shrink` found (a failing case's smallest failing form, per package) and
    what `farm bisect` did (each search, and every commit it built and judged)."""
    _script(
        db,
        """
        CREATE TABLE shrinks (
            case_id         TEXT NOT NULL,
            package_sha256  TEXT NOT NULL,
            shrunk_id       TEXT NOT NULL,
            category        TEXT,
            target          TEXT,
            case_json       TEXT NOT NULL,
            numel_before    INTEGER,
            numel_after     INTEGER,
            tried           INTEGER,
            created_at      TEXT NOT NULL,
            PRIMARY KEY (case_id, package_sha256)
        );
        CREATE TABLE bisects (
            bisect_id       TEXT PRIMARY KEY,
            good            TEXT NOT NULL,
            bad             TEXT NOT NULL,
            selection_json  TEXT NOT NULL,
            status          TEXT NOT NULL,
            first_bad       TEXT,
            message         TEXT,
            started_at      TEXT NOT NULL,
            ended_at        TEXT
        );
        CREATE TABLE bisect_steps (
            bisect_id   TEXT NOT NULL REFERENCES bisects(bisect_id) ON DELETE CASCADE,
            step        INTEGER NOT NULL,
            commit_sha  TEXT NOT NULL,
            subject     TEXT,
            verdict     TEXT NOT NULL,
            detail_json TEXT NOT NULL,
            at          TEXT NOT NULL,
            PRIMARY KEY (bisect_id, step)
        )
        """,
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _m1_initial,
    _m2_counts_timings_inventory,
    _m3_compare_indexes,
    _m4_no_metrics_without_compared_elements,
    _m5_run_status,
    _m6_shrinks_and_bisects,
]
# The tables whose rows belong to a run (a run_id column): a prune deletes them with the run.
# A table added with a run_id column is listed here (tests/results/test_store.py checks).
RUN_ROWS = ("results", "baselines")
# A green run, which an implicit baseline must be (the SQL of _run_dict's "green").
_GREEN = "status='finished' AND exit_code=0 AND n_total>0 AND n_failed=0 AND n_broken=0"
BISECT_STATUSES = ("running", "found", "inconclusive", "failed", "interrupted")
BISECT_VERDICTS = ("good", "bad", "skip")
RUN_STATUSES = ("running", "finished", "interrupted", "aborted")
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(db: sqlite3.Connection) -> int:
    has = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'"
    ).fetchone()
    if not has:
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(db: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring `db` forward to `target`, one transaction per step. Returns the version reached."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    db.commit()
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"run store schema v{current} is newer than this farm (v{SCHEMA_VERSION}): "
            "upgrade the farm (git pull, then bash .ci/setup.sh run)"
        )
    for version in range(current, target):
        try:
            db.execute("BEGIN IMMEDIATE")
            # Another process may have migrated meanwhile.
            if schema_version(db) > version:
                db.rollback()
                continue
            MIGRATIONS[version](db)
            db.execute(
                "INSERT INTO schema_version(version, applied_at) VALUES (?, ?)",
                (version + 1, _now()),
            )
            db.commit()
        except BaseException:
            db.rollback()
            raise
    return schema_version(db)


# --------------------------------------------------------------------------- helpers


def _inventory(inv) -> list[dict]:
    """Inventory as a list of {"name", "soc", ...} whatever form it came in."""
    if not inv:
        return []
    if isinstance(inv, Mapping):
        out = []
        for name, v in inv.items():
            if isinstance(v, Mapping):
                out.append({"name": str(name), **dict(v)})
            else:
                out.append({"name": str(name), "soc": v})
        return out
    out, seen = [], set()
    for h in inv:  # hosts, or slots (several per host: the first one names the host)
        if isinstance(h, Mapping):
            d = dict(h)
            d["name"] = str(d.get("name") or d.get("host") or d.get("id") or "")
        else:
            d = {"name": str(h)}
        if d["name"] not in seen:
            seen.add(d["name"])
            out.append(d)
    return out


def _has_measurement(metrics: Mapping) -> bool:
    """Whether the error metrics measured anything: golden/metrics says how many elements it
    compared (n_compared); 0 compared elements give MERE = MARE = 0.0, which is no result."""
    n = metrics.get("n_compared") if isinstance(metrics, Mapping) else None
    return n is None or (_num(n) or 0) > 0


def _refresh_counts(db: sqlite3.Connection, run_id: str) -> None:
    row = db.execute(
        "SELECT COUNT(*), SUM(outcome='passed'), SUM(outcome='failed'), SUM(outcome='broken')"
        " FROM results WHERE run_id=?",
        (run_id,),
    ).fetchone()
    db.execute(
        "UPDATE runs SET n_total=?, n_passed=?, n_failed=?, n_broken=? WHERE run_id=?",
        (row[0] or 0, row[1] or 0, row[2] or 0, row[3] or 0, run_id),
    )


_RESULT_COLUMNS = (
    "run_id",
    "case_id",
    "family",
    "dtype",
    "schedule",
    "api",
    "layout",
    "expect_kind",
    "outcome",
    "category",
    "status",
    *METRIC_COLUMNS,
    "host",
    "soc",
    "slot",
    "attempts",
    *TIMING_COLUMNS,
    "record_json",
)
_INSERT_RESULT = (
    f"INSERT OR REPLACE INTO results ({', '.join(_RESULT_COLUMNS)})"
    f" VALUES ({', '.join('?' for _ in _RESULT_COLUMNS)})"
)


def _result_row(run_id: str, rec: Mapping) -> tuple:
    if not rec.get("case_id"):
        raise ValueError("a result record needs a case_id")
    if rec.get("outcome") not in OUTCOMES:
        raise ValueError(
            f"{rec.get('case_id')}: outcome must be passed|failed|broken, "
            f"not {rec.get('outcome')!r}"
        )
    m = rec.get("metrics") or {}
    if not _has_measurement(m):
        m = {}
    t = rec.get("timings") or {}
    attempts = rec.get("attempts")
    return (
        run_id,
        str(rec["case_id"]),
        rec.get("family"),
        rec.get("dtype"),
        rec.get("schedule"),
        rec.get("api"),
        rec.get("layout"),
        (rec.get("expect") or {}).get("kind"),
        rec["outcome"],
        rec.get("category"),
        rec.get("status"),
        *(_num(m.get(c)) for c in METRIC_COLUMNS),
        rec.get("host"),
        rec.get("soc"),
        rec.get("slot"),
        int(attempts) if attempts is not None else None,
        *(_num(t.get(c)) for c in TIMING_COLUMNS),
        dumps(rec),
    )


def _run_dict(row: sqlite3.Row) -> dict:
    meta = json.loads(row["meta_json"])
    d = dict(meta)
    d.update(
        run_id=row["run_id"],
        tier=row["tier"],
        package_version=row["package_version"],
        package_sha256=row["package_sha256"],
        target=row["target"],
        git_commit=row["git_commit"],
        backend=row["backend"],
        farm_version=row["farm_version"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        exit_code=row["exit_code"],
        inventory=json.loads(row["inventory_json"]),
        counts={
            "total": row["n_total"],
            "passed": row["n_passed"],
            "failed": row["n_failed"],
            "broken": row["n_broken"],
        },
    )
    d["status"] = row["status"]
    d["subset"] = bool(row["subset"])
    d["owner"] = row["owner"]
    d["finished"] = row["status"] == "finished"
    d["green"] = bool(
        d["finished"]
        and row["exit_code"] == 0
        and row["n_total"] > 0
        and row["n_failed"] == 0
        and row["n_broken"] == 0
    )
    return d


# --------------------------------------------------------------------------- the store


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


def open_existing(path: str | os.PathLike) -> RunStore:
    """The store for reading commands (runs, baseline, compare, report): it must exist, and
    the runs whose process died are closed as aborted first (a note for each on stderr), so
    that no listing shows a dead run as running."""
    store = RunStore(path, create=False)
    for run_id, n in store.recover_orphans():
        print(
            f"run {run_id}: its process is gone; {n} records imported, marked aborted",
            file=sys.stderr,
        )
    return store


def check_store(path: str | os.PathLike, *, create: bool) -> Path:
    """Refuse a store that cannot serve, before anything starts: one StoreError line naming the
    path and the fix. `create`: a missing store may be made here (farm run at the default or
    configured path); otherwise a missing file is an error (a typo in --store must not quietly
    become a new, empty store)."""
    p = Path(path)
    where = f"run store {p}"
    if not p.exists():
        if not create:
            raise StoreError(
                f"no {where}: check the path (--store / FARM_STORE), or run farm run first"
            )
        parent = p.parent if str(p.parent) else Path(".")
        probe = parent
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not os.access(probe, os.W_OK | os.X_OK):
            raise StoreError(
                f"cannot create {where}: {probe} is not writable; fix its permissions or set "
                "FARM_STORE (and FARM_RUNS) to a writable place"
            )
        return p
    if p.is_dir():
        raise StoreError(f"{where} is a directory: give the store's file, e.g. {p}/farm.sqlite")
    if p.stat().st_size == 0:
        raise StoreError(f"{where} is an empty file, not a run store: remove it or restore it")
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
            status = db.execute("PRAGMA quick_check").fetchone()[0]
            version = schema_version(db)
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{where} cannot be read ({exc}): move it aside and restore it from a backup"
        ) from None
    if status != "ok":
        raise StoreError(
            f"{where} failed its integrity check ({status}): move it aside and restore it"
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} has schema v{version}, which is newer than this farm (v{SCHEMA_VERSION}): "
            "upgrade the farm (git pull, then bash .ci/setup.sh run)"
        )
    if tables and "runs" not in tables:
        raise StoreError(f"{where} is a SQLite database but not a farm run store")
    return p


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


class RunStore:
    """A SQLite run store. One instance per process (or thread); cheap to open.

    `create=False` refuses a store that does not exist yet (readers: runs, compare, report).
    Every SQLite failure (full disk, read-only, corrupt) is a StoreError naming the path."""

    def __init__(
        self, path: str | os.PathLike | None = None, timeout: float = 60.0, create: bool = True
    ):
        self.path = Path(path) if path is not None else default_store_path()
        memory = str(self.path) == ":memory:"
        if not memory:
            check_store(self.path, create=create)
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys=ON")
            if not memory:
                self.db.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.version = migrate(self.db)
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from None

    # context manager / lifetime
    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _tx(self):
        return _Tx(self.db, self.path)

    # ---- runs

    def begin_run(self, meta: Mapping) -> str:
        """Record the start of a run and return its run_id."""
        meta = dict(meta)
        tier = str(meta.get("tier") or "adhoc")
        started = str(meta.get("started_at") or meta.get("start") or _now())
        run_id = meta.get("run_id")
        if not run_id:
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            run_id = f"{stamp}-{tier}-{secrets.token_hex(2)}"
        pkg = meta.get("package") or {}
        meta.update(run_id=run_id, tier=tier, started_at=started)
        inventory = _inventory(meta.get("inventory"))
        with self._tx():
            self.db.execute(
                "INSERT INTO runs (run_id, tier, package_version, package_sha256, target,"
                " git_commit, backend, farm_version, started_at, meta_json, inventory_json,"
                " status, subset, owner)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,'running',?,?)",
                (
                    run_id,
                    tier,
                    meta.get("package_version") or pkg.get("version"),
                    meta.get("package_sha256") or pkg.get("sha256"),
                    meta.get("target") or pkg.get("target"),
                    meta.get("git_commit"),
                    meta.get("backend"),
                    meta.get("farm_version"),
                    started,
                    dumps(meta),
                    dumps(inventory),
                    int(bool(meta.get("subset"))),
                    meta.get("owner") or process_owner(),
                ),
            )
        return run_id

    def add_results(self, run_id: str, records: Iterable[Mapping]) -> int:
        """Write records in one transaction. A case written again replaces its earlier row."""
        rows = [_result_row(run_id, r) for r in records]
        with self._tx():
            if not self.db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone():
                raise KeyError(f"unknown run {run_id!r}: call begin_run first")
            self.db.executemany(_INSERT_RESULT, rows)
            _refresh_counts(self.db, run_id)
        return len(rows)

    def finish_run(
        self,
        run_id: str,
        exit_code: int,
        ended_at: str | None = None,
        status: str = "finished",
        subset: bool | None = None,
    ) -> None:
        """End a run as what it was: finished, interrupted (a signal stopped it) or aborted
        (its process died; found and closed by recover_orphans)."""
        if status not in RUN_STATUSES[1:]:
            raise ValueError(f"status {status!r}: use one of {', '.join(RUN_STATUSES[1:])}")
        with self._tx():
            cur = self.db.execute(
                "UPDATE runs SET ended_at=?, exit_code=?, status=?,"
                " subset=COALESCE(?, subset) WHERE run_id=?",
                (ended_at or _now(), int(exit_code), status, subset, run_id),
            )
            if cur.rowcount != 1:
                raise KeyError(f"unknown run {run_id!r}")
            _refresh_counts(self.db, run_id)

    def runs(self, limit: int | None = 20, tier: str | None = None) -> list[dict]:
        """Newest first."""
        sql = "SELECT * FROM runs"
        args: list = []
        if tier is not None:
            sql += " WHERE tier=?"
            args.append(tier)
        sql += " ORDER BY started_at DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [_run_dict(r) for r in self.db.execute(sql, args)]

    def get_run(self, run_id: str) -> dict | None:
        row = self.db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return _run_dict(row) if row else None

    def run_or_latest(self, run_id: str | None) -> dict:
        """The run a command was asked about (``run_id``), or the latest run when none is named;
        a UsageError when there is no such run."""
        run = self.get_run(run_id) if run_id else self.latest_run()
        if run is None:
            raise UsageError(
                f"no run {run_id!r} in the store (list them with `farm runs`)"
                if run_id
                else "the store has no runs yet: run something first"
            )
        return run

    def latest_run(self, tier: str | None = None, finished: bool = False) -> dict | None:
        sql = "SELECT * FROM runs WHERE 1=1"
        args: list = []
        if tier is not None:
            sql += " AND tier=?"
            args.append(tier)
        if finished:
            sql += " AND status='finished'"
        row = self.db.execute(
            sql + " ORDER BY started_at DESC, rowid DESC LIMIT 1", args
        ).fetchone()
        return _run_dict(row) if row else None

    def results(self, run_id: str) -> list[dict]:
        """Full records of a run, ordered by case_id."""
        return [
            json.loads(r[0])
            for r in self.db.execute(
                "SELECT record_json FROM results WHERE run_id=? ORDER BY case_id", (run_id,)
            )
        ]

    def result_rows(self, run_id: str) -> list[dict]:
        """The queried columns only (no record JSON): fast for comparisons of large runs."""
        cols = [c for c in _RESULT_COLUMNS if c != "record_json"]
        return [
            dict(r)
            for r in self.db.execute(
                f"SELECT {', '.join(cols)} FROM results WHERE run_id=? ORDER BY case_id",
                (run_id,),
            )
        ]

    def recover_orphans(self) -> list[tuple[str, int]]:
        """Close the runs whose process died without ending them (SIGKILL, a crash, a power
        cut): import the records they wrote (runs/<run>/records/*.jsonl) and mark them aborted
        with exit 2. Runs owned by a live process, or by another machine, are left alone.
        Returns (run id, records imported) of each run closed."""
        closed = []
        for run in self.runs(limit=None):
            if run["status"] != "running" or owner_alive(run["owner"]) is not False:
                continue
            records, _ = read_records(Path(run.get("run_dir") or ""))
            if records:
                self.add_results(run["run_id"], records.values())
            self.finish_run(run["run_id"], 2, status="aborted")
            closed.append((run["run_id"], len(records)))
        return closed

    # ---- baselines

    def set_baseline(self, tier: str, run_id: str) -> None:
        run = self.get_run(run_id)
        if run is None:
            raise KeyError(f"unknown run {run_id!r}")
        if run["status"] != "finished":
            raise UsageError(
                f"run {run_id} is {run['status']}: a baseline must be a finished run of the "
                "whole tier; pick one from farm runs"
            )
        if run["subset"]:
            raise UsageError(
                f"run {run_id} ran a subset of tier {run['tier']} (-k or a case selection): a "
                "baseline must cover the whole tier"
            )
        if run["tier"] != tier:
            raise UsageError(f"run {run_id} is of tier {run['tier']}, not {tier}")
        with self._tx():
            self.db.execute(
                "INSERT OR REPLACE INTO baselines(tier, run_id, set_at) VALUES (?,?,?)",
                (tier, run_id, _now()),
            )

    def clear_baseline(self, tier: str) -> None:
        with self._tx():
            self.db.execute("DELETE FROM baselines WHERE tier=?", (tier,))

    def explicit_baseline(self, tier: str) -> str | None:
        row = self.db.execute("SELECT run_id FROM baselines WHERE tier=?", (tier,)).fetchone()
        return row[0] if row else None

    def baseline_for(self, tier: str, exclude_run_id: str | None = None) -> str | None:
        """The baseline run of a tier.

        The explicit baseline (set_baseline) when there is one and it is not the run being
        compared; else the newest fully green finished run of the same tier (exit code 0, at least
        one result, none failed or broken), excluding `exclude_run_id` and, when that run is
        known, anything that started after it. A run of the whole tier is only ever compared
        with a run of the whole tier: a subset run (-k, -x) is never its implicit baseline; a
        subset run may be compared with either.
        """
        explicit = self.explicit_baseline(tier)
        if explicit and explicit != exclude_run_id:
            return explicit
        sql = f"SELECT run_id FROM runs WHERE tier=? AND {_GREEN}"
        args: list = [tier]
        ref = None
        if exclude_run_id:
            sql += " AND run_id<>?"
            args.append(exclude_run_id)
            ref = self.db.execute(
                "SELECT started_at, rowid, subset FROM runs WHERE run_id=?", (exclude_run_id,)
            ).fetchone()
            if ref:
                sql += " AND (started_at < ? OR (started_at = ? AND rowid < ?))"
                args += [ref[0], ref[0], ref[1]]
        if ref is None or not ref[2]:
            sql += " AND subset=0"
        row = self.db.execute(
            sql + " ORDER BY started_at DESC, rowid DESC LIMIT 1", args
        ).fetchone()
        return row[0] if row else None

    # ---- retention

    def protected_runs(self) -> dict[str, str]:
        """The runs no prune may remove, each with why: a running run (its process may be alive
        and writing); each suite's explicit baseline; the run each suite's next run would be
        compared with (whole or subset); each suite's newest finished run, which `farm compare`
        and `farm report` default to, and the run it is compared with; the run each running run
        will be compared with when it ends."""
        keep: dict[str, str] = {}

        def hold(run_id: str | None, why: str) -> None:
            if run_id:
                keep.setdefault(run_id, why)

        running = self.db.execute("SELECT run_id, tier FROM runs WHERE status='running'")
        for run_id, tier in running.fetchall():
            hold(run_id, "running (its process may be alive)")
            hold(self.baseline_for(tier, exclude_run_id=run_id), f"the baseline of {run_id}")
        for tier, run_id in self.db.execute("SELECT tier, run_id FROM baselines").fetchall():
            hold(run_id, f"the explicit baseline of {tier}")
        for (tier,) in self.db.execute("SELECT DISTINCT tier FROM runs").fetchall():
            hold(self.baseline_for(tier), f"the baseline of the next run of {tier}")
            hold(self._newest_green(tier), f"the baseline of the next subset run of {tier}")
            newest = self.latest_run(tier, finished=True)
            if newest:
                hold(newest["run_id"], f"the newest finished run of {tier}")
                base = self.baseline_for(tier, exclude_run_id=newest["run_id"])
                hold(base, f"the baseline of {newest['run_id']}")
        return keep

    def _newest_green(self, tier: str) -> str | None:
        """What baseline_for gives a new subset run (which may be compared with a subset run)."""
        explicit = self.explicit_baseline(tier)
        if explicit:
            return explicit
        row = self.db.execute(
            f"SELECT run_id FROM runs WHERE tier=? AND {_GREEN}"
            " ORDER BY started_at DESC, rowid DESC LIMIT 1",
            (tier,),
        ).fetchone()
        return row[0] if row else None

    def prune(
        self,
        choose: Callable[[list[dict]], Iterable[str]],
        dry_run: bool = False,
    ) -> tuple[list[dict], dict[str, str]]:
        """Delete the runs `choose(runs)` picks (runs newest first) with every row that refers
        to them, in one transaction, so that a concurrent `farm run` sees the store before or
        after, never half pruned; the runs protected_runs names stay. Returns the runs deleted
        (dry_run: that would be) and, of the picked runs that stay, why each stays."""
        with self._tx():
            runs = self.runs(limit=None)
            picked = set(choose(runs))
            protected = self.protected_runs()
            doomed = [r for r in runs if r["run_id"] in picked and r["run_id"] not in protected]
            spared = {run_id: why for run_id, why in protected.items() if run_id in picked}
            if not dry_run:
                ids = [(r["run_id"],) for r in doomed]
                for table in RUN_ROWS:
                    self.db.executemany(f"DELETE FROM {table} WHERE run_id=?", ids)
                self.db.executemany("DELETE FROM runs WHERE run_id=?", ids)
        return doomed, spared

    def reclaim_space(self) -> None:
        """Give the pages of deleted rows back to the file system. SQLite's own step (PostgreSQL
        reclaims by its autovacuum): VACUUM rewrites the database and cannot run inside a
        transaction; the checkpoint then writes the WAL back and truncates it."""
        if str(self.path) == ":memory:":
            return
        try:
            self.db.execute("VACUUM")
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from None

    # ---- trends

    # ---- shrinks

    def add_shrink(
        self,
        case_id: str,
        package_sha256: str,
        shrunk: Mapping,
        category: str | None,
        target: str = "",
        numel_before: int | None = None,
        tried: int | None = None,
    ) -> None:
        """Record the smallest failing form of a case (`shrunk`: its Case.to_dict()) for the
        package it failed on; a later shrink of the same case and package replaces it."""
        with self._tx():
            self.db.execute(
                "INSERT OR REPLACE INTO shrinks (case_id, package_sha256, shrunk_id, category,"
                " target, case_json, numel_before, numel_after, tried, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    case_id,
                    package_sha256,
                    shrunk["id"],
                    category,
                    target,
                    dumps(dict(shrunk)),
                    numel_before,
                    math.prod(shrunk.get("shape") or ()),
                    tried,
                    _now(),
                ),
            )

    def shrinks_for(self, case_ids: Iterable[str], package_sha256: str | None = None) -> dict:
        """case id -> its newest shrink record (for this package when given)."""
        wanted = set(case_ids)
        sql = "SELECT * FROM shrinks"
        args: list = []
        if package_sha256:
            sql += " WHERE package_sha256=?"
            args.append(package_sha256)
        out: dict[str, dict] = {}
        for row in self.db.execute(sql + " ORDER BY created_at", args):
            if row["case_id"] in wanted:
                data = dict(row)
                data["case"] = json.loads(data.pop("case_json"))
                out[row["case_id"]] = data
        return out

    # ---- bisects

    def begin_bisect(self, good: str, bad: str, selection: Mapping) -> str:
        bisect_id = f"{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-bisect-{secrets.token_hex(2)}"
        with self._tx():
            self.db.execute(
                "INSERT INTO bisects (bisect_id, good, bad, selection_json, status, started_at)"
                " VALUES (?,?,?,?,'running',?)",
                (bisect_id, good, bad, dumps(dict(selection)), _now()),
            )
        return bisect_id

    def add_bisect_step(
        self, bisect_id: str, commit_sha: str, subject: str, verdict: str, detail: Mapping
    ) -> int:
        if verdict not in BISECT_VERDICTS:
            raise ValueError(f"verdict {verdict!r}: use one of {', '.join(BISECT_VERDICTS)}")
        with self._tx():
            (step,) = self.db.execute(
                "SELECT COUNT(*) FROM bisect_steps WHERE bisect_id=?", (bisect_id,)
            ).fetchone()
            self.db.execute(
                "INSERT INTO bisect_steps VALUES (?,?,?,?,?,?,?)",
                (bisect_id, step, commit_sha, subject, verdict, dumps(dict(detail)), _now()),
            )
        return int(step)

    def finish_bisect(
        self, bisect_id: str, status: str, first_bad: str | None = None, message: str = ""
    ) -> None:
        if status not in BISECT_STATUSES[1:]:
            raise ValueError(f"status {status!r}: use one of {', '.join(BISECT_STATUSES[1:])}")
        with self._tx():
            self.db.execute(
                "UPDATE bisects SET status=?, first_bad=?, message=?, ended_at=? WHERE bisect_id=?",
                (status, first_bad, message, _now(), bisect_id),
            )

    def bisects(self, limit: int | None = 20) -> list[dict]:
        sql = "SELECT * FROM bisects ORDER BY started_at DESC, rowid DESC"
        rows = self.db.execute(sql + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        return [dict(r, selection=json.loads(r["selection_json"])) for r in rows]

    def bisect_steps(self, bisect_id: str) -> list[dict]:
        rows = self.db.execute(
            "SELECT * FROM bisect_steps WHERE bisect_id=? ORDER BY step", (bisect_id,)
        )
        return [dict(r, detail=json.loads(r["detail_json"])) for r in rows]

    def metric_series(self, tier: str, n_runs: int = 20) -> list[dict]:
        """Per (run, family, dtype) precision summary for the last n finished runs, oldest first.

        Each point: run_id, started_at, family, dtype, n, passed, failed, broken, pass_rate,
        mere_median, mere_max, mare_median, mare_max, rmse_max, max_abs_max (None where no case
        of that group had metrics).
        """
        run_rows = self.db.execute(
            "SELECT run_id, started_at FROM runs WHERE tier=? AND ended_at IS NOT NULL"
            " ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (tier, int(n_runs)),
        ).fetchall()
        run_rows = list(reversed(run_rows))
        points = []
        for run_id, started in run_rows:
            groups: dict[tuple, dict] = defaultdict(
                lambda: {
                    "n": 0,
                    "passed": 0,
                    "failed": 0,
                    "broken": 0,
                    **{m: [] for m in METRIC_COLUMNS},
                }
            )
            for fam, dt, outcome, *vals in self.db.execute(
                "SELECT family, dtype, outcome, mere, mare, rmse, max_abs FROM results"
                " WHERE run_id=?",
                (run_id,),
            ):
                g = groups[(fam, dt)]
                g["n"] += 1
                if outcome in ("passed", "failed", "broken"):
                    g[outcome] += 1
                for m, v in zip(METRIC_COLUMNS, vals, strict=True):
                    if v is not None:
                        g[m].append(v)
            for (fam, dt), g in sorted(
                groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))
            ):
                points.append(
                    {
                        "run_id": run_id,
                        "started_at": started,
                        "family": fam,
                        "dtype": dt,
                        "n": g["n"],
                        "passed": g["passed"],
                        "failed": g["failed"],
                        "broken": g["broken"],
                        "pass_rate": g["passed"] / g["n"] if g["n"] else None,
                        "mere_median": statistics.median(g["mere"]) if g["mere"] else None,
                        "mere_max": max(g["mere"]) if g["mere"] else None,
                        "mare_median": statistics.median(g["mare"]) if g["mare"] else None,
                        "mare_max": max(g["mare"]) if g["mare"] else None,
                        "rmse_max": max(g["rmse"]) if g["rmse"] else None,
                        "max_abs_max": max(g["max_abs"]) if g["max_abs"] else None,
                    }
                )
        return points


def _store_error(path: Path, exc: BaseException) -> StoreError:
    text = str(exc)
    if "full" in text:
        fix = (
            "free space on that disk or set FARM_STORE elsewhere; the run's records stay in "
            "runs/<run>/records and farm runs --recover imports them"
        )
    elif "readonly" in text or "read-only" in text:
        fix = "fix its permissions or set FARM_STORE to a writable copy"
    else:
        fix = "move it aside and restore it from a backup"
    return StoreError(f"run store {path}: {text}: {fix}")


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection; SQLite
    failures become StoreErrors naming the store."""

    def __init__(self, db: sqlite3.Connection, path: Path):
        self.db = db
        self.path = path

    def __enter__(self):
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from None
        return self.db

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.db.execute("COMMIT")
            else:
                self.db.execute("ROLLBACK")
        except sqlite3.Error as error:
            raise _store_error(self.path, error) from None
        if isinstance(exc, sqlite3.Error):
            raise _store_error(self.path, exc) from None
        return False
