"""Every released schema version, on both databases: a store left at version v (built by the
released migrations themselves, which are never edited) with the data a farm of that version
wrote opens migrated to the current schema with nothing lost; and `farm store migrate` moves a
SQLite store of any version to PostgreSQL, where `farm compare` gives the same answer."""

from __future__ import annotations

import hashlib
import json

import pytest

from farm.results import commands, store_command
from farm.results.store import SCHEMA_VERSION, RunStore, migrate, schema_version, store_location
from farm.results.store.dialects import connect
from farm.util.errors import StoreError
from tests.stores import newest_run

from .conftest import RUN_META, failed, record

RELEASED = range(1, SCHEMA_VERSION)  # the versions a store may still be at
T0 = "2026-01-0{}T10:00:00+00:00"


def _write_as_of(spec: str, version: int) -> None:
    """Two runs of one tier (r1 green, r2 with a regression and a new case) and a baseline, as a
    farm of schema `version` wrote them: v1's columns first, then what each later version
    added."""
    db = connect(store_location(spec))
    try:
        migrate(db, target=version)
        with db.transaction():
            for n, recs in ((1, [record("a"), record("b")]), (2, [record("a"), failed("b")])):
                meta = {**RUN_META, "run_id": f"r{n}", "tier": "smoke"}
                db.execute(
                    "INSERT INTO runs (run_id, tier, package_version, target, backend,"
                    " started_at, ended_at, exit_code, meta_json) VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        f"r{n}",
                        "smoke",
                        "0.1.0",
                        "twin",
                        "native",
                        T0.format(n),
                        T0.format(n),
                        n - 1,
                        json.dumps(meta),
                    ),
                )
                if n == 2:
                    recs.append(record("c", metrics={"mere": 3e-7}))
                for rec in recs:
                    db.execute(
                        "INSERT INTO results (run_id, case_id, family, dtype, schedule, outcome,"
                        " category, mere, mare, rmse, max_abs, host, attempts, record_json)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (
                            f"r{n}",
                            rec["case_id"],
                            rec["family"],
                            rec["dtype"],
                            rec["schedule"],
                            rec["outcome"],
                            rec["category"],
                            rec["metrics"]["mere"],
                            rec["metrics"]["mare"],
                            1e-7,
                            1e-6,
                            rec["host"],
                            1,
                            json.dumps(rec),
                        ),
                    )
            db.execute("INSERT INTO baselines VALUES ('smoke', 'r1', ?)", (T0.format(1),))
            if version >= 2:  # v2 keeps counts as columns: a v2+ farm wrote them
                for n, counts in ((1, (2, 2, 0)), (2, (3, 2, 1))):
                    db.execute(
                        "UPDATE runs SET n_total=?, n_passed=?, n_failed=? WHERE run_id=?",
                        (*counts, f"r{n}"),
                    )
            if version >= 5:
                db.execute("UPDATE runs SET status='finished', owner='gone:1:1'")
            if version >= 6:
                db.execute(
                    "INSERT INTO shrinks (case_id, package_sha256, shrunk_id, case_json,"
                    " created_at) VALUES ('b', ?, 'b-shrunk', '{\"id\": \"b-shrunk\"}', ?)",
                    (RUN_META["package_sha256"], T0.format(3)),
                )
                db.execute(
                    "INSERT INTO bisects (bisect_id, good, bad, selection_json, status,"
                    " started_at) VALUES ('bi1', 'g', 'b', '{}', 'found', ?)",
                    (T0.format(3),),
                )
        assert schema_version(db) == version
    finally:
        db.close()


def _check_current(store: RunStore, version: int) -> None:
    assert store.version == SCHEMA_VERSION
    runs = {r["run_id"]: r for r in store.runs()}
    assert list(runs) == ["r2", "r1"]  # newest first, by the insertion order v7 keeps
    assert runs["r2"]["counts"] == {"total": 3, "passed": 2, "failed": 1, "broken": 0}
    assert runs["r1"]["green"] and runs["r1"]["status"] == "finished"
    assert store.baseline_for("smoke", exclude_run_id="r2") == "r1"
    assert [r["case_id"] for r in store.results("r2")] == ["a", "b", "c"]
    assert store.result_rows("r2")[2]["mere"] == pytest.approx(3e-7)
    if version >= 6:
        assert store.shrinks_for(["b"])["b"]["shrunk_id"] == "b-shrunk"
        assert [b["bisect_id"] for b in store.bisects()] == ["bi1"]
    store.begin_run({**RUN_META, "run_id": "r3"})  # the migrated store takes new runs
    assert newest_run(store)["run_id"] == "r3"


@pytest.mark.parametrize("version", RELEASED)
def test_a_store_of_every_released_version_opens_migrated(store_spec, version):
    _write_as_of(store_spec, version)
    with RunStore(store_spec) as store:
        _check_current(store, version)


def _compare_text(spec: str, capsys) -> tuple[int, str]:
    code = commands.main_compare(["--store", spec, "r2", "--format", "json"])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("version", RELEASED)
def test_farm_store_migrate_moves_a_sqlite_store_of_any_version_to_postgresql(
    tmp_path, version, capsys
):
    from tests.postgres import fresh_schema

    source = tmp_path / "farm.sqlite"
    _write_as_of(str(source), version)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    with fresh_schema() as url:
        assert store_command.main(["migrate", "--from", f"sqlite:{source}", "--to", url]) == 0
        out = capsys.readouterr()
        assert "runs 2, results 5, baselines 1" in out.out
        assert url.split("@")[0].split(":")[-1] not in out.out + out.err  # the password
        assert hashlib.sha256(source.read_bytes()).hexdigest() == digest  # source untouched
        with RunStore(url, create=False) as store:
            _check_current(store, version)
            store.db.execute("DELETE FROM runs WHERE run_id='r3'")
        # farm compare says the same on both
        with RunStore(source):  # the source brought to the current schema for the comparison
            pass
        assert _compare_text(url, capsys) == _compare_text(str(source), capsys)
        assert _compare_text(url, capsys)[0] == 1  # b regressed
        with pytest.raises(StoreError, match="not empty"):
            store_command.main(["migrate", "--from", str(source), "--to", url])


def test_farm_store_migrate_logs_a_line_a_table_where_no_terminal_reads_it(tmp_path, capsys):
    """Into a log (CI's), each table's progress is its own line; they ran together on one line
    ("runs: 2 rowsresults: 5 rows...") when the progress was a terminal's rewritten line."""
    source, target = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    _write_as_of(str(source), RELEASED[-1])
    assert store_command.main(["migrate", "--from", str(source), "--to", str(target)]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert err.split("\n")[1:3] == ["runs: 2 rows", "results: 5 rows"]
