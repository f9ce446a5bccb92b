"""The reports of real `farm run`s, opened in headless Chromium (DevTools protocol over a pipe,
tests/results/cdp.py) and read the way a person reads them: the number of cases, both SoC
families as environments, the regression summary, a failed case with its error-distribution plot,
a case's history over the three runs, the triage of the red run on its overview, and the farm's
quality gate in the Quality Gates tab, failed and passed. Screenshots are left in
reports/artifacts/ (ignored by git) for CI to keep as artifacts.

Needs chromium and reports/node_modules: skipped without them, failed with FARM_REQUIRE_ALL=1.
"""

from __future__ import annotations

import re

import pytest

from tests.results.cdp import Browser, serve

from .report_fixtures import (
    ARTIFACTS,
    make_runs,
    need_allure,
    need_chromium,
    report_tests,
)

BROKEN = "910b_f16_3x17_d-1_y.uniform_dy.normal"

# The text of the iframe an HTML attachment is shown in (a same-origin blob), once loaded.
IFRAME_TEXT = """(() => {
  for (const f of document.querySelectorAll('iframe')) {
    const d = f.contentDocument;
    if (d && d.body && d.body.innerText.includes('Regression summary')) return d.body.innerText;
  }
  return '';
})()"""
DECODED_IMAGE = (
    "[...document.images].filter(i => i.complete && i.naturalWidth > 200)"
    ".map(i => [i.naturalWidth, i.naturalHeight])[0]"
)


@pytest.fixture(scope="module")
def chromium():
    need_allure()  # before the runs: a skip costs nothing
    return need_chromium()


@pytest.fixture(scope="module")
def runs(chromium, tmp_path_factory):
    return make_runs(tmp_path_factory)


def _text(browser) -> str:
    return re.sub(r"\s+", " ", browser.eval("document.body.innerText"))


def _screenshot(browser, name: str):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    browser.screenshot(path)
    return path


def test_a_person_sees_the_regression_run(chromium, runs, tmp_path):
    r2 = runs.runs[1]
    n, bad = len(runs.selected), len(runs.expected)
    per_family = {
        fam: sum(c.family == fam for c in runs.selected) for fam in ("ascend910b", "ascend310b")
    }
    shots = []
    with serve(r2.report) as base, Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{base}/index.html")
        browser.wait_for("document.body && document.body.innerText.includes('Environment: \"')")
        main = _text(browser)
        shots.append(_screenshot(browser, "e2e-regression-overview.png"))

        # The overview: every case of the run, the bug's failures, the two families.
        assert re.search(rf"Results {n}\b", main) and re.search(rf"Total {n}\b", main), main[:800]
        assert re.search(rf"Failed {bad}\b", main) and re.search(rf"Passed {n - bad}\b", main)
        assert re.search(
            rf'Environment: "Atlas A2 \(Ascend910B\)" {per_family["ascend910b"]}\b', main
        )
        assert re.search(
            rf'Environment: "Atlas 200I-500 A2 \(Ascend310B\)" {per_family["ascend310b"]}\b',
            main,
        )
        for cid in runs.expected:
            assert cid in main
        assert "executor GitHub Actions" in main
        # The triage's lines come first in the Metadata: the package's under "Show more".
        assert browser.click_text("Show more") >= 1
        browser.wait_for("document.body.innerText.includes('package.sha256')")

        # The regression summary, among the global attachments.
        assert browser.click_text("Global Attachments") >= 1
        browser.wait_for("document.body.innerText.includes('regression-summary.html')")
        assert browser.click_text("regression-summary.html") == 1
        summary = re.sub(r"\s+", " ", browser.wait_for(IFRAME_TEXT))
        assert f"REGRESSIONS ({bad} new failures" in summary
        new = summary.split(f"New failures ({bad})", 1)[1].split("Precision drift", 1)[0]
        assert {cid for cid in (c.id for c in runs.selected) if cid in new} == runs.expected
        shots.append(_screenshot(browser, "e2e-regression-summary.png"))

        # A failed case: its message, category, history and, opened, its plot.
        case = report_tests(r2.report)[BROKEN]
        browser.call("Page.navigate", {"url": f"{base}/index.html#{case['id']}"})
        browser.wait_for("document.body.innerText.includes('error distribution.png')")
        page = _text(browser)
        assert BROKEN in page and "Failed" in page
        assert "[precision] FAIL" in page and "Category: Precision failure" in page
        assert "worst elements.csv" in page and "metrics.json" in page
        assert re.search(r"History 1\b", page)  # run 1, where it passed
        assert browser.click_text("error distribution.png") == 1
        width, height = browser.wait_for(DECODED_IMAGE)
        assert width > 200 and height > 100  # the PNG, decoded by the browser
        shots.append(_screenshot(browser, "e2e-failed-case.png"))
    for shot in shots:
        assert shot.stat().st_size > 10_000, shot


