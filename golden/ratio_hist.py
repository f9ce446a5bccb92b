"""Every element's error over its bound, as a histogram a record carries (issue 58).

The error-bound standard (golden/standards.py) fails a case when one element's |out - golden|
is above its bound; the record keeps the worst few of them (golden/metrics.py "bound_worst"),
and this histogram says where all the others are: a failed case's plot draws it with the line
at 1 (farm/run/plots.py), so that it shows every element against the criterion that failed it.

Bins by powers of two, from the float64 bits of the ratio r = error / bound, so that binning
costs a shift and a mask, no logarithm (golden/fused.c does the same in its one pass over the
compared elements, the same counts): bin i holds 2^(LOG2_LO + i - 1) < r <= 2^(LOG2_LO + i), the
first bin everything down to the smallest positive r, the last everything above (a zero bound
under a nonzero error: r = inf); r = 0 (no error, or an infinite bound) is counted apart. The
bins are closed above, so a ratio of exactly 1 (allowed) is below the line and the bins above it
hold exactly the bound's violations (``above_one(h) == metrics["bound_violations"]``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

LOG2_LO = -36  # the first bin's upper edge, 2^-36: below any error a correct kernel makes
BINS = 64  # up to 2^27; the last bin takes every larger ratio
_MANTISSA = np.uint64((1 << 52) - 1)


def new_counts() -> np.ndarray:
    """The counts an accumulator keeps: BINS bins, then the zeros."""
    return np.zeros(BINS + 1, np.int64)


def add(counts: np.ndarray, ratio: np.ndarray, idx: np.ndarray, mask: np.ndarray) -> None:
    """Bin the ratios (>= 0, no NaN) into ``counts`` (new_counts'). ``idx`` (int64) and ``mask``
    (bool), of the ratio's size: scratch."""
    bits = ratio.view(np.uint64)
    np.right_shift(bits, 52, out=idx, casting="unsafe")  # the exponent field (no sign bit)
    idx -= 1023 + LOG2_LO
    np.bitwise_and(bits, _MANTISSA, out=mask, casting="unsafe")  # above a power of two: 1 up
    idx += mask
    np.clip(idx, 0, BINS - 1, out=idx)
    np.equal(bits, 0, out=mask)
    idx[mask] = BINS  # r = 0
    counts += np.bincount(idx, minlength=BINS + 1)


def result(counts: np.ndarray) -> dict:
    """The record's form: {"log2_lo", "counts" (BINS ints), "zeros"}."""
    return {
        "log2_lo": LOG2_LO,
        "counts": [int(c) for c in counts[:BINS]],
        "zeros": int(counts[BINS]),
    }


def log10_edges(hist: Mapping) -> list[float]:
    """The bins' edges in log10(r) (the plot's axis): BINS + 1 values, the first bin drawn one
    octave wide below 2^log2_lo (it holds everything smaller) and the last one octave wide."""
    lo, n = int(hist["log2_lo"]), len(hist["counts"])
    return [float((lo - 1 + i) * np.log10(2.0)) for i in range(n + 1)]


def above_one(hist: Mapping) -> int:
    """How many elements the histogram puts above 1 (over their bound)."""
    lo = int(hist["log2_lo"])
    return sum(int(c) for i, c in enumerate(hist["counts"]) if lo + i - 1 >= 0)
