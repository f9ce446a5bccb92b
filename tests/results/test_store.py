"""The run store on SQLite and on PostgreSQL (each test that takes `store` runs on both): round
trip, idempotent writes, migrations, baselines, trends, retention; SQLite's own file checks."""

from __future__ import annotations

import datetime as _dt
import json
import math
import shlex
import sqlite3
import time

import numpy as np
import pytest

from farm.results import commands, retention
from farm.results.store import (
    RUN_ROWS,
    SCHEMA_VERSION,
    RunStore,
    schema_version,
)
from farm.results.store.dialects import SqliteDatabase
from farm.util.errors import StoreError, UsageError
from farm.util.sizes import size_text
from tests.stores import newest_run, stored_run

from .conftest import (
    DEEP_INSIDE,
    FIRST_PAGES,
    RUN_META,
    failed,
    garble,
    record,
    rejected_ok,
    store_with_results,
)


@pytest.fixture
def sqlite_store(tmp_path):
    """For what only a SQLite store has (its file, its locks, its statement trace)."""
    with RunStore(tmp_path / "farm.sqlite") as s:
        yield s


def _run(store, tier="smoke", records=(), exit_code=0, started_at=None, **meta):
    m = {**RUN_META, "tier": tier, **meta}
    if started_at:
        m["started_at"] = started_at
    run_id = store.begin_run(m)
    if records:
        store.add_results(run_id, records)
    if exit_code is not None:
        store.finish_run(run_id, exit_code)
    return run_id


def test_round_trip_keeps_every_field(store):
    recs = [record("a"), failed("b", dtype="float16"), rejected_ok("c", family="ascend310b")]
    recs[0]["metrics"]["mere"] = np.float32(1.5e-7)  # numpy scalars from the golden side
    recs[0]["shape"] = np.array([4, 1024])
    run_id = _run(store, records=recs, exit_code=1, run_id="20261129-151200-smoke-ab12")
    assert run_id == "20261129-151200-smoke-ab12"

    got = {r["case_id"]: r for r in store.results(run_id)}
    assert set(got) == {"a", "b", "c"}
    assert got["a"]["shape"] == [4, 1024]
    assert got["a"]["metrics"]["mere"] == pytest.approx(1.5e-7)
    assert got["b"] == json.loads(json.dumps(recs[1]))  # everything else verbatim
    assert got["c"]["expect"] == {"kind": "reject", "reason": "dtype_mismatch", "status": 161002}

    run = store.get_run(run_id)
    assert run["tier"] == "smoke" and run["exit_code"] == 1 and run["finished"]
    assert run["package_sha256"] == "ab" * 32 and run["git_commit"].startswith("0123")
    assert run["counts"] == {"total": 3, "passed": 2, "failed": 1, "broken": 0}
    assert [h["soc"] for h in run["inventory"]] == ["Ascend910B3", "Ascend310B1"]
    assert not run["green"]

    rows = {r["case_id"]: r for r in store.result_rows(run_id)}
    assert rows["b"]["dtype"] == "float16" and rows["b"]["outcome"] == "failed"
    assert rows["b"]["category"] == "precision" and rows["a"]["wall_s"] == 0.03
    assert rows["c"]["mere"] is None and rows["c"]["expect_kind"] == "reject"
    assert rows["c"]["status"] == 161002 and rows["a"]["host"] == "emu-a2-0"


def test_inventory_from_plan_slots_keeps_one_entry_per_host(store):
    slots = [
        {
            "id": f"a2-0:{d}",
            "host": "a2-0",
            "family": "ascend910b",
            "soc": "Ascend910B3",
            "device": d,
        }
        for d in range(4)
    ]
    slots.append(
        {
            "id": "310-0:0",
            "host": "310-0",
            "family": "ascend310b",
            "soc": "Ascend310B1",
            "device": 0,
        }
    )
    run_id = store.begin_run(
        {
            "tier": "smoke",
            "inventory": slots,
            "package": {"version": "1.2", "sha256": "ff", "target": "twin"},
        }
    )
    run = store.get_run(run_id)
    assert [(h["name"], h["soc"]) for h in run["inventory"]] == [
        ("a2-0", "Ascend910B3"),
        ("310-0", "Ascend310B1"),
    ]
    assert (run["package_version"], run["package_sha256"], run["target"]) == ("1.2", "ff", "twin")


def test_run_id_is_generated_from_tier_and_time(store):
    run_id = store.begin_run({"tier": "nightly"})
    assert "-nightly-" in run_id and len(run_id.split("-")[0]) == 8
    assert store.get_run(run_id)["ended_at"] is None
    assert store.runs(limit=5)[0]["run_id"] == run_id


def test_non_finite_metric_is_stored_as_null(store):
    r = record("nan", metrics={"mere": float("nan"), "mare": float("inf")})
    run_id = _run(store, records=[r])
    row = store.result_rows(run_id)[0]
    assert row["mere"] is None and row["mare"] is None
    assert math.isnan(store.results(run_id)[0]["metrics"]["mere"])


def test_second_write_of_a_case_replaces_it(store):
    run_id = _run(store, exit_code=None)
    store.add_results(run_id, [failed("x"), record("y")])
    store.add_results(run_id, [record("x", attempts=2)])  # retried on another slot
    store.add_results(run_id, [record("x", attempts=2)])  # and written twice
    store.finish_run(run_id, 0)
    res = store.results(run_id)
    assert [r["case_id"] for r in res] == ["x", "y"]
    assert res[0]["outcome"] == "passed" and res[0]["attempts"] == 2
    assert store.get_run(run_id)["counts"] == {"total": 2, "passed": 2, "failed": 0, "broken": 0}
    n = store.db.execute("SELECT COUNT(*) FROM results WHERE run_id=?", (run_id,)).fetchone()[0]
    assert n == 2


def test_bad_records_are_refused_and_nothing_is_half_written(store):
    run_id = _run(store, exit_code=None)
    with pytest.raises(ValueError):
        store.add_results(run_id, [record("ok"), record("bad", outcome="skipped")])
    assert store.results(run_id) == []
    with pytest.raises(KeyError):
        store.add_results("no-such-run", [record("ok")])


def test_a_bulk_write_is_one_transaction(sqlite_store):
    """What makes 5,000 results quick to store is one transaction, one batched insert: checked
    by counting what SQLite was asked to do, not by a clock."""
    store = sqlite_store
    run_id = _run(store, exit_code=None)
    recs = [record(f"case-{i:05d}", dtype=("float16", "float32")[i % 2]) for i in range(5000)]
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        store.add_results(run_id, recs)
    finally:
        store.db.conn.set_trace_callback(None)
    verbs = [s.split(None, 1)[0].upper() for s in statements]
    assert verbs.count("COMMIT") == 1 and verbs.count("BEGIN") <= 1, verbs
    assert verbs.count("INSERT") == 5000  # executemany: one statement per row, one transaction
    assert store.get_run(run_id)["counts"]["total"] == 5000


V1_DDL = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO schema_version VALUES (1, '2026-01-01T00:00:00+00:00');
CREATE TABLE runs (run_id TEXT PRIMARY KEY, tier TEXT NOT NULL, package_version TEXT,
  package_sha256 TEXT, target TEXT, git_commit TEXT, backend TEXT, farm_version TEXT,
  started_at TEXT NOT NULL, ended_at TEXT, exit_code INTEGER, meta_json TEXT NOT NULL);
