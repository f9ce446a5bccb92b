"""Deterministic case inputs (SPEC section 6): the same seed gives the same bytes on every host.

Randomness comes only from PCG64 bit generators (numpy.random.PCG64), one per purpose, each seeded
with SeedSequence([seed, stream]); values are derived from their raw 64-bit outputs by code in
this module (uniforms from the top 53 bits, normals by Box-Muller), so they do not depend on the
numpy version's sampling algorithms. Values are drawn in C order of the merged [d0, d1, d2] array,
slab by slab, so the slab size does not change the result.

One residual platform dependence: Box-Muller and log_softmax use float64 log/exp/cos, which numpy
computes with the platform's libm or its own SIMD code; these may differ in the last float64 bit
between, say, x86-64 and aarch64. Rounding into the case dtype hides such a difference unless the
value sits within one float64 ulp of a rounding midpoint (about 2^-29 of fp32 values, far fewer for
fp16/bf16). The golden is always computed from the inputs actually generated, so verdicts are
unaffected; the pinned sha256 in tests/golden/test_inputs.py shows whether a host reproduces the
reference bytes.

y families are real forward outputs y = log_softmax(x) computed in float64 over the reduce axes
and then rounded to the case dtype, except "arbitrary" (not a valid log-softmax).

Inputs written by others rather than drawn from a family (VALUE_FORMS, for dy and y alike):
"range" is uniform in [lo, hi) (y_range / dy_range), "fill" is one constant everywhere (y_fill /
dy_fill; any float, 0, +-inf and NaN included). Special values go to random flat positions
("random", today's bytes) or to one position of a reduce row (SPECIAL_PLACEMENTS: the row's
first, middle or last element, in SPECIAL_COUNT distinct rows).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import numpy as np

from golden.contract import axes_consecutive, axes_in_range, merge_shape, normalize_axes
from golden.dtypes import numpy_dtype, round_to
from golden.reference import log_softmax_3d

Y_DISTS = ("uniform", "normal", "peaked", "flat", "wide", "masked", "arbitrary")
VALID_Y_DISTS = tuple(d for d in Y_DISTS if d != "arbitrary")
DY_DISTS = ("normal", "uniform", "ones", "outliers")
# Added later, kept apart like MORE_SPECIALS. "integers": uniform integers in [0, 16), exact in
# every dtype; with a constant y of 0 (exp(0) = 1 exactly) the fp32 results dy - sum(dy) are exact
# integers, and where sum(dy) sits in [2^11, 2^12) (fp16) or [2^8, 2^9) (bf16) half of them are
# exact ties of the output rounding: what tells round-to-nearest-even from other roundings.
MORE_DY_DISTS = ("integers",)
ALL_DY_DISTS = DY_DISTS + MORE_DY_DISTS
SPECIALS = ("none", "nan_dy", "inf_dy", "nan_y", "neginf_y")
# Added later, kept apart so that SPECIALS (and the bytes pinned over it) stay as they were.
MORE_SPECIALS = ("inf_y", "posinf_dy", "neginf_dy")
ALL_SPECIALS = SPECIALS + MORE_SPECIALS
# dy/y given by the case rather than drawn from a family.
VALUE_FORMS = ("range", "fill")
SPECIAL_PLACEMENTS = ("random", "row_start", "row_middle", "row_end")

# How many positions a special injects into (fewer when the tensor is smaller).
SPECIAL_COUNT = 3
# Elements per generation slab.
GEN_SLAB = 1 << 20

# Stream ids: one PCG64 per purpose, so that e.g. changing dy_dist leaves y unchanged.
# Each stream is read in C order of the rows, one kind of value per stream, so that slab
# boundaries do not change what any element gets.
_S_Y, _S_DY, _S_SPECIAL, _S_PARAMS, _S_ROW, _S_MASK, _S_OUTLIER, _S_HEIGHT = range(1, 9)
# Appended, never renumbered: existing streams keep giving existing cases the same bytes.
_S_Y_RANGE, _S_DY_RANGE, _S_SPECIAL_ROWS = range(9, 12)

_TWO_PI = 2.0 * np.pi


class _Stream:
    """Raw PCG64 output turned into floats and integers by fixed arithmetic."""

    def __init__(self, seed: int, stream: int):
        if int(seed) < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        self._bg = np.random.PCG64(np.random.SeedSequence([int(seed), stream]))

    def raw(self, n: int) -> np.ndarray:
        return self._bg.random_raw(n).astype(np.uint64, copy=False)

    def uniform(self, n: int, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
        """n float64 values in [lo, hi)."""
        u = (self.raw(n) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        return lo + (hi - lo) * u

    def normal(self, n: int) -> np.ndarray:
        """n standard normal float64 values; element i uses raw draws 2i and 2i+1."""
        r = self.raw(2 * n).reshape(n, 2) >> np.uint64(11)
        u1 = 1.0 - r[:, 0].astype(np.float64) * 2.0**-53  # (0, 1]
        u2 = r[:, 1].astype(np.float64) * 2.0**-53
        return np.sqrt(-2.0 * np.log(u1)) * np.cos(_TWO_PI * u2)

    def below(self, n: int, bound: int) -> np.ndarray:
        """n integers in [0, bound) (modulo of 64 random bits; the bias is below 2^-40)."""
        return (self.raw(n) % np.uint64(bound)).astype(np.int64)

    def distinct_positions(self, k: int, n: int) -> np.ndarray:
        """k distinct flat positions in [0, n), by a partial Fisher-Yates shuffle."""
        k = min(k, n)
        swaps: dict[int, int] = {}
        picks = []
        draws = self.raw(k)
        for i in range(k):
            j = i + int(draws[i] % np.uint64(n - i))
            picks.append(swaps.get(j, j))
            swaps[j] = swaps.get(i, i)
        return np.array(picks, dtype=np.int64)


def _gen_axes(shape: tuple[int, ...], axes: Sequence[int] | int) -> tuple[int, ...]:
    """The axes y is generated over. Rejection cases may carry axes the operator must refuse
    (empty, out of range, not consecutive); their tensors are still needed, so such axes fall
    back to the last axis."""
    if isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(int(a) for a in axes)
    rank = len(shape)
    if axes and axes_in_range(axes, rank) and axes_consecutive(normalize_axes(axes, rank)):
        return axes
    return (-1,)


def _row_slabs(d0: int, per_row: int) -> list[tuple[int, int]]:
    step = max(1, GEN_SLAB // max(per_row, 1))
    return [(r, min(r + step, d0)) for r in range(0, d0, step)]


def _logits(
    y_dist: str, seed: int, d0: int, d1: int, d2: int
) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
    """Float64 y = log_softmax(x) (or the arbitrary y) slab by slab: ((r0, r1), y3)."""
    main = _Stream(seed, _S_Y)
    params = _Stream(seed, _S_PARAMS)
    rowr = _Stream(seed, _S_ROW)
    maskr = _Stream(seed, _S_MASK)
    heightr = _Stream(seed, _S_HEIGHT)
    mean, sigma = params.uniform(1, -5.0, 5.0)[0], params.uniform(1, 0.1, 2.0)[0]
    mask_p = params.uniform(1, 0.2, 0.8)[0]
    for r0, r1 in _row_slabs(d0, d1 * d2):
        rows = r1 - r0
        m = rows * d1 * d2
        shp = (rows, d1, d2)
        if y_dist == "arbitrary":
            yield (r0, r1), main.uniform(m, -10.0, 0.0).reshape(shp)
            continue
        if y_dist == "uniform":
            x = main.uniform(m, -5.0, 5.0).reshape(shp)
        elif y_dist == "normal":
            x = (mean + sigma * main.normal(m)).reshape(shp)
        elif y_dist == "peaked":
            x = main.uniform(m, -2.0, 2.0).reshape(shp)
            idx = rowr.below(rows * d2, d1).reshape(rows, d2)
            height = np.log(d1) + heightr.uniform(rows * d2, 8.0, 16.0).reshape(rows, d2)
            np.put_along_axis(x, idx[:, None, :], height[:, None, :], axis=1)
        elif y_dist == "flat":
            x = np.zeros(shp)
        elif y_dist == "wide":
            x = main.uniform(m, -1e4, 1e4).reshape(shp)
        elif y_dist == "masked":
            x = main.uniform(m, -5.0, 5.0).reshape(shp)
            masked = maskr.uniform(m).reshape(shp) < mask_p
            keep = rowr.below(rows * d2, d1).reshape(rows, d2)
            np.put_along_axis(masked, keep[:, None, :], False, axis=1)
            x[masked] = -np.inf
        else:
            raise ValueError(f"unknown y_dist {y_dist!r}; use one of: {', '.join(Y_DISTS)}")
        yield (r0, r1), log_softmax_3d(x)


def _given_into(
    out: np.ndarray,
    form: str,
    bounds: tuple[float, float] | None,
    fill: float | None,
    seed: int,
    stream: int,
    dtype: str,
) -> None:
    """Fill the flat `out` (case dtype) with a VALUE_FORMS form: uniform in [lo, hi) from its
    own stream, slab by slab in C order, or one constant."""
    if form == "fill":
        assert fill is not None
        out[:] = round_to(np.array([float(fill)]), dtype)[0]
        return
    assert bounds is not None
    lo, hi = bounds
    s = _Stream(seed, stream)
    for a, b in _row_slabs(out.size, 1):
        out[a:b] = round_to(s.uniform(b - a, lo, hi), dtype)


def _check_form(name: str, dist: str, bounds, fill, families: tuple[str, ...]) -> None:
    """One clear ValueError for a dist that does not fit its range/fill argument."""
    if dist not in families + VALUE_FORMS:
        known = ", ".join(families + VALUE_FORMS)
        raise ValueError(f"unknown {name}_dist {dist!r}; use one of: {known}")
    if (dist == "range") != (bounds is not None):
        raise ValueError(
            f"{name}_dist {dist!r} with {name}_range {bounds!r}: a range is given exactly "
            f"when {name}_dist is 'range'"
        )
    if (dist == "fill") != (fill is not None):
        raise ValueError(
            f"{name}_dist {dist!r} with {name}_fill {fill!r}: a fill is given exactly "
            f"when {name}_dist is 'fill'"
        )
    if bounds is not None:
        lo, hi = (float(v) for v in bounds)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"{name}_range {bounds!r} must be finite (lo, hi) with lo < hi")


def _dy_into(out: np.ndarray, dy_dist: str, seed: int, dtype: str) -> None:
    """Fill the flat `out` (case dtype) with dy, slab by slab."""
    n = out.size
    s = _Stream(seed, _S_DY)
    outliers = np.zeros(0, dtype=np.int64)
    if dy_dist == "outliers":
        outliers = np.sort(_Stream(seed, _S_OUTLIER).distinct_positions(max(1, n // 1000), n))
    for a, b in _row_slabs(n, 1):
        m = b - a
        if dy_dist in ("normal", "outliers"):
            part = s.normal(m)
        elif dy_dist == "uniform":
            part = s.uniform(m, -1.0, 1.0)
        elif dy_dist == "ones":
            part = np.ones(m)
        elif dy_dist == "integers":
            part = s.below(m, 16).astype(np.float64)
        else:
            known = ", ".join(ALL_DY_DISTS)
            raise ValueError(f"unknown dy_dist {dy_dist!r}; use one of: {known}")
        hit = outliers[(outliers >= a) & (outliers < b)] - a
        part[hit] *= 1000.0
        out[a:b] = round_to(part, dtype)


def make_inputs(
    shape: Sequence[int],
    dtype: str,
    axes: Sequence[int] | int,
    y_dist: str,
    dy_dist: str,
    special: str = "none",
    seed: int = 0,
    *,
    y_range: tuple[float, float] | None = None,
    dy_range: tuple[float, float] | None = None,
    y_fill: float | None = None,
    dy_fill: float | None = None,
    special_at: str = "random",
) -> tuple[np.ndarray, np.ndarray]:
    """(dy, y) of `shape` in the case dtype (numpy_dtype(dtype)), deterministic from `seed`.

    Works for rank 0 (a 0-d tensor is one element), empty shapes, and the dtypes only rejection
    cases use (float64, int32, int64: values rounded, non-finite values become 0 for integers).
    Values are made in float64 and rounded once into the dtype, slab by slab, so memory stays a
    small multiple of the output.

    y_dist / dy_dist "range" takes y_range / dy_range (lo, hi), "fill" takes y_fill / dy_fill.
    special_at places the special values (SPECIAL_PLACEMENTS): "random" flat positions, or the
    first, middle (index d1 // 2) or last element of SPECIAL_COUNT distinct reduce rows of the
    merged [d0, d1, d2] tensor (a row is d1 elements d2 apart).
    """
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"negative extent in shape {shape}")
    _check_form("y", y_dist, y_range, y_fill, Y_DISTS)
    _check_form("dy", dy_dist, dy_range, dy_fill, ALL_DY_DISTS)
    if special not in ALL_SPECIALS:
        raise ValueError(f"unknown special {special!r}; use one of: {', '.join(ALL_SPECIALS)}")
    if special_at not in SPECIAL_PLACEMENTS:
        raise ValueError(
            f"unknown special_at {special_at!r}; use one of: {', '.join(SPECIAL_PLACEMENTS)}"
        )
    dt = numpy_dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))  # 1 for a 0-d tensor
    if n == 0:
        return np.zeros(shape, dtype=dt), np.zeros(shape, dtype=dt)

    d0, d1, d2 = merge_shape(shape, _gen_axes(shape, axes))
    if y_dist in VALUE_FORMS:
        y = np.empty(n, dtype=dt)
        _given_into(y, y_dist, y_range, y_fill, seed, _S_Y_RANGE, dtype)
    else:
        y = np.empty((d0, d1, d2), dtype=dt)
        for (r0, r1), part in _logits(y_dist, seed, d0, d1, d2):
            y[r0:r1] = round_to(part, dtype)
        y = y.reshape(-1)
    dy = np.empty(n, dtype=dt)
    if dy_dist in VALUE_FORMS:
        _given_into(dy, dy_dist, dy_range, dy_fill, seed, _S_DY_RANGE, dtype)
    else:
        _dy_into(dy, dy_dist, seed, dtype)

    if special != "none":
        s = _Stream(seed, _S_SPECIAL)
        if special_at == "random":
            pos = s.distinct_positions(SPECIAL_COUNT, n)
        else:
            rows = _Stream(seed, _S_SPECIAL_ROWS).distinct_positions(SPECIAL_COUNT, d0 * d2)
            line = {"row_start": 0, "row_middle": d1 // 2, "row_end": d1 - 1}[special_at]
            pos = ((rows // d2) * d1 + line) * d2 + rows % d2
        k = len(pos)
        if special == "nan_dy":
            vals, target = np.full(k, np.nan), dy
        elif special == "inf_dy":
            vals, target = np.where(s.below(k, 2) == 0, np.inf, -np.inf), dy
        elif special == "posinf_dy":
            vals, target = np.full(k, np.inf), dy
        elif special == "neginf_dy":
            vals, target = np.full(k, -np.inf), dy
        elif special == "nan_y":
            vals, target = np.full(k, np.nan), y
        elif special == "inf_y":
            vals, target = np.full(k, np.inf), y
        else:  # neginf_y
            vals, target = np.full(k, -np.inf), y
        target[pos] = round_to(vals, dtype)

    return dy.reshape(shape), y.reshape(shape)


def describe_array(a: np.ndarray) -> dict:
    """Shape, dtype, min/max/mean over the finite values, NaN/inf counts, sha256 of the bytes."""
    a = np.asarray(a)
    a64 = a.astype(np.float64)
    finite = a64[np.isfinite(a64)]
    return {
        "shape": list(a.shape),
        "dtype": str(a.dtype),
        "n": int(a.size),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "mean": float(finite.mean()) if finite.size else None,
        "nan": int(np.isnan(a64).sum()),
        "posinf": int(np.isposinf(a64).sum()),
        "neginf": int(np.isneginf(a64).sum()),
        "sha256": sha256_of(a),
    }


def describe_inputs(dy: np.ndarray, y: np.ndarray) -> dict:
    """A short, JSON-serialisable description of a case's inputs for reproduction printouts."""
    return {"dy": describe_array(dy), "y": describe_array(y)}


def sha256_of(*arrays: np.ndarray) -> str:
    """sha256 over the C-order bytes (and shapes) of the arrays."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()
