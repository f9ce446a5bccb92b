"""Plots: the numpy-only histogram the agent sends, and the PNGs drawn from it."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from farm.agent import histogram as plots_data
from farm.run import plots
from farm.run.allure.attachments import plot_data

from .conftest import failed, record, rejected_ok

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _image(png: bytes):
    assert png.startswith(PNG_MAGIC)
    return matplotlib.image.imread(io.BytesIO(png), format="png")


def test_plots_data_imports_only_numpy_and_the_bundles_maths():
    """It runs in the agent: numpy and golden/ (its fused binning), nothing of the farm."""
    src = Path(plots_data.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"numpy", "golden", "__future__"}, imported


def test_histogram_counts_every_element_once():
    rng = np.random.default_rng(0)
    err = np.concatenate(
        [10.0 ** rng.uniform(-9, -3, 1000), [0.0, 0.0, np.nan, np.inf], [1e-30, 1e5]]
    )  # below the first edge, above the last
    h = plots_data.golden_free_histogram(err)
    assert h["n"] == err.size and h["zeros"] == 2 and h["nonfinite"] == 2
    assert sum(h["counts"]) + h["zeros"] + h["nonfinite"] == err.size
    assert len(h["edges"]) == len(h["counts"]) + 1
    assert h["counts"][0] >= 1 and h["counts"][-1] >= 1  # clamped, not dropped
    # The bins hold what log10 says: 1e-6 falls in [-6, -5.75).
    one = plots_data.golden_free_histogram(np.array([1e-6]))
    i = one["counts"].index(1)
    assert one["edges"][i] <= -6 < one["edges"][i + 1]
    assert len(json.dumps(h)) < 2000  # small enough for the wire


def test_histogram_custom_edges_and_validation():
    h = plots_data.golden_free_histogram(np.array([1e-3, 1e-2, 0.5]), edges=[-4, -2, 0])
    assert h["counts"] == [1, 2]
    with pytest.raises(ValueError):
        plots_data.golden_free_histogram(np.ones(3), edges=[0, 0])


def test_error_histogram_from_record_histogram():
    rec = record("h", dtype="float16", metrics={"mere": 2e-4, "mare": 9e-4})
    img = _image(plots.error_histogram_png(rec))
    assert img.shape[0] > 100 and img.shape[1] > 200
    # Also from a bare metrics dict, and from a real agent histogram.
    rel = np.abs(np.random.default_rng(1).normal(0, 1e-4, 10000))
    m = {
        "mere": float(rel.mean()),
        "mare": float(rel.max()),
        "hist": plots_data.golden_free_histogram(rel),
    }
    _image(plots.error_histogram_png(m, dtype="float32"))


def test_error_histogram_without_histogram_or_metrics():
    rec = record("w", metrics={"hist": None})
    _image(plots.error_histogram_png(rec))  # worst elements and MERE/MARE lines
    _image(plots.error_histogram_png(rejected_ok("r")))  # no metrics: says so, no crash


@pytest.mark.parametrize(
    "rec",
    [
        record("hist", dtype="float16", metrics={"mere": 2e-4, "mare": 9e-4}),
        record("worst-only", metrics={"hist": None}),
        failed("empty-hist", metrics={"hist": {"edges": [], "counts": []}}),
        failed(
            "mismatch",
            metrics={
                "nonfinite_mismatch": 7,
                "hist": {**record("x")["metrics"]["hist"], "nonfinite": 7},
            },
        ),
        rejected_ok("no-metrics"),
        {"case_id": "sparse"},
    ],
    ids=lambda r: r["case_id"],
)
def test_plot_data_draws_the_same_png_as_the_record(rec):
    """The test items attach only plot_data(record) (through JSON); the report step draws the
    PNG from it: the very PNG the whole record gives."""
    data = json.loads(json.dumps(plot_data(rec)))
    assert plots.error_histogram_png(data) == plots.error_histogram_png(rec)


def test_trend_png():
    pts = []
    for i in range(5):
        for fam, dt, base in (
            ("ascend910b", "float32", 1e-7),
            ("ascend910b", "float16", 2e-4),
            ("ascend310b", "float16", 2.2e-4),
        ):
            pts.append(
                {
                    "run_id": f"2026110{i}-smoke",
                    "family": fam,
                    "dtype": dt,
                    "mere_median": base * (1 + i / 10),
                    "mere_max": base * 3,
                    "mare_median": base * 10,
                    "mare_max": base * 30,
                }
            )
    pts.append(
        {
            "run_id": "20261106-smoke",
            "family": "ascend310b",
            "dtype": "bfloat16",
            "mere_median": None,
            "mere_max": None,
            "mare_median": None,
            "mare_max": None,
        }
    )
    img = _image(plots.trend_png(pts))
    assert img.shape[1] > 400
    _image(plots.trend_png([]))  # an empty store draws an empty chart
