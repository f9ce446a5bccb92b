"""Allure 3 report generation: three consecutive runs through the store, the glue and
`allure generate`, with history carried through the run store; the quality gate; and
a headless Chromium looking at the result the way a person would."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from farm.results import allure_input, report, report_generate, report_history, report_out_dir
from farm.results import compare as cmp
from farm.results.gate import farm_gate, gate_exit_code, gate_rules, quality_gate
from farm.results.store import RunStore, StoredHistory, store_location
from farm.results.triage_next import run_triage
from farm.run.allure import attachments as allure_attachments
from farm.run.allure import environment as allure_environment
from farm.run.allure import process as allure_process
from farm.util import proc as procfs
from farm.util.errors import ToolMissing, UsageError
from farm.util.paths import REPO_ROOT
from tests.dispositions import disposed
from tests.stores import stored_run

from .cdp import Browser, serve
from .conftest import (
    RUN_META,
    failed,
    need_allure,
    need_chromium,
    record,
    rejected_ok,
    run_allure_session,
)

ARTIFACTS = REPO_ROOT / "reports" / "artifacts"
WATCHED = "prec-f16-mid"  # passes in run 1, fails in runs 2 and 3


def _records(n: int) -> list[dict]:
    """Run n (1, 2, 3) of a tiny two-family matrix."""
    watched = (
        record(
            WATCHED, dtype="float16", schedule="REDUCE_MID", metrics={"mere": 2e-4, "mare": 9e-4}
        )
        if n == 1
        else failed(
            WATCHED,
            dtype="float16",
            schedule="REDUCE_MID",
            message="experimental: MARE 3.1e-2 >= 10T (9.8e-3)",
            metrics={"mere": 4e-3, "mare": 3.1e-2},
        )
    )
    recs = [
        record("prec-f32-tail"),
        record("prec-f32-tail", family="ascend310b", host="emu-310-0", soc="Ascend310B1"),
        watched,
        rejected_ok("rej-bf16-310", family="ascend310b", dtype="bfloat16"),
    ]
    if n == 3:
        recs.append(record("prec-f32-new", metrics={"mere": 1.2e-7}))
    return recs


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """Runs 1..3 of tier smoke: results in the store, allure-results, a report each."""
    need_allure()
    work = tmp_path_factory.mktemp("report")
    store_path = work / "runs" / "farm.sqlite"
    runs = []
    with RunStore(store_path) as store:
        for n in (1, 2, 3):
            recs = _records(n)
            meta = {
                **RUN_META,
                "started_at": f"2026-11-2{n}T10:00:00+00:00",
                "run_dir": str(work / f"run{n}"),
            }
            run_id = store.begin_run(meta)
            results = run_allure_session(work, recs, name=f"run{n}")  # <run_dir>/allure-results
            allure_environment.write_results_extras(results, stored_run(store, run_id))
            store.add_results(run_id, recs)
            store.finish_run(run_id, 0 if all(r["outcome"] == "passed" for r in recs) else 1)
            comp = cmp.compare(store, run_id)
            out = work / f"run{n}" / "report"
            gate = farm_gate(results, stored_run(store, run_id), comp)
            code, index = report_generate.generate(
                results,
                out,
                StoredHistory(store_location(store_path), "smoke", run_id),
                report_name=f"smoke {run_id}",
                comparison=comp,
                trend_series=store.metric_series("smoke", 10),
                run_meta=stored_run(store, run_id),
                gate=gate,
                triage=run_triage(store, run_id),
                # Run 2's Allure is started before its results exist, as farm run starts it.
                allure=allure_process.AllureProcess() if n == 2 else None,
            )
            runs.append(
                {
                    "run_id": run_id,
                    "results": results,
                    "out": out,
                    "index": index,
                    "code": code,
                    "comparison": comp,
                    "gate": gate,
                }
            )
    return {"work": work, "store": store_path, "runs": runs}


def _history(store_path) -> list[str]:
    with RunStore(store_path) as store:
        return store.history_lines("smoke")


def _test_results(out: Path) -> dict:
    """The report's per-test data files, by (name, family)."""
    got = {}
    for f in (out / "data" / "test-results").glob("*.json"):
        tr = json.loads(f.read_text())
        fam = next(p["value"] for p in tr["parameters"] if p["name"] == "family")
        got[(tr["name"], fam.strip("'"))] = tr
    return got


def test_each_run_generates_a_report(three_runs):
    for r in three_runs["runs"]:
        assert r["code"] == 0 and r["index"].is_file()
        assert r["index"] == r["out"] / "index.html"
        assert (r["out"] / "data" / "test-results").is_dir()
    summary = json.loads((three_runs["runs"][-1]["out"] / "summary.json").read_text())
    assert summary["stats"]["total"] == 5 and summary["stats"]["failed"] == 1


