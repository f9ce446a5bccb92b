"""Allure glue: a real pytest session annotates synthetic records; the allure-results say so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from farm.run import case_plots
from farm.run.allure import attachments as allure_attachments
from farm.run.allure import categories as allure_categories
from farm.run.allure import description as allure_description
from farm.run.allure import environment as allure_environment
from farm.run.allure import glue as glue
from farm.run.allure.process import REPORTS_DIR
from farm.run.case_plots import BackgroundDrawing, render_case_plots
from farm.run.plots import error_histogram_png

from .conftest import RUN_META, failed, record, rejected_ok, run_allure_session

# A plot that cannot be drawn (its histogram edges are not numbers): a "plot error" attachment.
BAD_HIST = {"hist": {"edges": ["x", "y"], "counts": [1]}}


def _sampled_ids():
    """Two case ids inside the deterministic plot sample and one outside it."""
    ids = [f"sample-{i}" for i in range(200)]
    inside = [i for i in ids if allure_attachments.plot_sampled(i)]
    outside = next(i for i in ids if not allure_attachments.plot_sampled(i))
    return inside[0], outside, inside[1]


def session_records():
    inside, outside, bad_plot = _sampled_ids()
    return [
        record("prec-f32-tail"),
        record("prec-f32-tail", family="ascend310b", host="emu-310-0", soc="Ascend310B1"),
        record(inside),
        record(outside),
        record(bad_plot, metrics=BAD_HIST),
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


def _read_results(d: Path) -> dict:
    out = {}
    for f in d.glob("*-result.json"):
        r = json.loads(f.read_text())
        params = {p["name"]: p for p in r.get("parameters", [])}
        out[(r["name"], params["family"]["value"])] = r
    return out


def _files(d: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in d.iterdir() if f.is_file()}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """The allure-results of a session as its test items left them, then after the report
    step drew the plots (render_case_plots), then after it ran a second time."""
    work = tmp_path_factory.mktemp("glue")
    d = run_allure_session(work, session_records())
    allure_environment.write_results_extras(d, {**RUN_META, "run_id": "20261129-151200-smoke-ab12"})
    items = _read_results(d)
    items_files = _files(d)
    modules = json.loads((d.parent / "modules.json").read_text())
    first = render_case_plots(d)
    rendered_files = _files(d)
    second = render_case_plots(d)
    return {
        "dir": d,
        "modules": modules,
        "items": items,
        "items_files": items_files,
        "counts": (first, second),
        "rendered_files": rendered_files,
        "results": _read_results(d),
    }


@pytest.fixture(scope="module")
def results(session):
    """The allure-results once the report step has drawn the plots."""
    return session["dir"], session["results"]


def _labels(r, name):
    return [lb["value"] for lb in r["labels"] if lb["name"] == name]


def _param(r, name):
    return next(p for p in r["parameters"] if p["name"] == name)


def test_every_case_is_annotated(results):
    _, res = results
    assert len(res) == len(session_records())
    by_id = {(r["case_id"], repr(r["family"])): r for r in session_records()}
    for (case_id, fam), r in res.items():
        assert _labels(r, "epic") == ["LogSoftmaxGrad"], case_id
        assert _labels(r, "family") == [fam.strip("'")]
        assert _labels(r, "feature") and _labels(r, "story") and _labels(r, "severity")
        assert r.get("description"), case_id
        names = [a["name"] for a in r.get("attachments", [])]
        # metrics.json: the cases that did not pass and the sampled passes (with metrics).
        assert ("metrics.json" in names) == allure_attachments.wants_metrics(
            by_id[(case_id, fam)]
        ), case_id
    assert allure_attachments.wants_metrics(by_id[("prec-f16-mid", "'ascend910b'")])
    assert allure_attachments.wants_metrics(by_id[(_sampled_ids()[0], "'ascend910b'")])


def test_a_pass_outside_the_sample_has_no_attachment(results):
    """What a passed case has to say is in its description and parameters: no metrics.json, no
    plot, no worst-elements table (a nightly run is thousands of them)."""
    _, res = results
    _, outside, _ = _sampled_ids()
    for cid in (outside, "prec-f32-tail", "rej-ok", "nan-dy", "tiling-chunks"):
        r = res[(cid, "'ascend910b'")]
        assert r["status"] == "passed" and not allure_attachments.plot_sampled(cid), cid
        assert r.get("attachments", []) == [], cid
    # Its headline metrics are in the description instead.
    desc = res[(outside, "'ascend910b'")]["description"]
    assert "metrics: MERE 1e-07, MARE 1e-06, RMSE 1e-07, max abs 1e-06, max ULP 1" in desc
    assert "elements 4,096" in desc
    assert "metrics:" not in res[("rej-ok", "'ascend910b'")]["description"]  # no metrics


def test_attachments_are_compact_and_say_only_what_is_not_shown_elsewhere(results):
    d, res = results
    inside, _, _ = _sampled_ids()
    for key, r in res.items():
        for a in r.get("attachments", []):
            if a["type"] != "application/json":
                continue
            text = (d / a["source"]).read_text()
            assert "\n" not in text, (key, a["name"])  # one line, no indentation
            assert json.dumps(json.loads(text), separators=(",", ":")) == text, (key, a["name"])
    failure = res[("prec-f16-mid", "'ascend910b'")]
    sampled = res[(inside, "'ascend910b'")]
    for r, worst_in_table in ((failure, True), (sampled, False)):
        att = {a["name"]: a for a in r["attachments"]}
        m = json.loads((d / att["metrics.json"]["source"]).read_text())
        assert set(m) == {"case_id", "outcome", "metrics", "standards"}
        assert m["case_id"] == r["name"] and m["outcome"] == r["status"]
        assert "hist" not in m["metrics"]  # the plot's
        # A failure's worst elements are its table's; a sampled pass has no table.
        assert ("worst" in m["metrics"]) is not worst_in_table
        assert ("worst elements.csv" in att) is worst_in_table
        assert m["standards"] == {"experimental": {"passed": True, "reason": "ok"}}
    assert (
        allure_attachments.metrics_json(rejected_ok("r", standards=None)) is None
    )  # nothing to say


def test_a_failure_always_has_its_plot_and_worst_table(results):
    d, res = results
    by_id = {(r["case_id"], repr(r["family"])): r for r in session_records()}
    failures = [k for k, r in res.items() if r["status"] != "passed"]
    assert failures
    for key in failures:
        rec = by_id[key]
        names = [a["name"] for a in res[key].get("attachments", [])]
        if rec.get("metrics"):
            assert "error distribution.png" in names, key
        if (rec.get("metrics") or {}).get("worst"):
            assert "worst elements.csv" in names, key


def test_headline_metrics_and_timings_helpers():
    line = allure_description.metrics_line(
        record("h", metrics={"bias_ulp": -0.0084, "n": 127007, "nonfinite_mismatch": 3})
    )
    assert line == (
        "metrics: MERE 1e-07, MARE 1e-06, RMSE 1e-07, max abs 1e-06, max ULP 1,"
        " bias -0.008 ulp, elements 127,007, NaN/inf mismatches 3"
    )
    assert allure_description.metrics_line(rejected_ok("r")) is None
    assert (
        allure_description.metrics_line(record("x", metrics={"mere": "n/a"})) is not None
    )  # skips it
    assert allure_description.run_line(record("t", attempts=2, timings={"wall_s": 1.23456})) == (
        "ran on emu-a2-0:0, attempts 2; time (s): wall 1.23"
    )
    assert allure_description.run_line({"host": "h", "timings": None}) == "ran on h"
    assert allure_description.run_line({}) == ""


def test_case_line_of_records_the_generators_do_not_make():
    """Imported cases (fills, ranges, rank 0, empty axes) and records missing fields say what
    they have; a record without any of it adds no line."""
    line = allure_description.case_line(
        {
            "dtype": "float16",
            "shape": [],
            "axes": [],
            "api": "axes",
            "y_dist": "fill",
            "dy_dist": "range",
            "special": "nan",
            "layout": "strided",
        }
    )
    assert line == "case: float16, shape (), axes (), y fill, dy range, special nan, layout strided"
    assert allure_description.case_line(
        {"dtype": "bfloat16", "shape": [0, 3], "axes": [0], "api": "dim"}
    ) == ("case: bfloat16, shape (0, 3), dim 0")
    assert (
        allure_description.case_line({"shape": [7], "axes": None, "special": "none"})
        == "case: shape (7,)"
    )
    assert allure_description.case_line({}) is None
    assert allure_description.description({"outcome": "broken"}).split("\n")[0].startswith("**")


def test_the_host_checks_line_says_only_what_the_verdict_does_not():
    accepted = {"decided_by": "", "host": "ok", "shared": "ok", "tiling_mismatch": ""}
    assert allure_description.checks_line({"checks": accepted}) is None
    assert allure_description.checks_line({}) is None  # the twin's and the torch backend's records
    refused = {"decided_by": "registration", "host": "bf16_unsupported_on_soc"}
    refused["shared"] = "bf16_unsupported_on_soc"
    assert allure_description.checks_line({"checks": refused}) == (
        "host checks: decided by the registration (bf16_unsupported_on_soc); "
        "the shared checks: bf16_unsupported_on_soc"
    )
    let_through = dict(accepted, shared="bf16_unsupported_on_soc")
    assert allure_description.checks_line({"checks": let_through}) == (
        "host checks: accepted by every layer; the shared checks: bf16_unsupported_on_soc"
    )
    mismatch = dict(accepted, tiling_mismatch="blockElems 4912 (planned 9824)")
    line = allure_description.checks_line({"checks": mismatch})
    assert line is not None and line.endswith("tiling mismatch: blockElems 4912 (planned 9824)")
    assert line in allure_description.description({"checks": mismatch})


def test_the_device_line_says_which_runtime_and_device_ran_it():
    assert allure_description.device_line({}) is None  # native, torch: no device path
    run = {
        "runtime": "lsg emulated ACL runtime 0.1.0; soc=Ascend910B1; devices=2",
        "op_api": "/w/acl/lib/libcust_opapi.so",
        "device_id": 1,
        "entry": "aclnnLogSoftmaxBackward",
        "device_s": 0.0125,
    }
    line = allure_description.device_line({"device_run": run})
    assert line == (
        "device: aclnnLogSoftmaxBackward on device 1 of lsg emulated ACL runtime 0.1.0; "
        "soc=Ascend910B1; devices=2; 12.500 ms on the device (ACL events)"
    )
    assert line in allure_description.description({"device_run": run}, detailed=False)
    untimed = allure_description.device_line({"device_run": dict(run, device_s=None)})
    assert untimed is not None and "ms" not in untimed


def test_identity_parameters(results):
    _, res = results
    r = res[("prec-f32-tail", "'ascend910b'")]
    assert not _param(r, "family").get("excluded")
    for name in ("host", "seed"):
        assert _param(r, name).get("excluded") is True, name
    # What the case is: the description's first line; slot, attempts and timings: its last line.
    # Not parameters: the report repeats every shown parameter of every case in its search
    # indexes.
    names = {p["name"] for p in r["parameters"]}
    assert names == {"family", "host", "seed", "key", "case"}, names
    assert r["description"].startswith(
        "case: float32, shape (4, 1024), dim -1, y uniform, dy normal\n\n**expect precision"
    )
    # A pass outside the plot sample says less than a failure: no verdict line, no tiling, the
    # wall time only (the report's size grows with failures, not with passes).
    assert r["description"].endswith("\n\nran on emu-a2-0:0; time (s): wall 0.03")
    assert "tiling:" not in r["description"] and "PASS" not in r["description"]
    bad = res[("prec-f16-mid", "'ascend910b'")]["description"]
    assert "experimental: MARE 3.1e-2 >= 10T (9.8e-3); worst at (2, 7)" in bad
    assert "\n\ntiling: " in bad and "\n\n\n" not in bad
    assert bad.endswith(
        "\n\nran on emu-a2-0:0; time (s): backend 0.01, golden 0.002, total 0.02, wall 0.03"
    )
    axes_case = res[("tiling-chunks", "'ascend910b'")]["description"]
    assert axes_case.startswith("case: float32, shape (3, 4, 5), axes (1, 2), ")
    strided = res[("strided-empty", "'ascend910b'")]["description"]
    assert strided.split("\n")[0].endswith(", layout strided"), strided
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
    assert _labels(get("nan-dy"), "severity") == ["critical"]
    # One feature a case (the report's tree groups by it: two would count a case twice in its
    # environment's header); what else it exercises is a tag.
    for cid, tags in (
        ("nan-dy", ["special values"]),
        ("strided-empty", ["strided", "empty"]),
        ("tiling-chunks", ["tiling"]),
        ("prec-f16-mid", []),
    ):
        assert _labels(get(cid), "feature") == ["precision"], cid
        # No tag repeats the family, the dtype or the schedule.
        assert _labels(get(cid), "tag") == tags, cid


def test_test_items_draw_no_plot(session):
    """annotate leaves the plot's data, never a PNG, and never imports matplotlib."""
    assert session["modules"] and "farm.run.allure.glue" in session["modules"]
    assert not [m for m in session["modules"] if m.split(".")[0] == "matplotlib"]
    assert "farm.run.plots" not in session["modules"]
    assert not [n for n in session["items_files"] if n.endswith(".png")]
    for key, r in session["items"].items():
        names = [a["name"] for a in r.get("attachments", [])]
        assert "error distribution.png" not in names and "plot error" not in names, key


