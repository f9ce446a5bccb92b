"""The k worst elements of a result: found chunk by chunk (``top_k``), merged into the rows a
record keeps (``top_rows``; golden/metrics.py "worst" and "bound_worst")."""

from __future__ import annotations

import numpy as np


def index_of(flat: int, shape: tuple[int, ...]) -> list[int]:
    """A flat (C-order) index as the index of each axis."""
    return [int(i) for i in np.unravel_index(int(flat), shape)] if shape else []


# Blocks for the top-k search: the k-th largest block maximum bounds the k-th largest value from
# below, so one pass of block maxima and one comparison find every candidate.
_TOP_BLOCK = 256


def top_k(v: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest values of v (no NaN), largest first, ties by position."""
    m = int(v.size)
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    cand = None
    blocks = m // _TOP_BLOCK
    if k < m and blocks >= 2 * k:
        maxima = v[: blocks * _TOP_BLOCK].reshape(blocks, _TOP_BLOCK).max(axis=1)
        if m > blocks * _TOP_BLOCK:
            maxima = np.append(maxima, v[blocks * _TOP_BLOCK :].max())
        threshold = np.partition(maxima, maxima.size - k)[maxima.size - k]
        cand = np.flatnonzero(v >= threshold)
    if cand is None:
        cand = np.arange(m)
    if cand.size > k:
        # The k-th largest value exactly; every value above it, then the first ones equal to it.
        vals = v[cand]
        kth = np.partition(vals, vals.size - k)[vals.size - k]
        above = cand[vals > kth]
        cand = np.concatenate([above, cand[vals == kth][: k - above.size]])
    return cand[np.lexsort((cand, -v[cand]))]


def top_rows(cand, k: int, shape, key: str, fields: tuple[str, ...]) -> list[dict]:
    """The k largest of the per-chunk candidates (key value, flat index, *fields), largest
    first, ties by position."""
    if not cand or k <= 0:
        return []
    cols = [np.concatenate(x) for x in zip(*cand, strict=True)]
    order = np.lexsort((cols[1], -cols[0]))[:k]
    rows = []
    for i in order:
        row = {"index": index_of(cols[1][i], shape), key: float(cols[0][i])}
        for name, col in zip(fields, cols[2:], strict=True):
            row[name] = int(col[i]) if name == "ulp" else float(col[i])
        rows.append(row)
    return rows