def _plot_names(tr: dict) -> list[str]:
    """The names of a report test's attachments that are plots, or stand in for one."""
    names = [s["link"]["name"] for s in tr.get("steps", []) if s.get("type") == "attachment"]
    plots = ("error distribution.png", "plot error", allure_attachments.PLOT_DATA_NAME)
    return [n for n in names if n in plots]


def test_reports_show_the_plots_drawn_at_report_time(three_runs):
    """generate() drew each run's plots into its allure-results (the test items only left their
    data): the failed case has exactly one PNG, decoded from the report's own files."""
    for n, r in enumerate(three_runs["runs"], 1):
        tests = _test_results(r["out"])
        watched = tests[(WATCHED, "ascend910b")]
        assert _plot_names(watched) == (["error distribution.png"] if n > 1 else []), n
        for key, tr in tests.items():
            if key != (WATCHED, "ascend910b") or n == 1:
                assert _plot_names(tr) == [], (n, key)  # no other case is sampled or failed
        if n > 1:
            link = next(
                s["link"]
                for s in watched["steps"]
                if s.get("type") == "attachment" and s["link"]["name"] == "error distribution.png"
            )
            png = (r["out"] / "data" / "attachments" / f"{link['id']}{link['ext']}").read_bytes()
            assert png.startswith(b"\x89PNG") and len(png) > 5_000
        assert len(list(r["results"].glob("*-attachment.png"))) == (1 if n > 1 else 0)


def test_history_is_carried_across_three_runs(three_runs):
    lines = _history(three_runs["store"])
    assert len(lines) == 3
    points = [json.loads(x) for x in lines]
    last = _test_results(three_runs["runs"][-1]["out"])
    watched = last[(WATCHED, "ascend910b")]
    hid = watched["historyId"]
    # The JSONL holds the case in each of the three runs, with its status then.
    assert [p["testResults"][hid]["status"] for p in points] == ["passed", "failed", "failed"]
    # The report of run 3 shows the case now plus its two earlier runs: three entries.
    assert watched["status"] == "failed"
    assert [h["status"] for h in watched["history"]] == ["failed", "passed"]
    # The two families of one case are two histories.
    a = last[("prec-f32-tail", "ascend910b")]
    b = last[("prec-f32-tail", "ascend310b")]
    assert a["historyId"] != b["historyId"] and len(a["history"]) == len(b["history"]) == 2
    assert a["environment"] == "Atlas A2 (Ascend910B)"
    assert b["environment"] == "Atlas 200I-500 A2 (Ascend310B)"
    assert last[("prec-f32-new", "ascend910b")]["history"] == []


def test_history_runs_bounds_what_each_case_shows_and_the_store_keeps_every_line(
    three_runs, tmp_path
):
    """A report with history_limit 1 reads the newest line only and shows each case one earlier
    result; the store keeps every report's line (a prune removes them with their runs)."""
    store_path = tmp_path / "farm.sqlite"
    with RunStore(store_path) as store:
        for line in _history(three_runs["store"]):
            store.add_history_line("smoke", line)
    last = three_runs["runs"][-1]
    code, _ = report_generate.generate(
        last["results"],
        tmp_path / "out",
        StoredHistory(store_location(store_path), "smoke"),
        report_name="smoke",
        history_limit=1,
    )
    assert code == 0
    shown = _test_results(tmp_path / "out")[(WATCHED, "ascend910b")]["history"]
    assert [h["status"] for h in shown] == ["failed"]
    assert len(_history(store_path)) == 4


def test_reports_of_one_run_keep_one_history_line_for_it(three_runs, tmp_path):
    """Each `farm report R` added another line for the same run (three reports, three points):
    a report of a run reads the history without its own line and replaces it."""
    store_path = tmp_path / "farm.sqlite"
    with RunStore(store_path) as store:
        source = RunStore(three_runs["store"])
        with source:
            rows = source.db.execute(
                "SELECT run_id, entry_json FROM allure_history WHERE tier='smoke' ORDER BY position"
            ).fetchall()
        for run_id, line in rows:
            store.add_history_line("smoke", line, run_id)
    last = three_runs["runs"][-1]
    for again in (1, 2):
        code, _ = report_generate.generate(
            last["results"],
            tmp_path / f"out{again}",
            StoredHistory(store_location(store_path), "smoke", last["run_id"]),
            report_name="smoke",
        )
        assert code == 0
        assert len(_history(store_path)) == 3, again
        shown = _test_results(tmp_path / f"out{again}")[(WATCHED, "ascend910b")]["history"]
        assert [h["status"] for h in shown] == ["failed", "passed"]  # runs 2 and 1, once each