def test_test_items_attach_the_plot_data(session):
    d, items = session["dir"], session["items"]
    inside, outside, bad_plot = _sampled_ids()
    by_id = {(r["case_id"], repr(r["family"])): r for r in session_records()}
    with_data = set()
    for key, r in items.items():
        data = [
            a for a in r.get("attachments", []) if a["name"] == allure_attachments.PLOT_DATA_NAME
        ]
        if not data:
            continue
        with_data.add(key[0])
        assert len(data) == 1 and data[0]["type"] == "application/json", key
        raw = (d / data[0]["source"]).read_bytes()
        assert len(raw) < 2000, key  # small: the histogram and a few numbers
        rec = by_id[key]
        assert json.loads(raw) == allure_attachments.plot_data(rec)
        assert json.loads(raw)["metrics"].get("hist") == rec["metrics"]["hist"]
    assert with_data == {
        cid for (cid, _), rec in by_id.items() if allure_attachments.wants_plot(rec)
    }
    assert {"prec-f16-mid", inside, bad_plot} <= with_data
    assert not {outside, "rej-ok", "crash-1"} & with_data  # passes outside the sample, no metrics


def test_report_step_draws_each_plot_once_into_its_result(session):
    d, items, res = session["dir"], session["items"], session["results"]
    first, second = session["counts"]
    planned = _with(items)
    assert (first.plots, first.errors) == (len(planned) - 1, 1)  # bad_plot: a plot error
    assert (second.plots, second.errors) == (0, 0)  # idempotent: nothing left to draw
    assert session["rendered_files"] == _files(d)  # the second pass changed no file
    by_id = {(r["case_id"], repr(r["family"])): r for r in session_records()}
    pngs = [n for n in _files(d) if n.endswith("-attachment.png")]
    assert len(pngs) == first.plots
    for key in planned:
        before = [a["name"] for a in items[key]["attachments"]]
        after = res[key]["attachments"]
        # The data entry became the plot, in its place; every other entry is as it was.
        i = before.index(allure_attachments.PLOT_DATA_NAME)
        assert [a["name"] for a in after] == [
            *before[:i],
            "plot error" if key[0] == _sampled_ids()[2] else "error distribution.png",
            *before[i + 1 :],
        ]
        assert res[key]["status"] == items[key]["status"]  # a plot never changes a verdict
        assert res[key].get("statusDetails") == items[key].get("statusDetails")
        entry = after[i]
        if entry["name"] == "plot error":
            assert entry["type"] == "text/plain"
            assert (d / entry["source"]).read_text().startswith("plot failed: ValueError")
            continue
        assert entry["type"] == "image/png" and entry["source"].endswith("-attachment.png")
        # The plot of this very case: the same PNG as drawn from its whole record.
        assert (d / entry["source"]).read_bytes() == error_histogram_png(by_id[key])
    for key, r in res.items():
        assert allure_attachments.PLOT_DATA_NAME not in [
            a["name"] for a in r.get("attachments", [])
        ], key


