"""One Allure test-case id per case (farm/run/allure/identity.py): a case's Environments tab holds
that case on each family and nothing else, and each environment's header counts what it holds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from allure_commons.utils import md5

from farm.run.allure import environment as allure_environment
from farm.run.allure.identity import allure_test_case_id, case_key

from .conftest import (
    RUN_META,
    failed,
    need_allure,
    need_chromium,
    record,
    rejected_ok,
    run_allure_session,
)

SAME = "f32_3x17_d-1_y.uniform_dy.normal"
FAILED_910 = f"910b_{SAME}"
ON_310 = f"310b_{SAME}"
OTHER = "910b_f16_3x33_d-1_y.uniform_dy.normal_nan_dy"
REJECTED = "910b_bf16_2x8_d5_y.uniform_dy.normal"
PRECISION_FULL_NAME = "test_synthetic_cases#test_case"


def _records() -> list[dict]:
    return [
        failed(FAILED_910, message="error-bound: 3 of 51 elements over their bound (1.93x)"),
        record(ON_310, family="ascend310b", host="emu-310-0", soc="Ascend310B1"),
        record(OTHER, dtype="float16", special="nan_dy", dy_dist="normal+nan"),
        record("910b_f32_4x0_d-1_y.uniform_dy.normal", shape=[4, 0], schedule="EMPTY"),
        rejected_ok(REJECTED),
    ]


def test_the_case_key_is_the_case_id_less_its_family():
    assert case_key(FAILED_910, "ascend910b") == SAME == case_key(ON_310, "ascend310b")
    # Another family's prefix, or none, is part of what the case is.
    assert case_key(ON_310, "ascend910b") == ON_310
    assert case_key("prec-f32-tail", "ascend910b") == "prec-f32-tail"
    assert allure_test_case_id(FAILED_910, "ascend910b") == allure_test_case_id(
        ON_310, "ascend310b"
    )
    assert allure_test_case_id(FAILED_910, "ascend910b") != allure_test_case_id(OTHER, "ascend910b")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Any]:
    d = run_allure_session(tmp_path_factory.mktemp("identity"), _records())
    out = {}
    for f in d.glob("*-result.json"):
        r = json.loads(f.read_text())
        out[r["name"]] = r
    return {"dir": d, "by_name": out}


def test_each_case_has_its_own_test_case_id(results):
    by_name = results["by_name"]
    ids = {name: r["testCaseId"] for name, r in by_name.items()}
    # Before: every result the md5 of its pytest function (one id for every case of a suite).
    assert md5(PRECISION_FULL_NAME) not in ids.values()
    assert ids[FAILED_910] == ids[ON_310] == allure_test_case_id(FAILED_910, "ascend910b")
    assert len({ids[n] for n in by_name if n != ON_310}) == len(by_name) - 1
    # The same case on the other family keeps its id, never its history.
    assert by_name[FAILED_910]["historyId"] != by_name[ON_310]["historyId"]


@pytest.fixture(scope="module")
def report(results, tmp_path_factory) -> Path:
    need_allure()
    from farm.results import report_generate

    d = results["dir"]
    allure_environment.write_results_extras(d, {**RUN_META, "run_id": "20261129-151200-smoke-ab12"})
    out = tmp_path_factory.mktemp("identity-report") / "report"
    code, _ = report_generate.generate(d, out, None, report_name="identity")
    assert code == 0
    return out


def _report_results(out: Path) -> dict[str, dict]:
    return {
        tr["name"]: tr
        for tr in (json.loads(f.read_text()) for f in (out / "data" / "test-results").glob("*"))
    }


def test_a_cases_environments_hold_that_case_alone(report):
    trs = _report_results(report)
    group = json.loads(
        (
            report / "data" / "test-env-groups" / f"{trs[FAILED_910]['testCase']['id']}.json"
        ).read_text()
    )
    assert sorted(group["testResultsByEnv"].values()) == sorted(
        [trs[FAILED_910]["id"], trs[ON_310]["id"]]
    )
    alone = json.loads(
        (report / "data" / "test-env-groups" / f"{trs[OTHER]['testCase']['id']}.json").read_text()
    )
    assert list(alone["testResultsByEnv"].values()) == [trs[OTHER]["id"]]


def _leaves(tree: dict) -> int:
    """The cases each environment's header counts: the sum over its tree's top groups."""
    groups = tree["groupsById"]
    return sum(groups[g]["statistic"]["total"] for g in tree["root"].get("groups", [])) + len(
        tree["root"].get("leaves", [])
    )


def test_each_environments_header_counts_what_it_holds(report):
    for env, holds in (("ascend910b", 4), ("ascend310b", 1)):
        tree = json.loads((report / "widgets" / env / "tree.json").read_text())
        stat = json.loads((report / "widgets" / env / "statistic.json").read_text())
        assert len(tree["leavesById"]) == stat["total"] == holds, env
        assert _leaves(tree) == holds, env


def test_a_person_sees_one_case_in_its_environments_tab(report, tmp_path):
    chromium = need_chromium()
    from .cdp import CLICK_TEXT, Browser, serve

    trs = _report_results(report)
    with serve(report) as base, Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{base}/index.html")
        browser.wait_for("document.body && document.body.innerText.includes('Environment: \"')")
        main = re.sub(r"\s+", " ", browser.eval("document.body.innerText"))
        assert re.search(r'Environment: "Atlas A2 \(Ascend910B\)" 4\b', main), main[:1500]
        browser.call("Page.navigate", {"url": f"{base}/index.html#{trs[FAILED_910]['id']}"})
        # The case's page, once drawn, has an Environments tab: clicked as soon as it is there
        # (the overview it replaces names environments too, so its text alone proves nothing).
        assert browser.wait_for(CLICK_TEXT + '("Environments")') >= 1
        browser.wait_for("document.body.innerText.includes('Atlas 200I-500 A2')")
        tab = re.sub(r"\s+", " ", browser.eval("document.body.innerText"))
        tab = tab[tab.index("Environments") :]
        assert "Atlas A2 (Ascend910B)" in tab and "Atlas 200I-500 A2 (Ascend310B)" in tab
        assert OTHER not in tab and REJECTED not in tab