CREATE TABLE results (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  case_id TEXT NOT NULL, family TEXT, dtype TEXT, schedule TEXT, outcome TEXT NOT NULL,
  category TEXT, mere REAL, mare REAL, rmse REAL, max_abs REAL, host TEXT, attempts INTEGER,
  record_json TEXT NOT NULL, PRIMARY KEY (run_id, case_id));
CREATE TABLE baselines (tier TEXT PRIMARY KEY, run_id TEXT NOT NULL, set_at TEXT NOT NULL);
CREATE INDEX runs_tier_started ON runs(tier, started_at);
"""


def test_v1_database_is_migrated_on_open(tmp_path):
    """A store written by the first release (frozen DDL above) opens, migrated and backfilled."""
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V1_DDL)
    meta = {**RUN_META, "run_id": "r1", "tier": "smoke"}
    db.execute(
        "INSERT INTO runs VALUES ('r1','smoke','0.0.9',NULL,'twin',NULL,'twin','0.0.9',"
        "'2026-01-01T00:00:00+00:00','2026-01-01T00:10:00+00:00',0,?)",
        (json.dumps(meta),),
    )
    for rec in (record("a"), record("b", timings={"wall_s": 2.5}), failed("c")):
        db.execute(
            "INSERT INTO results VALUES ('r1',?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                rec["case_id"],
                rec["family"],
                rec["dtype"],
                rec["schedule"],
                rec["outcome"],
                rec["category"],
                1e-7,
                1e-6,
                1e-7,
                1e-6,
                rec["host"],
                1,
                json.dumps(rec),
            ),
        )
    db.execute("INSERT INTO baselines VALUES ('smoke','r1','2026-01-01T00:11:00+00:00')")
    db.commit()
    db.close()

    with RunStore(path) as store:
        assert store.version == SCHEMA_VERSION == schema_version(store.db)
        run = stored_run(store, "r1")
        assert run["counts"] == {"total": 3, "passed": 2, "failed": 1, "broken": 0}
        assert [h["name"] for h in run["inventory"]] == ["emu-a2-0", "emu-310-0"]
        rows = {r["case_id"]: r for r in store.result_rows("r1")}
        assert rows["b"]["wall_s"] == 2.5 and rows["a"]["api"] == "dim"
        assert store.explicit_baseline("smoke") == "r1"
        indexes = {
            r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }
        assert {"results_case", "results_run_outcome"} <= indexes
        # The migrated store takes new writes.
        store.add_results("r1", [record("d")])
        assert stored_run(store, "r1")["counts"]["total"] == 4
    with RunStore(path) as again:  # opening a current store changes nothing
        assert again.version == SCHEMA_VERSION


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "future.sqlite"
    RunStore(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_version VALUES (?, 'later')", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer than this farm"):
        RunStore(path)


def test_baseline_last_green_of_the_same_tier(store):
    t = "2026-11-0{}T10:00:00+00:00"
    green1 = _run(store, records=[record("a")], started_at=t.format(1))
    green2 = _run(store, records=[record("a")], started_at=t.format(2))
    _run(store, records=[failed("a")], exit_code=1, started_at=t.format(3))  # red
    _run(store, records=[record("a")], exit_code=None, started_at=t.format(4))  # unfinished
    _run(
        store,
        records=[record("a", outcome="broken", category="infrastructure")],
        exit_code=0,
        started_at=t.format(5),
    )  # broken is not green
    _run(store, records=[], started_at=t.format(6))  # empty is not green
    other = _run(store, tier="nightly", records=[record("a")], started_at=t.format(7))
    current = _run(store, records=[record("a")], started_at=t.format(8))

    assert store.baseline_for("smoke") == current  # newest green, nothing excluded
    assert store.baseline_for("smoke", exclude_run_id=current) == green2
    # Comparing an older run never picks a later one.
    assert store.baseline_for("smoke", exclude_run_id=green2) == green1
    assert store.baseline_for("nightly", exclude_run_id=other) is None
    assert store.baseline_for("full") is None


def test_explicit_baseline_wins_unless_it_is_the_run_compared(store):
    t = "2026-11-0{}T10:00:00+00:00"
    pinned = _run(store, records=[failed("a")], exit_code=1, started_at=t.format(1))
    green = _run(store, records=[record("a")], started_at=t.format(2))
    current = _run(store, records=[record("a")], started_at=t.format(3))
    assert store.set_baseline("smoke", pinned, force=True) == ["it exited 1 (1 failed)"]
    assert store.baseline_for("smoke", exclude_run_id=current) == pinned
    assert store.baseline_for("smoke", exclude_run_id=pinned) is None  # nothing green before
    store.set_baseline("smoke", green)  # replacing, not adding
    assert store.baseline_for("smoke", exclude_run_id=current) == green
    store.clear_baseline("smoke")
    assert store.baseline_for("smoke", exclude_run_id=current) == green
    with pytest.raises(KeyError):
        store.set_baseline("smoke", "nope")


def test_runs_listing_newest_first_and_by_tier(store):
    t = "2026-11-0{}T10:00:00+00:00"
    ids = [
        _run(
            store,
            tier=("smoke", "nightly")[i % 2],
            started_at=t.format(i + 1),
            records=[record("a")],
        )
        for i in range(5)
    ]
    assert [r["run_id"] for r in store.runs(limit=3)] == ids[::-1][:3]
    assert [r["run_id"] for r in store.runs(limit=10, tier="nightly")] == [ids[3], ids[1]]
    assert store.latest_run(tier="smoke")["run_id"] == ids[4]


def test_metric_series_per_family_and_dtype(store):
    t = "2026-11-0{}T10:00:00+00:00"
    for i in range(4):
        _run(
            store,
            started_at=t.format(i + 1),
            records=[
                record("a", metrics={"mere": 1e-7 * (i + 1), "mare": 1e-6}),
                record("b", metrics={"mere": 3e-7 * (i + 1), "mare": 2e-6}),
                record("c", dtype="float16", metrics={"mere": 2e-4, "mare": 1e-3}),
                rejected_ok("r", family="ascend310b"),
            ],
        )
    pts = store.metric_series("smoke", n_runs=3)
    runs = sorted({p["run_id"] for p in pts}, key=[p["run_id"] for p in pts].index)
    assert len(runs) == 3  # the last three, oldest first
    f32 = [p for p in pts if p["dtype"] == "float32" and p["family"] == "ascend910b"]
    assert [p["mere_median"] for p in f32] == pytest.approx([4e-7, 6e-7, 8e-7])
    assert [p["mere_max"] for p in f32] == pytest.approx([6e-7, 9e-7, 12e-7])
    assert all(p["pass_rate"] == 1.0 and p["n"] == 2 for p in f32)
    rej = [p for p in pts if p["family"] == "ascend310b"]
    assert rej and all(p["mere_median"] is None for p in rej)


def test_metric_series_says_each_runs_kind(store):
    """The trend tells a planted bug's run, a shard, a merge of shards, a degraded run (exit 2)
    and a subset from the tier's whole runs: each point carries its run's kind."""
    t = "2026-11-0{}T10:00:00+00:00"
    recs = [record("a", metrics={"mere": 1e-7, "mare": 1e-6})]
    planted_pkg = {"file": "logsoftmaxgrad-0.1.0-ascendc-cpu-bug-tail.tar.gz", "sha256": "cd" * 32}
    runs = [
        _run(store, started_at=t.format(1), records=recs),
        _run(store, started_at=t.format(2), records=recs, package=planted_pkg),
        _run(store, started_at=t.format(3), records=recs, shard="1/2", run_group="g"),
        _run(store, started_at=t.format(4), records=recs, shards=2, merged_from=["x", "y"]),
        _run(store, started_at=t.format(5), records=recs, exit_code=2),
        _run(store, started_at=t.format(6), records=recs, subset=True),
    ]
    pts = store.metric_series("smoke", n_runs=10)
    got = {p["run_id"]: (p["kind"], p["kind_text"]) for p in pts}
    assert [got[r] for r in runs] == [
        ("whole", ""),
        ("planted", "planted bug tail"),
        ("shard", "shard 1/2"),
        ("merged", "merged 2 shards"),
        ("degraded", "degraded (exit 2)"),
        ("subset", "subset"),
    ]


def test_each_tiers_history_is_kept_in_order_and_pruned_with_its_run(store):
    old = _run(store, records=[failed("a")], exit_code=1, started_at=_day(9))
    mid = _run(store, records=[record("a")], started_at=_day(5))
    new = _run(store, records=[record("a")], started_at=_day(1))
    for i, run_id in enumerate((old, mid, new)):
        store.add_history_line("smoke", json.dumps({"n": i}), run_id)
    store.add_history_line("nightly", "{}", new)
    assert store.history_lines("smoke") == ['{"n": 0}', '{"n": 1}', '{"n": 2}']
    assert store.history_lines("smoke", limit=2) == ['{"n": 1}', '{"n": 2}']
    store.prune(lambda runs: [old])
    assert store.history_lines("smoke") == ['{"n": 1}', '{"n": 2}']
    assert store.history_lines("nightly") == ["{}"]


def test_a_runs_history_line_is_one_however_many_reports(store):
    """A report of a run made again replaces the run's line, in its place; the report reads the
    history without it (before: three reports, three points of one run)."""
    first = _run(store, records=[record("a")], started_at=_day(9))
    second = _run(store, records=[record("a")], started_at=_day(5))
    store.add_history_line("smoke", '{"r": 1}', first)
    store.add_history_line("smoke", '{"r": 2}', second)
    assert store.history_lines("smoke", but_run=first) == ['{"r": 2}']
    for again in range(3):
        store.add_history_line("smoke", json.dumps({"r": 1, "again": again}), first)
    assert store.history_lines("smoke") == ['{"r": 1, "again": 2}', '{"r": 2}']
    store.add_history_line("smoke", '{"no run": 1}')  # a line of no run is added as ever
    store.add_history_line("smoke", '{"no run": 2}')
    assert len(store.history_lines("smoke")) == 4


def test_a_history_file_from_before_v7_is_taken_in_once(tmp_path):
    legacy = tmp_path / "allure-history-smoke.jsonl"
    legacy.write_text('{"a": 1}\n{"a": 2}\n')
    with RunStore(tmp_path / "farm.sqlite") as store:
        assert store.history_lines("smoke") == ['{"a": 1}', '{"a": 2}']
        store.add_history_line("smoke", '{"a": 3}')
        assert store.history_lines("smoke") == ['{"a": 1}', '{"a": 2}', '{"a": 3}']
    assert not legacy.exists() and legacy.with_name(legacy.name + ".imported").is_file()


# -- what a run was, and stores that cannot serve ------------------------------------------


def test_interrupted_aborted_and_subset_runs_are_never_baselines(store):
    green = _run(store, records=[record("a")])
    interrupted = _run(store, records=[record("a")])
    store.finish_run(interrupted, 2, status="interrupted")
    subset = _run(store, records=[record("a")], subset=True)
    assert store.baseline_for("smoke") == green
    # A subset run may be compared with an earlier subset run; a whole-tier run never is.
    later_subset = _run(store, records=[record("a")], subset=True)
    assert store.baseline_for("smoke", exclude_run_id=later_subset) == subset
    whole = _run(store, records=[record("a")])
    assert store.baseline_for("smoke", exclude_run_id=whole) == green
    for run_id, why in ((interrupted, "is interrupted"), (subset, "ran a subset")):
        with pytest.raises(UsageError, match=why):
            store.set_baseline("smoke", run_id)
    running = store.begin_run({**RUN_META, "tier": "smoke"})
    with pytest.raises(UsageError, match="is running"):
        store.set_baseline("smoke", running)
    assert store.latest_run("smoke", finished=True)["run_id"] == whole
    assert store.get_run(interrupted)["status"] == "interrupted"


def test_a_degraded_shard_or_empty_run_is_refused_in_one_line_unless_forced(store, capsys):
    """`farm baseline set` took a degraded run (exit 2, 137 broken): later, broken->passed
    counted as "98 fixed". Each way a run is less than a baseline is named, with the fix."""
    degraded = _run(store, records=[record("a"), record("b", outcome="broken")], exit_code=2)
    shard = _run(store, records=[record("a")], subset=True, shard="2/2", run_group="p-1")
    empty = _run(store)
    location = store.location.spec
    for run_id, why in (
        (degraded, "it exited 2 (1 broken)"),
        (shard, "it is shard 2/2 of run group p-1"),
        (empty, "it holds no results"),
    ):
        with pytest.raises(UsageError) as refused:
            commands.main_baseline(["--store", location, "set", run_id])
        text = str(refused.value)
        assert "\n" not in text and why in text, text
        assert f"farm baseline set {run_id} --force" in text
    assert store.explicit_baseline("smoke") is None
    assert commands.main_baseline(["--store", location, "set", degraded, "--force"]) == 0
    out = capsys.readouterr().out
    assert out == f"baseline of tier smoke: {degraded} (set with --force: it exited 2 (1 broken))\n"
    assert store.explicit_baseline("smoke") == degraded


def test_a_run_of_a_planted_bug_is_never_a_baseline(store, monkeypatch, capsys):
    """`farm run --plant-bug` tests the farm: a planted bug its selection did not catch (a
    rounding bias under what is judged, a case file that misses it) passed, and became the
    baseline that later runs of the real operator were held to."""
    from farm.results.store import baselines

    monkeypatch.setattr(baselines, "_PAGE", 2)  # the planted runs fill more than one page
    real = _run(store, records=[record("a")], started_at="2026-12-01T10:00:00+00:00")
    for n, bug in enumerate(("round_half_away", "tail", "mid_running_sum")):
        file = f"logsoftmaxgrad-0.1.0-ascendc-cpu-bug-{bug}{'-aarch64' * (n == 1)}.tar.gz"
        planted = _run(
            store,
            records=[record("a")],
            started_at=f"2026-12-0{2 + n}T10:00:00+00:00",
            package={"file": file, "sha256": "cd" * 32},
        )
    assert store.get_run(planted)["green"]
    assert store.baseline_for("smoke") == real
    latest = _run(store, records=[record("a")], exit_code=None)
    assert store.baseline_for("smoke", exclude_run_id=latest) == real
    with pytest.raises(UsageError, match="planted bug mid_running_sum .* a baseline must be"):
        store.set_baseline("smoke", planted)
    store.set_baseline("smoke", real)
    assert commands.main_runs(["--store", store.location.spec]) == 0  # told apart at a glance
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "(planted bug mid_running_sum)" in lines[planted]
    assert "planted" not in lines[real]


def test_another_machines_run_is_dead_once_its_heartbeat_is_stale(store):
    """A CI job cancelled on another runner leaves its run running: the next command anywhere
    closes it once it has been silent for STALE_AFTER, and leaves alone one that still beats."""
    from farm.results.store.runs import STALE_AFTER

    silent = store.begin_run({**RUN_META, "owner": "ci-runner-7:41:99"})
    beating = store.begin_run({**RUN_META, "owner": "ci-runner-8:41:99"})
    last = store.db.clock() - _dt.timedelta(hours=1)  # both last beat an hour ago
    store.db.execute("UPDATE runs SET heartbeat_at=?", (last.isoformat(),))
    store.beat(beating)
    assert store.recover_orphans(at=last + STALE_AFTER / 2) == []  # both fresh then
    assert store.recover_orphans() == [(silent, 0)]
    assert store.get_run(silent)["status"] == "aborted"
    assert store.get_run(beating)["status"] == "running"


def test_a_run_beats_while_its_session_lasts(store):
    import threading

    from farm.results.store.heartbeat import heartbeat

    run_id = store.begin_run(RUN_META)
    assert store.get_run(run_id)["heartbeat_at"] is not None  # begun: its first sign of life
    store.db.execute("UPDATE runs SET heartbeat_at='2026-01-01T00:00:00+00:00'")
    with heartbeat(store.location, run_id, every=3600):
        beaten = store.get_run(run_id)["heartbeat_at"]  # on entry
        assert beaten > "2026-01-01T00:00:00+00:00"
    assert not [t for t in threading.enumerate() if t.name.startswith("heartbeat")]


def test_a_runner_whose_clock_is_behind_is_not_taken_for_dead(store, monkeypatch):
    """A team's runners share a PostgreSQL store, not a clock: one 20 minutes behind wrote its
    heartbeats by its own clock, and every other runner closed its live runs as dead (silent
    for STALE_AFTER). Signs of life are written and read by the store's clock."""
    from farm.results.store import runs

    behind = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(minutes=20)
    monkeypatch.setattr(runs, "now", lambda: behind.isoformat(timespec="seconds"))
    run_id = store.begin_run({**RUN_META, "owner": "ci-runner-9:41:99"})
    assert store.recover_orphans() == []  # before its first beat
    store.beat(run_id)
    monkeypatch.undo()  # another runner, whose clock is right, looks
    assert store.recover_orphans() == []
    assert store.get_run(run_id)["status"] == "running"