def test_report_step_in_worker_processes_draws_the_same_files(session, tmp_path):
    """The pool the report step uses for many plots gives the very files one process gives."""
    for name, data in session["items_files"].items():
        (tmp_path / name).write_bytes(data)
    counts = render_case_plots(tmp_path, jobs=2)
    assert (counts.plots, counts.errors) == (session["counts"][0].plots, 1)
    assert _files(tmp_path) == session["rendered_files"]


def test_plots_drawn_in_the_background_are_the_report_steps(session, tmp_path):
    """`farm run` draws the plots while it stores the records: the same files, and the report
    step then finds nothing left to draw."""
    for name, data in session["items_files"].items():
        (tmp_path / name).write_bytes(data)
    assert BackgroundDrawing(tmp_path).join() is True
    assert _files(tmp_path) == session["rendered_files"]
    again = render_case_plots(tmp_path)
    assert (again.plots, again.errors, again.passes_left) == (0, 0, 0)


def test_plots_that_cannot_be_written_leave_the_report_without_them(monkeypatch, capsys):
    def read_only(results_dir):
        raise OSError(30, "Read-only file system", str(results_dir))

    monkeypatch.setattr(case_plots, "render_case_plots", read_only)
    # The report step then looks for the plots again (report.Judged.plots_drawn).
    assert BackgroundDrawing("/nowhere/allure-results").join() is False
    err = capsys.readouterr().err
    assert "error-distribution plots not drawn" in err and "Read-only file system" in err


