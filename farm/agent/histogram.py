"""Small, numpy-only summaries of an error tensor that can travel on the wire.

The agent imports this module on every host (numpy is the only dependency there), so it must not
import matplotlib, the farm or anything else. It turns an element-wise relative-error array into a
histogram of log10(relative error) a few hundred bytes long; farm/results/plots.py draws it on the
orchestrator side.
"""

from __future__ import annotations

import numpy as np

# Default bins: log10(relative error) from 1e-10 to 1e2, four bins per decade. Values below the
# first edge fall into the first bin, values above the last edge into the last bin; exact zeros are
# counted apart (log10(0) is -inf).
LOG10_MIN = -10.0
LOG10_MAX = 2.0
BINS_PER_DECADE = 4


def default_edges() -> np.ndarray:
    n = int(round((LOG10_MAX - LOG10_MIN) * BINS_PER_DECADE))
    return np.linspace(LOG10_MIN, LOG10_MAX, n + 1)


class HistogramAccumulator:
    """The histogram of log10(relative error), fed chunk by chunk (see golden_free_histogram)."""

    def __init__(self, edges=None):
        e = np.asarray(default_edges() if edges is None else edges, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) <= 0):
            raise ValueError(
                "edges must be a strictly increasing 1-d sequence of at least 2 values"
            )
        self.edges = e
        self.counts = np.zeros(e.size - 1, dtype=np.int64)
        self.zeros = 0
        self.finite = 0

    def add(self, rel_err: np.ndarray) -> None:
        err = np.asarray(rel_err, dtype=np.float64).ravel()
        err = np.abs(err[np.isfinite(err)])
        self.finite += int(err.size)
        self.zeros += int(np.count_nonzero(err == 0))
        # Clamp into [first edge, last bin] so that nothing is silently dropped.
        logs = np.clip(np.log10(err[err > 0]), self.edges[0], np.nextafter(self.edges[-1], -np.inf))
        self.counts += np.histogram(logs, bins=self.edges)[0]

    def result(self, n: int) -> dict:
        """`n`: every element of the tensor; those never added count as non-finite."""
        return {
            "edges": [float(x) for x in self.edges],
            "counts": [int(c) for c in self.counts],
            "zeros": self.zeros,
            "nonfinite": int(n - self.finite),
            "n": int(n),
        }


def golden_free_histogram(rel_err: np.ndarray, edges=None) -> dict:
    """Histogram of log10(rel_err) as plain JSON-able lists.

    Returns {"edges": [...], "counts": [...], "zeros": int, "nonfinite": int, "n": int}:
    `counts[i]` counts finite, positive errors with edges[i] <= log10(e) < edges[i+1] (out-of-range
    values clamped into the end bins), `zeros` the exact zeros, `nonfinite` the NaN/inf errors
    (positions the metrics leave out), `n` every element seen.
    """
    acc = HistogramAccumulator(edges)
    acc.add(rel_err)
    return acc.result(int(np.asarray(rel_err).size))
