"""`farm runs` with the measurements of `farm mutate` and `farm coverage`: listed after the
runs (a row each: kind, tier, backend, the scores or the coverage, when, the run directory),
typed in --json, shown whole by `farm runs show ID`, a tier's trend by `farm runs trend`, stored
again from their files by `farm runs import DIR`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from farm.results import commands, measured
from farm.results.store import RunStore
from farm.util.errors import StoreError, UsageError
from tests.measures import (
    POLICY,
    SURVIVOR,
    UNREACHED,
    WEAK,
    coverage_result,
    coverage_runs,
    mutation_doc,
)

REPO = Path(__file__).resolve().parents[2]
MUTATE_ID = "mutate-20261207-101500-4242"


@pytest.fixture
def filled(tmp_path) -> dict[str, Any]:
    """A store with a finished run, the two runs of a coverage and that coverage, and two
    mutation runs of smoke (the older scored 50 %)."""
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        runs = coverage_runs(store, started="2026-12-08T10:00:00+00:00")
        store.add_measure(measured.coverage_measure(coverage_result(runs), tmp_path / "cov", store))
        older = mutation_doc(mutate_id="mutate-20261206-101500-1")
        older["summary"]["score"] = 0.5
        store.add_measure(measured.mutate_measure(older, tmp_path / "older"))
        store.add_measure(measured.mutate_measure(mutation_doc(), tmp_path / "mutate"))
    return {"store": str(path), "runs": runs, "coverage": f"coverage-{runs['acl']}"}


def _out(capsys) -> str:
    return capsys.readouterr().out


def test_farm_runs_lists_the_measurements_after_the_runs(filled, tmp_path, capsys):
    assert commands.main_runs(["--store", filled["store"]]) == 0
    out = _out(capsys)
    lines = out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("measurement "))
    assert lines.index(next(ln for ln in lines if ln.startswith("run "))) < header
    rows = lines[header + 1 : header + 4]
    assert [r.split()[0] for r in rows] == [
        filled["coverage"],
        MUTATE_ID,
        "mutate-20261206-101500-1",
    ]
    cov, mutate = rows[0], rows[1]
    assert "coverage" in cov and "acl,native" in cov
    assert "lines 93.0%, branches 70.0%, 1 unexplained, 1 stale" in cov
    assert str(tmp_path / "cov") in cov and "2026-12-08T10:05:00+00:00" in cov
    assert "score 60.0%, strong 40.0%, 2 survived, 1 weak, 1 policy-only" in mutate
    assert str(tmp_path / "mutate") in mutate and "0123456789ab" in mutate
    # --tier filters them as it does the runs
    assert commands.main_runs(["--store", filled["store"], "--tier", "nightly"]) == 0
    assert "no runs recorded yet" in _out(capsys)


def test_farm_runs_json_carries_them_typed_after_the_runs(filled, capsys):
    assert commands.main_runs(["--store", filled["store"], "--json"]) == 0
    listed = json.loads(_out(capsys))
    assert [e["kind"] for e in listed] == ["run", "run", "coverage", "mutate", "mutate"]
    runs, measures = listed[:2], listed[2:]
    assert {r["run_id"] for r in runs} == set(filled["runs"].values())
    assert all(r["stored"] and r["counts"] is not None for r in runs)
    cov, mutate = measures[0], measures[1]
    assert cov["run_id"] == filled["coverage"] and cov["backend"] == "acl,native"
    assert cov["summary"]["lines"] == {"covered": 930, "total": 1000, "percent": 93.0}
    assert cov["summary"]["unexplained"] == 1 and cov["exit_code"] == 1
    assert mutate["run_id"] == MUTATE_ID and mutate["tier"] == "smoke"
    assert (mutate["summary"]["score"], mutate["summary"]["strong_score"]) == (0.6, 0.4)
    assert (mutate["summary"]["survived"], mutate["summary"]["weak"]) == (2, 1)
    # the keys of a run's entry that say what it is and how it ended (run_dir: a real run's
    # metadata); a measurement holds no cases
    own = ("summary", "meta", "seconds", "run_dir")
    assert set(runs[0]) >= {k for k in mutate if k not in own}
    assert (mutate["counts"], mutate["green"], mutate["stored"]) == (None, False, True)
    assert "mutants" not in mutate  # farm runs show has them


def test_farm_runs_show_lists_the_survivors_and_weak_kills_with_their_cases(filled, capsys):
    assert commands.main_runs(["show", MUTATE_ID, "--store", filled["store"]]) == 0
    out = _out(capsys)
    assert out.startswith(f"{MUTATE_ID}: farm mutate, tier smoke, backend acl\n")
    assert "mutation score 60.0% of 5 non-equivalent mutants; strong 40.0%" in out
    assert "survivors (2):" in out and "weak and policy-only kills (2):" in out
    assert f"  op/{SURVIVOR}  x = a + b;  '+' -> '-'\n" in out
    assert "closest: 910b_f32_3x33_d-1 0.93 of its limit (original 0.41)" in out
    assert f"{UNREACHED}" in out
    assert "unreached (op/mutants_explained.toml): only tests list the SoC table" in out
    assert f"{WEAK}  x = a + b;  '+' -> '-'  weak kill, 1 failing" in out
    assert "failing: c_out_strided failed (precision): precision: MERE 3e-3 > T" in out
    assert f"{POLICY}  x = a + b;  '+' -> '-'  policy-only kill, 4 failing" in out
    assert "... 1 more (farm runs show --json)" in out  # its 4th case
    assert out.rstrip().endswith("mutate")  # files: <its run directory>
    assert commands.main_runs(["show", MUTATE_ID, "--store", filled["store"], "--json"]) == 0
    shown = json.loads(_out(capsys))
    assert [m["id"] for m in shown["mutants"]] == [SURVIVOR, UNREACHED, WEAK, POLICY]
    assert (
        shown["mutants"][3]["what"] == "policy-only kill" and len(shown["mutants"][3]["cases"]) == 4
    )


def test_farm_runs_show_a_coverage_and_a_run(filled, capsys):
    assert commands.main_runs(["show", filled["coverage"], "--store", filled["store"]]) == 0
    out = _out(capsys)
    assert "lines 93.0% (930 of 1000), branches 70.0% (700 of 1000)" in out
    assert "uncovered: 2 lines (1 unexplained), 1 stale explanations" in out
    assert "per case: 12 of 700 reached branches taken by fewer than 3 cases" in out
    assert f"runs: acl {filled['runs']['acl']}, native {filled['runs']['native']}" in out
    run_id = filled["runs"]["native"]
    assert commands.main_runs(["show", run_id, "--store", filled["store"]]) == 0
    assert f"{run_id}: farm run, tier smoke, backend native, finished, exit 0" in _out(capsys)
    with pytest.raises(UsageError, match="no run or measurement 'nope' in the store"):
        commands.main_runs(["show", "nope", "--store", filled["store"]])


def test_farm_runs_trend_is_each_tiers_measurements_in_time_order(filled, capsys):
    assert commands.main_runs(["trend", "--store", filled["store"], "--kind", "mutate"]) == 0
    lines = _out(capsys).splitlines()
    assert lines[0] == "mutate, tier smoke, backend acl: the last 2 of the whole tier, oldest first"
    assert "mutate-20261206-101500-1  score 50.0%" in lines[1]
    assert MUTATE_ID in lines[2] and lines[2].endswith("(score +10.0 points)")
    assert commands.main_runs(["trend", "--store", filled["store"], "--json"]) == 0
    trend = json.loads(_out(capsys))
    assert [(t["kind"], t["backend"], len(t["measurements"])) for t in trend] == [
        ("coverage", "acl,native", 1),
        ("mutate", "acl", 2),
    ]
    assert [m["summary"]["score"] for m in trend[1]["measurements"]] == [0.5, 0.6]
    assert commands.main_runs(["trend", "--store", filled["store"], "--tier", "full"]) == 0
    assert "no measurement of a whole tier yet" in _out(capsys)


def test_farm_runs_import_stores_a_mutation_run_from_its_directory(tmp_path, capsys):
    store = str(tmp_path / "farm.sqlite")
    RunStore(store).close()
    run_dir = tmp_path / "runs" / "mutate" / MUTATE_ID
    run_dir.mkdir(parents=True)
    (run_dir / "mutation.json").write_text(json.dumps(mutation_doc()))
    assert commands.main_runs(["import", str(run_dir), "--store", store]) == 0
    assert f"farm runs show {MUTATE_ID}" in _out(capsys)
    assert commands.main_runs(["show", MUTATE_ID, "--store", store]) == 0
    assert "survivors (2):" in _out(capsys)
    # a store that cannot take it: the store's error, one line (exit 2 from the CLI)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError) as refused:
        commands.main_runs(["import", str(run_dir), "--store", str(blocker / "farm.sqlite")])
    assert "\n" not in str(refused.value)


def test_an_option_before_a_subcommand_is_said_in_one_line(tmp_path):
    store = str(tmp_path / "farm.sqlite")
    RunStore(store).close()
    with pytest.raises(UsageError, match="show goes first: farm runs show"):
        commands.main_runs(["--store", store, "show"])


def test_farm_runs_show_through_the_command_line(filled):
    done = subprocess.run(
        [sys.executable, "-m", "farm.cli", "runs", "show", MUTATE_ID, "--store", filled["store"]],
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "survivors (2):" in done.stdout