def _with(items: dict, name: str = allure_attachments.PLOT_DATA_NAME) -> list:
    return [k for k, r in items.items() if name in [a["name"] for a in r.get("attachments", [])]]


def test_attachments_of_failures_and_sampled_passes(results):
    d, res = results
    inside, outside, _ = _sampled_ids()

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
    assert "metrics.json" in names(inside) and "metrics.json" not in names(outside)


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
        prefixed = re.search(r"\\\[\(\?:([a-z_]+)", c["messageRegex"])
        assert prefixed, c["messageRegex"]
        prefix = prefixed.group(1)
        assert re.fullmatch(c["messageRegex"], f"Failed: [{prefix}] two\nlines", re.S)


def test_failure_message_helper():
    assert (
        allure_categories.failure_message(failed("x", message="bad\n  thing"))
        == "[precision] bad thing"
    )
    r = record("y", outcome="broken", category=None, message="")
    assert allure_categories.failure_message(r) == "[infrastructure] y broken"
    for cat, prefix in allure_categories.CATEGORY_PREFIXES.items():
        assert allure_categories.failure_message(failed("z", category=cat)).startswith(prefix)


def test_environment_says_what_the_target_is():
    # The run's target, as people read it: the default is the emulated real kernel.
    props = allure_environment.environment_properties({"run_id": "r", "target": "ascendc-cpu"})
    assert props["target"] == "ascendc-cpu (the real Ascend C kernel on the CPU emulation)"
    props = allure_environment.environment_properties(
        {"run_id": "r", "package": {"target": "ascendc-cpu"}}
    )
    assert props["target"] == "ascendc-cpu (the real Ascend C kernel on the CPU emulation)"
    assert "package.planted_bug" not in props
    # A planted bug's run (a test of the farm) says so: its failures are the bug's.
    planted = {"file": "logsoftmaxgrad-0.1.0-ascendc-cpu-bug-tail_mod-aarch64.tar.gz"}
    props = allure_environment.environment_properties({"run_id": "r", "package": planted})
    assert props["package.planted_bug"] == "tail_mod"