def test_history_runs_must_be_a_number_of_reports():
    assert report.history_runs("7") == 7
    for bad in ("0", "-3", "many"):
        with pytest.raises(argparse.ArgumentTypeError, match="not a number of reports"):
            report.history_runs(bad)


def test_history_keeps_a_compact_entry_per_case(three_runs):
    """The report embeds each case's entries of every run kept: the history keeps of a case what
    the History tab and the charts read, the name and labels only in the newest run's line of
    what a report reads."""
    copy = three_runs["work"] / "history-copy.jsonl"
    history = StoredHistory(store_location(three_runs["store"]), "smoke")
    newest_line = report_history.history_copy(history, copy, limit=10)
    assert newest_line == _history(three_runs["store"])[-1]
    points = [json.loads(x) for x in copy.read_text().splitlines()]
    for i, point in enumerate(points):
        newest = i == len(points) - 1
        allowed = set(report_history.HISTORY_ITEM_KEYS) | set(
            report_history.HISTORY_NEWEST_KEYS if newest else ()
        )
        for item in point["testResults"].values():
            assert set(item) <= allowed, (i, item)
            assert {"id", "status", "historyId", "environment", "start", "stop"} <= set(item)
            if newest:
                names = [lb["name"] for lb in item["labels"]]
                assert set(names) <= set(report_history.HISTORY_LABELS) and "feature" in names
                assert item["name"]
    watched = _test_results(three_runs["runs"][-1]["out"])[(WATCHED, "ascend910b")]
    for h in watched["history"]:
        assert "fullName" not in h and "trace" not in h and h["status"] in ("passed", "failed")
    # Already compact: no line of the copy would be rewritten.
    lines = copy.read_bytes().splitlines()
    assert [
        report_history.compact_history_line(x, i == len(lines) - 1) for i, x in enumerate(lines)
    ] == [None] * len(lines)


def test_compact_history_of_lines_allure_wrote_whole():
    labels = [
        {"name": n, "value": v}
        for n, v in (("epic", "E"), ("feature", "precision"), ("thread", "1-Main"), ("host", "vm"))
    ]
    whole = {
        "id": "i",
        "name": "case",
        "fullName": "suites.test_precision#test_precision",
        "environment": "Atlas A2 (Ascend910B)",
        "status": "failed",
        "message": "[precision] bad",
        "trace": "Traceback ...",
        "start": 1,
        "stop": 2,
        "duration": 1,
        "labels": labels,
        "url": "",
        "historyId": "h",
        "reportLinks": [],
    }
    point = json.dumps({"uuid": "u", "name": "r", "timestamp": 3, "testResults": {"h": whole}})
    older = report_history.compact_history_line(point.encode(), newest=False)
    newest = report_history.compact_history_line(point.encode(), newest=True)
    assert older is not None and newest is not None
    assert (
        report_history.compact_history_line(b'not json but "fullName"', newest=False) is None
    )  # kept
    old, new = json.loads(older)["testResults"]["h"], json.loads(newest)["testResults"]["h"]
    assert old == {
        "id": "i",
        "environment": "Atlas A2 (Ascend910B)",
        "status": "failed",
        "message": "[precision] bad",
        "start": 1,
        "stop": 2,
        "duration": 1,
        "url": "",
        "historyId": "h",
    }
    assert new == {**old, "name": "case", "labels": labels[:2]}
    # Compact already: nothing to rewrite (an older line loses the newest's name and labels).
    assert report_history.compact_history_line(newest, newest=True) is None
    assert report_history.compact_history_line(older, newest=False) is None
    assert report_history.compact_history_line(newest, newest=False) is not None


def test_the_line_allure_appended_is_read_from_the_end_of_the_copy(tmp_path):
    """The report keeps the last line of its history copy, whatever its size (the full tier's
    is 17 MB) and whatever came before it."""
    path = tmp_path / "history.jsonl"
    big = b'{"x":"' + b"y" * (3 << 20) + b'"}'
    for text, last in (
        (b"a\nb\n" + big + b"\n\n  \n", big),
        (big + b"\n" + b"c", b"c"),
        (big, big),
        (b"only\n", b"only"),
        (b"", None),
        (b"\n \n", None),
    ):
        path.write_bytes(text)
        assert report_history.last_line(path) == last


