"""A planted regression, end to end: a good run, a run of an operator built with the tail bug
(`farm run --plant-bug tail`), a good run again, all real `farm run`s of a smoke slice in one
store. `farm compare` must name exactly the cases the bug breaks (derived from the twin directly,
not from the farm), the report must show them, and the allure-results of the real runs must carry
what the issue asks for: labels, parameters, attachments, categories, environment, executor,
JUnit, and the comparison and trend in the report.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from farm.results.store import RunStore
from farm.run.allure.attachments import PLOT_DATA_NAME, plot_sampled
from farm.run.allure.categories import CATEGORIES
from farm.run.trend_plot import trend_png

from .report_fixtures import (
    CI_ENV,
    POOL_HOSTS,
    REPO_ROOT,
    allure_results,
    global_attachment,
    labels,
    make_runs,
    need_allure,
    param,
    report_tests,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_runs(tmp_path_factory)


def _compare_json(runs, *args: str) -> tuple[int, dict]:
    proc = runs.farm("compare", *args, "--format", "json", "--limit", "0")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# --------------------------------------------------------------------------- the runs


def test_the_slice_is_a_fair_test(runs):
    """The independently derived set is neither empty nor everything, and spans both families:
    a comparison that names "all" or "none" would fail somewhere below."""
    ids = {c.id for c in runs.selected}
    assert len(ids) == 15
    assert runs.expected and runs.expected < ids
    assert {c.family for c in runs.selected if c.id in runs.expected} == {
        "ascend910b",
        "ascend310b",
    }
    untouched = ids - runs.expected
    assert any("1x32000" in i for i in untouched)  # whole 32-byte blocks: no tail to drop
    assert any(not c.accepted for c in runs.selected if c.id in untouched)  # rejections


def test_each_run_ran_the_slice_with_the_expected_exit_code(runs):
    """Run 1 and 3 green (exit 0), run 2 product failures (exit 1): no host quarantined (a
    health canary that fails on the planted bug would turn every case into an infrastructure
    error, exit 2), and exactly the slice ran, each case once."""
    ids = sorted(c.id for c in runs.selected)
    for run, want in zip(runs.runs, (0, 1, 0), strict=True):
        assert run.summary.get("unhealthy_hosts") == {}, (
            f"run {run.n}: hosts quarantined: {run.summary.get('unhealthy_hosts')}\n"
            + run.output[-3000:]
        )
        assert run.code == want, f"run {run.n} exit {run.code}:\n{run.output[-3000:]}"
        with RunStore(runs.store) as store:
            assert sorted(r["case_id"] for r in store.result_rows(run.run_id)) == ids
    r2 = runs.runs[1]
    failed = {f["case_id"] for f in r2.summary["failures"]}
    assert failed == runs.expected
    assert {f["category"] for f in r2.summary["failures"]} == {"precision"}


# --------------------------------------------------------------------------- farm compare


def test_compare_names_exactly_the_regressed_cases(runs):
    r1, r2, _ = runs.runs
    code, comp = _compare_json(runs, r2.run_id)
    assert code == 1 and comp["has_regressions"]
    assert comp["baseline_id"] == r1.run_id  # the last green run
    assert set(comp["regressed_cases"]) == runs.expected
    assert {c["case_id"] for c in comp["new_failures"]} == runs.expected
    assert all(
        (c["baseline_outcome"], c["outcome"], c["category"]) == ("passed", "failed", "precision")
        for c in comp["new_failures"]
    )
    # Drift is reported only where the bug is; nothing else moved, nothing missing or broken.
    assert {d["case_id"] for d in comp["drift"]} <= runs.expected
    assert comp["missing_in_run"] == comp["missing_in_baseline"] == []
    assert comp["new_broken"] == comp["fixed"] == comp["still_failing"] == []


def test_compare_text_lists_each_regressed_case(runs):
    r2 = runs.runs[1]
    proc = runs.farm("compare", r2.run_id, "--format", "text", "--limit", "0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = proc.stdout
    assert f"{len(runs.expected)} new failures" in text.splitlines()[0]
    section = text.split("New failures", 1)[1].split("\n\n", 1)[0]
    listed = {line.split()[0] for line in section.splitlines()[2:] if line.strip()}
    assert listed == runs.expected


def test_the_good_run_after_the_bug(runs):
    """Run 3 is compared with run 1 (run 2 was red, so not a baseline): no regression; against
    run 2 explicitly, exactly the broken cases are fixed."""
    r1, r2, r3 = runs.runs
    code, comp = _compare_json(runs, r3.run_id)
    assert code == 0 and comp["baseline_id"] == r1.run_id
    assert comp["regressed_cases"] == [] and comp["drift"] == []
    code, comp = _compare_json(runs, r3.run_id, "--baseline", r2.run_id)
    assert code == 0
    assert {c["case_id"] for c in comp["fixed"]} == runs.expected


def test_farm_runs_lists_the_three_runs(runs):
    proc = runs.farm("runs", "--json")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [r["run_id"] for r in listed] == [r.run_id for r in reversed(runs.runs)]
    assert [r["counts"]["failed"] for r in reversed(listed)] == [0, len(runs.expected), 0]


# --------------------------------------------------------------------------- the report


def test_report_shows_the_regressed_cases(runs):
    need_allure()
    r2 = runs.runs[1]
    tests = report_tests(r2.report)
    assert set(tests) == {c.id for c in runs.selected}
    failed = {name for name, t in tests.items() if t["status"] == "failed"}
    assert failed == runs.expected
    for name in failed:
        t = tests[name]
        assert [c["name"] for c in t["categories"]] == ["Precision failure"], name
        assert t["transition"] == "regressed", name  # Allure's own history agrees
        assert [h["status"] for h in t["history"]] == ["passed"], name
    for name in set(tests) - failed:
        assert tests[name]["status"] == "passed" and tests[name].get("transition") is None
    summary = json.loads((r2.report / "summary.json").read_text())
    assert summary["stats"]["total"] == len(tests)
    assert summary["stats"]["failed"] == len(runs.expected)


def test_report_carries_the_comparison(runs):
    need_allure()
    r1, r2, _ = runs.runs
    page = global_attachment(r2.report, "regression-summary.html").read_text()
    assert "REGRESSIONS" in page and f"vs baseline {r1.run_id}" in page
    new = page.split("New failures", 1)[1].split("<h3>", 1)[0]
    assert set(re.findall(r"<tr><td>([^<]+)</td>", new)) == runs.expected
    assert "data:image/png;base64," in page  # the trend plot, inline
    data = json.loads(global_attachment(r2.report, "regression-summary.json").read_text())
    assert set(data["regressed_cases"]) == runs.expected
    md = global_attachment(r2.report, "regression-summary.md").read_text()
    assert all(f"| {cid} |" in md for cid in runs.expected)


def test_report_has_the_trend_of_the_last_runs(runs):
    """MERE/MARE per dtype and family over the runs so far: run 3's report plots three runs."""
    need_allure()
    r3 = runs.runs[2]
    png = global_attachment(r3.report, "precision-trend.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000
    with RunStore(runs.store) as store:
        series = store.metric_series("smoke", 20)
    assert {p["run_id"] for p in series} == {r.run_id for r in runs.runs}
    # farm run draws it before its report (farm/cli/judging.py with_trend): the same plot, its
    # run included.
    assert png == trend_png(series)
    groups = {(p["family"], p["dtype"]) for p in series if p["mere_median"] is not None}
    assert groups == {
        ("ascend910b", "float32"),
        ("ascend910b", "float16"),
        ("ascend910b", "bfloat16"),
        ("ascend310b", "float32"),
        ("ascend310b", "float16"),
    }  # bf16 on the 310B family is rejected: nothing to measure
    # The bug run stands out in the trend: its MARE median is above the good runs' everywhere.
    by = {(p["run_id"], p["family"], p["dtype"]): p for p in series}
    r1, r2, _ = runs.runs
    for fam, dt in groups:
        assert by[(r2.run_id, fam, dt)]["mare_max"] > by[(r1.run_id, fam, dt)]["mare_max"]


# --------------------------------------------------------------------------- allure-results


def test_labels_and_parameters_of_real_results(runs):
    r2 = runs.runs[1]
    results = allure_results(r2.results)
    cases = {c.id: c for c in runs.selected}
    assert set(results) == set(cases)
    for cid, r in results.items():
        case = cases[cid]
        assert labels(r, "epic") == ["LogSoftmaxGrad"], cid
        features = labels(r, "feature")
        assert features[0] == ("precision" if case.accepted else "rejection"), cid
        assert labels(r, "story") and labels(r, "severity"), cid
        assert labels(r, "family") == [case.family], cid
        # Identity: the family (and the case, hidden); what the case is: the description.
        family = param(r, "family")
        assert family is not None, cid
        assert family["value"] == repr(case.family) and not family.get("excluded"), cid
        shape = "(" + ", ".join(map(str, case.shape)) + ("," if len(case.shape) == 1 else "") + ")"
        assert r["description"].startswith(
            f"case: {case.dtype}, shape {shape}, dim {case.axes[0]}, y {case.y_dist}, "
            f"dy {case.dy_dist}"
        ), (cid, r["description"])
        # Shown but not identity: host (a pool host), seed, timings.
        host = param(r, "host")
        assert host is not None, cid
        assert host["excluded"] is True and host["value"].strip("'") in POOL_HOSTS, (cid, host)
        assert param(r, "seed") == {"name": "seed", "value": repr(str(case.seed)), "excluded": True}
        # Slot, attempts and timings are in the description, not parameters (compact results).
        assert not [p for p in r["parameters"] if p["name"].startswith("time ")], cid
        # The parametrize argument shows the case id (not the Case repr).
        case_param = param(r, "case")
        assert case_param is not None and case_param["value"] == repr(cid)
    # Severity: rejections are critical; plain precision cases normal.
    assert {labels(results[c.id], "severity")[0] for c in runs.selected if not c.accepted} == {
        "critical"
    }
    assert labels(results["910b_f32_3x17_d-1_y.uniform_dy.normal"], "severity") == ["normal"]
    assert labels(results["910b_f32_3x17_d-1_y.uniform_dy.normal"], "story") == ["REDUCE_TAIL"]


def test_a_failed_cases_trace_is_its_verdict_criterion_and_repro_line_not_pytest(runs):
    """The case page's trace (statusTrace) of each failure of the planted run (issue 58)."""
    r2 = runs.runs[1]
    results = allure_results(r2.results)
    for cid in runs.expected:
        details = results[cid]["statusDetails"]
        trace = details["trace"]
        lines = trace.splitlines()
        assert lines[0].startswith("[precision] FAIL "), (cid, trace)
        assert details["message"] == "AssertionError: " + lines[0], (cid, details["message"])
        assert lines[1].startswith("failing criterion: "), (cid, trace)
        assert lines[-1].startswith(f"rerun it alone: farm repro {cid} "), (cid, trace)
        assert "--plant-bug tail" in lines[-1], (cid, trace)
        for plumbing in ("Traceback", "assert_record", "check_record", "plugin.py", ".py:"):
            assert plumbing not in trace, (cid, plumbing, trace)
    assert not any("statusDetails" in r for cid, r in results.items() if cid not in runs.expected)


def test_history_ids_ignore_host_seed_and_timings_and_split_families(runs):
    """The same case has the same history id in every run (hosts and timings differ), and the
    two families of one shape never share one."""
    ids = [
        {cid: r["historyId"] for cid, r in allure_results(run.results).items()} for run in runs.runs
    ]
    assert ids[0] == ids[1] == ids[2]
    a = ids[0]["910b_f32_3x17_d-1_y.uniform_dy.normal"]
    b = ids[0]["310b_f32_3x17_d-1_y.uniform_dy.normal"]
    assert a != b and len(set(ids[0].values())) == len(ids[0])


def test_attachments_of_failures_and_sampled_passes(runs):
    r2 = runs.runs[1]
    d = r2.results
    for cid, r in allure_results(d).items():
        att = {a["name"]: d / a["source"] for a in r.get("attachments", [])}
        # The report step drew every plot the test items left the data of.
        assert PLOT_DATA_NAME not in att and "plot error" not in att, cid
        # metrics.json only for what did not pass and for the sampled passes (compact reports).
        if "metrics.json" in att:
            metrics = json.loads(att["metrics.json"].read_text())
            assert metrics["case_id"] == cid and metrics["outcome"] == r["status"]
        else:
            accepted = {c.id: c.accepted for c in runs.selected}[cid]
            assert r["status"] == "passed" and not (plot_sampled(cid) and accepted), cid
            metrics = {}
        if r["status"] == "failed":
            png = att["error distribution.png"].read_bytes()
            assert png.startswith(b"\x89PNG") and len(png) > 5_000, cid
            rows = list(csv.reader(io.StringIO(att["worst elements.csv"].read_text())))
            # Then the failing criterion's columns (farm/run/allure/attachments.py worst_csv).
            assert rows[0][:6] == ["rank", "index", "actual", "golden", "abs_err", "rel_err"]
            assert len(rows) > 1, f"{cid}: an empty worst-elements table"
            # The tail bug leaves elements unwritten (NaN): the table shows where.
            assert any(row[2] == "nan" for row in rows[1:]), cid
        else:
            assert "worst elements.csv" not in att, cid
            sampled = plot_sampled(cid) and metrics.get("metrics") is not None
            assert ("error distribution.png" in att) == sampled, cid
    # The slice holds sampled passes, so "a sample of passes" is seen on a real run.
    assert any(
        plot_sampled(c.id) and c.accepted and c.id not in runs.expected for c in runs.selected
    )


def test_failure_messages_match_their_category(runs):
    r2 = runs.runs[1]
    rules = json.loads((r2.results / "categories.json").read_text())
    assert rules == CATEGORIES
    assert rules == json.loads((REPO_ROOT / "reports" / "categories.json").read_text())
    # One rule per outcome category (farm/agent/outcome.py CATEGORIES), in the glue's order.
    names = [c["name"] for c in rules]
    for name in (
        "Precision failure",
        "Unexpected acceptance",
        "Unexpected rejection or wrong status",
        "Operator crash",
        "Write outside the output",
        "Kernel fault (emulated device)",
        "Infrastructure",
    ):
        assert name in names, name
    for cid, r in allure_results(r2.results).items():
        if r["status"] != "failed":
            continue
        msg = r["statusDetails"]["message"]
        hits = [c["name"] for c in rules if re.search(c["messageRegex"], msg)]
        assert hits == ["Precision failure"], (cid, msg)


def test_environment_executor_and_junit(runs):
    r2 = runs.runs[1]
    props = dict(
        line.split("=", 1)
        for line in (r2.results / "environment.properties").read_text().splitlines()
    )
    plan = json.loads((r2.run_dir / "plan.json").read_text())
    package = plan["package"]
    sha = hashlib.sha256(open(package["file"], "rb").read()).hexdigest()
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert props["package.version"] == (REPO_ROOT / "op" / "VERSION").read_text().strip()
    assert props["package.sha256"] == sha
    assert props["target"] == "twin (the CPU twin, a second implementation of the kernel's design)"
    assert props["git.commit"] == head
    assert props["farm.version"]
    assert {k.removeprefix("host."): v for k, v in props.items() if k.startswith("host.")} == (
        POOL_HOSTS
    )
    executor = json.loads((r2.results / "executor.json").read_text())
    assert executor["name"] == "GitHub Actions" and executor["buildOrder"] == 2
    base = f"{CI_ENV['GITHUB_SERVER_URL']}/{CI_ENV['GITHUB_REPOSITORY']}"
    assert executor["buildUrl"] == f"{base}/actions/runs/9002"
    assert r2.run_id in executor["buildName"]
    # JUnit XML beside the allure results: one test per case, the failures the same.
    junit = r2.results.parent / "junit.xml"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None, junit
    assert int(suite.attrib["tests"]) == len(runs.selected)
    assert int(suite.attrib["failures"]) == len(runs.expected)
    failed = {
        tc.attrib["name"].split("[", 1)[1].rstrip("]")
        for tc in suite.iter("testcase")
        if tc.find("failure") is not None
    }
    assert failed == runs.expected


def test_report_shows_the_executor(runs):
    need_allure()
    r2 = runs.runs[1]
    base = f"{CI_ENV['GITHUB_SERVER_URL']}/{CI_ENV['GITHUB_REPOSITORY']}"
    index = (r2.report / "index.html").read_text()
    assert f'"buildUrl":"{base}/actions/runs/9002"' in index
    assert '"name":"GitHub Actions"' in index
