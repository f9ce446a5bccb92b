"""A case's own tolerance (rtol, atol, max failing fraction), gated as "case-tolerance" in addition
to the farm's standards: on outputs written here, not by the operator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from golden.dtypes import round_to, to_float64
from golden.judge import CASE_TOLERANCE, judge_case
from golden.reference import log_softmax_grad
from golden.tolerance import Tolerance


def _inputs(
    shape: tuple[int, ...], dtype: str, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    dy = round_to(rng.normal(size=shape), dtype)
    y = round_to(rng.uniform(-8, 0, shape), dtype)
    golden = log_softmax_grad(to_float64(dy), to_float64(y), -1)
    return dy, y, golden


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_correctly_rounded_result_passes_even_a_zero_tolerance(dtype: str) -> None:
    dy, y, golden = _inputs((6, 500), dtype)
    out = round_to(golden, dtype)
    j = judge_case(dy, y, out, -1, dtype, tolerance=Tolerance(0, 0, 0))
    assert j.passed and CASE_TOLERANCE in j.gates
    assert j.verdicts[CASE_TOLERANCE].metrics["failing"] == 0


def test_elements_outside_the_tolerance_fail_beyond_the_allowed_fraction() -> None:
    dy, y, golden = _inputs((4, 250), "float32")
    out = round_to(golden, "float32").copy()
    wrong = np.zeros(out.size, bool)
    wrong[::100] = True  # 10 of 1000 elements, each off by 1e-3 relative
    flat = out.reshape(-1)
    flat[wrong] = (flat[wrong] * np.float32(1.001)).astype(np.float32)
    tight = Tolerance(rtol=1e-4, atol=0.0, max_fail_fraction=0.005)
    j = judge_case(dy, y, out, -1, "float32", tolerance=tight)
    verdict = j.verdicts[CASE_TOLERANCE]
    assert not verdict.passed and not j.passed
    assert verdict.metrics["failing"] == 10
    assert "10 of 1000 elements (0.01) outside rtol 0.0001, atol 0" in verdict.reason
    loose = dataclasses.replace(tight, max_fail_fraction=0.01)
    assert judge_case(dy, y, out, -1, "float32", tolerance=loose).verdicts[CASE_TOLERANCE].passed


def test_nan_matches_nan_and_inf_the_same_inf_only() -> None:
    dy = np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]], np.float32)
    y = np.array([[-1.0, -2.0, -3.0], [-1.0, -2.0, -3.0]], np.float32)
    golden = log_softmax_grad(to_float64(dy), to_float64(y), -1)
    out = round_to(golden, "float32")
    tol = Tolerance(rtol=1e-3, atol=1e-3, max_fail_fraction=0)
    assert judge_case(dy, y, out, -1, "float32", tolerance=tol).verdicts[CASE_TOLERANCE].passed
    flipped = out.copy()
    flipped[0, 0] = np.float32(np.inf)
    v = judge_case(dy, y, flipped, -1, "float32", tolerance=tol).verdicts[CASE_TOLERANCE]
    assert not v.passed and v.metrics["failing"] == 1 and "worst by inf" in v.reason


def test_no_tolerance_no_gate() -> None:
    dy, y, golden = _inputs((2, 10), "float16")
    j = judge_case(dy, y, round_to(golden, "float16"), -1, "float16")
    assert CASE_TOLERANCE not in j.gates and CASE_TOLERANCE not in j.verdicts
