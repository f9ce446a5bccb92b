"""The reports of real `farm run`s, opened in headless Chromium (DevTools protocol over a pipe,
tests/results/cdp.py) and read the way a person reads them: the number of cases, both SoC
families as environments, the regression summary, a failed case with its error-distribution plot,
and a case's history over the three runs. Screenshots are left in reports/artifacts/ (ignored by
git) for CI to keep as artifacts.

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

# Clicks the elements whose own text is exactly `txt`; returns how many.
CLICK_TEXT = """(txt => {
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), hits = [];
  while (w.nextNode()) if (w.currentNode.nodeValue.trim() === txt)
    hits.push(w.currentNode.parentElement);
  hits.forEach(e => e.click());
  return hits.length;
})"""
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
        assert "executor GitHub Actions" in main and "package.sha256" in main

        # The regression summary, among the global attachments.
        assert browser.eval(CLICK_TEXT + "('Global Attachments')") >= 1
        browser.wait_for("document.body.innerText.includes('regression-summary.html')")
        assert browser.eval(CLICK_TEXT + "('regression-summary.html')") == 1
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
        assert browser.eval(CLICK_TEXT + "('error distribution.png')") == 1
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