def test_each_case_costs_the_report_only_what_it_shows(three_runs):
    """No label a person does not read, no set-up or tear-down of fixtures that passed."""
    for tr in _test_results(three_runs["runs"][-1]["out"]).values():
        names = {lb["name"] for lb in tr["labels"]}
        assert not names & set(report_generate.HIDDEN_LABELS), names
        assert {"feature", "story", "severity", "soc"} <= names
        assert tr["setup"] == [] and tr["teardown"] == []


def test_allure_reads_the_results_without_passed_fixture_containers(three_runs, tmp_path):
    results = three_runs["runs"][0]["results"]
    containers = sorted(results.glob("*-container.json"))
    assert containers  # allure-pytest wrote them: fixtures that passed
    broken = json.loads(containers[0].read_text())
    broken["befores"] = [{"name": "farm_plan", "status": "broken", "start": 1, "stop": 2}]
    kept = results / "0-failing-container.json"
    kept.write_text(json.dumps(broken))
    try:
        view = allure_input.allure_input(results, tmp_path / "view")
        names = {f.name for f in view.iterdir()}
        assert names == {f.name for f in results.iterdir() if f.is_file()} - {
            c.name for c in containers
        }
        assert kept.name in names  # a fixture that broke keeps its place in the report
        result = next(results.glob("*-result.json"))
        assert (view / result.name).stat().st_ino == result.stat().st_ino  # a hard link
    finally:
        kept.unlink()


def test_report_has_environments_categories_and_run_summary(three_runs):
    out = three_runs["runs"][-1]["out"]
    envs = {
        e["id"]: e["name"] for e in json.loads((out / "widgets" / "environments.json").read_text())
    }
    assert envs["ascend910b"] == "Atlas A2 (Ascend910B)"
    assert envs["ascend310b"] == "Atlas 200I-500 A2 (Ascend310B)"
    watched = _test_results(out)[(WATCHED, "ascend910b")]
    assert [c["name"] for c in watched["categories"]] == ["Precision failure"]
    globals_ = json.loads((out / "widgets" / "globals.json").read_text())
    names = {a["name"] for a in globals_["attachments"]}
    assert {"regression-summary.html", "precision-trend.png", "regression-summary.md"} <= names
    html = next(a for a in globals_["attachments"] if a["name"] == "regression-summary.html")
    page = (out / "data" / "attachments" / f"{html['id']}{html['ext']}").read_text()
    assert "REGRESSIONS" in page and f"<td>{WATCHED}</td>" in page
    assert "data:image/png;base64," in page  # the trend, inline
    env_widget = json.loads((out / "widgets" / "allure_environment.json").read_text())
    assert {"name": "package.sha256", "values": ["ab" * 32]} in env_widget


def test_comparisons_along_the_runs(three_runs):
    r1, r2, r3 = three_runs["runs"]
    assert r1["comparison"].baseline_id is None
    assert r2["comparison"].baseline_id == r1["run_id"]
    assert r2["comparison"].regressed_cases == [WATCHED]
    assert r3["comparison"].baseline_id == r1["run_id"]  # run 2 was red
    assert r3["comparison"].missing_in_baseline == ["prec-f32-new"]


def test_quality_gate(three_runs):
    r1, _, r3 = three_runs["runs"]
    assert quality_gate(r1["results"]) == (0, [])
    code, msgs = quality_gate(r3["results"])
    assert code == 1 and msgs == ["maxFailures: 1 failed or broken tests exceed the allowed 0"]
    assert quality_gate(r3["results"], {"maxFailures": 1})[0] == 0
    code, msgs = quality_gate(r3["results"], {"minTestsCount": 10, "successRate": 0.9})
    assert code == 1 and len(msgs) == 2
    rules = gate_rules(r3["results"], {"minTestsCount": 10, "successRate": 0.5})
    assert [(r.rule, r.expected, r.actual, r.success) for r in rules] == [
        ("minTestsCount", 10, 5, False),
        ("successRate", 0.5, 0.8, True),
    ]


def test_farm_gate_is_the_rules_the_run_and_its_regressions(three_runs):
    """Run 1: every rule passed, nothing to regress against. Run 3: its failure fails
    maxFailures and, a new failure against run 1, noRegressions."""
    r1, _, r3 = three_runs["runs"]
    assert [(r.rule, r.success) for r in r1["gate"]] == [
        ("maxFailures", True),
        ("minTestsCount", True),
        ("runFinished", True),
        ("noRegressions", True),
    ]
    assert r1["gate"][-1].message == "noRegressions: no baseline to compare with"
    assert gate_exit_code(r1["gate"]) == 0
    failed = {r.rule: r for r in r3["gate"] if not r.success}
    assert set(failed) == {"maxFailures", "noRegressions"}
    assert (failed["noRegressions"].expected, failed["noRegressions"].actual) == (0, 1)
    assert gate_exit_code(r3["gate"]) == 1
    assert [r.to_allure()["rule"] for r in r3["gate"]] == [r.rule for r in r3["gate"]]


