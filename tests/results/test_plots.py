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
from farm.run import plots, trend_plot
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
    img = _image(trend_plot.trend_png(pts))
    assert img.shape[1] > 400
    _image(trend_plot.trend_png([]))  # an empty store draws an empty chart


def _point(run_id: str, started: str, kind: str = "whole", text: str = "", mere: float = 1e-7):
    return {
        "run_id": run_id,
        "started_at": started,
        "kind": kind,
        "kind_text": text,
        "family": "ascend910b",
        "dtype": "float32",
        "mere_median": mere,
        "mere_max": 2 * mere,
        "mare_median": 10 * mere,
        "mare_max": 20 * mere,
    }


def test_the_trend_marks_each_runs_kind_off_the_line_of_whole_runs():
    """A planted bug's run, a shard and a degraded run are marked by their kind and kept off the
    line; whole runs and merges make it; the axis says each run's time (and kind), not one date
    over and over."""
    pts = [
        _point("r1", "2026-11-29T09:00:00+00:00"),
        _point("r2", "2026-11-29T10:30:00+00:00", "planted", "planted bug tail", mere=1e-3),
        _point("r3", "2026-11-29T11:00:00+00:00", "shard", "shard 1/2"),
        _point("r4", "2026-11-29T11:20:00+00:00", "merged", "merged 2 shards"),
        _point("r5", "2026-11-29T12:00:00+00:00", "degraded", "degraded (exit 2)"),
        _point("r6", "2026-11-29T13:45:00+00:00"),
    ]
    data = trend_plot.trend_data(pts)
    assert [r.kind for r in data.runs] == [
        "whole", "planted", "shard", "merged", "degraded", "whole"
    ]  # fmt: skip
    assert [r.label for r in data.runs] == [
        "09:00",
        "10:30\nplanted bug tail",
        "11:00\nshard 1/2",
        "11:20\nmerged 2 shards",
        "12:00\ndegraded (exit 2)",
        "13:45",
    ]
    assert data.axis == "run start (UTC), 2026-11-29"
    line = data.points["mere"][("ascend910b", "float32")]
    assert [p.x for p in line if p.on_line] == [0, 3, 5]  # whole runs and the merge
    assert {p.kind for p in line if not p.on_line} == {"planted", "shard", "degraded"}
    assert data.kinds() == ["whole", "merged", "shard", "planted", "degraded"]
    _image(trend_plot.trend_png(pts))


def test_the_trends_time_labels():
    """The date once where the runs share it, else on each label; seconds where two runs share
    a minute; local offsets shown in UTC; a start that is no time is "?"."""
    labels, axis = trend_plot.time_labels(
        ["2026-11-29T23:59:00+00:00", "2026-11-30T08:00:00+08:00", "not a time"]
    )
    assert (labels, axis) == (["11-29 23:59", "11-30 00:00", "?"], "run start (UTC)")
    labels, _ = trend_plot.time_labels(["2025-12-31T10:00:00+00:00", "2026-01-01T10:00:00+00:00"])
    assert labels == ["2025-12-31 10:00", "2026-01-01 10:00"]
    labels, axis = trend_plot.time_labels(
        ["2026-11-29T10:00:05+00:00", "2026-11-29T10:00:40+00:00"]
    )
    assert (labels, axis) == (["10:00:05", "10:00:40"], "run start (UTC), 2026-11-29")


def test_a_trend_of_points_without_kinds_takes_them_for_whole_runs():
    """Points of an older caller (no kind) are whole runs, on the line."""
    pts = [{k: v for k, v in _point(f"r{i}", f"2026-11-2{i}T10:00:00+00:00").items()
            if k not in ("kind", "kind_text")} for i in range(3)]  # fmt: skip
    data = trend_plot.trend_data({"points": pts})
    assert [r.kind for r in data.runs] == ["whole"] * 3
    assert [r.label for r in data.runs] == ["11-20 10:00", "11-21 10:00", "11-22 10:00"]