def test_a_dead_runs_records_are_imported_and_it_is_marked_aborted(store, tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "records").mkdir(parents=True)
    lines = [json.dumps(record("a")), json.dumps(record("b")), '{"case_id": "c", "trunc']
    (run_dir / "records" / "gw0.jsonl").write_text("\n".join(lines))
    dead = store.begin_run({**RUN_META, "run_dir": str(run_dir), "owner": "x:1:1"})
    alive = store.begin_run({**RUN_META, "run_id": "alive-run"})  # owned by this process
    elsewhere = store.begin_run({**RUN_META, "run_id": "far-run", "owner": "other-host:1:1"})
    import socket

    store.db.execute(
        "UPDATE runs SET owner=? WHERE run_id=?", (f"{socket.gethostname()}:999999:1", dead)
    )
    assert store.recover_orphans() == [(dead, 2)]
    run = store.get_run(dead)
    assert (run["status"], run["exit_code"], run["counts"]["total"]) == ("aborted", 2, 2)
    assert store.get_run(alive)["status"] == store.get_run(elsewhere)["status"] == "running"
    assert store.recover_orphans() == []


def test_a_run_of_another_container_with_this_host_name_is_left_to_its_heartbeat(store):
    """Two CI containers on Docker's host network share the host name, each with pids of its
    own: a run of the other one, whose pid is no process here, was closed as dead while it ran.
    Its pid namespace says it is another machine's, as it were: its heartbeat decides."""
    import socket

    from farm.run.owners import owner_alive, process_owner

    mine = process_owner()
    assert owner_alive(mine) is True
    host, pid, started, namespace = mine.split(":", 3)
    assert namespace.startswith("pid:[")
    other = f"{host}:999999:1:pid:[1]"
    assert owner_alive(other) is None
    assert owner_alive(f"{socket.gethostname()}:999999:1") is False  # an older farm's owner
    run_id = store.begin_run({**RUN_META, "owner": other})
    store.beat(run_id)
    assert store.recover_orphans() == []
    assert store.get_run(run_id)["status"] == "running"


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda p: p.write_bytes(b""), "is an empty file"),
        (lambda p: p.write_bytes(b"not sqlite at all" * 64), "is not a SQLite database"),
        (lambda p: p.mkdir(), "is a directory"),
    ],
)
def test_stores_that_cannot_serve_are_refused_with_the_fix(tmp_path, make, needle):
    path = tmp_path / "farm.sqlite"
    make(path)
    with pytest.raises(StoreError, match=needle):
        RunStore(path)


