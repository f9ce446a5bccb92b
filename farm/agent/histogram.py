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


def golden_free_histogram(rel_err: np.ndarray, edges=None) -> dict:
    """Histogram of log10(rel_err) as plain JSON-able lists.

    Returns {"edges": [...], "counts": [...], "zeros": int, "nonfinite": int, "n": int}:
    `counts[i]` counts finite, positive errors with edges[i] <= log10(e) < edges[i+1] (out-of-range
    values clamped into the end bins), `zeros` the exact zeros, `nonfinite` the NaN/inf errors
    (positions the metrics leave out), `n` every element seen.
    """
    err = np.asarray(rel_err, dtype=np.float64).ravel()
    e = np.asarray(default_edges() if edges is None else edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) <= 0):
        raise ValueError("edges must be a strictly increasing 1-d sequence of at least 2 values")
    finite = np.isfinite(err)
    nonfinite = int(err.size - np.count_nonzero(finite))
    err = np.abs(err[finite])
    zeros = int(np.count_nonzero(err == 0))
    logs = np.log10(err[err > 0])
    # Clamp into [first edge, last bin] so that nothing is silently dropped.
    logs = np.clip(logs, e[0], np.nextafter(e[-1], -np.inf))
    counts, _ = np.histogram(logs, bins=e)
    return {
        "edges": [float(x) for x in e],
        "counts": [int(c) for c in counts],
        "zeros": zeros,
        "nonfinite": nonfinite,
        "n": int(np.asarray(rel_err).size),
    }