def test_kernel_fault_is_a_category_of_its_own():
    rule = next(
        c for c in allure_categories.CATEGORIES if c["name"] == "Kernel fault (emulated device)"
    )
    assert rule["matchedStatuses"] == ["failed"]
    message = allure_categories.failure_message(
        failed("k", category="kernel_fault", message="DataCopy: x")
    )
    assert message == "[kernel_fault] DataCopy: x"
    regex = rule["messageRegex"]
    assert isinstance(regex, str) and re.search(regex, message)


def test_reports_categories_json_is_the_glue_list():
    on_disk = json.loads((REPORTS_DIR / "categories.json").read_text())
    assert on_disk == allure_categories.CATEGORIES


def test_environment_and_executor_files(results, monkeypatch):
    d, _ = results
    props = dict(
        line.split("=", 1) for line in (d / "environment.properties").read_text().splitlines()
    )
    assert props["package.version"] == "0.1.0"
    assert props["package.sha256"] == "ab" * 32
    assert props["git.commit"].startswith("0123456789")
    assert props["target"] == "twin (the CPU twin, a second implementation of the kernel's design)"
    assert props["farm.version"] == "0.1.0"
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
    ex = allure_environment.executor_info({"run_id": "r1"}, env=gh)
    assert (
        ex["type"] == "github" and ex["buildUrl"] == "https://github.com/org/farm/actions/runs/42"
    )
    assert ex["buildOrder"] == 7
    ex = allure_environment.executor_info(
        {"run_id": "r1"},
        env={"CI_JOB_URL": "https://gl/j/5", "CI_PIPELINE_ID": "9", "CI_JOB_NAME": "farm"},
    )
    assert ex["type"] == "gitlab" and ex["buildUrl"] == "https://gl/j/5"
    ex = allure_environment.executor_info(
        {}, env={"BUILD_URL": "https://jenkins/job/1/", "BUILD_NUMBER": "1"}
    )
    assert ex["type"] == "jenkins"
    assert allure_environment.executor_info({}, env={})["type"] == "local"