def test_a_person_sees_three_runs_in_the_history(chromium, runs, tmp_path):
    r3 = runs.runs[2]
    case = report_tests(r3.report)[BROKEN]
    with serve(r3.report) as base, Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{base}/index.html#{case['id']}/history")
        items = browser.wait_for(
            "[...document.querySelectorAll('[data-testid=test-result-history-item]"
            " [data-testid^=tree-leaf-status-]')].map(e => e.dataset.testid)"
        )
        page = _text(browser)
        shot = _screenshot(browser, "e2e-history.png")
    # This run (passed, fixed) and the two before it, newest first: failed, passed.
    assert BROKEN in page and re.search(r"History 2\b", page)
    assert items == ["tree-leaf-status-failed", "tree-leaf-status-passed"]
    assert case["status"] == "passed"
    assert shot.stat().st_size > 10_000


def _quality_gates(browser) -> str:
    """The report's Quality Gates tab, opened, as text."""
    assert browser.click_text("Quality Gates") == 1
    browser.wait_for("document.body.innerText.includes('noRegressions')")
    return _text(browser)


def test_a_person_sees_the_triage_and_the_gate_of_the_red_run(chromium, runs, tmp_path):
    """The tail-bug run: farm run printed the triage of its failures after the summary table
    and wrote it into summary.json; the report's overview shows each group's line, its
    triage.html the commands; the Quality Gates tab the farm's gate, failed, as farm run's exit
    code (1) says."""
    r2 = runs.runs[1]
    bad = len(runs.expected)
    triage = r2.summary["triage"]
    assert triage["failures"] == bad and triage["groups"], triage
    top = triage["groups"][0]
    assert top["failed"] <= bad and top["representative"] in runs.expected
    assert set(top["case_ids"]) >= {cid for cid in runs.expected if cid in top["case_ids"]}
    assert "--plant-bug tail" in top["rerun"] and top["shrink"].startswith(
        f"farm shrink {top['representative']} --target twin --plant-bug tail"
    )
    # The bug is planted, not committed: nothing to bisect, and the reason says so.
    assert top["bisect"] == "" and "has the planted bug tail" in top["no_bisect"]
    printed = r2.output.split("triage   what the failures share:", 1)[1]
    assert f"1. {top['line']}" in printed and f"   rerun: {top['rerun']}" in printed
    assert f"   shrink: {top['shrink']}" in printed
    assert r2.output.index("triage   what") > r2.output.index("product failures (exit 1)")
    gate = {g["rule"]: g for g in r2.summary["quality_gate"]}
    assert not gate["maxFailures"]["success"] and gate["maxFailures"]["actual"] == bad
    assert not gate["noRegressions"]["success"]  # new failures against run 1

    with serve(r2.report) as base, Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{base}/index.html")
        browser.wait_for("document.body && document.body.innerText.includes('Environment: \"')")
        main = _text(browser)
        for n, group in enumerate(triage["groups"], 1):
            assert f"triage.{n} {group['line']}" in main, main[:1500]
        assert re.search(r"Quality Gates 4\b", main)
        shot = _screenshot(browser, "e2e-triage-overview.png")
        gates = _quality_gates(browser)
        gate_shot = _screenshot(browser, "e2e-quality-gate-failed.png")
    assert f"maxFailures Error {gate['maxFailures']['message']}" in gates
    assert f"noRegressions Error {gate['noRegressions']['message']}" in gates
    assert f"minTestsCount Success {gate['minTestsCount']['message']}" in gates
    assert shot.stat().st_size > 10_000 and gate_shot.stat().st_size > 10_000


def test_a_person_sees_the_gate_of_the_green_run_passed(chromium, runs, tmp_path):
    r3 = runs.runs[2]
    assert r3.code == 0 and all(g["success"] for g in r3.summary["quality_gate"])
    assert "triage" not in r3.output.split("junit", 1)[1]  # nothing failed: nothing printed
    with serve(r3.report) as base, Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{base}/index.html")
        browser.wait_for("document.body && document.body.innerText.includes('Quality Gates')")
        assert "triage.1" not in _text(browser)
        gates = _quality_gates(browser)
    for g in r3.summary["quality_gate"]:
        assert f"{g['rule']} Success {g['message']}" in gates, gates[:1500]
    assert not re.search(r"\bError\b", gates)
