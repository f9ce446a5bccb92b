"""The judge on inputs from outside the farm's generators: correct fp32 kernels pass whatever the
magnitudes, fills and special values; planted defects fail; NaN/inf are judged as the device must
produce them (rounded to the output dtype, fp32 intermediates included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from golden import bound
from golden.dtypes import BIAS_MIN_N, round_to, to_float64, ulp_of
from golden.judge import judge_case
from golden.metrics import compute_metrics
from golden.reference import log_softmax_grad
from golden.standards import ERROR_BOUND, STANDARDS, applicable
from tests.golden import fp32_kernel

DTYPES = ("float32", "float16", "bfloat16")
SHAPES = [((4, 1000), (-1,)), ((3, 70, 5), (1,)), ((16, 1), (-1,)), ((2, 9000), (-1,))]


def outside_inputs(
    kind: str, shape: tuple[int, ...], dtype: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs written the way other suites write them, not by golden.inputs."""
    n = int(np.prod(shape))
    dy = rng.normal(size=shape)
    y = rng.uniform(-10, 0, shape)
    if kind == "y_pm1000":
        y = rng.uniform(-1000, 1000, shape)
    elif kind == "y_1_1000":
        y = rng.uniform(1, 1000, shape)
    elif kind == "overflow":
        dy = (
            rng.uniform(-6e4, 6e4, shape) if dtype == "float16" else rng.uniform(-3e38, 3e38, shape)
        )
        y = rng.uniform(-2, 2, shape)
    elif kind == "zeros":
        dy, y = np.zeros(shape), np.zeros(shape)
    elif kind == "exp_overflows_fp32":
        dy, y = np.zeros(shape), rng.uniform(89, 120, shape)
    elif kind == "dy_inf_fill":
        dy = np.full(shape, np.inf)
    elif kind == "inf_anywhere":
        dy.flat[rng.choice(n, 3, replace=False)] = rng.choice([np.inf, -np.inf], 3)
    elif kind == "nan_y_anywhere":
        y.flat[rng.choice(n, 3, replace=False)] = np.nan
    elif kind == "masked_tiny_exp":
        y = rng.uniform(-110, -90, shape)  # exp underflows fp32, not float64
        dy = rng.normal(size=shape) * 1e30
        dy.flat[rng.choice(n, 2, replace=False)] = np.inf
    elif kind == "neginf_y":
        y = np.full(shape, -np.inf)
    return round_to(dy, dtype), round_to(y, dtype)


KINDS = (
    "plain y_pm1000 y_1_1000 overflow zeros exp_overflows_fp32 dy_inf_fill inf_anywhere "
    "nan_y_anywhere masked_tiny_exp neginf_y"
).split()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["lanes", "pairwise"])
def test_correct_fp32_kernels_pass_on_outside_inputs(dtype: str, order: str) -> None:
    rng = np.random.default_rng(11)
    failures = []
    for shape, axes in SHAPES:
        for kind in KINDS:
            dy, y = outside_inputs(kind, shape, dtype, rng)
            out = fp32_kernel.run(dy, y, axes, dtype, order=order)
            j = judge_case(dy, y, out, axes, dtype)
            if not j.passed:
                failures.append(f"{kind} {shape}: {j.reason[:200]}")
    assert failures == []


def test_fp16_overflow_is_inf_of_the_right_sign() -> None:
    """An output that correctly overflows fp16 is not an error; one that saturates is."""
    dy = round_to(np.array([[40000.0, 40000.0, -30000.0, 0.5]]), "float16")
    y = round_to(np.full((1, 4), 0.5), "float16")  # arbitrary y: sum = 50000, exp(y) = 1.65
    g = log_softmax_grad(dy, y, (-1,))
    over = np.abs(g) > 65520  # beyond fp16 in float64: elements 2 and 3
    assert over.tolist() == [[False, False, True, True]]
    correct = fp32_kernel.run(dy, y, (-1,), "float16")
    assert np.isneginf(correct[over]).all() and np.isfinite(correct[~over]).all()
    assert judge_case(dy, y, correct, (-1,), "float16").passed
    # Without an input model, the golden rounded to the dtype says the same.
    assert compute_metrics(correct, g, "float16")["nonfinite_ok"]
    saturated = correct.copy()
    saturated[over] = -65504
    j = judge_case(dy, y, saturated, (-1,), "float16")
    assert not j.passed and j.metrics["inf_mismatch"] == 2
    flipped = correct.copy()
    flipped[0, 3] = np.inf
    assert not judge_case(dy, y, flipped, (-1,), "float16").passed