def test_a_gate_can_fail_when_every_case_passed(three_runs):
    """A drift is a regression of cases that all passed: the gate fails (and farm run exits 1,
    tests/run/test_judgement.py); the cases a subset run did not select are not regressions."""
    r1 = three_runs["runs"][0]
    drifted = SimpleNamespace(
        run_id="r", baseline_id="b", has_regressions=True, regressed_cases=["c1", "c2"],
        missing_in_run=["c2"],
    )  # fmt: skip
    run = {"run_id": "r", "status": "finished"}
    gate = farm_gate(r1["results"], run, drifted)
    assert [r.rule for r in gate if not r.success] == ["noRegressions"] and gate[-1].actual == 2
    assert gate_exit_code(gate) == 1
    subset = farm_gate(r1["results"], dict(run, subset=True), drifted)
    assert subset[-1].actual == 1 and not subset[-1].success
    assert farm_gate(r1["results"], run, drifted, regression_gate=False)[-1].rule == ("runFinished")
    stopped = farm_gate(r1["results"], dict(run, status="interrupted"), None)
    assert not stopped[-1].success and gate_exit_code(stopped) == 2


def test_the_report_holds_the_farms_gate_and_the_triage(three_runs):
    """The Quality Gates tab's data (widgets/quality-gate.json, what generate.mjs handed
    Allure) is farm_gate's; a run with failures has its triage on the overview's Metadata, first
    after the executor, and as a global attachment."""
    r1, _, r3 = three_runs["runs"]
    for r in (r1, r3):
        shown = json.loads((r["out"] / "widgets" / "quality-gate.json").read_text())
        (results,) = shown.values()
        assert results == [rule.to_allure() for rule in r["gate"]]
    env = json.loads((r3["out"] / "widgets" / "allure_environment.json").read_text())
    names = [e["name"] for e in env]
    assert names[:2] == ["triage.1", "triage"], names
    assert env[0]["values"][0].startswith("1 of 1 failures (1 precision): ")
    globals_ = json.loads((r3["out"] / "widgets" / "globals.json").read_text())
    page = next(a for a in globals_["attachments"] if a["name"] == "triage.html")
    text = (r3["out"] / "data" / "attachments" / f"{page['id']}{page['ext']}").read_text()
    assert f"-k &#x27;[{WATCHED}]&#x27;" in text and f"farm shrink {WATCHED}" in text
    assert "farm bisect" not in text and "ran the same commit" in text  # the one git commit
    # A green run has no triage; the run's own environment.properties is as farm run wrote it.
    env1 = json.loads((r1["out"] / "widgets" / "allure_environment.json").read_text())
    assert not any(e["name"].startswith("triage") for e in env1)
    assert "triage" not in (r3["results"] / "environment.properties").read_text()


