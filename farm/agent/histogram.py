"""Small summaries of an error tensor that can travel on the wire.

The agent imports this module on every host, so it imports numpy and golden/fused (which bins in
one pass where the host has its library, the same counts as numpy's passes here) and nothing
else: no matplotlib, nothing of the farm. It turns an element-wise relative-error array into a
histogram of log10(relative error) a few hundred bytes long; farm/run/plots.py draws it on the
orchestrator side.
"""

from __future__ import annotations

import numpy as np

from golden import fused

# Default bins: log10(relative error) from 1e-10 to 1e2, four bins per decade. Values below the
# first edge fall into the first bin, values above the last edge into the last bin; exact zeros are
# counted apart (log10(0) is -inf).
LOG10_MIN = -10.0
LOG10_MAX = 2.0
BINS_PER_DECADE = 4


# Work arrays (log10 values, bins) kept between calls, up to _KEEP_BYTES: a fresh array of a
# large slab costs a page fault per 4 KiB written. A call takes the set out (dict.pop is atomic),
# so a second thread working at the same time makes its own, and puts it back when done.
_KEEP_BYTES = 32 << 20
_SPARE: dict[str, dict[str, np.ndarray]] = {}


def _work(arrays: dict[str, np.ndarray], name: str, n: int, dtype) -> np.ndarray:
    have = arrays.get(name)
    if have is None or have.size < n:
        have = arrays[name] = np.empty(n, dtype)
    return have[:n]


def default_edges() -> np.ndarray:
    n = int(round((LOG10_MAX - LOG10_MIN) * BINS_PER_DECADE))
    return np.linspace(LOG10_MIN, LOG10_MAX, n + 1)


# The default edges as an accumulator keeps them (read-only): every case's histogram starts from
# them, and making them again (two linspaces, a comparison) was ~0.2 ms a case.
_DEFAULT_EDGES = default_edges()
_DEFAULT_EDGES.flags.writeable = False


def _binning(e: np.ndarray) -> tuple[bool, float, float]:
    """(evenly spaced, bins per unit, the largest value below the last edge) of edges `e`."""
    nbins = e.size - 1
    uniform = bool(np.array_equal(e, np.linspace(e[0], e[-1], nbins + 1)))
    return uniform, nbins / (e[-1] - e[0]), np.nextafter(e[-1], -np.inf)


_DEFAULT_SHAPE = _binning(_DEFAULT_EDGES)


class HistogramAccumulator:
    """The histogram of log10(relative error), fed chunk by chunk (see golden_free_histogram).

    Binned as numpy.histogram bins (edges[i] <= x < edges[i+1], the last bin closed), without its
    sort: on evenly spaced edges (the default) the bin is computed from x and corrected by one
    comparison with each neighbouring edge, as numpy does for an integer number of bins; other
    edges are searched. Exact zeros land in the first bin through log10(0) = -inf and are taken
    out of it again; an array with no NaN/inf is not copied to drop them."""

    def __init__(self, edges: np.ndarray | None = None) -> None:
        self.zeros = 0
        self.finite = 0
        if edges is None:
            self.edges = _DEFAULT_EDGES
            self.counts = np.zeros(_DEFAULT_EDGES.size - 1, dtype=np.int64)
            self._uniform, self._scale, self._top = _DEFAULT_SHAPE
            return
        e = np.asarray(edges, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) <= 0):
            raise ValueError(
                "edges must be a strictly increasing 1-d sequence of at least 2 values"
            )
        self.edges = e
        self.counts = np.zeros(e.size - 1, dtype=np.int64)
        self._uniform, self._scale, self._top = _binning(e)

    def add(self, rel_err: np.ndarray) -> None:
        arrays = _SPARE.pop("arrays", None) or {}
        try:
            self._add(np.asarray(rel_err, dtype=np.float64).ravel(), arrays)
        finally:
            if sum(a.nbytes for a in arrays.values()) <= _KEEP_BYTES:
                _SPARE["arrays"] = arrays

    def _add(self, err: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
        n = int(err.size)
        mask = _work(arrays, "mask", n, bool)
        if not np.isfinite(err, out=mask).all():
            err = err[mask]
            n = int(err.size)
            mask = mask[:n]
        if n == 0:
            return
        self.finite += n
        logs = _work(arrays, "logs", n, np.float64)
        np.abs(err, out=logs)
        with np.errstate(divide="ignore"):
            np.log10(logs, out=logs)
        kernel = fused.kernel() if self._uniform else None
        if kernel is not None:  # the same counts in one pass (golden/fused.c)
            self.zeros += kernel.histogram(logs, self.edges, self._scale, self._top, self.counts)
            return
        zeros = int(np.count_nonzero(np.equal(logs, -np.inf, out=mask)))
        self.zeros += zeros
        # Clamp into [first edge, last bin] so that nothing is silently dropped.
        np.clip(logs, self.edges[0], self._top, out=logs)
        self.counts += np.bincount(self._bins(logs, mask, arrays), minlength=self.counts.size)
        self.counts[0] -= zeros

    def _bins(self, x: np.ndarray, mask: np.ndarray, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The bin of each x in [edges[0], edges[-1])."""
        e, last = self.edges, self.counts.size - 1
        if not self._uniform:
            return np.searchsorted(e, x, side="right") - 1
        n = x.size
        edge = _work(arrays, "edge", n, np.float64)
        idx = _work(arrays, "idx", n, np.intp)
        np.subtract(x, e[0], out=edge)
        edge *= self._scale
        np.copyto(idx, edge, casting="unsafe")  # x >= edges[0]: truncation is floor
        np.minimum(idx, last, out=idx)
        np.take(e, idx, out=edge, mode="clip")
        idx -= np.less(x, edge, out=mask)  # below its edge: one bin down
        np.take(e[1:], idx, out=edge, mode="clip")
        # At or above the next edge: one bin up (never past the last: x < edges[-1]).
        idx += np.greater_equal(x, edge, out=mask)
        return idx

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