def test_exp_overflowing_fp32_gives_nan_where_float64_says_zero() -> None:
    """dy = 0 and y = 100: float64 says 0 * e^100 = 0, fp32 arithmetic gives inf * 0 = NaN, and
    the device computes in fp32 (SPEC section 1)."""
    dy = np.zeros((2, 8), np.float32)
    y = np.full((2, 8), 100.0, np.float32)
    assert np.all(log_softmax_grad(dy, y, (-1,)) == 0)
    out = fp32_kernel.run(dy, y, (-1,), "float32")
    assert np.isnan(out).all()
    assert judge_case(dy, y, out, (-1,), "float32").passed
    assert not judge_case(dy, y, np.zeros_like(out), (-1,), "float32").passed


def test_a_pass_on_non_finite_elements_says_how_many_were_not_compared() -> None:
    """dy of +-3e38 over 300 terms: the sum overflows fp32 in some order, so NaN or inf is a
    correct output anywhere; a kernel giving NaN everywhere passes with nothing compared, and
    the reason says so rather than "0 of 0 elements beyond the bound" alone."""
    rng = np.random.default_rng(5)
    dy = round_to(rng.uniform(-3e38, 3e38, (4, 300)), "float32")
    y = round_to(rng.uniform(-10, 0, (4, 300)), "float32")
    j = judge_case(dy, y, np.full(dy.shape, np.nan, np.float32), (-1,), "float32")
    assert j.passed and j.metrics["n_compared"] == 0
    assert "1200 of 1200 elements non-finite where the golden allows it" in j.reason, j.reason
    dy, y = outside_inputs("plain", (4, 300), "float32", rng)
    plain = judge_case(dy, y, fp32_kernel.run(dy, y, (-1,), "float32"), (-1,), "float32")
    assert plain.passed and "not compared" not in plain.reason


def test_nan_positions_must_match() -> None:
    dy, y = outside_inputs("nan_y_anywhere", (4, 100), "float16", np.random.default_rng(2))
    out = fp32_kernel.run(dy, y, (-1,), "float16")
    assert judge_case(dy, y, out, (-1,), "float16").passed
    moved = out.copy()
    moved[np.isnan(out)] = 0
    j = judge_case(dy, y, moved, (-1,), "float16")
    assert not j.passed and j.metrics["nan_mismatch"] > 0
    assert all(bad in j.reason for bad in ("NaN/inf positions differ",)), j.reason


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_ulp_offset_and_truncation_fail(dtype: str) -> None:
    rng = np.random.default_rng(5)
    dy = round_to(rng.normal(size=(16, 500)), dtype)
    y = round_to(rng.uniform(-8, 0, (16, 500)), dtype)
    g = log_softmax_grad(dy, y, (-1,))
    assert judge_case(dy, y, round_to(g, dtype), (-1,), dtype).passed
    offset = round_to(g + 0.5 * ulp_of(g, dtype), dtype)
    j = judge_case(dy, y, offset, (-1,), dtype)
    assert not j.passed and j.metrics["bound_violations"] > 0
    trunc = fp32_kernel.run(dy, y, (-1,), dtype, narrow="trunc")
    j = judge_case(dy, y, trunc, (-1,), dtype)
    assert not j.passed
    assert j.metrics["rounding_bias_n"] >= BIAS_MIN_N and j.metrics["rounding_bias_ulp"] < -0.2


def test_bias_alone_fails_a_truncating_kernel_within_the_bound() -> None:
    """Truncation inside the per-element bound is still caught by the rounding bias."""
    rng = np.random.default_rng(9)
    dy = round_to(rng.normal(size=(8, 1000)), "float16")
    y = round_to(rng.uniform(-8, 0, (8, 1000)), "float16")
    trunc = fp32_kernel.run(dy, y, (-1,), "float16", narrow="trunc")
    j = judge_case(dy, y, trunc, (-1,), "float16")
    m = dict(j.metrics, bound_violations=0)  # as if every element stayed within the bound
    from golden.standards import error_bound

    passed, reason = error_bound(m)
    assert not passed and "rounding bias" in reason


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_sum_in_fp16_and_a_dropped_term_fail_on_long_rows(dtype: str) -> None:
    rng = np.random.default_rng(3)
    shape = (2, 9000)
    # Positive dy: the sum grows to thousands, where fp16's spacing swallows the terms.
    dy = round_to(rng.uniform(0, 1, size=shape), dtype)
    y = round_to(np.log(np.full(shape, 1 / 9000)) + rng.normal(size=shape) * 0.1, dtype)
    good = fp32_kernel.run(dy, y, (-1,), dtype)
    assert judge_case(dy, y, good, (-1,), dtype).passed
    fp16_sum = fp32_kernel.run(dy, y, (-1,), dtype, order="fp16")
    assert not judge_case(dy, y, fp16_sum, (-1,), dtype).passed
    dropped = fp32_kernel.run(dy, y, (-1,), dtype, drop_last=True)
    assert not judge_case(dy, y, dropped, (-1,), dtype).passed


