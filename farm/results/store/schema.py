"""The run store's schema, one definition for SQLite and PostgreSQL: `MIGRATIONS[i]` takes a
database from version i to i+1, each step in one transaction; opening an older store runs the
missing steps. Never edit a released migration; add one.

The SQL is SQLite's; the PostgreSQL dialect maps the type names (farm/results/store/dialects.py:
64-bit INTEGER and REAL, byte-order TEXT as SQLite compares it). Where the two databases need
different statements (v7's insertion order), the step says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from farm.agent.record import TIMING_COLUMNS
from farm.results.store.dialects import Database
from farm.results.store.location import SQLITE
from farm.results.store.rows import dumps, has_measurement, inventory_list, num, refresh_counts
from farm.results.store.timestamps import now
from farm.util.errors import StoreError


def _m1_initial(db: Database) -> None:
    db.script(
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


def _m2_counts_timings_inventory(db: Database) -> None:
    """v2: per-run summary counts and inventory; timings and more record fields as columns."""
    for col in ("n_total", "n_passed", "n_failed", "n_broken"):
        db.execute(db.ddl(f"ALTER TABLE runs ADD COLUMN {col} INTEGER NOT NULL DEFAULT 0"))
    db.execute(db.ddl("ALTER TABLE runs ADD COLUMN inventory_json TEXT NOT NULL DEFAULT '[]'"))
    for col in TIMING_COLUMNS:
        db.execute(db.ddl(f"ALTER TABLE results ADD COLUMN {col} REAL"))
    for col in ("api", "layout", "expect_kind", "soc", "slot"):
        db.execute(db.ddl(f"ALTER TABLE results ADD COLUMN {col} TEXT"))
    db.execute(db.ddl("ALTER TABLE results ADD COLUMN status INTEGER"))
    # Backfill the new columns from what v1 already kept.
    rows = db.execute("SELECT run_id, case_id, record_json FROM results").fetchall()
    updates = []
    for run_id, case_id, rec_json in rows:
        rec = json.loads(rec_json)
        t = rec.get("timings") or {}
        updates.append(
            (
                *(num(t.get(c)) for c in TIMING_COLUMNS),
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
    if updates:
        db.executemany(
            "UPDATE results SET backend_s=?, golden_s=?, total_s=?, wall_s=?, api=?, layout=?,"
            " expect_kind=?, soc=?, slot=?, status=? WHERE run_id=? AND case_id=?",
            updates,
        )
    for run_id, meta_json in db.execute("SELECT run_id, meta_json FROM runs").fetchall():
        inv = inventory_list(json.loads(meta_json).get("inventory"))
        db.execute("UPDATE runs SET inventory_json=? WHERE run_id=?", (dumps(inv), run_id))
        refresh_counts(db, run_id)


def _m3_compare_indexes(db: Database) -> None:
    """v3: indexes for the comparison and trend queries."""
    db.script(
        """
        CREATE INDEX IF NOT EXISTS results_case ON results(case_id, run_id);
        CREATE INDEX IF NOT EXISTS results_run_outcome ON results(run_id, outcome);
        CREATE INDEX IF NOT EXISTS results_run_family_dtype ON results(run_id, family, dtype);
        CREATE INDEX IF NOT EXISTS runs_tier_ended ON runs(tier, ended_at);
        """,
    )


def _m4_no_metrics_without_compared_elements(db: Database) -> None:
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
        if not has_measurement(json.loads(rec_json).get("metrics") or {})
    ]
    if nulls:
        db.executemany(
            "UPDATE results SET mere=NULL, mare=NULL, rmse=NULL, max_abs=NULL"
            " WHERE run_id=? AND case_id=?",
            nulls,
        )


def _m5_run_status(db: Database) -> None:
    """v5: what a run was, not only whether it ended: running | finished | interrupted |
    aborted; whether it ran a subset of its tier (never a baseline of the whole tier); and which
    process owns a running run (so that the next command can tell an orphan from a live run)."""
    db.script(
        """
        ALTER TABLE runs ADD COLUMN status TEXT;
        ALTER TABLE runs ADD COLUMN subset INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE runs ADD COLUMN owner TEXT;
        UPDATE runs SET status = CASE WHEN ended_at IS NULL THEN 'running' ELSE 'finished' END
        """,
    )


def _m6_shrinks_and_bisects(db: Database) -> None:
    """v6: what `farm shrink` found (a failing case's smallest failing form, per package) and
    what `farm bisect` did (each search, and every commit it built and judged)."""
    db.script(
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


def _m7_team_store(db: Database) -> None:
    """v7: what a store shared by a team's runners needs. An insertion order that is a column
    (`seq`: SQLite's rowid, which broke ties between runs started in the same second, is not
    on PostgreSQL); the run group a CI pipeline's shards belong to; a running run's last sign
    of life (`heartbeat_at`: a runner on another machine cannot ask whether its owner's process
    lives); and each tier's Allure history, which lived in a file beside the store and which
    runners on other machines cannot share (taken in on a tier's first report)."""
    if db.dialect == SQLITE:
        db.execute("ALTER TABLE runs ADD COLUMN seq INTEGER")
        db.execute("UPDATE runs SET seq = rowid")
        db.execute(
            "CREATE TRIGGER runs_seq AFTER INSERT ON runs FOR EACH ROW WHEN NEW.seq IS NULL"
            " BEGIN UPDATE runs SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs)"
            " WHERE rowid = NEW.rowid; END"
        )
    else:
        db.execute("ALTER TABLE runs ADD COLUMN seq BIGINT GENERATED BY DEFAULT AS IDENTITY")
    db.script(
        """
        ALTER TABLE runs ADD COLUMN run_group TEXT;
        ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
        CREATE INDEX runs_group ON runs(run_group);
        CREATE INDEX runs_tier_started_seq ON runs(tier, started_at, seq);
        CREATE TABLE allure_history (
            tier        TEXT NOT NULL,
            position    INTEGER NOT NULL,
            run_id      TEXT,
            entry_json  TEXT NOT NULL,
            added_at    TEXT NOT NULL,
            PRIMARY KEY (tier, position)
        )
        """,
    )
    groups = [
        (str(group), run_id)
        for run_id, meta_json in db.execute("SELECT run_id, meta_json FROM runs").fetchall()
        if (group := json.loads(meta_json).get("run_group"))
    ]
    if groups:
        db.executemany("UPDATE runs SET run_group=? WHERE run_id=?", groups)


def _m8_measures(db: Database) -> None:
    """v8: what `farm mutate` and `farm coverage` measured of the operator's sources over a
    tier (farm/results/store/measure_rows.py): one row a measurement, its summary as JSON (the
    mutation score and its counts; the coverage's figures and what is left unexplained), and of
    a mutation run each mutant a person has to look at (a survivor, a weak or policy-only kill)
    with the cases that came closest or failed, so that `farm runs show` needs no run
    directory. A measurement is no run (no run_id): a prune leaves it, like shrinks."""
    db.script(
        """
        CREATE TABLE measures (
            measure_id      TEXT PRIMARY KEY,
            kind            TEXT NOT NULL,
            tier            TEXT NOT NULL,
            backend         TEXT,
            git_commit      TEXT,
            package_sha256  TEXT,
            started_at      TEXT NOT NULL,
            ended_at        TEXT,
            seconds         REAL,
            exit_code       INTEGER,
            subset          INTEGER NOT NULL DEFAULT 0,
            run_dir         TEXT,
            summary_json    TEXT NOT NULL,
            meta_json       TEXT NOT NULL
        );
        CREATE INDEX measures_started ON measures(started_at, measure_id);
        CREATE INDEX measures_kind_tier ON measures(kind, tier, started_at);
        CREATE TABLE measure_mutants (
            measure_id      TEXT NOT NULL REFERENCES measures(measure_id) ON DELETE CASCADE,
            mutant_id       TEXT NOT NULL,
            status          TEXT NOT NULL,
            weak            INTEGER NOT NULL DEFAULT 0,
            policy_only     INTEGER NOT NULL DEFAULT 0,
            failing         INTEGER NOT NULL DEFAULT 0,
            explained_kind  TEXT,
            explained_why   TEXT,
            cases_json      TEXT NOT NULL,
            mutant_json     TEXT NOT NULL,
            PRIMARY KEY (measure_id, mutant_id)
        )
        """,
    )


MIGRATIONS: list[Callable[[Database], None]] = [
    _m1_initial,
    _m2_counts_timings_inventory,
    _m3_compare_indexes,
    _m4_no_metrics_without_compared_elements,
    _m5_run_status,
    _m6_shrinks_and_bisects,
    _m7_team_store,
    _m8_measures,
]
SCHEMA_VERSION = len(MIGRATIONS)
# The tables whose rows belong to a run (a run_id column): a prune deletes them with the run.
# A table added with a run_id column is listed here (tests/results/test_store.py checks).
RUN_ROWS = ("results", "baselines", "allure_history")


def schema_version(db: Database) -> int:
    if "schema_version" not in db.tables():
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def newer_than_farm(where: str, version: int) -> StoreError:
    return StoreError(
        f"{where} has schema v{version}, which is newer than this farm (v{SCHEMA_VERSION}): "
        "upgrade the farm (git pull, then bash .ci/setup.sh run)"
    )


def migrate(db: Database, target: int = SCHEMA_VERSION) -> int:
    """Bring `db` forward to `target`, one transaction per step; returns the version reached.
    A store already at `target` is only read (a read-only role can open it)."""
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise newer_than_farm(f"run store {db.location.display}", current)
    if current >= target:
        return current
    with db.transaction():
        db.lock("schema")
        db.script(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
    for version in range(current, target):
        with db.transaction():
            db.lock("schema")
            if schema_version(db) > version:  # another process migrated meanwhile
                continue
            MIGRATIONS[version](db)
            db.execute(
                "INSERT INTO schema_version(version, applied_at) VALUES (?, ?)",
                (version + 1, now()),
            )
    return schema_version(db)
