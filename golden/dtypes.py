"""Dtype handling for the golden: names, exact rounding, ULP arithmetic, per-dtype thresholds.

Only numpy and ml_dtypes. Every conversion into a case dtype is round-to-nearest-even done once,
from the float64 value (SPEC section 1: the device casts its fp32 result back with RNE).

ml_dtypes converts float64 to bfloat16 by way of float32, which rounds twice: 1 + 2^-8 + 2^-40
becomes 1.0 instead of 1 + 2^-7. `round_to` fixes that with round-to-odd into float32 first
(24 bits, 16 more than bfloat16 keeps), after which the one RNE step to bfloat16 is exact.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import numpy.typing as npt

SUPPORTED = ("float32", "float16", "bfloat16")

# Names accepted by numpy_dtype: the supported ones plus those rejection cases use.
_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float64": np.dtype(np.float64),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
}

# Dtypes a case may name only as a descriptor (shape and ACL dtype code, no data): an outside
# suite's rejection cases (complex tensors) that no host needs to allocate. ACL codes
# (aclDataType) as the operator's C ABI takes them.
DESCRIPTOR_ONLY = {"complex64": 16, "complex128": 17}

# SPEC section 5: the relative threshold T per dtype.
T = {"float16": 2**-10, "bfloat16": 2**-7, "float32": 2**-13}

# mixed-tolerance: the largest absolute error allowed.
MIXED_MAX_ABS = {"float16": 0.1, "bfloat16": 0.1, "float32": 0.01}
MIXED_MIN_OK_FRACTION = 0.99

# double-thousandth: one tolerance, used both as relative and absolute tolerance and as the
# fraction of elements allowed over it.
DOUBLE_THOUSANDTH_TOL = {"float16": 1e-3, "bfloat16": 1e-3, "float32": 1e-4}

# benchmark-ratio small values: |golden| below SMALL_THRESHOLD is a small value; an error above
# SMALL_ERR_BOUND there counts as an error.
SMALL_THRESHOLD = {"float16": 2**-11, "bfloat16": 2**-8, "float32": 2**-14}
SMALL_ERR_BOUND = {"float16": 2**-16, "bfloat16": 2**-16, "float32": 2**-30}

# Relative error guard: |a - g| / (|g| + REL_EPS).
REL_EPS = 1e-7

# The rounding bias (golden/metrics.py MetricsAccumulator) is gated once this many elements
# qualify: with residuals in {-1, 0, 1} the standard error is at most 1/sqrt(n) = 0.03 ulp, and a
# correct kernel's residuals are rare (only where the golden lies within its fp32 error of a
# midpoint, which the 0.01-ulp cleanliness rule keeps below 2% of the elements, so below 0.02 ulp
# even if all of them leaned one way). BIAS_LIMIT is twice that; truncation gives about -0.25.
BIAS_MIN_N = 1000
BIAS_LIMIT = 0.05
BIAS_CLEAN_FRACTION = 0.01

# Bits of the stored significand (without the implicit bit) and total width.
_FORMAT = {"float16": (10, 16), "bfloat16": (7, 16), "float32": (23, 32), "float64": (52, 64)}
_UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype for a case dtype name ("float32", "float16", "bfloat16", and for rejection
    cases "float64", "int32", "int64")."""
    try:
        return _DTYPES[name]
    except (KeyError, TypeError):
        known = ", ".join(_DTYPES)
        raise ValueError(f"unknown dtype {name!r}; use one of: {known}") from None


def dtype_name(dt: np.dtype | type | str) -> str:
    """The case dtype name of a numpy dtype (inverse of numpy_dtype)."""
    if isinstance(dt, str) and dt in _DTYPES:
        return dt
    dt = np.dtype(dt)
    for name, known in _DTYPES.items():
        if dt == known:
            return name
    raise ValueError(f"dtype {dt} has no case dtype name; known: {', '.join(_DTYPES)}")


def is_supported(name: str) -> bool:
    return name in SUPPORTED


def _require_float_format(name: str) -> tuple[int, int]:
    try:
        return _FORMAT[name]
    except KeyError:
        raise ValueError(
            f"dtype {name!r} is not a floating-point case dtype; use one of: {', '.join(_FORMAT)}"
        ) from None