def test_farm_report_command(three_runs, tmp_path, capsys):
    r1, _, r3 = three_runs["runs"]
    store = str(three_runs["store"])
    out = tmp_path / "rep"
    args = ["--store", store, "--results", str(r3["results"]), "--out", str(out), "--no-history"]
    assert report.main([r3["run_id"], *args]) == 1  # a failure and a regression
    text = capsys.readouterr().out
    assert f"report: {out / 'index.html'}" in text and "quality gate: maxFailures" in text
    assert (out / "index.html").is_file()
    # Reporting a run again draws no plot twice: one PNG for the failed case, in the results
    # and in the new report.
    assert report.main([r3["run_id"], *args]) == 1
    assert len(list(r3["results"].glob("*-attachment.png"))) == 1
    assert _plot_names(_test_results(out)[(WATCHED, "ascend910b")]) == ["error distribution.png"]
    # A green run, without --results/--out: the run's recorded run_dir is used.
    assert report.main([r1["run_id"], "--store", store, "--no-history"]) == 0
    assert (r1["results"].parent / "report" / "index.html").is_file()
    with pytest.raises(UsageError, match="unknown run 'nope' in the store .*`farm runs` lists"):
        report.main(["nope", "--store", store])
    assert report.main([r1["run_id"], "--store", store, "--results", str(tmp_path / "none")]) == 2


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_report_ends_allure_and_leaves_no_work_directory(three_runs, tmp_path, stop):
    """SIGTERM to `farm report` (a CI cancel, `kill PID`) or SIGHUP (its terminal closed) ended
    it where it stood: its work directory stayed beside the report and Allure ran on. Allure here
    is a `node` that waits (under the test's control, not a timer) and says its pid. The command
    starts with the signal at its default (tests/dispositions.py): this suite run under nohup
    would have it ignore SIGHUP."""
    r1 = three_runs["runs"][0]
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "node").write_text('#!/bin/sh\necho $$ > "$NODE_PID"\nexec sleep 600\n')
    (fake / "node").chmod(0o755)
    pid_file = tmp_path / "node.pid"
    out = tmp_path / "reports" / "rep"
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", NODE_PID=str(pid_file))
    argv = [r1["run_id"], "--store", str(three_runs["store"]), "--no-history", "--out", str(out)]
    proc = subprocess.Popen(
        disposed([sys.executable, "-m", "farm.cli", "report", *argv]),
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not pid_file.is_file() or not pid_file.read_text().strip():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    allure = int(pid_file.read_text())
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=60)
    code = 128 + stop
    assert proc.returncode == code, err
    assert f"interrupted ({stop.name}): farm report stopped (exit {code})" in err
    assert "Traceback" not in err
    # No work directory beside the report, no half a report (--out is made before any work).
    assert list((tmp_path / "reports").iterdir()) == [out] and list(out.iterdir()) == []
    # Killed: gone, or a zombie its new parent has yet to collect (it runs no more).
    assert not procfs.alive(allure)


def test_out_is_replaced_only_when_it_holds_a_report_the_farm_wrote(three_runs, tmp_path):
    """The report replaces its directory whole: `--out ~/work` removed ~/work with all in it."""
    r1 = three_runs["runs"][0]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.txt").write_text("years of work")
    argv = [r1["run_id"], "--store", str(three_runs["store"]), "--no-history", "--out", str(mine)]
    with pytest.raises(UsageError, match=r"--out .*mine: holds thesis.txt, not a report the farm"):
        report.main(argv)
    assert (mine / "thesis.txt").read_text() == "years of work"
    (mine / "thesis.txt").unlink()
    assert report.main(argv) == 0  # empty: the report goes there, with its mark
    assert (mine / "index.html").is_file() and (mine / report_out_dir.REPORT_MARK).is_file()
    assert report.main(argv) == 0  # a report the farm wrote: replaced
    (
        mine / report_out_dir.REPORT_MARK
    ).unlink()  # one written before the mark: only a report's files
    report_out_dir.check_out_dir(mine)
    (mine / "notes.md").write_text("mine")
    with pytest.raises(UsageError, match="holds notes.md"):
        report_out_dir.check_out_dir(mine)
    yours = tmp_path / "yours"  # a directory of one "data" folder is not a report
    (yours / "data").mkdir(parents=True)
    with pytest.raises(UsageError, match="holds data, not a report"):
        report_out_dir.check_out_dir(yours)
    with pytest.raises(UsageError, match="a file, not a directory"):
        report_out_dir.check_out_dir(mine / "notes.md")
    under_a_file = [*argv[:-1], str(mine / "notes.md" / "report")]
    with pytest.raises(UsageError, match="notes.md/report: cannot make the directory"):
        report.main(under_a_file)  # was "farm report: [Errno 20] ..."


def test_an_allure_process_not_used_exits_and_one_gone_is_replaced(three_runs, tmp_path):
    """farm run starts Allure with its cases (allure_process.AllureProcess): a run that makes no
    report ends it unused, and a report whose waiting process has gone starts another."""
    waiting = allure_process.AllureProcess()
    proc = waiting._proc
    waiting.discard()
    assert proc is not None and proc.returncode == 0 and waiting.take() is None
    gone = allure_process.AllureProcess()
    assert gone._proc is not None
    gone._proc.kill()
    gone._proc.wait()
    r = three_runs["runs"][0]
    code, index = report_generate.generate(r["results"], tmp_path / "out", None, allure=gone)
    assert code == 0 and index.is_file()


def test_generate_keeps_the_old_report_when_allure_fails(three_runs, tmp_path):
    out = tmp_path / "kept"
    out.mkdir()
    (out / "index.html").write_text("old")
    bad = tmp_path / "bad-results"
    bad.mkdir()
    code, _ = report_generate.generate(bad, out, None, reports_dir=_broken_reports_dir(tmp_path))
    assert code != 0 and (out / "index.html").read_text() == "old"


