"""The float64 golden of LogSoftmaxGrad (SPEC sections 1 and 5).

    out = dy - exp(y) * sum(dy, axes, keepdims=True)

computed in float64 from the inputs as the device sees them (already in the case dtype). The shape
is merged to [d0, d1, d2] around the reduce axes (golden.contract.merge_shape) and processed in
slabs of the non-reduced extents, so peak memory is the float64 output plus a few slab-sized
temporaries. NaN and inf propagate as the formula makes them (exp(-inf) = 0, inf - inf = NaN).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from golden.contract import axes_consecutive, axes_in_range, merge_shape, normalize_axes

# Elements of one slab (float64 temporaries are 8 bytes each).
SLAB_ELEMENTS = 1 << 20


def check_axes(shape: tuple[int, ...], axes: Sequence[int] | int) -> tuple[int, ...]:
    """The axes as a tuple, validated as the contract requires of an accepted call: non-empty,
    in range ([-n, n-1], a 0-d tensor counts as n = 1), distinct and consecutive."""
    if isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(int(a) for a in axes)
    rank = len(shape)
    if not axes:
        raise ValueError("axes is empty; give at least one reduce axis")
    if not axes_in_range(axes, rank):
        raise ValueError(
            f"axes {axes} out of range for rank {rank} (allowed [-n, n-1], n=1 for 0-d)"
        )
    if not axes_consecutive(normalize_axes(axes, rank)):
        raise ValueError(f"axes {axes} are not distinct and consecutive for rank {rank}")
    return axes


def slabs(d0: int, d1: int, d2: int, budget: int = SLAB_ELEMENTS) -> Iterator[tuple[slice, slice]]:
    """(rows, columns) slices of the merged [d0, d1, d2] array, each holding about `budget`
    elements or fewer; a slab always keeps the whole reduce extent d1."""
    per_row = max(d1 * d2, 1)
    if per_row <= budget:
        step = max(1, budget // per_row)
        for r in range(0, d0, step):
            yield slice(r, min(r + step, d0)), slice(0, d2)
    else:
        cols = max(1, budget // max(d1, 1))
        for r in range(d0):
            for c in range(0, d2, cols):
                yield slice(r, r + 1), slice(c, min(c + cols, d2))


def log_softmax_grad(
    dy: np.ndarray, y: np.ndarray, axes: Sequence[int] | int, *, slab_elements: int = SLAB_ELEMENTS
) -> np.ndarray:
    """The golden, float64, same shape as dy. dy and y must have the same shape."""
    dy = np.asarray(dy)
    y = np.asarray(y)
    if dy.shape != y.shape:
        raise ValueError(f"dy shape {dy.shape} differs from y shape {y.shape}")
    shape = dy.shape
    axes = check_axes(shape, axes)
    out = np.empty(shape, dtype=np.float64)
    if out.size == 0:
        return out
    d0, d1, d2 = merge_shape(shape, axes)
    dy3 = dy.reshape(d0, d1, d2)
    y3 = y.reshape(d0, d1, d2)
    o3 = out.reshape(d0, d1, d2)  # a view: out is fresh and contiguous
    for rows, cols in slabs(d0, d1, d2, slab_elements):
        o3[rows, :, cols] = grad_3d(dy3[rows, :, cols], y3[rows, :, cols])
    return out


def grad_3d(dy3: np.ndarray, y3: np.ndarray) -> np.ndarray:
    """The float64 golden of a [rows, d1, cols] slab, reducing axis 1."""
    g = dy3.astype(np.float64)
    with np.errstate(all="ignore"):
        if g.shape[1] == 1:
            # With a reduce extent of 1, sum(dy) is dy and the formula is dy * (1 - exp(y))
            # (SPEC section 1). Both forms agree on finite inputs; on an infinite dy the literal
            # form gives inf - inf = NaN where the operator's form gives inf, and the
            # operator's form is the one the contract names.
            return g * -np.expm1(y3.astype(np.float64))
        p = np.exp(y3.astype(np.float64))
        # Sum each reduce line contiguously (numpy's pairwise summation), so the result is the
        # same bits whatever the slab size and more accurate than a strided sum.
        s = np.ascontiguousarray(np.swapaxes(g, 1, 2)).sum(axis=2)[:, None, :]
        np.multiply(p, s, out=p)
        return np.subtract(g, p, out=p)


def seed_wrong_no_reduce(dy: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The seed's wrong no-reduce formula (dy - 1) * exp(y), float64 (SPEC section 1 erratum).
    Only for tests and planted errors: a correct operator must never match it."""
    with np.errstate(all="ignore"):
        return (np.asarray(dy).astype(np.float64) - 1.0) * np.exp(np.asarray(y).astype(np.float64))


def log_softmax(x: np.ndarray, axes: Sequence[int] | int) -> np.ndarray:
    """float64 log_softmax of x over the reduce axes (the forward whose output is y)."""
    x = np.asarray(x)
    shape = x.shape
    axes = check_axes(shape, axes)
    out = np.empty(shape, dtype=np.float64)
    if out.size == 0:
        return out
    d0, d1, d2 = merge_shape(shape, axes)
    x3 = x.reshape(d0, d1, d2)
    o3 = out.reshape(d0, d1, d2)
    for rows, cols in slabs(d0, d1, d2):
        o3[rows, :, cols] = log_softmax_3d(x3[rows, :, cols].astype(np.float64))
    return out


def log_softmax_3d(x: np.ndarray) -> np.ndarray:
    """float64 log_softmax over axis 1 of a 3-d array; -inf logits give -inf (masked), a row
    needs at least one finite logit."""
    with np.errstate(all="ignore"):
        m = np.max(x, axis=1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        t = x - m
        lse = np.log(np.sum(np.exp(t), axis=1, keepdims=True))
        return t - lse
