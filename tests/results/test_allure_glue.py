"""Allure glue: a real pytest session annotates synthetic records; the allure-results say so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from farm.results import allure_glue as glue
from farm.results.report import REPORTS_DIR

from .conftest import RUN_META, failed, record, rejected_ok, run_allure_session


def _sampled_ids():
    """One case id inside the deterministic plot sample and one outside it."""
    ids = [f"sample-{i}" for i in range(200)]
    inside = next(i for i in ids if glue.plot_sampled(i))
    outside = next(i for i in ids if not glue.plot_sampled(i))
    return inside, outside


def session_records():
    inside, outside = _sampled_ids()
    return [
        record("prec-f32-tail"),
        record("prec-f32-tail", family="ascend310b", host="emu-310-0", soc="Ascend310B1"),
        record(inside),
        record(outside),
        failed(
            "prec-f16-mid",
            dtype="float16",
            schedule="REDUCE_MID",
            message="experimental: MARE 3.1e-2 >= 10T (9.8e-3); worst at (2, 7)",
            metrics={"mere": 4e-3, "mare": 3.1e-2},
        ),
        failed(
            "acc-bf16-310",
            category="unexpected_acceptance",
            family="ascend310b",
            dtype="bfloat16",
            expect={"kind": "reject", "reason": "bf16_unsupported_on_soc", "status": 161002},
            status=0,
            metrics=None,
            message="accepted bf16 on Ascend310B1; expected 161002",
        ),
        failed(
            "rej-status",
            category="wrong_status",
            metrics=None,
            expect={"kind": "reject", "reason": "shape_mismatch", "status": 161002},
            status=161001,
            reason="null_tensor",
            message="status 161001, expected 161002",
        ),
        failed(
            "crash-1",
            category="crash",
            metrics=None,
            status=None,
            message="agent: operator crashed (SIGSEGV)",
        ),
        record(
            "infra-1",
            outcome="broken",
            category="infrastructure",
            metrics=None,
            message="host emu-a2-0 unreachable after 2 retries",
        ),
        rejected_ok("rej-ok"),
        record("nan-dy", special="nan_dy", dy_dist="normal+nan"),
        record("strided-empty", layout="strided", shape=[0, 16], schedule="EMPTY", metrics=None),
        record("tiling-chunks", api="axes", axes=[1, 2], shape=[3, 4, 5]),
        {"case_id": "minimal", "family": "ascend910b", "outcome": "passed"},  # sparse record
    ]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    work = tmp_path_factory.mktemp("glue")
    d = run_allure_session(work, session_records())
    glue.write_results_extras(d, {**RUN_META, "run_id": "20261129-151200-smoke-ab12"})
    out = {}
    for f in d.glob("*-result.json"):
        r = json.loads(f.read_text())
        params = {p["name"]: p for p in r.get("parameters", [])}
        out[(r["name"], params["family"]["value"])] = r
    return d, out


def _labels(r, name):
    return [lb["value"] for lb in r["labels"] if lb["name"] == name]


def _param(r, name):
    return next(p for p in r["parameters"] if p["name"] == name)


def test_every_case_is_annotated(results):
    _, res = results
    assert len(res) == len(session_records())
    for (case_id, fam), r in res.items():
        assert _labels(r, "epic") == ["LogSoftmaxGrad"], case_id
        assert _labels(r, "family") == [fam.strip("'")]
        assert _labels(r, "feature") and _labels(r, "story") and _labels(r, "severity")
        names = [a["name"] for a in r.get("attachments", [])]
        assert "metrics.json" in names, case_id


def test_identity_parameters(results):
    _, res = results
    r = res[("prec-f32-tail", "'ascend910b'")]
    for name in ("family", "dtype", "shape", "dim", "y_dist", "dy_dist"):
        assert not _param(r, name).get("excluded"), name
    for name in ("host", "seed", "time wall_s", "time backend_s", "attempts", "slot"):
        assert _param(r, name).get("excluded") is True, name
    assert _param(r, "dim")["value"] == "'-1'" and _param(r, "shape")["value"] == "'(4, 1024)'"
    axes_case = res[("tiling-chunks", "'ascend910b'")]
    assert _param(axes_case, "axes")["value"] == "'(1, 2)'"
    # The same case on the two families: two history entries, never merged.
    other = res[("prec-f32-tail", "'ascend310b'")]
    assert r["historyId"] != other["historyId"]


def test_history_id_ignores_host_seed_and_timings(results, tmp_path):
    _, res = results
    moved = [
        record(
            "prec-f32-tail",
            host="emu-a2-7",
            seed=99,
            timings={"wall_s": 9.0, "backend_s": 8.0, "golden_s": 0.1, "total_s": 8.5},
            attempts=3,
            slot="emu-a2-7:1",
        )
    ]
    d = run_allure_session(tmp_path, moved, name="moved")
    again = json.loads(next(d.glob("*-result.json")).read_text())
    assert again["historyId"] == res[("prec-f32-tail", "'ascend910b'")]["historyId"]


def test_features_stories_severity(results):
    _, res = results

    def get(cid, fam="'ascend910b'"):
        return res[(cid, fam)]

    assert _labels(get("prec-f16-mid"), "feature") == ["precision"]
    assert _labels(get("prec-f16-mid"), "story") == ["REDUCE_MID"]
    assert _labels(get("prec-f16-mid"), "severity") == ["normal"]
    acc = get("acc-bf16-310", "'ascend310b'")
    assert _labels(acc, "feature") == ["rejection"]
    assert _labels(acc, "story") == ["bf16_unsupported_on_soc"]
    assert _labels(acc, "severity") == ["critical"]
    assert _labels(get("nan-dy"), "feature") == ["precision", "special values"]
    assert _labels(get("nan-dy"), "severity") == ["critical"]
    assert _labels(get("strided-empty"), "feature") == ["precision", "strided", "empty"]
    assert _labels(get("tiling-chunks"), "feature") == ["precision", "tiling"]
    assert "ascend910b" in _labels(get("nan-dy"), "tag")


def test_attachments_of_failures_and_sampled_passes(results):
    d, res = results
    inside, outside = _sampled_ids()

    def names(cid, fam="'ascend910b'"):
        return {a["name"]: a for a in res[(cid, fam)].get("attachments", [])}

    f = names("prec-f16-mid")
    assert {"metrics.json", "worst elements.csv", "error distribution.png"} <= set(f)
    png = (d / f["error distribution.png"]["source"]).read_bytes()
    assert png.startswith(b"\x89PNG")
    csv_text = (d / f["worst elements.csv"]["source"]).read_text()
    assert csv_text.splitlines()[0] == "rank,index,actual,golden,abs_err,rel_err"
    assert csv_text.splitlines()[1].startswith('1,"(0, 5)",0.5,')
    m = json.loads((d / f["metrics.json"]["source"]).read_text())
    assert m["metrics"]["mare"] == 3.1e-2 and m["outcome"] == "failed"
    assert "error distribution.png" in names(inside)
    assert "error distribution.png" not in names(outside)
    assert "error distribution.png" not in names("rej-ok")  # no metrics, nothing to plot
    assert "worst elements.csv" not in names(outside)  # passes keep only the record


def test_failure_messages_carry_the_category_prefix(results):
    _, res = results
    msg = res[("prec-f16-mid", "'ascend910b'")]["statusDetails"]["message"]
    assert msg.startswith("AssertionError: [precision] experimental: MARE")
    infra = res[("infra-1", "'ascend910b'")]
    assert infra["status"] == "broken"
    # A qualified exception name ("module.InfrastructureBroken: ") is fine for the categories.
    assert re.match(
        r"[\w.]*InfrastructureBroken: \[infrastructure\] host", infra["statusDetails"]["message"]
    )


def _category_of(result, categories):
    """First matching category, the way Allure 3 matches (regex search, statuses)."""
    msg = (result.get("statusDetails") or {}).get("message") or ""
    for c in categories:
        if result["status"] in c["matchedStatuses"] and re.search(c["messageRegex"], msg):
            return c["name"]
    return None


def test_categories_match_exactly_one_kind(results):
    d, res = results
    cats = json.loads((d / "categories.json").read_text())
    want = {
        "prec-f16-mid": "Precision failure",
        "acc-bf16-310": "Unexpected acceptance",
        "rej-status": "Unexpected rejection or wrong status",
        "crash-1": "Operator crash",
        "infra-1": "Infrastructure",
    }
    got = {cid: _category_of(r, cats) for (cid, _), r in res.items() if r["status"] != "passed"}
    assert got == want
    # Allure 2 matches the whole message: the regexes must match fully, too.
    for c in cats:
        prefix = re.search(r"\\\[\(\?:([a-z_]+)", c["messageRegex"]).group(1)
        assert re.fullmatch(c["messageRegex"], f"Failed: [{prefix}] two\nlines", re.S)


def test_failure_message_helper():
    assert glue.failure_message(failed("x", message="bad\n  thing")) == "[precision] bad thing"
    r = record("y", outcome="broken", category=None, message="")
    assert glue.failure_message(r) == "[infrastructure] y broken"
    for cat, prefix in glue.CATEGORY_PREFIXES.items():
        assert glue.failure_message(failed("z", category=cat)).startswith(prefix)


def test_reports_categories_json_is_the_glue_list():
    on_disk = json.loads((REPORTS_DIR / "categories.json").read_text())
    assert on_disk == glue.CATEGORIES


def test_environment_and_executor_files(results, monkeypatch):
    d, _ = results
    props = dict(
        line.split("=", 1) for line in (d / "environment.properties").read_text().splitlines()
    )
    assert props["package.version"] == "0.1.0"
    assert props["package.sha256"] == "ab" * 32
    assert props["git.commit"].startswith("0123456789")
    assert props["target"] == "twin" and props["farm.version"] == "0.1.0"
    assert props["host.emu-a2-0"] == "Ascend910B3 (ascend910b)"
    assert props["host.emu-310-0"] == "Ascend310B1 (ascend310b)"
    ex = json.loads((d / "executor.json").read_text())
    assert ex["buildName"] == "20261129-151200-smoke-ab12"

    gh = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "org/farm",
        "GITHUB_RUN_ID": "42",
        "GITHUB_RUN_NUMBER": "7",
        "GITHUB_WORKFLOW": "nightly",
    }
    ex = glue.executor_info({"run_id": "r1"}, env=gh)
    assert (
        ex["type"] == "github" and ex["buildUrl"] == "https://github.com/org/farm/actions/runs/42"
    )
    assert ex["buildOrder"] == 7
    ex = glue.executor_info(
        {"run_id": "r1"},
        env={"CI_JOB_URL": "https://gl/j/5", "CI_PIPELINE_ID": "9", "CI_JOB_NAME": "farm"},
    )
    assert ex["type"] == "gitlab" and ex["buildUrl"] == "https://gl/j/5"
    ex = glue.executor_info({}, env={"BUILD_URL": "https://jenkins/job/1/", "BUILD_NUMBER": "1"})
    assert ex["type"] == "jenkins"
    assert glue.executor_info({}, env={})["type"] == "local"


def test_properties_escaping(tmp_path):
    glue.write_results_extras(
        tmp_path, {"run_id": "r", "inventory": {"h 1": "Ascend910B1"}, "target": "line1\nline2 ü"}
    )
    text = (tmp_path / "environment.properties").read_text()
    assert "host.h\\ 1=Ascend910B1" in text and "target=line1\\nline2 \\u00fc" in text
    assert Path(tmp_path / "categories.json").is_file()