def test_a_store_whose_directory_cannot_be_made_is_refused_naming_it(tmp_path):
    """Root passes every access check, and still cannot make a directory under a file (or in
    /proc): `farm run` with FARM_RUNS there ended in a traceback from the agent bundle."""
    (tmp_path / "a-file").write_text("")
    with pytest.raises(StoreError, match=r"cannot create run store .*: cannot make .*a-file/runs"):
        RunStore(tmp_path / "a-file" / "runs" / "farm.sqlite")


def test_a_corrupt_store_is_refused(tmp_path):
    path = tmp_path / "farm.sqlite"
    store_with_results(path)
    garble(path, FIRST_PAGES)
    with pytest.raises(StoreError, match="restore it"):
        RunStore(path)


def _count_integrity_checks(monkeypatch) -> list[str]:
    from farm.results.store import checks

    seen: list[str] = []
    whole = checks.integrity

    def counted(db):
        seen.append("checked")
        return whole(db)

    monkeypatch.setattr(checks, "integrity", counted)
    return seen


def _written_by_another_program(path) -> None:
    time.sleep(0.05)  # past the file system's clock tick of the state the farm kept
    other = sqlite3.connect(path)
    other.execute("UPDATE runs SET git_commit = 'changed elsewhere'")
    other.commit()
    other.close()


def test_a_store_the_farm_writes_is_read_whole_once(tmp_path, monkeypatch):
    """The whole read costs what the store weighs; a farm run opens its store ten times,
    writing between the opens, and the next runs open it again: it is read whole once."""
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as s:  # made here: nothing to read yet
        run_id = s.begin_run(RUN_META)
    seen = _count_integrity_checks(monkeypatch)
    for i in range(4):
        with RunStore(path) as s:
            s.add_results(run_id, [record(f"c{i}-{j}") for j in range(300)])
    with RunStore(path, create=False) as s:
        s.finish_run(run_id, 0)
    assert seen == ["checked"]


def test_a_store_another_program_wrote_is_read_whole_again(tmp_path, monkeypatch):
    path = tmp_path / "farm.sqlite"
    store_with_results(path)
    seen = _count_integrity_checks(monkeypatch)
    RunStore(path).close()
    _written_by_another_program(path)
    RunStore(path).close()
    assert seen == ["checked", "checked"]


