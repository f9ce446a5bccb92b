"""The case page's trace (Allure's statusTrace) of a farm case is what a person needs: its
verdict, the criterion that failed it and the command that reruns it, never pytest's plumbing;
a farm bug keeps its Python traceback (farm/run/allure/status_trace.py, farm/run/plugin.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from farm.run import plugin
from farm.run.allure.status_trace import replaces, status_trace
from suites.tiling import TilingMismatch

from .conftest import record
from .test_allure_criterion import _judged

OPTIONS = {"target": "ascendc-cpu", "plant_bug": "trunc_narrow", "backend": "native"}


def test_a_precision_failures_trace_is_its_verdict_criterion_and_repro_line():
    rec = _judged(1 + 1e-4 * (1 + 0.01 * np.arange(51).reshape(3, 17)))
    lines = status_trace(rec, OPTIONS).splitlines()
    assert lines[0].startswith("[precision] FAIL error-bound float32")
    assert lines[1].startswith("failing criterion: error-bound, each element's error / bound")
    assert "51 of 51 elements over their bound" in lines[1] and "the largest 1.01e+03x" in lines[1]
    assert lines[2].startswith("worst element (") and "(actual " in lines[2]
    assert lines[3] == (
        f"rerun it alone: farm repro {rec['case_id']} --plant-bug trunc_narrow --backend native"
    )
    assert "Traceback" not in "\n".join(lines) and "assert" not in "\n".join(lines)


def test_a_broken_cases_trace_says_its_category_and_how_to_rerun_it():
    rec = record("c1", outcome="broken", category="infrastructure", message="host h unreachable")
    assert status_trace(rec, {}).splitlines() == [
        "[infrastructure] host h unreachable",
        "category: infrastructure",
        "rerun it alone: farm repro c1",
    ]


def test_only_a_cases_verdict_is_replaced_a_farm_bug_keeps_its_traceback():
    assert replaces(AssertionError("x"), plugin.InfrastructureBroken)
    assert replaces(plugin.InfrastructureBroken("x"), plugin.InfrastructureBroken)
    assert replaces(TilingMismatch("[tiling] x"), plugin.InfrastructureBroken)
    for bug in (KeyError("metrics"), TypeError("x"), RuntimeError("x")):
        assert not replaces(bug, plugin.InfrastructureBroken)


@pytest.mark.parametrize("raised", [AssertionError("[precision] x"), KeyError("metrics")])
def test_the_plugin_replaces_the_report_of_a_verdict_and_keeps_a_farm_bugs(raised, monkeypatch):
    rec = record("c1", outcome="failed", category="precision", message="FAIL x")
    config = SimpleNamespace(stash={plugin.PLAN: SimpleNamespace()})
    monkeypatch.setattr("farm.run.allure.repro_line.run_options", lambda plan: {})
    item = SimpleNamespace(config=config)
    report = SimpleNamespace(longrepr="Traceback (most recent call last): ...")
    call = SimpleNamespace(excinfo=SimpleNamespace(value=raised))
    plugin._verdict_trace(item, call, report, rec)
    if isinstance(raised, AssertionError):
        assert (
            report.longrepr
            == "[precision] FAIL x\ncategory: precision\nrerun it alone: farm repro c1"
        )
    else:
        assert report.longrepr.startswith("Traceback")


def test_nan_positions_that_failed_the_bound_are_said_not_scored_as_zero():
    from .conftest import failed

    rec = failed(
        "c2",
        dtype="float16",
        message="FAIL error-bound float16: NaN/inf positions differ from the golden at 48 of 48",
        metrics={
            "dtype": "float16",
            "n": 48,
            "nonfinite_mismatch": 48,
            "bound_n": 0,
            "bound_violations": 0,
            "bound_max_ratio": 0.0,
            "bound_worst": [],
        },
        standards={"error-bound": {"passed": False, "reason": "FAIL", "gated": True}},
    )
    line = status_trace(rec, {}).splitlines()[1]
    assert line == (
        "failing criterion: error-bound: NaN/inf positions differ from the golden at 48 of 48 "
        "elements"
    )
