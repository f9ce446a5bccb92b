"""Run directories of `pytest suites/` runs without `farm run` (marked by farm/run/plugin.py,
in no store) are listed by `farm runs` as not stored with their size, and removed by `farm runs
prune --older-than` by their age; --keep, and the directories of stored runs, are left alone
(farm/results/retention.py unstored)."""

from __future__ import annotations

import datetime as _dt

from farm.results import commands, retention
from farm.results.store import RunStore
from farm.run.metadata import new_run_id
from farm.run.plan import UNSTORED_MARK, UNSTORED_TEXT
from farm.util.sizes import size_text

from .conftest import RUN_META

NOW = _dt.datetime.now()


def _pytest_run(home, days_ago: float, size: int = 3000) -> str:
    """A run directory as `pytest suites/` leaves it, started ``days_ago``."""
    run_id = new_run_id("smoke", NOW - _dt.timedelta(days=days_ago))
    (home / run_id / "allure-results").mkdir(parents=True)
    (home / run_id / "allure-results" / "x-result.json").write_bytes(b"x" * size)
    (home / run_id / UNSTORED_MARK).write_text(UNSTORED_TEXT)
    return run_id


def _stored(store, days_ago: float) -> str:
    started = (NOW - _dt.timedelta(days=days_ago)).astimezone().isoformat()
    run_id = store.begin_run({**RUN_META, "tier": "smoke", "started_at": started})
    store.finish_run(run_id, 0)
    (store.location.runs_home / run_id).mkdir()
    return run_id


def test_farm_runs_lists_pytest_runs_as_not_stored_with_their_size(tmp_path, capsys):
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        stored = _stored(store, 1)
    young, old = _pytest_run(tmp_path, 0.5), _pytest_run(tmp_path, 40, size=6000)
    assert commands.main_runs(["--store", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith(stored) for line in out)
    for run_id in (young, old):
        size = size_text(retention.tree_bytes(tmp_path / run_id))
        assert f"{run_id}  not stored (pytest suites/ without farm run), {size}" in out
    assert out.index(next(s for s in out if young in s)) < out.index(
        next(s for s in out if old in s)
    )
    assert not any(line.startswith(stored) and "not stored" in line for line in out)


def test_a_store_with_only_pytest_runs_lists_them(tmp_path, capsys):
    path = tmp_path / "farm.sqlite"
    RunStore(path).close()
    run_id = _pytest_run(tmp_path, 1)
    assert commands.main_runs(["--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{run_id}  not stored" in out and "no runs recorded yet" not in out


def test_prune_removes_pytest_runs_by_age_and_only_those(tmp_path, capsys):
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        stored = _stored(store, 1)
    young, old = _pytest_run(tmp_path, 2), _pytest_run(tmp_path, 40)
    unmarked = tmp_path / new_run_id("smoke", NOW - _dt.timedelta(days=50))
    unmarked.mkdir()  # another store's run, say: not this prune's to remove
    argv = ["prune", "--store", str(path), "--older-than", "30d"]
    assert commands.main_runs([*argv, "--dry-run"]) == 0
    assert f"would remove {old} (not stored: pytest suites/" in capsys.readouterr().out
    assert (tmp_path / old).is_dir()
    assert commands.main_runs(argv) == 0
    assert f"removed {old} (not stored: pytest suites/" in capsys.readouterr().out
    assert not (tmp_path / old).exists()
    assert (tmp_path / young).is_dir() and (tmp_path / stored).is_dir() and unmarked.is_dir()
    assert commands.main_runs(["prune", "--store", str(path), "--keep", "1"]) == 0
    assert (tmp_path / young).is_dir(), "--keep counts stored runs only"


def test_unstored_by_age_needs_an_age_and_a_readable_start(tmp_path):
    _pytest_run(tmp_path, 40)
    location = RunStore(tmp_path / "farm.sqlite")
    try:
        found = retention.unstored(location.location)
    finally:
        location.close()
    now = _dt.datetime.now(_dt.timezone.utc)
    assert retention.unstored_by_age(found, now=now, older_than=None) == []
    assert retention.unstored_by_age(found, now=now, older_than=_dt.timedelta(days=30)) == found
    bad = [retention.Unstored("x", tmp_path, 0, None)]
    assert retention.unstored_by_age(bad, now=now, older_than=_dt.timedelta(days=1)) == []


def test_farm_runs_json_lists_pytest_runs_as_not_stored_after_the_stored_ones(tmp_path, capsys):
    import json

    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        stored = _stored(store, 1)
    young, old = _pytest_run(tmp_path, 0.5), _pytest_run(tmp_path, 40, size=6000)
    assert commands.main_runs(["--store", str(path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in listed] == [stored, young, old]
    assert listed[0]["stored"] is True and listed[0]["status"] == "finished"
    for entry, run_id in zip(listed[1:], (young, old), strict=True):
        assert entry["stored"] is False and entry["status"] == "not-stored"
        assert entry["bytes"] == retention.tree_bytes(tmp_path / run_id) > 0
        assert entry["run_dir"] == str(tmp_path / run_id)
        # the keys of a stored run that say what it is and how it ended, null here
        assert {k: entry[k] for k in ("tier", "ended_at", "exit_code", "counts")} == dict.fromkeys(
            ("tier", "ended_at", "exit_code", "counts")
        )
        assert set(entry) - {"bytes", "note", "run_dir"} <= set(
            listed[0]
        )  # run_dir: a real run's meta
        started = _dt.datetime.fromisoformat(entry["started_at"])
        assert started.strftime("%Y%m%d-%H%M%S") == run_id[:15]
    # --limit holds for each list
    assert commands.main_runs(["--store", str(path), "--json", "--limit", "1"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [stored, young]
