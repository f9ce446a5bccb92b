"""Rounding float64 values into a case dtype and the dtype's spacing there, from the bits, in few
passes: golden.dtypes.round_to and ulp_of for the case dtypes (the same values;
tests/golden/test_one_pass.py checks them against golden.dtypes), in a ``Workspace``'s arrays.

The formats' tables (FORMAT, SPACING_TABLE, MAX_BITS, CARRY, NEAR_MAX, OVERFLOW) are also what
golden/fused.c is given (golden/fused_library.py).
"""

from __future__ import annotations

import numpy as np

from golden.dtypes import numpy_dtype
from golden.workspace import Workspace

# Values at or beyond which round-to-nearest-even gives inf (max finite + half an ulp).
OVERFLOW = {
    "float32": float(np.finfo(np.float32).max) * (1 + 2.0**-25),
    "float16": 65520.0,
    "bfloat16": float(2.0**128 * (1 - 2.0**-9)),
}

_UINT_OF: dict[str, type[np.unsignedinteger]] = {
    "float32": np.uint32,
    "float16": np.uint16,
    "bfloat16": np.uint16,
}
_SIGN_OFF: dict[str, np.unsignedinteger] = {
    "float32": np.uint32(0x7FFFFFFF),
    "float16": np.uint16(0x7FFF),
    "bfloat16": np.uint16(0x7FFF),
}
# Per case dtype: fraction bits, exponent bias, exponent width.
FORMAT = {"float32": (23, 127, 8), "float16": (10, 15, 5), "bfloat16": (7, 127, 8)}


def _spacing_table(dtype: str) -> np.ndarray:
    """The spacing of `dtype` by exponent field: 2^(1-bias-p) for zero and subnormals,
    2^(E-bias-p) for normals, NaN for the all-ones field (inf, NaN)."""
    p, bias, width = FORMAT[dtype]
    top = (1 << width) - 1
    return np.array([2.0 ** (max(e, 1) - bias - p) for e in range(top)] + [np.nan])


SPACING_TABLE = {name: _spacing_table(name) for name in FORMAT}
# The bits of the largest finite value, whose next value is inf.
MAX_BITS: dict[str, np.unsignedinteger] = {
    name: _UINT_OF[name](((1 << w) - 2) << p | ((1 << p) - 1)) for name, (p, _, w) in FORMAT.items()
}


def rounded(
    x: np.ndarray, dtype: str, ws: Workspace | None = None, name: str = "rounded", base: int = 0
) -> np.ndarray:
    """golden.dtypes.round_to(x, dtype) of a float64 array, for a case dtype: the same values,
    in `ws` under `name` (bfloat16: scratch s(base)..s(base+2), b(0), b(1)).

    float32 and float16 are one numpy cast (correctly rounded from float64). bfloat16 goes
    through float32 rounded to odd, as round_to does, but builds the odd value directly:
    truncate toward zero (the RNE cast, one step back in magnitude where it went past x) and set
    the last bit when inexact; then one RNE cast to bfloat16 (24 bits hold 16 more than bfloat16
    keeps, so that cast is exact rounding of x). Where the cast overflowed float32 the odd value
    is the largest float32 instead of inf; both round to inf in bfloat16. NaN stays NaN."""
    ws = Workspace() if ws is None else ws
    out = ws.get(name, x.shape, numpy_dtype(dtype))
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype != "bfloat16":
            np.copyto(out, x, casting="same_kind")
            return out
        f = ws.s(base, x.shape, np.float32)
        back = ws.s(base + 1, x.shape)
        ax = ws.s(base + 2, x.shape)
        inexact, away = ws.b(0, x.shape), ws.b(1, x.shape)
        np.copyto(f, x, casting="same_kind")
        np.copyto(back, f)
        np.abs(x, out=ax)
        np.not_equal(back, x, out=inexact)
        np.abs(back, out=back)
        np.greater(back, ax, out=away)
        bits = f.view(np.uint32)
        bits -= away  # toward zero: the truncation
        bits |= inexact  # the last bit set where inexact: rounded to odd
        np.copyto(out, f, casting="same_kind")
    return out


def spacing(
    r: np.ndarray, dtype: str, ws: Workspace | None = None, name: str = "spacing", base: int = 0
) -> np.ndarray:
    """golden.dtypes.ulp_of of values already in `dtype` (e.g. from ``rounded``): the distance
    from |r| to the next value of the dtype away from zero, float64 (inf at the largest finite
    value, NaN at inf and NaN), looked up by the exponent field of the bits. In `ws` under
    `name` (scratch s(base), s(base+1), b(2))."""
    ws = Workspace() if ws is None else ws
    r = np.asarray(r)
    uint = _UINT_OF[dtype]
    out = ws.get(name, r.shape)
    mag = ws.s(base, r.shape, uint)
    idx = ws.s(base + 1, r.shape, np.intp)
    np.bitwise_and(r.view(uint), _SIGN_OFF[dtype], out=mag)
    np.right_shift(mag, FORMAT[dtype][0], out=idx)
    np.take(SPACING_TABLE[dtype], idx, out=out, mode="clip")  # indices are in range
    top = np.equal(mag, MAX_BITS[dtype], out=ws.b(2, r.shape))
    if top.any():
        out[top] = np.inf
    return out


# Rounding a float64 x >= 0 to a 16-bit dtype carries into the next binade when its 52
# fraction bits reach (2^(p+1) - 1) << (51 - p): x >= 2^E (2 - 2^-(p+1)), ties going up to the
# even 2^(E+1). Above NEAR_MAX (the tie there goes down, to the even neighbour) RNE gives the
# largest finite value, from OVERFLOW inf.
CARRY = {name: ((1 << (p + 1)) - 1) << (51 - p) for name, (p, _, _) in FORMAT.items()}
NEAR_MAX = {"float16": 65504.0 - 16.0, "bfloat16": float(2.0**128 * (1 - 2.0**-8) - 2.0**119)}


def spacing_at(x: np.ndarray, dtype: str, ws: Workspace, base: int) -> np.ndarray:
    """``spacing(rounded(x, dtype), dtype)`` for a float64 x >= 0 with no NaN, for float16 and
    bfloat16, from the float64 bits alone (no rounding): the spacing of the binade x rounds
    into, 2^(E - p) with E its exponent (plus one where rounding carries), at least the
    subnormal spacing; inf where x rounds to the largest finite value, NaN where to inf.
    In scratch s(base) (the result), s(base+1), b(0)."""
    p, bias, _ = FORMAT[dtype]
    bits = x.view(np.int64)
    e = ws.s(base, x.shape, np.int64)
    f = ws.s(base + 1, x.shape, np.int64)
    mask = ws.b(0, x.shape)
    np.right_shift(bits, 52, out=e)  # biased float64 exponent (no sign bit: x >= 0)
    np.bitwise_and(bits, (1 << 52) - 1, out=f)
    e += np.greater_equal(f, CARRY[dtype], out=mask)
    e -= p
    np.maximum(e, 1023 + 1 - bias - p, out=e)  # the subnormal spacing at least
    e <<= 52
    out = e.view(np.float64)
    big = np.greater(x, NEAR_MAX[dtype], out=mask)
    if big.any():
        out[big] = np.where(x[big] < OVERFLOW[dtype], np.inf, np.nan)
    return out


def ulp_of(x: np.ndarray, dtype: str) -> np.ndarray:
    """golden.dtypes.ulp_of(x, dtype) of a float64 array, for a case dtype (the same values)."""
    ws = Workspace()
    return spacing(rounded(np.abs(x), dtype, ws), dtype, ws)