def _round_to_odd_f32(x64: np.ndarray) -> np.ndarray:
    """float64 -> float32 with round-to-odd (truncate toward zero, then set the last bit when
    inexact).

    From numpy's round-to-nearest-even: where RNE went past x (away from zero), the truncated
    value is one step below in the sign-magnitude encoding; setting the last bit of an inexact
    truncation gives the odd one of x's two neighbours. Whole-array passes with no masked
    assignment (a masked assignment made this 14x slower). Only for round_to's bfloat16: a NaN
    gets its last bit set and an overflow becomes float32's largest odd value, both of which
    bfloat16's own rounding then makes NaN and inf, as it does their float32 values."""
    with np.errstate(over="ignore"):
        f = x64.astype(np.float32)
    back = f.astype(np.float64)
    inexact = back != x64
    past = back > x64
    past ^= x64 < 0
    past &= inexact
    bits = f.view(np.uint32)
    bits -= past.view(np.uint8)
    bits |= inexact.view(np.uint8)
    return f


def round_to(x: npt.ArrayLike, name: str) -> np.ndarray:
    """Round x into dtype `name`: round-to-nearest-even, once, from the exact value of x.

    Overflow gives inf of the right sign, NaN stays NaN. Integer names round half to even and
    replace non-finite values with 0 (only rejection cases use them).
    """
    dt = numpy_dtype(name)
    x = np.asarray(x)
    if x.dtype == dt:
        return x.copy()
    if name in ("int32", "int64"):
        with np.errstate(invalid="ignore"):
            r = np.rint(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0))
        info = np.iinfo(dt)
        return np.clip(r, info.min, info.max).astype(dt)
    if x.dtype.kind in "iub":
        x = x.astype(np.float64)
    x64 = x.astype(np.float64, copy=False)
    if name == "bfloat16":
        return _round_to_odd_f32(x64).astype(dt)
    with np.errstate(over="ignore"):
        # numpy rounds float64 -> float16 / float32 once, with RNE; float64 is exact.
        return x64.astype(dt)


def to_float64(x: np.ndarray) -> np.ndarray:
    """Exact widening of any case array to float64 (a NaN stays NaN, whatever its payload)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(x).astype(np.float64)


def _bits(x: np.ndarray, name: str) -> np.ndarray:
    _, width = _require_float_format(name)
    return round_to(x, name).view(_UINT[width])


def ordinal(x: np.ndarray, name: str) -> np.ndarray:
    """Integer position of each value on the number line of dtype `name` (after rounding):
    consecutive representable values differ by 1, +0 and -0 are both 0, +inf is max finite + 1.
    NaN gives an unspecified value; mask it out first. float64 ordinals are exact int64 too."""
    _, width = _require_float_format(name)
    b = _bits(x, name)
    sign_bit = np.array(1, dtype=b.dtype) << np.array(width - 1, dtype=b.dtype)
    neg = (b & sign_bit) != 0
    mag = (b & ~sign_bit).astype(np.int64)
    return np.asarray(np.where(neg, -mag, mag))


def ulp_distance(a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    """How many representable values of dtype `name` lie between a and b (both rounded to it
    first), as float64; NaN where either is NaN. 0 means equal after rounding."""
    a = np.asarray(a)
    b = np.asarray(b)
    nan = np.isnan(to_float64(a)) | np.isnan(to_float64(b))
    d = np.abs(ordinal(a, name) - ordinal(b, name)).astype(np.float64)
    return np.where(nan, np.nan, d)


def ulp_of(x: np.ndarray, name: str) -> np.ndarray:
    """The spacing of dtype `name` at |x| (distance to the next value away from zero), float64."""
    r = round_to(np.abs(to_float64(x)), name)
    up = nudge(r, name, 1)
    with np.errstate(invalid="ignore"):
        return to_float64(up) - to_float64(r)


def nudge(x: np.ndarray, name: str, steps: np.ndarray | int) -> np.ndarray:
    """Move each value of x (rounded to `name`) by `steps` representable values (negative: down),
    returned in dtype `name`. Used to plant one-ULP noise in tests and planted-error cases."""
    _, width = _require_float_format(name)
    ords = ordinal(x, name) + np.asarray(steps, dtype=np.int64)
    mag = np.abs(ords).astype(_UINT[width])
    sign_bit = np.array(1, dtype=_UINT[width]) << np.array(width - 1, dtype=_UINT[width])
    bits = np.where(ords < 0, mag | sign_bit, mag).astype(_UINT[width])
    return bits.view(numpy_dtype(name))
