"""History across three consecutive real `farm run`s (good, planted tail bug, good) in one store:
the store's Allure history gets one line per report, and the third report shows,
for every case, three entries: this run and the two before it, with the bug run's failures where
they were.
"""

from __future__ import annotations

import json

import pytest

from .report_fixtures import allure_results, make_runs, need_allure, report_tests

BROKEN = "910b_f16_3x17_d-1_y.uniform_dy.normal"  # the tail bug breaks it (derived, checked)
STEADY = "910b_f32_1x32000_d1_y.uniform_dy.uniform_mixed-tolerance"  # whole blocks: untouched
REJECTED = "310b_f32_3x5_d-1_y.uniform_dy.normal_no.dy"  # must be rejected, every time


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    need_allure()  # the history is Allure's
    runs = make_runs(tmp_path_factory)
    assert BROKEN in runs.expected and STEADY not in runs.expected
    assert REJECTED in {c.id for c in runs.selected} and REJECTED not in runs.expected
    return runs


def test_the_stores_history_has_one_line_per_report(runs):
    lines = runs.history_lines()
    assert len(lines) == 3
    points = [json.loads(line) for line in lines]
    # Each line is one run's report, and holds every case of the slice with its status then.
    # Allure 3 keys a case's history by "<testCaseId>.<historyId>", as each report shows it.
    hids = [
        {cid: t["historyId"] for cid, t in report_tests(run.report).items()} for run in runs.runs
    ]
    assert hids[0] == hids[1] == hids[2]
    for n, (point, run_ids) in enumerate(zip(points, hids, strict=True), 1):
        assert set(run_ids.values()) <= set(point["testResults"]), f"report {n}"
    hid = hids[0][BROKEN]
    assert [p["testResults"][hid]["status"] for p in points] == ["passed", "failed", "passed"]
    hid = hids[0][STEADY]
    assert [p["testResults"][hid]["status"] for p in points] == ["passed"] * 3


def test_third_report_shows_three_entries_per_case(runs):
    tests = report_tests(runs.runs[2].report)
    assert set(tests) == {c.id for c in runs.selected}
    for cid, t in tests.items():
        # This run, then the two before it (newest first).
        statuses = [t["status"]] + [h["status"] for h in t["history"]]
        want = ["passed", "failed", "passed"] if cid in runs.expected else ["passed"] * 3
        assert statuses == want, cid
    assert tests[BROKEN]["transition"] == "fixed"
    assert tests[STEADY].get("transition") is None
    assert len(tests[REJECTED]["history"]) == 2


def test_history_entries_point_at_their_runs(runs):
    """The earlier entries are the earlier runs' results (by time), not copies of this one."""
    r1, r2, r3 = runs.runs
    t = report_tests(r3.report)[BROKEN]
    stops = [h["stop"] for h in t["history"]]
    assert stops == sorted(stops, reverse=True) and stops[0] < t["stop"]
    earlier = [allure_results(run.results)[BROKEN] for run in (r2, r1)]
    assert stops == [r["stop"] for r in earlier]


def test_the_two_families_have_separate_histories(runs):
    tests = report_tests(runs.runs[2].report)
    a = tests["910b_f32_3x17_d-1_y.uniform_dy.normal"]
    b = tests["310b_f32_3x17_d-1_y.uniform_dy.normal"]
    assert a["historyId"] != b["historyId"]
    assert len(a["history"]) == len(b["history"]) == 2
    assert a["environment"] == "Atlas A2 (Ascend910B)"
    assert b["environment"] == "Atlas 200I-500 A2 (Ascend310B)"
