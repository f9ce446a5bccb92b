"""The farm's quality gate (farm/results/gate.py) as pure decisions: the rules on the tests' final
attempts, the run finished, no regression, and the exit code they make. (On real allure-results
and runs: tests/results/test_report.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from farm.results import report
from farm.results.gate import (
    GATE_FAILED,
    GATE_PASSED,
    RUN_UNFINISHED,
    GateRule,
    evaluate_rules,
    farm_gate,
    gate_exit_code,
    load_gate_rules,
    no_regressions_rule,
    read_results,
    run_finished_rule,
)


def _results(*statuses: str) -> list[dict]:
    return [{"status": s} for s in statuses]


def test_the_rules_count_failed_and_broken_as_failures():
    rules = evaluate_rules(_results("passed", "failed", "broken", "skipped"), {"maxFailures": 2})
    assert [(r.rule, r.expected, r.actual, r.success) for r in rules] == [
        ("maxFailures", 2, 2, True)
    ]
    assert rules[0].message == "maxFailures: 2 failed or broken tests within the allowed 2"
    (over,) = evaluate_rules(_results("failed", "broken", "failed"), {"maxFailures": 2})
    assert not over.success and "exceed the allowed 2" in over.message


def test_the_rules_on_no_tests_and_rules_not_asked_for():
    assert evaluate_rules(_results("passed"), {}) == []
    least, rate = evaluate_rules([], {"minTestsCount": 1, "successRate": 0.5})
    assert (least.actual, least.success) == (0, False)
    assert (rate.actual, rate.success) == (0.0, False)  # no tests: no success rate
    assert rate.message == "successRate: 0.0000 below 0.5"


def test_run_finished_and_no_regressions_rules():
    assert run_finished_rule({"run_id": "r", "status": "finished"}).success
    stopped = run_finished_rule({"run_id": "r", "status": "interrupted"})
    assert not stopped.success and stopped.message == "run r is interrupted: not every case ran"
    comparison = SimpleNamespace(
        run_id="r", baseline_id="b", has_regressions=True, regressed_cases=["c1", "c2"],
        missing_in_run=["c2"],
    )  # fmt: skip
    whole = no_regressions_rule(comparison, subset=False)
    assert (whole.actual, whole.success) == (2, False)
    assert whole.message == (
        "noRegressions: 2 cases regressed against the baseline b (farm compare r)"
    )
    assert no_regressions_rule(comparison, subset=True).actual == 1  # c2 was not selected
    none = SimpleNamespace(**dict(vars(comparison), baseline_id=None, has_regressions=False))
    assert no_regressions_rule(none, subset=False).message == (
        "noRegressions: no baseline to compare with"
    )


def test_the_exit_code_of_a_gate():
    ok = GateRule("maxFailures", 0, 0, True, "")
    bad = GateRule("noRegressions", 0, 1, False, "")
    unfinished = GateRule("runFinished", "finished", "aborted", False, "")
    assert gate_exit_code([ok]) == GATE_PASSED == 0
    assert gate_exit_code([ok, bad]) == GATE_FAILED == 1
    assert gate_exit_code([bad, unfinished]) == RUN_UNFINISHED == report.EXIT_NO_REPORT == 2
    assert gate_exit_code([]) == GATE_PASSED


def test_farm_gate_reads_the_final_attempt_and_the_rules_file(tmp_path):
    results, reports = tmp_path / "allure-results", tmp_path / "reports"
    results.mkdir()
    reports.mkdir()
    for name, status, stop in (("a", "failed", 1), ("a", "passed", 2), ("b", "passed", 1)):
        result = {"historyId": name, "status": status, "stop": stop}
        (results / f"{name}{stop}-result.json").write_text(json.dumps(result))
    assert sorted(r["status"] for r in read_results(results)) == ["passed", "passed"]
    assert load_gate_rules(reports) == {"maxFailures": 0}  # no quality-gate.json
    (reports / "quality-gate.json").write_text(json.dumps({"minTestsCount": 3}))
    gate = farm_gate(results, {"run_id": "r", "status": "finished"}, None, reports_dir=reports)
    assert [(r.rule, r.success) for r in gate] == [
        ("minTestsCount", False),
        ("runFinished", True),
    ]


def test_farm_report_parses_its_arguments_into_one_request(monkeypatch):
    """`farm report`'s argv is only parsed: the report is made by make_report(ReportRequest)."""
    asked: list = []

    def make_report(request: report.ReportRequest) -> int:
        asked.append(request)
        return 7

    monkeypatch.setattr(report, "make_report", make_report)
    assert report.main([]) == 7
    assert asked.pop() == report.ReportRequest()
    argv = ["r1", "--store", "s.db", "--results", "res", "--out", "o", "--baseline", "b0"]
    argv += ["--drift-factor", "3", "--trend-runs", "5", "--no-history", "--history-runs", "4"]
    assert report.main([*argv, "--no-regression-gate"]) == 7
    assert asked.pop() == report.ReportRequest(
        run="r1", store="s.db", results=Path("res"), out=Path("o"),
        baseline="b0", drift_factor=3.0, trend_runs=5, history=False, history_runs=4,
        regression_gate=False,
    )  # fmt: skip
