"""Planted errors and the verdict of each precision standard."""

from __future__ import annotations

import json

import numpy as np
import pytest

from golden.dtypes import SUPPORTED, T, nudge, round_to
from golden.inputs import make_inputs
from golden.metrics import compute_metrics
from golden.reference import log_softmax_grad, seed_wrong_no_reduce
from golden.standards import LEVELS, STANDARDS, BenchmarkRequired, Verdict, judge, judge_all

JUDGED = ("experimental", "mixed-tolerance", "double-thousandth")


def _case(
    dtype: str,
    shape: tuple[int, ...] = (32, 257),
    axes: tuple[int, ...] = (-1,),
    y_dist: str = "uniform",
    dy_dist: str = "uniform",
    seed: int = 3,
    special: str = "none",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dy, y = make_inputs(shape, dtype, axes, y_dist, dy_dist, special, seed=seed)
    return dy, y, log_softmax_grad(dy, y, axes)


def test_names() -> None:
    assert STANDARDS == ("experimental", "mixed-tolerance", "double-thousandth", "benchmark-ratio")
    assert LEVELS == ("L0", "L1", "L2")


@pytest.mark.parametrize("dtype", SUPPORTED)
def test_correctly_rounded_result_passes(dtype: str) -> None:
    _, _, g = _case(dtype)
    verdicts = judge_all(round_to(g, dtype), g, dtype)
    assert set(verdicts) == set(JUDGED)
    for std, v in verdicts.items():
        assert isinstance(v, Verdict) and v.standard == std
        if dtype == "bfloat16" and std == "double-thousandth":
            # SPEC section 5 gives bf16 the fp16 tolerance 1e-3, below bf16's own rounding
            # error (up to 2**-9 relative): even an exact bf16 result fails it.
            assert not v.passed, v.reason
        else:
            assert v.passed, v.reason
        assert v.reason.startswith("PASS" if v.passed else "FAIL") and "\n" not in v.reason
        json.dumps(v.to_dict())


@pytest.mark.parametrize("dtype", SUPPORTED)
def test_one_ulp_noise_passes(dtype: str) -> None:
    _, _, g = _case(dtype)
    rng = np.random.default_rng(1)
    noisy = nudge(g, dtype, rng.integers(-1, 2, size=g.shape))  # -1, 0 or +1 ULP everywhere
    assert compute_metrics(noisy, g, dtype)["ulp_max"] == 1
    stds = JUDGED if dtype == "float32" else ("experimental", "mixed-tolerance")
    for std in stds:
        v = judge(std, noisy, g, dtype)
        assert v.passed, v.reason


def test_seed_wrong_no_reduce_formula_fails_every_standard() -> None:
    # no-reduce with a valid forward output: y = 0, golden = 0, the seed's formula gives dy - 1
    for dtype in SUPPORTED:
        dy, y, g = _case(dtype, shape=(16, 1, 8), axes=(1,), dy_dist="normal")
        assert np.all(g == 0)
        wrong = round_to(seed_wrong_no_reduce(dy, y), dtype)
        for std, v in judge_all(wrong, g, dtype).items():
            assert not v.passed, (dtype, std, v.reason)
        assert "MERE" in judge("experimental", wrong, g, dtype).reason
        # and with an arbitrary y the two formulas differ too
        dy, y, g = _case(dtype, shape=(16, 1, 8), axes=(1,), y_dist="arbitrary", dy_dist="normal")
        assert not judge(
            "experimental", round_to(seed_wrong_no_reduce(dy, y), dtype), g, dtype
        ).passed
        assert judge("experimental", round_to(g, dtype), g, dtype).passed


@pytest.mark.parametrize("dtype", SUPPORTED)
def test_unwritten_nan_region_fails(dtype: str) -> None:
    _, _, g = _case(dtype)
    out = round_to(g, dtype)
    out[7:9] = np.nan  # the kernel never wrote two rows of the NaN-filled output
    for std, v in judge_all(out, g, dtype).items():
        assert not v.passed, std
        assert "NaN/inf positions differ" in v.reason and "514" in v.reason, v.reason
        assert v.metrics["nan_mismatch"] == 2 * 257


def test_single_nan_where_golden_is_finite_fails() -> None:
    _, _, g = _case("float16")
    out = round_to(g, "float16")
    out[3, 100] = np.nan
    v = judge("experimental", out, g, "float16")
    assert not v.passed and "(3, 100)" in v.reason and "1 NaN" in v.reason


def test_inf_of_the_wrong_sign_fails_and_matching_nonfinite_passes() -> None:
    dy, y, g = _case("float32", dy_dist="normal", special="inf_dy")
    assert np.isnan(g).any() and np.isinf(g).any()
    out = round_to(g, "float32")
    for v in judge_all(out, g, "float32").values():
        assert v.passed, v.reason  # same NaN/inf positions; left out of the error metrics
    flip = np.flatnonzero(np.isinf(g))[0]
    out.flat[flip] = -out.flat[flip]
    v = judge("mixed-tolerance", out, g, "float32")
    assert not v.passed and "1 inf" in v.reason


def test_bf16_thresholds_follow_the_result_dtype() -> None:
    _, _, g = _case("bfloat16", dy_dist="normal")
    rng = np.random.default_rng(2)
    # relative error 3e-3: over fp16's T (9.8e-4), well under bf16's T (7.8e-3)
    bad = round_to(g * (1 + 3e-3 * rng.choice([-1.0, 1.0], size=g.shape)), "bfloat16")
    v = judge("experimental", bad, g, "bfloat16")
    assert v.passed, v.reason
    assert f"T {T['bfloat16']:.2e}" in v.reason
    as_fp16 = judge("experimental", bad.astype(np.float64), g, "float16")
    assert not as_fp16.passed and "MERE" in as_fp16.reason and ">= T 9.77e-04" in as_fp16.reason
    with pytest.raises(ValueError, match="bfloat16"):
        judge("experimental", bad, g, "float16")  # a bf16 result judged with fp16 thresholds
    assert judge("experimental", bad, g, None).metrics["dtype"] == "bfloat16"


def test_experimental_thresholds_exactly() -> None:
    g = np.ones(1000)
    t = T["float32"]
    at = g * (1 + t * (1 + 1e-6))  # MERE just at or over T (the 1e-7 guard shaves a little)
    assert not judge("experimental", at, g, "float32").passed
    below = g * (1 + 0.9 * t)
    assert judge("experimental", below, g, "float32").passed
    spike = g.copy()
    spike[0] = 1 + 11 * t  # MARE over 10T while MERE stays tiny
    v = judge("experimental", spike, g, "float32")
    assert not v.passed and "MARE" in v.reason and ">= 10T" in v.reason and "(0,)" in v.reason


def test_mixed_tolerance_counts_and_max_abs() -> None:
    g = np.linspace(-2, 2, 1000)
    t = T["float16"]
    out = g.copy()
    out[:10] += 3 * t * (1 + np.abs(g[:10]))  # 1% of the elements out of tolerance: allowed
    assert judge("mixed-tolerance", out, g, "float16").passed
    out[10] += 3 * t * (1 + abs(g[10]))  # 1.1%: not allowed
    v = judge("mixed-tolerance", out, g, "float16")
    assert not v.passed and "98.90%" in v.reason
    big = g.copy()
    big[0] += 0.2  # one element, but the max abs error 0.2 > 0.1
    v = judge("mixed-tolerance", big, g, "float16")
    assert not v.passed and "max abs err 2.00e-01 > 0.1" in v.reason


def test_double_thousandth_needs_both_counts_over() -> None:
    n = 10000
    g = np.full(n, 10.0)
    out = g.copy()
    out[:11] += 0.02  # rel 2e-3 and abs 2e-2 over 1e-3 on 11 > n*tol = 10 elements
    v = judge("double-thousandth", out, g, "float16")
    assert not v.passed and "11 elements over rel tol" in v.reason
    out[:10] = g[:10] + 0.02  # 10 elements: not over n*tol
    out[10] = g[10]
    assert judge("double-thousandth", out, g, "float16").passed
    small = np.full(n, 1e-3)
    rel_only = small * 1.5  # rel 0.5 on every element, abs 5e-4 < 1e-3
    assert judge("double-thousandth", rel_only, small, "float16").passed


def test_empty_passes_every_standard() -> None:
    e = np.zeros((0, 4))
    for std in STANDARDS:
        v = judge(std, e.astype(np.float16), e, "float16", benchmark=e.astype(np.float16))
        assert v.passed and "empty" in v.reason


def test_metrics_are_reused_and_recorded() -> None:
    _, _, g = _case("float16")
    out = round_to(g, "float16")
    m = compute_metrics(out, g, "float16")
    v = judge("experimental", out, g, "float16", metrics=m)
    assert v.metrics == m and v.metrics["mere"] == m["mere"]
    with pytest.raises(ValueError, match="metrics were computed for float16"):
        judge("experimental", out.astype(np.float64), g, "float32", metrics=m)


def test_bad_calls() -> None:
    g = np.zeros(4)
    with pytest.raises(ValueError, match="unknown standard"):
        judge("strict", g, g, "float32")
    with pytest.raises(ValueError, match="unknown level"):
        judge("benchmark-ratio", g, g, "float32", benchmark=g, level="L3")
    with pytest.raises(BenchmarkRequired, match="needs the benchmark"):
        judge("benchmark-ratio", g, g, "float32")
    with pytest.raises(ValueError, match="pass dtype"):
        judge("experimental", g, g, None)
    with pytest.raises(ValueError, match="benchmark shape"):
        judge("benchmark-ratio", g, g, "float32", benchmark=np.zeros(5))


def test_benchmark_ratio_with_a_synthetic_benchmark() -> None:
    _, _, g = _case("float16")
    exact = round_to(g, "float16")
    rng = np.random.default_rng(4)
    bench = nudge(g, "float16", rng.integers(-1, 2, size=g.shape))  # a benchmark 1 ULP off
    for level in LEVELS:
        v = judge("benchmark-ratio", exact, g, "float16", benchmark=bench, level=level)
        assert v.passed and v.level == level and v.metrics["levels_passed"] == list(LEVELS)
        assert "benchmark" in v.metrics and "ratios" in v.metrics
    worse = nudge(g, "float16", 4 * rng.choice([-1, 1], size=g.shape))
    v = judge("benchmark-ratio", worse, g, "float16", benchmark=bench, level="L0")
    assert not v.passed and "MERE ratio" in v.reason and "> 2" in v.reason
    all4 = judge_all(exact, g, "float16", bench, level="L2")
    assert set(all4) == set(STANDARDS) and all4["benchmark-ratio"].passed