def test_bytes_written_into_a_store_found_sound_are_found(tmp_path):
    """Deep inside, where only a whole read finds them, under the record the farm left."""
    path = tmp_path / "farm.sqlite"
    store_with_results(path, 3000)
    RunStore(path).close()  # read whole: sound, and so recorded
    garble(path, DEEP_INSIDE)
    with pytest.raises(StoreError, match="failed its integrity check"):
        RunStore(path)


def test_a_corrupt_copy_moved_into_a_sound_stores_place_is_refused(tmp_path):
    path = tmp_path / "farm.sqlite"
    store_with_results(path)
    RunStore(path).close()  # read whole: sound
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(path.read_bytes())
    garble(copy, FIRST_PAGES)
    copy.replace(path)
    with pytest.raises(StoreError, match="restore it"):
        RunStore(path)


def test_a_store_read_whole_a_week_ago_is_read_whole_again(tmp_path, monkeypatch):
    from farm.results.store import checks

    path = tmp_path / "farm.sqlite"
    store_with_results(path)
    seen = _count_integrity_checks(monkeypatch)
    RunStore(path).close()
    record_path = path.with_name(path.name + checks.CHECKED_SUFFIX)
    kept = json.loads(record_path.read_text())
    kept["checked_at"] -= checks.TRUSTED_FOR_S + 60
    record_path.write_text(json.dumps(kept))
    RunStore(path).close()
    assert seen == ["checked", "checked"]


def test_the_whole_read_left_to_a_thread_refuses_a_corrupt_store_in_one_line(tmp_path):
    from farm.results.store import check_store_while

    path = tmp_path / "farm.sqlite"
    store_with_results(path, 3000)
    garble(path, DEEP_INSIDE)
    pending = check_store_while(path, create=True)  # the header and schema read well
    with pytest.raises(StoreError, match="failed its integrity check") as refused:
        pending.result()
    assert "\n" not in str(refused.value) and "more): move it aside and restore it" in str(
        refused.value
    )
    with pytest.raises(StoreError, match="failed its integrity check"):
        RunStore(path)  # not taken for sound after the read refused it


def test_what_costs_nothing_to_see_is_refused_before_the_whole_read_starts(tmp_path):
    from farm.results.store import check_store_while

    path = tmp_path / "farm.sqlite"
    path.write_bytes(b"not sqlite at all" * 64)
    with pytest.raises(StoreError, match="is not a SQLite database"):
        check_store_while(path, create=True)


def test_a_store_read_whole_in_a_thread_is_not_read_again_when_opened(tmp_path, monkeypatch):
    from farm.results.store import check_store_while

    path = tmp_path / "farm.sqlite"
    store_with_results(path)
    seen = _count_integrity_checks(monkeypatch)
    check_store_while(path, create=True).result()
    with RunStore(path) as s:
        s.begin_run({**RUN_META, "run_id": "next-run"})
    RunStore(path).close()
    assert seen == ["checked"]


def test_a_read_only_store_and_a_missing_one_are_refused(tmp_path):
    """Read-only for real: file modes as a user; as root (CI), a read-only tmpfs in a private
    mount namespace, since root writes through file modes."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    source = tmp_path / "farm.sqlite"
    RunStore(source).close()
    probe = (
        "import sys; from farm.results.store import RunStore\n"
        "try:\n    RunStore(sys.argv[1])\nexcept Exception as e:\n    print(e)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    if os.geteuid() == 0:
        mnt = tmp_path / "ro"
        mnt.mkdir()
        script = (
            f"mount -t tmpfs none {mnt} && cp {source} {mnt}/ && mount -o remount,ro {mnt} && "
            f"{shlex.quote(sys.executable)} -c '{probe}' {mnt}/farm.sqlite"
        )
        argv = ["unshare", "-m", "sh", "-c", script]
        if shutil.which("unshare") is None:
            pytest.fail("unshare (util-linux) is needed to make a read-only store as root")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        shutil.copy(source, ro / "farm.sqlite")
        (ro / "farm.sqlite").chmod(0o444)
        ro.chmod(0o555)
        argv = [sys.executable, "-c", probe, str(ro / "farm.sqlite")]
    try:
        out = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=60)
    finally:
        if os.geteuid() != 0:
            (tmp_path / "ro").chmod(0o755)
    assert "is read-only" in out.stdout, out.stdout + out.stderr
    with pytest.raises(StoreError, match="no run store"):
        RunStore(tmp_path / "typo.sqlite", create=False)


def test_a_full_disk_is_a_store_error_naming_the_path(sqlite_store, monkeypatch):
    store = sqlite_store
    run_id = store.begin_run(RUN_META)

    class FullDisk:
        def __init__(self, db):
            self.db = db

        def execute(self, sql, *args):
            if sql.startswith("INSERT INTO results"):
                raise sqlite3.OperationalError("database or disk is full")
            return self.db.execute(sql, *args)

        def executemany(self, sql, *args):
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store.db, "conn", FullDisk(store.db.conn))
    with pytest.raises(StoreError, match="disk is full.*free space"):
        store.add_results(run_id, [record("a")])


def test_a_sound_store_that_refuses_a_write_is_never_sent_to_a_backup(tmp_path):
    """A store another process holds the write lock of (a prune's VACUUM) and a run id given
    twice were both "move it aside and restore it from a backup": a sound store, and what it
    held, given up for an older copy. Each line says what is wrong and the fix."""
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        run_id = store.begin_run(RUN_META)
        with pytest.raises(StoreError, match="already .*run this again") as twice:
            store.begin_run({**RUN_META, "run_id": run_id})
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            assert isinstance(store.db, SqliteDatabase)  # a path: the embedded store
            store.db.conn.execute("PRAGMA busy_timeout=50")  # the store waits 60 s by default
            with pytest.raises(StoreError, match="another process holds its write lock") as held:
                store.finish_run(run_id, 0)
        finally:
            holder.rollback()
            holder.close()
        store.finish_run(run_id, 0)
    assert "backup" not in str(twice.value) and "backup" not in str(held.value)
    assert f"fuser {path}" in str(held.value)


@pytest.mark.parametrize(
    "error, fix",
    [
        ("deadlock detected", "another runner's transaction held what this one needed"),
        ("could not serialize access due to concurrent update", "another runner's transaction"),
        ('could not obtain lock on row in relation "runs"', "another runner's transaction"),
        ('duplicate key value violates unique constraint "runs_pkey"', "run this again"),
        ("could not connect to server: Connection refused", "check that the server is up"),
        ('password authentication failed for user "ci"', "check the user and password"),
    ],
)
def test_a_shared_stores_errors_name_their_fix(error, fix):
    """A deadlock or a serialization failure between two runners' transactions said "check
    that the server is up" (its "could not"), where running the command again is the fix."""
    from farm.results.store import store_location
    from farm.results.store.dialects import store_error

    line = str(store_error(store_location("postgresql://ci@db.example/farm"), Exception(error)))
    said = f"run store postgresql://ci@db.example/farm: {error}: "
    assert line.startswith(said) and fix in line[len(said) :]


def test_a_store_held_by_another_process_is_not_unreadable_at_its_check(tmp_path, monkeypatch):
    """The check before a command reads the store read-only; one held exclusively by another
    process was "cannot be read (database is locked): move it aside and restore it"."""
    from farm.results.store import checks

    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        store.begin_run(RUN_META)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    connect = sqlite3.connect
    monkeypatch.setattr(
        checks.sqlite3, "connect", lambda *a, **k: connect(*a, **{**k, "timeout": 0.05})
    )
    monkeypatch.setattr(checks, "_trusted", lambda *a: False)  # read it now, as on first sight
    try:
        with pytest.raises(
            StoreError, match="cannot be read .*locked.*another process holds"
        ) as err:
            checks.check_store(path, create=False)
    finally:
        holder.rollback()
        holder.close()
    assert "backup" not in str(err.value)


def in_a_small_tmpfs(mnt, probe: str):
    """``python -c probe MNT`` in a private mount namespace where MNT is a tmpfs of 512 KiB (as
    root, with unshare: the caller checks)."""
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    python = shlex.quote(sys.executable)
    script = f'mount -t tmpfs -o size=512k none {mnt} && {python} -c "$0" {mnt}'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, probe],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_really_full_disk_is_a_store_error_and_nothing_half_written(tmp_path):
    """A tmpfs of 512 KiB in a private mount namespace, filled: writing results fails with one
    StoreError naming the store and the fix, and the run's earlier results are intact. As root
    only (CI); a developer's machine has the simulated full disk above."""
    import os
    import shutil

    from tests.requirements import need

    need(
        os.geteuid() == 0 and shutil.which("unshare") is not None,
        "root and unshare, to mount a full tmpfs (CI runs as root)",
    )
    mnt = tmp_path / "full"
    mnt.mkdir()
    probe = (
        "import json, sys\n"
        "from farm.results.store import RunStore\n"
        "from tests.results.conftest import RUN_META, record\n"
        "s = RunStore(sys.argv[1] + '/farm.sqlite')\n"
        "run = s.begin_run(RUN_META)\n"
        "s.add_results(run, [record('first')])\n"
        "try:\n"
        "    with open(sys.argv[1] + '/filler', 'wb') as f:\n"
        "        while True: f.write(b'x' * 4096)\n"
        "except OSError:\n"
        "    pass\n"
        "try:\n"
        "    s.add_results(run, [record(f'c{i}', message='m' * 2000) for i in range(400)])\n"
        "    print('no error')\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
        "print('kept', [r['case_id'] for r in s.results(run)])\n"
    )
    out = in_a_small_tmpfs(mnt, probe)
    assert "StoreError" in out.stdout and "full" in out.stdout, out.stdout + out.stderr
    assert "free space" in out.stdout and "kept ['first']" in out.stdout, out.stdout


