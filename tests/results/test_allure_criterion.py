"""A failed precision case's plot and worst-elements table show the gate that failed it
(farm/run/allure/criterion.py): each element's score against that gate's limit, 1, ranked by it,
so that the element the failure message names comes first."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import numpy as np
from PIL import Image

from farm.run.allure import criterion as criterion_mod
from farm.run.allure.attachments import json_default, plot_data, worst_csv
from farm.run.plots import error_histogram_png
from golden import judge, ratio_hist, standards

from .conftest import failed, record


def _judged(out_scale: np.ndarray | None = None, dtype: str = "float32") -> dict[str, Any]:
    """A record as the agent makes it (farm/agent/execute.py _judge) of a 3x17 case whose
    output is the golden, rounded, times `out_scale`."""
    rng = np.random.default_rng(7)
    y = np.log(rng.dirichlet(np.ones(17), size=3)).astype(dtype)
    dy = rng.standard_normal((3, 17)).astype(dtype)
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    golden = dy64 - np.exp(y64) * dy64.sum(axis=-1, keepdims=True)
    out = (golden * (1.0 if out_scale is None else out_scale)).astype(dtype)
    j = judge.judge_case(dy, y, out, (-1,), dtype)
    metrics = json.loads(json.dumps(j.metrics, default=json_default))
    return record(
        "910b_f32_3x17_d-1_y.uniform_dy.normal",
        outcome="passed" if j.passed else "failed",
        category=None if j.passed else "precision",
        message=j.reason,
        shape=[3, 17],
        metrics=metrics,
        standards={
            name: {"passed": v.passed, "reason": v.reason, "gated": name in j.gates}
            for name, v in j.verdicts.items()
        },
    )


def test_the_gate_names_are_goldens():
    assert criterion_mod.ERROR_BOUND == standards.ERROR_BOUND
    assert criterion_mod.GATE_ORDER == (
        standards.ERROR_BOUND,
        *standards.STANDARDS,
        judge.CASE_TOLERANCE,
    )


def test_an_error_bound_failure_plots_error_over_bound_with_the_named_element_first():
    # Every element off by about 1e-4 of itself: the largest relative error and the largest
    # error over its bound are different elements (each element's bound is its own).
    rec = _judged(1 + 1e-4 * (1 + 0.01 * np.arange(51).reshape(3, 17)))
    assert rec["outcome"] == "failed" and rec["message"].startswith("FAIL error-bound")
    named = re.search(r"worst at \((\d+), (\d+)\)", rec["message"])
    assert named is not None
    data = json.loads(json.dumps(plot_data(rec), default=json_default))
    crit = data["criterion"]
    assert crit["standard"] == "error-bound" and crit["measure"] == "error / bound"
    # The data say the failing criterion is over its limit, and by how much.
    assert crit["max"] > 1 and crit["max"] == rec["metrics"]["bound_max_ratio"]
    scores = [e["score"] for e in crit["elements"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > 1
    assert tuple(crit["elements"][0]["index"]) == tuple(int(g) for g in named.groups())
    assert re.match(r"\d+ of 51 elements over their bound", crit["summary"])
    # The relative-error ranking would put another element first: the table does not.
    assert rec["metrics"]["worst"][0]["index"] != crit["elements"][0]["index"]
    table = worst_csv(rec)
    assert table is not None
    lines = table.splitlines()
    assert lines[0] == "rank,index,actual,golden,abs_err,rel_err,bound,error / bound"
    assert lines[1].startswith(f'1,"({named.group(1)}, {named.group(2)})",')
    assert float(lines[1].rsplit(",", 1)[1]) > 1


def test_the_plot_draws_the_criterion_above_the_errors():
    rec = _judged(np.full((3, 17), 1 + 1e-4))
    with_criterion = Image.open(io.BytesIO(error_histogram_png(plot_data(rec))))
    passed = _judged()
    assert passed["outcome"] == "passed" and "criterion" not in plot_data(passed)
    # A record without the histogram of every element's error over its bound (an older agent's)
    del passed["metrics"]["bound_hist"]
    without = Image.open(io.BytesIO(error_histogram_png(plot_data(passed))))
    # Two panels: the gate against its limit, then the relative errors.
    assert with_criterion.size[1] > 1.5 * without.size[1]


def test_the_plot_data_hold_every_elements_error_over_its_bound_with_the_failures_above_1():
    # issue 58: "its plot's data show the failing criterion above 1", for every element
    rec = _judged(1 + 1e-4 * (1 + 0.01 * np.arange(51).reshape(3, 17)))
    passed = _judged()
    for case in (rec, passed):
        data = json.loads(json.dumps(plot_data(case), default=json_default))
        hist = data["metrics"]["bound_hist"]
        # every element is in it, not only the worst the record keeps
        assert sum(hist["counts"]) + hist["zeros"] == 51 > len(case["metrics"]["bound_worst"])
        over = ratio_hist.above_one(hist)
        if case is rec:
            assert over == rec["metrics"]["bound_violations"] == data["criterion"]["over"] > 8
        else:
            assert over == 0 and max(i for i, c in enumerate(hist["counts"]) if c) > 0
    # Both plots draw it above the relative errors: the pass shows how far below 1 it is.
    pngs = [error_histogram_png(plot_data(c)) for c in (rec, passed)]
    tall = [Image.open(io.BytesIO(png)).size[1] for png in pngs]
    assert tall[0] == tall[1]


def test_a_public_standard_is_measured_against_its_own_limit():
    rec = failed(
        "910b_f16_4x64_d-1_y.uniform_dy.normal",
        dtype="float16",
        metrics={
            "dtype": "float16",
            "mere": 4e-3,
            "mare": 3.1e-2,
            "worst": [
                {"index": [1, 2], "abs_err": 1e-3, "golden": 0.1, "rel_err": 1e-2},
                {"index": [0, 9], "abs_err": 2e-3, "golden": 0.05, "rel_err": 3.1e-2},
            ],
        },
        standards={
            "error-bound": {"passed": True, "reason": "PASS", "gated": True},
            "experimental": {"passed": False, "reason": "FAIL", "gated": True},
            "mixed-tolerance": {"passed": False, "reason": "FAIL", "gated": False},
        },
    )
    crit = criterion_mod.failing_criterion(rec)
    assert crit is not None and crit["standard"] == "experimental"
    t = 2.0**-10
    assert crit["parts"]["MERE / T"] == 4e-3 / t
    assert crit["parts"]["MARE / 10T"] == 3.1e-2 / (10 * t)
    assert [e["index"] for e in crit["elements"]] == [[0, 9], [1, 2]]
    assert crit["max"] == max(crit["parts"].values()) > 1
    header = (worst_csv(rec) or "").splitlines()[0]
    assert header.endswith(",rel_err,rel error / 10T")


def test_no_criterion_without_a_failed_gate():
    assert criterion_mod.failing_criterion(record("c", standards={})) is None
    crash = failed("c", category="crash", metrics=None, standards={})
    assert criterion_mod.failing_criterion(crash) is None
    # A passed case keeps the table it had.
    assert (worst_csv(record("c")) or "").splitlines()[0] == (
        "rank,index,actual,golden,abs_err,rel_err"
    )