def test_properties_escaping(tmp_path):
    allure_environment.write_results_extras(
        tmp_path, {"run_id": "r", "inventory": {"h 1": "Ascend910B1"}, "target": "line1\nline2 ü"}
    )
    text = (tmp_path / "environment.properties").read_text()
    assert "host.h\\ 1=Ascend910B1" in text and "target=line1\\nline2 \\u00fc" in text
    assert Path(tmp_path / "categories.json").is_file()


def test_report_step_draws_a_bounded_sample_of_passes(tmp_path):
    """Every failure's plot; of the sampled passes, at most `passes_per_group` per (family,
    dtype), the first in sample-hash order; the others lose their data entry (no plot, no
    attachment). The same cases whatever the order the results are read in."""
    *sampled, half = [
        i for i in (f"pass-{n}" for n in range(400)) if allure_attachments.plot_sampled(i)
    ][:6]
    recs = [record(cid) for cid in sampled]
    recs.append(record(sampled[0], family="ascend310b", host="emu-310-0", soc="Ascend310B1"))
    recs.append(record(half, dtype="float16"))
    recs.append(failed("fail-1"))
    recs.append(failed("fail-2"))
    d = run_allure_session(tmp_path, recs, name="bounded")
    counts = render_case_plots(d, passes_per_group=2)
    res = _read_results(d)
    first = sorted(sampled, key=allure_attachments.sample_hash)[:2]
    plotted = {k for k, r in res.items() if "error distribution.png" in _names(r)}
    assert plotted == {
        *((cid, "'ascend910b'") for cid in first),
        (sampled[0], "'ascend310b'"),  # a group of its own
        (half, "'ascend910b'"),  # another dtype: a group of its own too
        ("fail-1", "'ascend910b'"),
        ("fail-2", "'ascend910b'"),
    }
    assert (counts.plots, counts.errors, counts.passes_left) == (6, 0, 3)
    for key, r in res.items():
        assert allure_attachments.PLOT_DATA_NAME not in _names(r), key
        if key not in plotted:  # a sampled pass beyond the bound keeps its metrics.json
            assert _names(r) == ["metrics.json"], key
    assert render_case_plots(d, passes_per_group=2) == type(counts)()  # nothing left to do


def _names(result: dict) -> list[str]:
    return [a["name"] for a in result.get("attachments", [])]


def test_only_a_departure_from_the_contract_is_tagged():
    departure = (
        "the source expects acceptance on ascend310b; the contract (SPEC section 2) rejects it "
        "(bf16_unsupported_on_soc): judged by the contract"
    )
    assert glue.departs({"note": departure})
    assert glue.departs({"note": "field 'priority' not read; " + departure})
    # What the farm could not express is a note shown on the case, not a departure.
    assert not glue.departs({"note": "grad format NCHW read as ND (the same memory order)"})
    assert not glue.departs({"note": ""}) and not glue.departs({})