def test_a_full_disk_that_sqlite_calls_a_disk_io_error_is_said_to_be_full(tmp_path, monkeypatch):
    """On a full disk SQLite says "disk I/O error" where it grows its -shm file (opening a store
    closed cleanly): with next to nothing free on the store's file system, that is "disk full",
    with what is free where and the fix; a disk with room keeps "check the disk"."""
    from farm.results.store import checks, dialects

    path = tmp_path / "farm.sqlite"
    RunStore(path).close()
    monkeypatch.setattr(sqlite3, "connect", _refusing(sqlite3.connect))
    monkeypatch.setattr(dialects, "free_bytes", lambda p: 8192)
    for open_it in (lambda: checks.check_store(path, create=False), lambda: RunStore(path)):
        with pytest.raises(StoreError) as err:
            open_it()
        assert str(err.value) == (
            f"run store {path}: the disk is full (8 KiB free in {tmp_path}; SQLite said: disk "
            "I/O error): free space on that disk or set FARM_STORE elsewhere; the run's records "
            "stay in runs/<run>/records and farm runs --recover imports them"
        )
    monkeypatch.setattr(dialects, "free_bytes", lambda p: 40 << 30)
    with pytest.raises(StoreError, match=r"disk I/O error\): the disk failed a read or a write"):
        checks.check_store(path, create=False)


def _refusing(connect):
    """sqlite3.connect whose connections fail as SQLite does on a full disk (IOERR_SHMSIZE)."""

    def refused(*args, **kwargs):
        connect(*args, **kwargs).close()
        raise sqlite3.OperationalError("disk I/O error")

    return refused


def test_a_really_full_disk_says_full_when_a_store_is_opened(tmp_path):
    """A store closed cleanly on a tmpfs that then fills: opening it again (`farm runs`) fails
    growing its -shm file, which SQLite calls a disk I/O error; the farm says the disk is full.
    As root only (CI), as the test above."""
    import os
    import shutil

    from tests.requirements import need

    need(
        os.geteuid() == 0 and shutil.which("unshare") is not None,
        "root and unshare, to mount a full tmpfs (CI runs as root)",
    )
    mnt = tmp_path / "full"
    mnt.mkdir()
    probe = (
        "import subprocess, sys\n"
        "from farm.results.store import RunStore\n"
        "from tests.results.conftest import RUN_META, record\n"
        "s = RunStore(sys.argv[1] + '/farm.sqlite')\n"
        "s.add_results(s.begin_run(RUN_META), [record('first')])\n"
        "s.close()\n"
        "try:\n"
        "    with open(sys.argv[1] + '/filler', 'wb') as f:\n"
        "        while True: f.write(b'x' * 512)\n"
        "except OSError:\n"
        "    pass\n"
        "store = sys.argv[1] + '/farm.sqlite'\n"
        "farm = [sys.executable, '-m', 'farm.cli', 'runs', '--store', store]\n"
        "out = subprocess.run(farm, capture_output=True, text=True)\n"
        "print(out.returncode, out.stderr)\n"
    )
    out = in_a_small_tmpfs(mnt, probe)
    code, _, said = out.stdout.partition(" ")
    assert code == "2" and len(said.strip().splitlines()) == 1, out.stdout + out.stderr
    assert f"error: run store {mnt}/farm.sqlite: the disk is full (" in said, said
    assert "free space on that disk" in said and "check the disk" not in said, said


# -- retention: farm runs prune ----------------------------------------------------------------

NOW = _dt.datetime(2026, 12, 1, 12, 0, tzinfo=_dt.timezone.utc)


def _day(n: int) -> str:
    """n days before NOW, as begin_run records a start."""
    return (NOW - _dt.timedelta(days=n)).isoformat(timespec="seconds")


def _prune(store, dry_run=False, **rules):
    return store.prune(
        lambda runs: retention.chosen_by_rules(runs, now=NOW, **rules), dry_run=dry_run
    )


def _ids(store):
    return {r["run_id"] for r in store.runs(limit=None)}


def test_prune_by_age_keeps_what_is_younger(store):
    old = [_run(store, records=[record("a")], started_at=_day(d)) for d in (40, 35)]
    young = [_run(store, records=[record("a")], started_at=_day(d)) for d in (20, 1)]
    doomed, spared = _prune(store, older_than=retention.parse_age("30d"))
    assert [r["run_id"] for r in doomed] == old[::-1] and spared == {}
    assert _ids(store) == set(young)
    assert store.results(old[0]) == [] and len(store.results(young[0])) == 1
    # The clock decides, not the machine: a day later the 20-day run is still young.
    assert _prune(store, older_than=retention.parse_age("21d")) == ([], {})


def test_prune_by_count_keeps_the_newest_n_of_each_suite(store):
    smoke = [_run(store, records=[record("a")], started_at=_day(10 - i)) for i in range(5)]
    cases = [
        _run(store, tier="cases:mine", records=[record("a")], started_at=_day(10 - i))
        for i in range(3)
    ]
    doomed, _ = _prune(store, keep=2)
    assert {r["run_id"] for r in doomed} == {*smoke[:3], cases[0]}
    assert _ids(store) == {*smoke[3:], *cases[1:]}


