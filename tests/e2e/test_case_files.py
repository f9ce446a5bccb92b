"""Case-file and exploration runs are first-class: `farm run --cases FILE` on the embedded pool is
stored under its own suite key, reported, compared with the previous run of the same file and
reproducible with `farm repro ID --cases FILE`; a bad file runs nothing; explored cases are
reproducible from their ids and a failure found by exploration is promoted into a case file with
one command."""

from __future__ import annotations

import json
import shutil
import sqlite3
from typing import Any

from suites import casefile, explore

CASES: dict[str, Any] = {
    "format": "logsoftmaxgrad-cases",
    "version": 1,
    "source": "written for this test",
    "cases": [
        {"dtype": "float16", "shape": [4, 300], "axes": -1, "tolerance": {"rtol": 1e-3}},
        {
            "name": "bf16 everywhere",
            "dtype": "bfloat16",
            "shape": [2, 8],
            "axes": [1],
            "expect": {"Ascend310B": "accept"},
        },
        {"family": "910b", "dtype": "complex64", "shape": [2, 8], "axes": 1, "expect": "reject"},
        {
            "family": "ascend310b",
            "dtype": "float32",
            "shape": [3, 5, 7],
            "axes": [1, 2],
            "y_dist": "range",
            "y_range": [-1000, 1000],
            "dy_layout": {"strides": [70, 14, 2], "storage": 220, "offset": 1},
        },
    ],
}


def _store_runs(store) -> list[dict]:
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM runs ORDER BY started_at, rowid")]
    finally:
        db.close()


def test_a_case_file_run_is_stored_reported_compared_and_reproducible(farm, tmp_path):
    path = tmp_path / "model_shapes.json"
    path.write_text(json.dumps(CASES))
    cases = casefile.load(path)
    assert len(cases) == 6  # two families for the entries without one

    first = farm.run("run", "--cases", str(path), "--no-progress")
    assert first.code == 0, first.text
    records = first.assert_one_result_per_case(cases)
    assert first.summary["label"] == "cases from model_shapes.json"
    assert (first.run_dir / "report" / "index.html").is_file()
    (run,) = _store_runs(farm.store)
    assert run["tier"] == "cases:model_shapes" and run["status"] == "finished"
    assert json.loads(run["meta_json"])["selection"]["names"] == [str(path)]
    # The run keeps its own copy of the file.
    assert (first.run_dir / "cases" / "0-model_shapes.json").read_text() == path.read_text()
    noted = [r for r in records.values() if r.get("note")]
    assert [r["case_id"] for r in noted] == ["310b_bf16_2x8_d1_y.uniform_dy.normal"]
    assert "expects acceptance on ascend310b" in noted[0]["note"]
    assert records["910b_f16_4x300_d-1_y.uniform_dy.normal_tol.r0.001.a0.f0"]["standards"][
        "case-tolerance"
    ]["gated"]
    described = "".join(
        p.read_text() for p in (first.run_dir / "allure-results").glob("*-result.json")
    )
    assert "expects acceptance on ascend310b" in described

    second = farm.run("run", "--cases", str(path), "--no-progress", "--no-report")
    assert second.code == 0, second.text
    compared = farm.run("compare", second.run_dir.name, "--format", "json")
    assert compared.code == 0, compared.text
    comparison = json.loads(compared.out)
    assert comparison["baseline_id"] == first.run_dir.name  # the same file's run, not a tier's
    assert not comparison["missing_in_baseline"] and not comparison["has_regressions"]

    rejected = "910b_c64_2x8_d1_y.uniform_dy.normal"
    repro = farm.run("repro", rejected, "--cases", str(path))
    assert repro.code == 0, repro.text
    assert "rejected as expected: dtype_unsupported" in repro.text
    strided = [c for c in cases if c.dy_layout != "contiguous"][0]
    repro = farm.run("repro", strided.id, "--cases", str(path), "--json")
    assert repro.code == 0, repro.text
    assert json.loads(repro.out)["record"]["outcome"] == "passed"
    # Without --cases: found in the run's own copy of its case file (issue 58), said in a line.
    found = farm.run("repro", strided.id, "--json")
    assert found.code == 0, found.text
    assert json.loads(found.out)["record"]["outcome"] == "passed"
    assert "on its case file: rerun so (--cases " in found.err, found.text
    for run_dir in (first.run_dir, second.run_dir):  # the runs' directories removed
        shutil.rmtree(run_dir / "cases")
    missing = farm.run("repro", strided.id)
    assert missing.code == 2 and "pass the case file it came from with --cases" in missing.err
    assert "is gone (its run directory removed)" in missing.text


