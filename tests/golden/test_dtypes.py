"""Dtype names, single round-to-nearest-even conversion, ULP arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from golden.dtypes import (
    SUPPORTED,
    T,
    dtype_name,
    nudge,
    numpy_dtype,
    ordinal,
    round_to,
    ulp_distance,
    ulp_of,
)

# precision p (with the implicit bit), minimum normal exponent, maximum exponent
_FORMATS = {"float16": (11, -14, 15), "bfloat16": (8, -126, 127), "float32": (24, -126, 127)}


def exact_rne(x: float, name: str) -> float:
    """Round-to-nearest-even of a float64 into a binary format, by exact rational arithmetic."""
    if math.isnan(x) or math.isinf(x) or x == 0.0:
        return x
    p, emin, emax = _FORMATS[name]
    e = max(math.frexp(x)[1] - 1, emin)
    q = Fraction(2) ** (e - p + 1)
    r = round(Fraction(abs(x)) / q) * q  # Fraction rounding is half-to-even
    if r >= Fraction(2) ** (emax + 1) - Fraction(2) ** (emax - p):  # at or past the overflow tie
        return math.copysign(math.inf, x)
    return math.copysign(float(r), x)


def test_names() -> None:
    assert SUPPORTED == ("float32", "float16", "bfloat16")
    assert numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    for name in ("float32", "float16", "float64", "int32", "int64"):
        assert numpy_dtype(name) == np.dtype(name)
        assert dtype_name(numpy_dtype(name)) == name
    with pytest.raises(ValueError, match="float8"):
        numpy_dtype("float8")
    assert T == {"float16": 2**-10, "bfloat16": 2**-7, "float32": 2**-13}


@pytest.mark.parametrize(
    "name,one_ulp",
    [("float16", 2**-10), ("bfloat16", 2**-7)],
)
def test_ties_round_to_even(name: str, one_ulp: float) -> None:
    half = one_ulp / 2
    x = np.array([1 + half, 1 + 3 * half, -(1 + half), 1 + half + 2**-40, 1 + half - 2**-40])
    got = round_to(x, name).astype(np.float64)
    # 1 + half: tie between 1 (even) and 1 + ulp (odd) -> 1
    # 1 + 3*half: tie between 1 + ulp (odd) and 1 + 2ulp (even) -> 1 + 2ulp
    # just above the tie rounds up; this is where rounding via float32 first goes wrong for bf16
    want = [1.0, 1 + 2 * one_ulp, -1.0, 1 + one_ulp, 1.0]
    np.testing.assert_array_equal(got, want)
    assert round_to(x, name).dtype == numpy_dtype(name)


def test_bf16_rounds_once_not_via_float32() -> None:
    x = np.array([1 + 2**-8 + 2**-40])  # float32 drops 2**-40 and leaves an exact tie
    assert round_to(x, "bfloat16").astype(np.float64)[0] == 1 + 2**-7
    # the bf16 subnormal range: 2**-134 is a tie between 0 and 2**-133
    y = np.array([2.0**-134, 2.0**-134 + 2.0**-160, -(2.0**-134 + 2.0**-160)])
    np.testing.assert_array_equal(
        round_to(y, "bfloat16").astype(np.float64), [0.0, 2.0**-133, -(2.0**-133)]
    )


@pytest.mark.parametrize("name", SUPPORTED)
def test_round_to_matches_exact_rounding(name: str) -> None:
    rng = np.random.default_rng(7)
    p, emin, emax = _FORMATS[name]
    # values on and next to the grid's midpoints, over the whole exponent range
    e = rng.integers(emin - p, emax + 1, size=3000)
    mant = rng.integers(2 ** (p - 1), 2**p, size=3000).astype(np.float64)
    grid = np.ldexp(mant, e - p + 1)
    quantum = np.ldexp(1.0, np.maximum(e, emin) - p + 1)
    offs = rng.choice([0.5, 0.5, 0.25, 0.75], size=3000) * quantum
    jitter = rng.choice([0.0, 1.0, -1.0], size=3000) * np.ldexp(quantum, -30)
    x = (grid + offs + jitter) * rng.choice([1.0, -1.0], size=3000)
    x = np.concatenate([x, rng.standard_normal(500) * 10.0 ** rng.integers(-8, 8, 500)])
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, 7e4, 65519.99, 65520.0, 3.39e38, 3.4e38]])
    got = round_to(x, name).astype(np.float64)
    want = np.array([exact_rne(float(v), name) for v in x])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{name}: {x[bad[:5]]!r} -> {got[bad[:5]]!r}, want {want[bad[:5]]!r}"
    assert np.isnan(round_to(np.array([np.nan]), name).astype(np.float64)).all()


def test_round_to_integers_for_rejection_cases() -> None:
    r = round_to(np.array([1.5, 2.5, -0.4, np.nan, -np.inf]), "int32")
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, [2, 2, 0, 0, 0])


def test_ordinal_and_ulp_distance() -> None:
    assert ordinal(np.array([0.0, -0.0]), "float32").tolist() == [0, 0]
    assert ordinal(np.array([2.0**-149, -(2.0**-149)]), "float32").tolist() == [1, -1]
    fp16_max = ordinal(np.array([65504.0]), "float16")[0]
    assert ordinal(np.array([np.inf]), "float16")[0] == fp16_max + 1
    d = ulp_distance(
        np.array([1.0, -(2.0**-24), 1.0, np.nan]),
        np.array([1.0 + 2**-10, 2.0**-24, 1.0 + 2**-12, 1.0]),
        "float16",
    )
    np.testing.assert_array_equal(d[:3], [1, 2, 0])
    assert np.isnan(d[3])
    np.testing.assert_array_equal(
        ulp_of(np.array([1.0, 2.0, -1.5]), "bfloat16"), [2**-7, 2**-6, 2**-7]
    )
    np.testing.assert_array_equal(ulp_of(np.array([1.0]), "float32"), [2**-23])


@pytest.mark.parametrize("name", SUPPORTED)
def test_nudge_moves_by_whole_ulps(name: str) -> None:
    x = np.array([1.0, -1.0, 0.0, 3.25, -0.0])
    steps = np.array([1, -1, -1, 3, 2])
    moved = nudge(x, name, steps)
    assert moved.dtype == numpy_dtype(name)
    np.testing.assert_array_equal(ulp_distance(moved, x, name), np.abs(steps))
    assert float(moved[0]) > 1.0 and float(moved[1]) < -1.0 and float(moved[2]) < 0.0


def test_zero_dimensional_arrays() -> None:
    assert float(round_to(np.array(1 + 2**-8 + 2**-40), "bfloat16")) == 1 + 2**-7
    assert float(ulp_distance(np.array(1.0), np.array(1.0 + 2**-7), "bfloat16")) == 1.0
    assert float(nudge(np.array(1.0), "float16", 1)) == 1 + 2**-10
    assert round_to(2.5, "float32").shape == ()