def test_prune_keeps_baselines_the_newest_run_and_what_it_is_compared_with(store):
    pinned = _run(store, records=[failed("a")], exit_code=1, started_at=_day(90))
    store.set_baseline("smoke", pinned, force=True)
    gone = _run(store, records=[record("a")], started_at=_day(80))
    smoke_newest = _run(store, records=[record("a")], started_at=_day(75))
    nightly_green = _run(store, tier="nightly", records=[record("a")], started_at=_day(70))
    nightly_red = _run(
        store, tier="nightly", records=[failed("a")], exit_code=1, started_at=_day(60)
    )
    doomed, spared = _prune(store, older_than=retention.parse_age("1d"))
    assert _ids(store) == {pinned, smoke_newest, nightly_green, nightly_red}
    assert spared[pinned] == "the explicit baseline of smoke"
    assert spared[smoke_newest] == "the newest finished run of smoke"
    assert spared[nightly_red] == "the newest finished run of nightly"
    assert "baseline" in spared[nightly_green]  # what the red run (and the next one) compare with
    assert store.baseline_for("nightly", exclude_run_id=nightly_red) == nightly_green
    assert [r["run_id"] for r in doomed] == [gone]


def test_prune_keeps_what_the_next_subset_run_is_compared_with(store):
    whole = _run(store, records=[record("a")], started_at=_day(9))
    subset = _run(store, records=[record("a")], started_at=_day(8), subset=True)
    red = _run(store, records=[failed("a")], exit_code=1, started_at=_day(7))
    assert _prune(store, keep=1)[0] == []
    assert _ids(store) == {whole, subset, red}
    later = _run(store, records=[record("a")], subset=True, exit_code=None)
    assert store.baseline_for("smoke", exclude_run_id=later) == subset


def test_prune_never_touches_a_running_run_nor_its_directory(store, tmp_path):
    running = store.begin_run({**RUN_META, "started_at": _day(50)})  # owned by this process
    run_dir = tmp_path / running
    (run_dir / "records").mkdir(parents=True)
    (run_dir / "records" / "gw0.jsonl").write_text(json.dumps(record("a")) + "\n")
    finished = _run(store, records=[record("a")], started_at=_day(47))
    base = _run(store, records=[record("a")], started_at=_day(45))  # the newest one's baseline
    newest = _run(store, records=[record("a")], started_at=_day(40))
    doomed, spared = _prune(store, older_than=retention.parse_age("1d"))
    assert [r["run_id"] for r in doomed] == [finished]
    assert set(spared) == {running, base, newest}
    assert spared[running] == "running (its process may be alive)"
    assert store.get_run(running)["status"] == "running"
    (tmp_path / finished).mkdir()
    removed = retention.remove_run_directories(doomed, store.location, dry_run=False)
    assert removed.dir_bytes == {finished: 0} and not (tmp_path / finished).exists()
    assert (run_dir / "records" / "gw0.jsonl").is_file()


def test_prune_removes_the_runs_directories_and_only_those(store, tmp_path):
    gone = _run(store, records=[record("a")], started_at=_day(9))
    elsewhere = tmp_path / "shared"  # a recorded run_dir not named after its run is not removed
    elsewhere.mkdir()
    odd = _run(store, records=[record("a")], started_at=_day(8), run_dir=str(elsewhere))
    _run(store, records=[record("a")], started_at=_day(5))  # the baseline of the newest: kept
    kept = _run(store, records=[record("a")], started_at=_day(1))
    for run_id in (gone, kept):
        (tmp_path / run_id / "allure-results").mkdir(parents=True)
        (tmp_path / run_id / "allure-results" / "x-result.json").write_bytes(b"x" * 5000)
    doomed, _ = _prune(store, keep=1)
    assert {r["run_id"] for r in doomed} == {gone, odd}
    removed = retention.remove_run_directories(doomed, store.location, dry_run=False)
    assert removed.dir_bytes == {gone: 5000} and removed.failed == []
    assert not (tmp_path / gone).exists() and elsewhere.is_dir() and (tmp_path / kept).is_dir()


def test_a_dry_run_removes_nothing(store, tmp_path):
    old = _run(store, records=[failed("a")], exit_code=1, started_at=_day(9))
    _run(store, records=[record("a")], started_at=_day(1))
    (tmp_path / old).mkdir()
    (tmp_path / old / "summary.json").write_text("{}")
    doomed, _ = _prune(store, dry_run=True, keep=1)
    removed = retention.remove_run_directories(doomed, store.location, dry_run=True)
    assert [r["run_id"] for r in removed.runs] == [old] and removed.dir_bytes == {old: 2}
    assert old in _ids(store) and (tmp_path / old / "summary.json").is_file()