# What Allure 3 under node printed when the runs directory filled as it wrote the report: two
# stacks, and neither the directory nor a fix.
NODE_ENOSPC = """plugin awesome error Error: ENOSPC: no space left on device, write
    at async write (node:internal/fs/promises:740:8)
    at async FileSystemReportFiles.addFile (file:///reports/node_modules/@allurereport/core/dist/plugin.js:71:13)
    at async file:///reports/node_modules/@allurereport/core/dist/report.js:851:29 {
  errno: -28,
  code: 'ENOSPC',
  syscall: 'write'
}
farm's allure generate failed: Error: ENOSPC: no space left on device, write
    at async write (node:internal/fs/promises:740:8)
    at async file:///reports/generate.mjs:59:3
"""  # noqa: E501


@pytest.mark.parametrize("refusal", ["ENOSPC", "EDQUOT", "EROFS"])
def test_a_disk_that_refuses_allures_writes_is_the_directorys_fault(
    tmp_path, monkeypatch, capsys, refusal
):
    """Node's stacks are not printed: generate raises the OSError Python's own write would
    have, naming the report's directory, which farm report and farm run say in one line."""
    import errno

    output = NODE_ENOSPC.replace("ENOSPC", refusal)
    monkeypatch.setattr(report_generate, "generate_command", lambda reports_dir: ["node"])
    monkeypatch.setattr(report_generate, "run_generate", lambda *args: (1, "", output))
    results = tmp_path / "allure-results"
    results.mkdir()
    out = tmp_path / "runs" / "r1" / "report"
    with pytest.raises(OSError) as err:
        report_generate.generate(results, out, None, plots_drawn=True)
    assert (err.value.errno, err.value.filename) == (getattr(errno, refusal), str(out))
    assert capsys.readouterr().err == ""
    assert [p.name for p in out.parent.iterdir()] == []  # its work directory is gone


def test_missing_allure_is_the_farms_tool_missing(three_runs, tmp_path, monkeypatch, capsys):
    bare = tmp_path / "bare-reports"
    bare.mkdir()
    with pytest.raises(ToolMissing) as err:
        allure_process.allure_command(bare)
    msg = str(err.value)
    assert "\n" not in msg and "Allure 3" in msg and "bash .ci/setup.sh run" in msg
    assert not allure_process.allure_available(bare)
    monkeypatch.setattr(allure_process.shutil, "which", lambda name: None)
    with pytest.raises(ToolMissing, match=r"^node .*: run `bash \.ci/setup\.sh run`$"):
        allure_process.allure_command()
    # `farm report` says so in one line and exits 2.
    r1 = three_runs["runs"][0]
    args = ["--store", str(three_runs["store"]), "--out", str(tmp_path / "o"), "--no-history"]
    assert report.main([r1["run_id"], *args]) == 2
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 1 and err_lines[0].startswith("farm report: node ")


@pytest.mark.parametrize("plots_drawn", [False, True])
def test_generate_looks_for_pending_plots_unless_told_they_are_drawn(
    tmp_path, monkeypatch, plots_drawn
):
    """`farm run` draws the plots while it stores the records and says so (Judged.plots_drawn):
    the report then skips its own scan of every result file. Otherwise it draws them first,
    even when Allure then turns out to be missing."""
    looked: list[Path] = []

    def render_quietly(results: Path) -> bool:
        looked.append(results)
        return True

    monkeypatch.setattr("farm.run.case_plots.render_quietly", render_quietly)
    results = tmp_path / "allure-results"
    results.mkdir()
    bare = tmp_path / "bare-reports"
    bare.mkdir()
    with pytest.raises(ToolMissing):
        report_generate.generate(
            results, tmp_path / "out", None, reports_dir=bare, plots_drawn=plots_drawn
        )
    assert looked == ([] if plots_drawn else [results.resolve()])


def _broken_reports_dir(tmp_path: Path) -> Path:
    """A reports/ dir whose allurerc.mjs throws, with the real node_modules."""
    d = tmp_path / "broken-reports"
    d.mkdir()
    (d / "node_modules").symlink_to(allure_process.REPORTS_DIR / "node_modules")
    (d / "allurerc.mjs").write_text("throw new Error('broken config');\n")
    return d


# --------------------------------------------------------------------------- the browser


def _text(browser) -> str:
    return re.sub(r"\s+", " ", browser.eval("document.body.innerText"))


@pytest.fixture
def chromium():
    return need_chromium()  # before three_runs: a skip costs nothing


