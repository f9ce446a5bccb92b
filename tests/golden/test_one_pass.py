"""Judging in one pass (issue 13) gives the numbers of the straightforward formulas.

golden/judge.py computes the golden, the classes, the bound, every metric and the histogram from
one set of arrays per slab, with shortcuts: the class model only where a value can be non-finite,
ordinals and spacings from the bits, bfloat16 rounding without a correction pass, a reused
workspace, top-k from block maxima. Here each shortcut is checked against the slow reference it
replaces (golden.dtypes, golden.reference, golden.bound.elementwise), and judge_case's metrics and
histogram against the definitions written out on the whole arrays (SPEC section 5 and the
docstrings of golden/metrics.py): the same counts, the same sums to float round-off, the same
worst elements (ties by position)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from farm.agent.histogram import HistogramAccumulator, default_edges
from golden import bound, fused, rounding
from golden.contract import merge_shape
from golden.dtypes import (
    BIAS_CLEAN_FRACTION,
    DOUBLE_THOUSANDTH_TOL,
    REL_EPS,
    SMALL_ERR_BOUND,
    SMALL_THRESHOLD,
    T,
    nudge,
    ordinal,
    round_to,
    to_float64,
    ulp_of,
)
from golden.inputs import make_inputs
from golden.judge import judge_case
from golden.metrics import compute_metrics
from golden.reference import grad_3d, log_softmax_grad
from golden.workspace import Workspace
from tests.golden import fp32_kernel
from tests.golden.test_judge import KINDS, outside_inputs

DTYPES = ("float32", "float16", "bfloat16")
_UINT = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16}


def edge_values(rng: np.random.Generator) -> np.ndarray:
    """float64 values around every rounding decision of the case dtypes: random magnitudes,
    signed zeros, inf/NaN, the overflow thresholds, binade carries and bfloat16 midpoints."""
    f32max = float(np.finfo(np.float32).max)
    parts = [
        rng.normal(size=20000) * 10.0 ** rng.integers(-45, 45, 20000),
        [0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 65488, 65487.9],
        [f32max, np.nextafter(f32max, np.inf), f32max * (1 + 2**-25), 3.5e38, 1e39],
        [2.0**-149, 2.0**-150, 2.0**-151, 2.0**-133, 2.0**-134, 2.0**-24, 2.0**-25, 2.0**-26],
    ]
    k = 2.0 ** np.arange(-150, 128).astype(float)
    for p in (7, 10, 23):
        for eps in (0.0, 2.0 ** -(p + 1), 2.0 ** -(p + 1) * (1 + 2**-30), 2.0**-p):
            parts += [k * (2 - eps), k * (1 + eps), -k * (2 - eps)]
    m = to_float64(round_to(rng.normal(size=5000), "bfloat16"))
    parts += [m * (1 + 2**-9), m * (1 + 2**-9 + 2**-40), m * (1 - 2**-9)]
    with np.errstate(over="ignore"):
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rounding_and_spacing_from_the_bits_are_the_dtype_functions(dtype: str) -> None:
    x = edge_values(np.random.default_rng(1))
    fast, slow = rounding.rounded(x, dtype), round_to(x, dtype)
    nan = np.isnan(x)
    assert np.array_equal(fast.view(_UINT[dtype])[~nan], slow.view(_UINT[dtype])[~nan])
    assert np.isnan(to_float64(fast[nan])).all()
    assert np.array_equal(rounding.ulp_of(x, dtype), ulp_of(x, dtype), equal_nan=True)
    assert np.array_equal(rounding.spacing(slow, dtype), ulp_of(slow, dtype), equal_nan=True)
    if dtype != "float32":
        ax = np.abs(x[~nan])
        at = rounding.spacing_at(ax, dtype, Workspace(), 0)
        assert np.array_equal(at, ulp_of(ax, dtype), equal_nan=True)


def slab_inputs(
    kind: str, shape: tuple[int, ...], dtype: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    dy = rng.normal(size=shape)
    y = rng.uniform(-10, 0, shape)
    if kind == "big":
        dy *= 1e4 if dtype == "float16" else 1e30
    elif kind == "nan":
        dy.flat[5] = np.nan
    elif kind == "inf_y":
        y.flat[3] = np.inf
    elif kind == "exp_near_fp32_overflow":
        y = rng.uniform(80, 95, shape)
    elif kind == "flat":
        dy, y = np.ones(shape), np.full(shape, -np.log(shape[1]))
    elif kind == "near_dtype_overflow":
        dy = rng.uniform(-6e4, 6e4, shape) if dtype == "float16" else dy * 3e37
        y = rng.uniform(-1, 1, shape)
    return round_to(dy, dtype), round_to(y, dtype)


SLAB_SHAPES = [(3, 1000, 1), (2, 50, 7), (16, 1, 1), (4, 1, 9), (1, 4096, 1), (8, 3, 33)]
SLAB_KINDS = ["normal", "big", "nan", "inf_y", "exp_near_fp32_overflow", "flat"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_golden_and_bound_are_grad_3d_and_elementwise_bit_for_bit(dtype: str) -> None:
    rng = np.random.default_rng(2)
    plain = general = 0
    for shape in SLAB_SHAPES:
        for kind in [*SLAB_KINDS, "near_dtype_overflow"]:
            dy, y = slab_inputs(kind, shape, dtype, rng)
            ws = Workspace()
            g, allowed, bnd = bound.golden_and_bound(dy, y, dtype, ws, fused=fused.kernel())
            g0 = grad_3d(dy, y)
            allowed0, bnd0 = bound.elementwise(dy, y, g0, dtype)
            assert np.array_equal(g, g0, equal_nan=True), (shape, kind)
            assert np.array_equal(bnd, bnd0), (shape, kind)
            if isinstance(allowed, int):
                plain += 1
                assert allowed == bound.FINITE and (allowed0 == bound.FINITE).all(), (shape, kind)
            else:
                general += 1
                assert np.array_equal(allowed, allowed0), (shape, kind)
            if kind == "normal":
                assert isinstance(allowed, int), shape  # ordinary inputs skip the class model
            if kind in ("nan", "inf_y"):
                assert not isinstance(allowed, int), shape
    assert plain and general


# -- judge_case against the formulas ----------------------------------------------------------


def reference(
    dy: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
    axes: tuple[int, ...],
    dtype: str,
    k: int = 8,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every metric judge_case records and the histogram, from the definitions, on the whole
    tensor at once, with golden.dtypes' own rounding, ordinals and spacings."""
    shape = dy.shape
    d0, d1, d2 = merge_shape(shape, axes)
    g3 = log_softmax_grad(dy, y, axes).reshape(d0, d1, d2)
    allowed, bnd = bound.elementwise(dy.reshape(d0, d1, d2), y.reshape(d0, d1, d2), g3, dtype)
    a, g = to_float64(out).ravel(), g3.ravel()
    allowed, bnd = allowed.ravel(), bnd.ravel()
    ca = bound.class_of(a)
    bad = (ca & allowed) == 0
    comp = (ca == bound.FINITE) & np.isfinite(g) & ((allowed & bound.FINITE) != 0)
    where = np.flatnonzero(comp)
    ac, gc, bc = a[comp], g[comp], bnd[comp]
    m = int(ac.size)
    err = np.abs(ac - gc)
    absg = np.abs(gc)
    rel = err / (absg + REL_EPS)
    ulp = np.abs(ordinal(ac, dtype) - ordinal(gc, dtype))
    sp = ulp_of(gc, dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        signed = np.where(sp > 0, (ac - gc) / sp, 0.0)
    t, tol = T[dtype], DOUBLE_THOUSANDTH_TOL[dtype]
    small = absg < SMALL_THRESHOLD[dtype]
    order = np.lexsort((where, -rel))[:k]
    r = {
        "n": int(a.size),
        "n_compared": m,
        "nan_golden": int(np.count_nonzero(allowed == bound.NAN)),
        "inf_golden": int(np.count_nonzero((allowed == bound.POSINF) | (allowed == bound.NEGINF))),
        "nan_actual": int(np.count_nonzero(np.isnan(a))),
        "inf_actual": int(np.count_nonzero(np.isinf(a))),
        "nonfinite_mismatch": int(np.count_nonzero(bad)),
        "class_ambiguous": int(np.count_nonzero((allowed & (allowed - 1)) != 0)),
        "mere": float(rel.mean()) if m else 0.0,
        "mare": float(rel.max()) if m else 0.0,
        "rmse": float(np.sqrt(np.mean(err**2))) if m else 0.0,
        "max_abs": float(err.max()) if m else 0.0,
        "ulp_max": int(ulp.max()) if m else 0,
        "ulp_mean": float(ulp.mean()) if m else 0.0,
        "bias_ulp": float(signed.mean()) if m else 0.0,
        "mixed_ok": int(np.count_nonzero(err <= t + t * absg)),
        "dt_rel_over": int(np.count_nonzero(rel > tol)),
        "dt_abs_over": int(np.count_nonzero(err > tol)),
        "small_n": int(np.count_nonzero(small)),
        "small_err_count": int(np.count_nonzero(err[small] > SMALL_ERR_BOUND[dtype])),
        "worst": [
            {
                "index": [int(i) for i in np.unravel_index(int(where[i]), shape)],
                "rel_err": float(rel[i]),
                "actual": float(ac[i]),
                "golden": float(gc[i]),
                "abs_err": float(err[i]),
                "ulp": int(ulp[i]),
            }
            for i in order
        ],
    }
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(bc > 0, err / bc, np.where(err > 0, np.inf, 0.0))
    best = np.abs(to_float64(round_to(gc, dtype)) - gc)
    wrel, brel = bc / (absg + REL_EPS), best / (absg + REL_EPS)
    r.update(
        bound_n=m,
        bound_violations=int(np.count_nonzero(ratio > 1)),
        bound_max_ratio=float(ratio.max()) if m else 0.0,
        worst_case={
            "mere": float(wrel.mean()) if m else 0.0,
            "mare": float(wrel.max()) if m else 0.0,
            "rmse": float(np.sqrt(np.mean(bc**2))) if m else 0.0,
            "max_abs": float(bc.max()) if m else 0.0,
            "mixed_ok_fraction": float(np.count_nonzero(bc <= t + t * absg) / m) if m else 1.0,
            "dt_rel_over": int(np.count_nonzero(wrel > tol)),
            "dt_abs_over": int(np.count_nonzero(bc > tol)),
            "small_err_count": int(np.count_nonzero(bc[small] > SMALL_ERR_BOUND[dtype])),
        },
        best_case={
            "mere": float(brel.mean()) if m else 0.0,
            "mare": float(brel.max()) if m else 0.0,
            "rmse": float(np.sqrt(np.mean(best**2))) if m else 0.0,
            "small_err_count": int(np.count_nonzero(best[small] > SMALL_ERR_BOUND[dtype])),
        },
    )
    n_bias, bias = 0, 0.0
    if dtype != "float32":
        with np.errstate(invalid="ignore"):
            clean = (bc - 0.5 * sp) <= BIAS_CLEAN_FRACTION * sp
        n_bias = int(np.count_nonzero(clean))
        resid = ordinal(ac[clean], dtype) - ordinal(round_to(gc[clean], dtype), dtype)
        bias = float(np.sum(resid * np.sign(gc[clean]))) / n_bias if n_bias else 0.0
    r.update(rounding_bias_n=n_bias, rounding_bias_ulp=bias)
    edges = default_edges()
    positive = rel[rel > 0]
    logs = np.clip(np.log10(positive), edges[0], np.nextafter(edges[-1], -np.inf))
    hist = {
        "edges": [float(e) for e in edges],
        "counts": [int(c) for c in np.histogram(logs, bins=edges)[0]],
        "zeros": int(np.count_nonzero(rel == 0)),
        "nonfinite": int(a.size - m),
        "n": int(a.size),
    }
    return r, hist


def assert_matches(
    metrics: dict[str, Any], want: dict[str, Any], where: str, rel: float = 1e-12
) -> None:
    for key, value in want.items():
        got = metrics[key]
        if isinstance(value, dict):
            assert_matches(got, value, f"{where} {key}", rel)
        elif key == "worst":
            assert [w["index"] for w in got] == [w["index"] for w in value], where
            for w, v in zip(got, value, strict=True):
                assert_matches(w, v, f"{where} worst", rel)
        elif isinstance(value, float):
            assert got == pytest.approx(value, rel=rel, abs=1e-300, nan_ok=True), (where, key)
        else:
            assert got == value, (where, key, got, value)


def outputs(
    dy: np.ndarray, y: np.ndarray, axes: tuple[int, ...], dtype: str, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """A correct kernel and the defects the judge catches."""
    g = log_softmax_grad(dy, y, axes)
    best = round_to(g, dtype)
    noisy = nudge(best, dtype, rng.integers(-1, 2, best.shape))
    with np.errstate(invalid="ignore"):
        noisy = np.where(np.isfinite(to_float64(best)), noisy, best)
    holes = best.copy()
    holes.flat[rng.choice(holes.size, min(3, holes.size), replace=False)] = np.nan
    return {
        "correct": fp32_kernel.run(dy, y, axes, dtype),
        "trunc": fp32_kernel.run(dy, y, axes, dtype, narrow="trunc"),
        "fp16_sum": fp32_kernel.run(dy, y, axes, dtype, order="fp16"),
        "drop_last": fp32_kernel.run(dy, y, axes, dtype, drop_last=True),
        "rne": best,
        "one_ulp_noise": noisy.astype(best.dtype),
        "unwritten": holes,
    }


def generated(dtype: str) -> Iterator[tuple[str, np.ndarray, np.ndarray, tuple[int, ...]]]:
    """Cases as the tiers make them (golden.inputs), several schedules and families."""
    cases = [
        ((4, 1000), (-1,), "uniform", "normal", "none"),
        ((3, 70, 5), (1,), "normal", "uniform", "none"),
        ((16, 1), (-1,), "arbitrary", "normal", "none"),
        ((2, 3000), (-1,), "peaked", "outliers", "none"),
        ((5, 257), (-1,), "flat", "ones", "none"),
        ((3, 400), (-1,), "wide", "normal", "nan_dy"),
        ((2, 33, 17), (1,), "masked", "normal", "inf_dy"),
        ((6, 129), (-1,), "uniform", "normal", "neginf_y"),
        ((4, 65), (0,), "arbitrary", "uniform", "nan_y"),
    ]
    for i, (shape, axes, y_dist, dy_dist, special) in enumerate(cases):
        dy, y = make_inputs(shape, dtype, axes, y_dist, dy_dist, special, seed=100 + i)
        yield f"{shape} {y_dist} {dy_dist} {special}", dy, y, axes


def outside(dtype: str) -> Iterator[tuple[str, np.ndarray, np.ndarray, tuple[int, ...]]]:
    rng = np.random.default_rng(11)
    for shape, axes in [((4, 1000), (-1,)), ((3, 70, 5), (1,)), ((16, 1), (-1,))]:
        for kind in KINDS:
            dy, y = outside_inputs(kind, shape, dtype, rng)
            yield f"{shape} {kind}", dy, y, axes


@pytest.mark.parametrize("source", ["generated", "outside"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_judge_case_metrics_are_the_formulas(dtype: str, source: str) -> None:
    rng = np.random.default_rng(3)
    cases = generated(dtype) if source == "generated" else outside(dtype)
    judged = 0
    for name, dy, y, axes in cases:
        for out_name, out in outputs(dy, y, axes, dtype, rng).items():
            where = f"{dtype} {name} {out_name}"
            want, want_hist = reference(dy, y, out, axes, dtype)
            hist = HistogramAccumulator()
            j = judge_case(dy, y, out, axes, dtype, on_errors=hist.add)
            assert_matches(j.metrics, want, where)
            assert hist.result(j.metrics["n"]) == want_hist, where
            judged += 1
    assert judged >= 60


@pytest.mark.parametrize("dtype", DTYPES)
def test_slabs_and_a_reused_workspace_change_nothing_but_round_off(dtype: str) -> None:
    """Many slabs of unequal size through one workspace, after a larger case filled it."""
    rng = np.random.default_rng(4)
    big_dy, big_y = make_inputs((8, 4000), dtype, (-1,), "uniform", "normal", seed=5)
    judge_case(big_dy, big_y, fp32_kernel.run(big_dy, big_y, (-1,), dtype), (-1,), dtype)
    for shape, axes in [((7, 300), (-1,)), ((5, 40, 9), (1,)), ((37, 1), (-1,))]:
        dy, y = make_inputs(shape, dtype, axes, "normal", "normal", "nan_dy", seed=6)
        for out in outputs(dy, y, axes, dtype, rng).values():
            want, want_hist = reference(dy, y, out, axes, dtype)
            hist = HistogramAccumulator()
            j = judge_case(dy, y, out, axes, dtype, on_errors=hist.add, slab_elements=170)
            assert_matches(j.metrics, want, f"{dtype} {shape}", rel=1e-9)
            assert hist.result(j.metrics["n"]) == want_hist


def test_compute_metrics_is_judge_case_without_the_input_model() -> None:
    """On plain data the classes a correct kernel may produce are the golden rounded."""
    rng = np.random.default_rng(5)
    for dtype in DTYPES:
        dy, y = make_inputs((6, 500), dtype, (-1,), "uniform", "normal", seed=7)
        out = fp32_kernel.run(dy, y, (-1,), dtype, narrow="trunc")
        j = judge_case(dy, y, out, (-1,), dtype)
        m = compute_metrics(out, log_softmax_grad(dy, y, (-1,)), dtype)
        assert {k: v for k, v in j.metrics.items() if k in m} == m
        g = rng.normal(size=3000) * 10.0 ** rng.integers(-8, 6, 3000)
        a = to_float64(round_to(g * (1 + 1e-3 * rng.normal(size=g.size)), dtype))
        assert compute_metrics(a, g, dtype) == compute_metrics(round_to(a, dtype), g, dtype)


def test_worst_ties_go_by_position() -> None:
    """Equal relative errors are listed by position, whichever slab or block they are in."""
    exact = compute_metrics(np.full(5000, 1.5, np.float32), np.full(5000, 1.5), "float32", k=8)
    assert [w["index"] for w in exact["worst"]] == [[i] for i in range(8)]
    a = np.full(4096, 3.5, np.float32)
    a[[4000, 17]] = 4.0
    m = compute_metrics(a, np.full(4096, 3.0), "float32", k=4)
    assert [w["index"] for w in m["worst"]] == [[17], [4000], [0], [1]]