def test_prune_deletes_every_row_that_refers_to_a_run(sqlite_store):
    """Every table with a run_id column is in RUN_ROWS: a table added later and not listed
    there fails here, before a prune leaves rows of deleted runs behind (or fails on a key)."""
    store = sqlite_store
    tables = [r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    with_runs = {
        t for t in tables if "run_id" in {c[1] for c in store.db.execute(f"PRAGMA table_info({t})")}
    } - {"runs"}
    assert with_runs == set(RUN_ROWS)
    store.db.execute("PRAGMA foreign_keys=OFF")  # no cascade: the prune's own deletes must do it
    old = _run(store, records=[record("a"), record("b")], started_at=_day(9))
    for day in (5, 1):  # the newest and its baseline
        _run(store, records=[record("a")], started_at=_day(day))
    assert [r["run_id"] for r in _prune(store, keep=1)[0]] == [old]
    for table in with_runs:
        n = store.db.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id=?", (old,)).fetchone()
        assert n[0] == 0, table


def test_the_store_is_smaller_after_a_prune_and_vacuum(tmp_path):
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        for d in range(6):
            recs = [record(f"c{i}", message="m" * 400) for i in range(300)]
            _run(store, records=recs, started_at=_day(10 - d))
        before = store.size_bytes()
        doomed, _ = _prune(store, keep=1)
        assert len(doomed) == 4  # the newest and its baseline stay
        store.reclaim_space()
        after = store.size_bytes()
    assert after < before / 2, (before, after)
    with RunStore(path) as store:  # still a sound store
        assert len(store.results(newest_run(store)["run_id"])) == 300


def test_ages_and_sizes_read_as_people_write_them():
    assert retention.parse_age("90d") == _dt.timedelta(days=90)
    assert retention.parse_age("12h") == _dt.timedelta(hours=12)
    assert retention.parse_age("2w") == _dt.timedelta(days=14)
    for bad in ("30", "d", "0d", "3y", "-1d"):
        with pytest.raises(UsageError, match="is not an age"):
            retention.parse_age(bad)
    assert [size_text(n) for n in (512, 5632, 42 * 2**20, 3 * 2**30)] == [
        "512 B",
        "5.5 KiB",
        "42 MiB",
        "3 GiB",
    ]


def test_farm_runs_shows_the_size_and_prune_dry_run_lists_what_would_go(store, tmp_path, capsys):
    old = _run(store, records=[failed("a")], exit_code=1, started_at=_day(9))  # no baseline
    new = _run(store, records=[record("a")], started_at=_day(1))
    (tmp_path / old).mkdir()
    (tmp_path / old / "junit.xml").write_bytes(b"j" * 3000)
    path = store.location.spec
    assert commands.main_runs(["--store", path]) == 0
    size_line = capsys.readouterr().out.splitlines()[-1]
    assert size_line.startswith(f"store {store.location.display}: ") and "KiB" in size_line
    assert "run directories: 2.9 KiB (1 of 2 runs have one)" in size_line

    assert commands.main_runs(["prune", "--store", path, "--keep", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"would remove {old} (smoke, finished, started {_day(9)}, 1 results," in out
    assert "would remove 1 runs (1 results) and 1 run directories (2.9 KiB)" in out
    assert _ids(store) == {old, new} and (tmp_path / old).is_dir()

    assert commands.main_runs(["prune", "--store", path, "--keep", "1"]) == 0
    out = capsys.readouterr().out
    assert f"removed {old} " in out and "freed " in out
    assert _ids(store) == {new} and not (tmp_path / old).exists()


class _Killed(BaseException):
    """A SIGKILL, as far as the prune can tell: nothing of it runs after this point."""


def _old_runs_with_directories(store, tmp_path, n=3):
    old = [
        _run(
            store, records=[failed("a", message="m" * 400)] * 1, exit_code=1, started_at=_day(9 - i)
        )
        for i in range(n)
    ]
    _run(store, records=[record("a")], started_at=_day(1))
    for run_id in old:
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "junit.xml").write_bytes(b"j" * 3000)
    return old


def test_a_prune_killed_after_its_transaction_is_finished_by_the_next(
    store, tmp_path, monkeypatch, capsys
):
    """Killed once the runs were gone from the store, a prune left their directories (and its
    VACUUM): before, no later prune reclaimed them (it finds runs in the store) and `farm runs`
    did not count them."""
    old = _old_runs_with_directories(store, tmp_path)
    path = store.location.spec

    def killed(*args, **kwargs):
        raise _Killed

    real = retention.remove_run_directories
    monkeypatch.setattr(retention, "remove_run_directories", killed)
    with pytest.raises(_Killed):
        commands.main_runs(["prune", "--store", path, "--keep", "1"])
    monkeypatch.setattr(retention, "remove_run_directories", real)
    assert not _ids(store) & set(old) and all((tmp_path / r).is_dir() for r in old)
    capsys.readouterr()

    assert commands.main_runs(["--store", path]) == 0
    size_line = capsys.readouterr().out.splitlines()[-1]
    assert size_line.endswith(
        "(0 of 1 runs have one; 3 more of runs not in the store, 8.8 KiB, 3 of them left by a "
        "prune that was stopped: the next farm runs prune removes them)"
    ), size_line

    assert commands.main_runs(["prune", "--store", path, "--keep", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "a prune that was stopped left 3 run directories of runs no longer in the store "
        "(8.8 KiB): removed; its VACUUM: done\n"
        if store.location.kind == "sqlite"
        else "a prune that was stopped left 3 run directories of runs no longer in the store "
        "(8.8 KiB): removed\n"
    ), out
    assert not any((tmp_path / r).exists() for r in old)
    assert not retention.pending_path(store.location).exists()
    assert commands.main_runs(["--store", path]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("(0 of 1 runs have one)")


def test_a_stopped_prunes_vacuum_is_done_by_the_next(tmp_path, monkeypatch, capsys):
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        for d in range(6):
            recs = [record(f"c{i}", message="m" * 400) for i in range(300)]
            _run(store, records=recs, started_at=_day(10 - d))
    monkeypatch.setattr(RunStore, "reclaim_space", lambda self: (_ for _ in ()).throw(_Killed()))
    with pytest.raises(_Killed):
        commands.main_runs(["prune", "--store", str(path), "--keep", "1"])
    monkeypatch.undo()
    before = path.stat().st_size
    assert commands.main_runs(["prune", "--store", str(path), "--keep", "1"]) == 0
    assert capsys.readouterr().out.startswith("a prune that was stopped left its VACUUM: done\n")
    assert path.stat().st_size < before / 2


def test_a_prune_killed_inside_its_transaction_leaves_every_run_and_directory(
    store, tmp_path, monkeypatch
):
    """Its note was written, its deletes never committed: the runs are all there, and the next
    prune removes none of their directories for that note."""
    old = _old_runs_with_directories(store, tmp_path)
    real = retention.write_pending

    def noted_then_killed(*args):
        real(*args)
        raise _Killed

    monkeypatch.setattr(retention, "write_pending", noted_then_killed)
    with pytest.raises(_Killed):
        commands.main_runs(["prune", "--store", store.location.spec, "--keep", "1"])
    monkeypatch.setattr(retention, "write_pending", real)
    assert set(old) <= _ids(store) and retention.pending_path(store.location).exists()
    assert commands.main_runs(["prune", "--store", store.location.spec, "--keep", "9"]) == 0
    assert set(old) <= _ids(store) and all((tmp_path / r).is_dir() for r in old)
    assert not retention.pending_path(store.location).exists()


def test_farm_runs_prune_needs_a_rule(store):
    with pytest.raises(UsageError, match="needs a rule"):
        commands.main_runs(["prune", "--store", store.location.spec])
    with pytest.raises(UsageError, match="keep 1 or more"):
        commands.main_runs(["prune", "--store", store.location.spec, "--keep", "0"])
    with pytest.raises(UsageError, match="prune goes first"):
        commands.main_runs(["--store", store.location.spec, "prune"])


def test_a_prune_holds_the_write_lock_and_is_all_or_nothing(sqlite_store):
    """A concurrent `farm run` cannot write while a prune deletes (it waits for the lock), and a
    prune that fails half way deletes nothing."""
    store = sqlite_store
    first = _run(store, records=[failed("a")], exit_code=1, started_at=_day(9))
    second = _run(store, records=[failed("a")], exit_code=1, started_at=_day(8))
    _run(store, records=[record("a")], started_at=_day(1))
    other = sqlite3.connect(store.path, timeout=0, isolation_level=None)

    def choose(runs):
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        return retention.chosen_by_rules(runs, now=NOW, keep=1)

    store.db.execute(  # the run's rows go first, then the run, which this refuses
        f"CREATE TRIGGER refuse BEFORE DELETE ON runs WHEN old.run_id = '{second}'"
        " BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    with pytest.raises(StoreError, match="refused"):
        store.prune(choose)
    assert {first, second} <= _ids(store) and len(store.results(first)) == 1
    store.db.execute("DROP TRIGGER refuse")
    assert {r["run_id"] for r in store.prune(choose)[0]} == {first, second}
    other.execute("BEGIN IMMEDIATE")  # the lock is free again
    other.execute("ROLLBACK")
    other.close()


def test_a_run_directory_that_cannot_be_removed_is_named_with_the_fix(store, tmp_path, monkeypatch):
    old = _run(store, records=[failed("a")], exit_code=1, started_at=_day(9))
    _run(store, records=[record("a")], started_at=_day(1))
    (tmp_path / old).mkdir()

    def refuse(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(retention.shutil, "rmtree", refuse)
    with pytest.raises(StoreError, match=f"run directory {tmp_path / old}: Permission denied"):
        commands.main_runs(["prune", "--store", store.location.spec, "--keep", "1"])
    assert old not in _ids(store)  # the rows went; the message says to remove it by hand