def test_slabs_do_not_change_the_judgement() -> None:
    rng = np.random.default_rng(4)
    dy = round_to(rng.normal(size=(6, 50, 7)), "bfloat16")
    y = round_to(rng.uniform(-6, 0, (6, 50, 7)), "bfloat16")
    out = fp32_kernel.run(dy, y, (1,), "bfloat16", narrow="trunc")
    whole = judge_case(dy, y, out, (1,), "bfloat16")
    sliced = judge_case(dy, y, out, (1,), "bfloat16", slab_elements=60)
    assert whole.passed == sliced.passed and whole.gates == sliced.gates
    a, b = flat(whole.metrics), flat(sliced.metrics)
    numbers = [k for k, v in a.items() if isinstance(v, float)]
    assert {k: v for k, v in a.items() if k not in numbers} == {
        k: v for k, v in b.items() if k not in numbers
    }
    assert [a[k] for k in numbers] == pytest.approx([b[k] for k in numbers], rel=1e-12)


def flat(d: dict[str, Any] | list[Any], prefix: str = "") -> dict[str, Any]:
    """A nested record as {path: number or text}, for comparing up to summation order."""
    out: dict[str, Any] = {}
    items = d.items() if isinstance(d, dict) else enumerate(d)
    for k, v in items:
        key = f"{prefix}{k}."
        if isinstance(v, (dict, list)):
            out.update(flat(v, key))
        else:
            out[key] = v
    return out


def test_the_gates_follow_the_numbers() -> None:
    """experimental gates a small well-conditioned case, not a long fp32 row whose outputs
    cancel near zero (its worst correct kernel exceeds 10T there)."""
    rng = np.random.default_rng(6)
    dy = round_to(rng.normal(size=(2, 16)), "float16")
    y = round_to(rng.uniform(-3, 0, (2, 16)), "float16")
    small = judge_case(dy, y, fp32_kernel.run(dy, y, (-1,), "float16"), (-1,), "float16")
    assert small.gates[0] == ERROR_BOUND and "experimental" in small.gates
    flat = np.full((1, 4096), -np.log(4096.0), np.float32)
    ones = np.ones((1, 4096), np.float32)
    cancel = judge_case(ones, flat, fp32_kernel.run(ones, flat, (-1,), "float32"), (-1,), "float32")
    assert cancel.passed and "experimental" not in cancel.gates
    assert "not gated" not in cancel.reason  # nothing was requested
    asked = judge_case(
        ones,
        flat,
        fp32_kernel.run(ones, flat, (-1,), "float32"),
        (-1,),
        "float32",
        requested="mixed-tolerance",
    )
    assert asked.passed


def test_applicable_means_the_worst_correct_kernel_passes() -> None:
    rng = np.random.default_rng(8)
    for dtype in DTYPES:
        dy = round_to(rng.normal(size=(4, 300)), dtype)
        y = round_to(rng.uniform(-6, 0, (4, 300)), dtype)
        j = judge_case(dy, y, fp32_kernel.run(dy, y, (-1,), dtype), (-1,), dtype)
        m = j.metrics
        for standard in STANDARDS[:3]:
            ok, why = applicable(standard, m)
            assert why.startswith("applicable" if ok else "not applicable")
            if ok:  # then the verdict passed, as it must for a correct kernel
                assert j.verdicts[standard].passed, (standard, why)


def test_classes_of_the_fp32_path() -> None:
    d = np.array([[[0.0], [1.0]]])  # two lines of one element each? no: d1 = 2, one column
    y = np.array([[[100.0], [100.0]]])
    g = log_softmax_grad(d.reshape(1, 2), y.reshape(1, 2), (-1,)).reshape(d.shape)
    allowed, bnd = bound.elementwise(d, y, g, "float32")
    # e^100 overflows fp32; the sum is 1: q = +inf, out = -inf for both elements.
    assert (allowed == bound.NEGINF).all()
    assert bound.class_names(int(bound.FINITE | bound.POSINF)) == "finite|+inf"
    assert bound.depth(1) == 0 and bound.depth(10) == 9 and bound.depth(64 * 100) == 264


def test_no_reduce_uses_the_operators_form_on_infinite_dy() -> None:
    dy = np.array([[np.inf], [-np.inf]], np.float32)
    y = np.array([[-1.0], [-1.0]], np.float32)
    out = fp32_kernel.run(dy, y, (-1,), "float32")  # dy * (1 - p): +-inf
    assert np.isinf(out).all()
    assert judge_case(dy, y, out, (-1,), "float32").passed
    with np.errstate(invalid="ignore"):
        literal = to_float64(dy) - np.exp(to_float64(y)) * to_float64(dy)  # inf - inf = NaN
    assert not judge_case(dy, y, literal.astype(np.float32), (-1,), "float32").passed
