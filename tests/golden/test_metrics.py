"""compute_metrics on small hand-worked arrays."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from golden.dtypes import round_to
from golden.metrics import compute_metrics


def test_hand_worked_float32() -> None:
    actual = np.array([1.0, 2.0, 4.0, np.nan], dtype=np.float32)
    golden = np.array([1.0, 2.5, 3.0, np.nan])
    m = compute_metrics(actual, golden, "float32", k=2)
    rel = [0.0, 0.5 / (2.5 + 1e-7), 1.0 / (3.0 + 1e-7)]
    assert m["n"] == 4 and m["n_compared"] == 3
    assert m["nonfinite_ok"] is True and m["nonfinite_mismatch"] == 0 and m["nan_golden"] == 1
    assert m["mere"] == pytest.approx(sum(rel) / 3, rel=1e-15)
    assert m["mare"] == m["max_rel"] == pytest.approx(rel[2], rel=1e-15)
    assert m["rmse"] == pytest.approx(math.sqrt((0 + 0.25 + 1) / 3), rel=1e-15)
    assert m["max_abs"] == 1.0
    # float32 spacing in [2, 4) is 2**-22: 0.5 is 2**21 steps, 1.0 is 2**22 steps
    assert m["ulp_max"] == 2**22 and m["ulp_mean"] == pytest.approx((2**21 + 2**22) / 3)
    assert [w["index"] for w in m["worst"]] == [[2], [1]]
    w = m["worst"][0]
    assert (w["actual"], w["golden"], w["abs_err"]) == (4.0, 3.0, 1.0)
    assert w["rel_err"] == pytest.approx(rel[2]) and w["ulp"] == 2**22
    # mixed-tolerance: |a-g| <= T + T|g| holds only for the exact element
    assert m["mixed_ok"] == 1 and m["mixed_ok_fraction"] == pytest.approx(1 / 3)
    assert m["dt_rel_over"] == 2 and m["dt_abs_over"] == 2
    json.dumps(m)


def test_multi_index_and_k_limit() -> None:
    golden = np.arange(24, dtype=np.float64).reshape(2, 3, 4) + 1.0
    actual = golden.copy()
    actual[1, 2, 3] *= 1.5  # rel 0.5
    actual[0, 1, 0] *= 1.25  # rel 0.25
    m = compute_metrics(actual.astype(np.float32), golden, "float32", k=8)
    assert len(m["worst"]) == 8
    assert m["worst"][0]["index"] == [1, 2, 3] and m["worst"][1]["index"] == [0, 1, 0]
    assert m["worst"][0]["rel_err"] == pytest.approx(0.5, rel=1e-6)
    assert compute_metrics(actual, golden, "float32", k=0)["worst"] == []
    r0 = compute_metrics(np.float32(2.0), np.array(1.0), "float32")
    assert r0["worst"][0]["index"] == [] and r0["mare"] == pytest.approx(1.0, rel=1e-6)


def test_ulp_in_the_case_dtype() -> None:
    golden = np.array([1.0, 1.0, 2.0**-25, 1000.0])
    actual = np.array([1.0 + 2**-10, 1.0 - 2**-11, 0.0, 1000.0], dtype=np.float16)
    m = compute_metrics(actual, golden, "float16")
    assert m["ulp_max"] == 1 and m["ulp_mean"] == pytest.approx(0.5)  # 2**-25 ties to 0
    g = np.linspace(-3, 3, 101)
    assert compute_metrics(round_to(g, "bfloat16"), g, "bfloat16")["ulp_max"] == 0


def test_small_value_counts() -> None:
    # float16: |golden| < 2**-11 is small; an error above 2**-16 there counts
    golden = np.array([1e-4, 1e-4, -3e-4, 1.0, 0.0])
    actual = np.array([1e-4 + 2**-15, 1e-4 + 2**-17, -3e-4, 1.0 + 2**-10, 2**-14])
    m = compute_metrics(actual, golden, "float16")
    assert m["small_n"] == 4 and m["small_err_count"] == 2
    assert m["small_threshold"] == 2**-11 and m["small_err_bound"] == 2**-16
    m32 = compute_metrics(actual, golden, "float32")
    assert m32["small_n"] == 1 and m32["small_err_count"] == 1  # only 0.0 is below 2**-14


def test_nonfinite_positions() -> None:
    golden = np.array([np.nan, np.inf, -np.inf, 1.0, 2.0, 3.0])
    actual = np.array([np.nan, np.inf, np.inf, np.nan, -np.inf, 3.0])
    m = compute_metrics(actual, golden, "float32")
    assert m["nonfinite_ok"] is False
    assert m["nonfinite_mismatch"] == 3 and m["nan_mismatch"] == 1 and m["inf_mismatch"] == 2
    assert [e["index"] for e in m["nonfinite"]] == [[2], [3], [4]]
    second = m["nonfinite"][1]
    assert (second["actual_class"], second["golden_class"]) == ("nan", "finite")
    assert m["n_compared"] == 1 and m["mare"] == 0.0  # NaN/inf left out of the error metrics
    ok = compute_metrics(golden[:3].copy(), golden[:3], "float32")
    assert ok["nonfinite_ok"] and ok["n_compared"] == 0 and ok["mere"] == 0.0


def test_empty() -> None:
    m = compute_metrics(np.zeros((0, 3), np.float16), np.zeros((0, 3)), "float16")
    assert m["n"] == 0 and m["n_compared"] == 0 and m["worst"] == []
    assert m["mere"] == m["mare"] == m["rmse"] == m["max_abs"] == 0.0 and m["nonfinite_ok"]
    json.dumps(m, allow_nan=False)


def test_errors() -> None:
    with pytest.raises(ValueError, match="shape"):
        compute_metrics(np.zeros(3), np.zeros(4), "float32")
    with pytest.raises(ValueError, match="float64"):
        compute_metrics(np.zeros(3), np.zeros(3), "float64")


def test_plain_python_types() -> None:
    rng = np.random.default_rng(0)
    g = rng.standard_normal((7, 9))
    m = compute_metrics(round_to(g, "bfloat16"), g, "bfloat16")

    def walk(v: object) -> None:
        if isinstance(v, dict):
            assert all(isinstance(k, str) for k in v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        else:
            assert type(v) in (int, float, bool, str, type(None)), (v, type(v))

    walk(m)
    assert json.loads(json.dumps(m)) == m


def test_chunking_does_not_change_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    import golden.metrics as gm

    rng = np.random.default_rng(5)
    g = rng.standard_normal((13, 77))
    a = round_to(g * (1 + 1e-3 * rng.standard_normal(g.shape)), "float16")
    g[2, 5] = np.nan
    a[2, 5] = np.nan
    a[9, 70] = np.inf  # one mismatch in a later chunk
    whole = compute_metrics(a, g, "float16", k=5)
    monkeypatch.setattr(gm, "CHUNK", 64)
    chunked = compute_metrics(a, g, "float16", k=5)
    for key, value in whole.items():
        if isinstance(value, float):
            assert chunked[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert chunked[key] == value, key
    assert whole["nonfinite"][0]["index"] == [9, 70] and len(whole["worst"]) == 5