def test_a_person_sees_the_report(chromium, three_runs, tmp_path):
    """Open the last report in headless Chromium, as a person would, and look."""
    out = three_runs["runs"][-1]["out"]
    watched = _test_results(out)[(WATCHED, "ascend910b")]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve(out) as base, Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{base}/index.html")
        browser.wait_for("document.body && document.body.innerText.includes('Environment: \"')")
        main = _text(browser)
        browser.screenshot(ARTIFACTS / "report-overview.png")

        # The overview: five cases, one failed, both families as environments, the summary.
        assert re.search(r"Results 5\b", main) and re.search(r"Total 5\b", main), main[:1500]
        assert re.search(r"Failed 1\b", main) and re.search(r"Passed 4\b", main)
        assert 'Environment: "Atlas A2 (Ascend910B)"' in main
        assert 'Environment: "Atlas 200I-500 A2 (Ascend310B)"' in main
        assert "Global Attachments 7" in main and "package.sha256" in main
        # The triage of its one failure, on the overview.
        assert (
            "triage.1 1 of 1 failures (1 precision): " in main
            and "triage.html in Global Attachments" in main
        )

        # The farm's gate in the report's own Quality Gates tab: as farm report says, failed.
        assert re.search(r"Quality Gates 4\b", main)
        assert browser.click_text("Quality Gates") == 1
        browser.wait_for("document.body.innerText.includes('noRegressions')")
        gates = _text(browser)
        browser.screenshot(ARTIFACTS / "report-quality-gate-failed.png")
        for rule in three_runs["runs"][-1]["gate"]:
            assert rule.message in gates, (rule.message, gates[:2000])
        assert "maxFailures Error maxFailures: 1 failed or broken tests exceed" in gates
        assert "minTestsCount Success minTestsCount: 5 tests, at least 1" in gates

        # The failed case: message, category, history, and its plot once its row is opened.
        browser.call("Page.navigate", {"url": f"{base}/index.html#{watched['id']}"})
        browser.wait_for("document.body.innerText.includes('error distribution.png')")
        case = _text(browser)
        assert WATCHED in case and "[precision] experimental: MARE" in case
        assert "Category: Precision failure" in case
        assert re.search(r"History 2\b", case)  # + this run: the case's three runs
        clicked = browser.eval(
            "(() => { const hits = [...document.querySelectorAll('*')].filter(e =>"
            " e.children.length === 0 && e.textContent.trim() === 'error distribution.png');"
            " hits.forEach(e => e.click()); return hits.length; })()"
        )
        assert clicked == 1
        size = browser.wait_for(
            "[...document.images].filter(i => i.complete && i.naturalWidth > 200)"
            ".map(i => [i.naturalWidth, i.naturalHeight])[0]"
        )
        assert size[0] > 200 and size[1] > 100  # the error-distribution PNG, decoded
        browser.screenshot(ARTIFACTS / "report-failed-case.png")
    assert (ARTIFACTS / "report-overview.png").stat().st_size > 10_000
    assert (ARTIFACTS / "report-failed-case.png").stat().st_size > 10_000


def test_a_person_sees_the_gate_passed(chromium, three_runs, tmp_path):
    """A green run's report: every rule of the farm's gate in the Quality Gates tab, passed."""
    r1 = three_runs["runs"][0]
    with serve(r1["out"]) as base, Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{base}/index.html")
        browser.wait_for("document.body && document.body.innerText.includes('Quality Gates')")
        assert browser.click_text("Quality Gates") == 1
        browser.wait_for("document.body.innerText.includes('noRegressions')")
        gates = _text(browser)
        browser.screenshot(ARTIFACTS / "report-quality-gate-passed.png")
    for rule in r1["gate"]:
        assert f"{rule.rule} Success {rule.message}" in gates, gates[:2000]
    assert not re.search(r"\bError\b", gates)  # a failed rule's mark ("Global Errors" aside)


def test_a_stop_that_comes_as_allure_starts_ends_it(monkeypatch, tmp_path):
    """A stop that lands between the fork of Allure's process and the block that kills it on a
    stop (subprocess.run has no process to kill there) still ends it: the stop signals are held
    while it starts and taken where it can be killed."""
    from farm.util import interrupts

    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    class StoppedAsItStarts(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)
            os.kill(os.getpid(), signal.SIGTERM)  # the stop, as the child has just started

    monkeypatch.setattr(subprocess, "Popen", StoppedAsItStarts)
    with interrupts.stopping() as received, pytest.raises(KeyboardInterrupt):
        allure_process.run_generate(["sleep"], Path("600"), {}, tmp_path, 600.0, None)
    monkeypatch.undo()
    assert received == [signal.SIGTERM] and len(started) == 1
    assert started[0].poll() == -signal.SIGKILL  # killed and reaped before the stop went on