def test_a_bad_case_file_runs_nothing(farm, tmp_path):
    bad = dict(CASES, cases=[*CASES["cases"], {"dtype": "float32", "shape": [2, 3], "axis": 1}])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad, indent=1))
    text = path.read_text().splitlines()
    axis = text.index('   "axis": 1')
    line = max(i for i in range(axis) if text[i] == "  {") + 1  # the entry's opening brace
    result = farm.run("run", "--cases", str(path), "--no-progress")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert lines == [
        f"error: {path}: case 4 (line {line}): unknown field 'axis' (did you mean 'axes'?)",
        f"error: {path}: case 4 (line {line}): field 'axes' is missing (every case needs dtype, "
        "shape, axes)",
    ]
    assert result.run_dir is None and not farm.store.exists()
    unknown = farm.run("run", "--cases", str(tmp_path / "cases.toml"))
    assert unknown.code == 2 and "unknown case file format '.toml'" in unknown.err


def test_explored_cases_reproduce_from_their_ids_and_failures_are_promoted(farm, tmp_path):
    explored = explore.draw("e2e", 12)
    found = tmp_path / "found.yaml"
    # A planted bug (truncating instead of rounding to the dtype) that explored cases catch.
    planted = farm.run(
        "run",
        "--tier",
        "smoke",
        "--explore",
        "e2e",
        "--explore-count",
        "12",
        "--plant-bug",
        "trunc_narrow",
        "--no-progress",
        "--no-report",
        "--",
        "-k",
        "x.e2e",
    )
    assert planted.code == 1, planted.text
    records = planted.assert_one_result_per_case(explored)
    failed = sorted(cid for cid, r in records.items() if r["outcome"] == "failed")
    assert failed
    (run,) = _store_runs(farm.store)
    assert run["tier"] == "smoke" and run["subset"] == 1  # -k: never the tier's baseline
    meta = json.loads(run["meta_json"])
    assert meta["selection"]["explore"] == "e2e" and "explored (salt e2e)" in meta["label"]

    promoted = farm.run("cases", "promote", "-o", str(found))
    assert promoted.code == 0, promoted.text
    assert f"{len(failed)} case(s) promoted" in promoted.out
    assert sorted(c.id for c in casefile.load(found)) == failed

    # Found from its id alone, no file needed; with the planted package of the run that held it
    # (issue 58): it fails again, and says whose package it took.
    again = farm.run("repro", failed[0], "--json")
    assert again.code == 1, again.text
    assert "trunc_narrow" in again.err, again.text
    real = farm.run("repro", failed[0], "--json", "--plant-bug", "none")
    assert real.code == 0, real.text  # the real operator passes it
    fixed = farm.run("run", "--cases", str(found), "--no-progress", "--no-report")
    assert fixed.code == 0, fixed.text
    still = farm.run(
        "run", "--cases", str(found), "--plant-bug", "trunc_narrow", "--no-progress", "--no-report"
    )
    assert still.code == 1, still.text
    assert sorted(still.summary["outcomes"].items()) == [("failed", len(failed))]


def test_pytest_runs_case_files_and_exploration_as_farm_run_does(farm, tmp_path):
    from tests.e2e.test_pytest_plugin import junit_verdicts

    path = tmp_path / "model_shapes.yaml"
    cases = casefile.dump(casefile.load_many([_write(tmp_path, CASES)]), path)
    want = sorted(c.id for c in casefile.load(cases)) + sorted(c.id for c in explore.draw("py", 6))
    junit = tmp_path / "junit.xml"
    proc = farm.pytest(
        "suites/",
        "-n",
        "2",
        "--farm-cases",
        str(path),
        "--farm-tier",
        "smoke",
        "--farm-explore",
        "py",
        "-k",
        "x.py or tol or c64 or 3x5x7 or 2x8_d1_y.uniform_dy.normal",
        f"--junitxml={junit}",
    )
    verdicts = junit_verdicts(junit)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert set(want) <= set(verdicts) and set(verdicts.values()) == {"passed"}


def _write(tmp_path, document: dict):
    path = tmp_path / "source.json"
    path.write_text(json.dumps(document))
    return path
