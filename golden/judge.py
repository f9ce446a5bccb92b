"""Judging one case: the golden, the bound and every standard, slab by slab.

    j = judge_case(dy, y, out, axes, "float16")
    j.passed, j.reason, j.gates, j.metrics, j.verdicts

The golden, the classes a correct kernel may produce and its error bound (golden/bound.py) are
computed slab by slab of the merged [d0, d1, d2] shape, so the float64 working set stays a small
multiple of one slab whatever the case's size (SPEC: cases of 10^8 elements and more).

Which standards gate the case is decided from its numbers, not from how it was made:

* ``error-bound`` always: no correct kernel fails it (it is the bound of a correct kernel's
  arithmetic), and it fails kernels that round wrongly, lose terms or accumulate in a narrower
  type;
* each public standard that every correct kernel passes on these very numbers
  (golden.standards.applicable: the worst correct kernel, errors at the bound, still passes;
  benchmark-ratio: the worst device against the best possible benchmark). A public standard that
  a correct kernel could fail here is recorded, not gated.

A case may ask for a public standard (``requested``); it gates when applicable, and the verdict
says so when it is not (a request never makes a correct kernel fail).

A case may also bring its own tolerance (``tolerance``: a golden.tolerance.Tolerance, rtol, atol,
max_fail_fraction, as outside suites do); it always gates, as ``case-tolerance``, in addition to
the rest. It is the case's author's claim, so a correct kernel can fail it: the verdict says by
how much.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from golden import bound as bound_mod
from golden import dtypes as dtypes_mod
from golden import fused as fused_mod
from golden import rounding
from golden import workspace as workspace_mod
from golden.contract import merge_shape
from golden.metrics import MetricsAccumulator
from golden.reference import SLAB_ELEMENTS, check_axes, slabs
from golden.standards import (
    ERROR_BOUND,
    STANDARDS,
    Verdict,
    applicable,
    judge,
)
from golden.tolerance import Tolerance


@dataclass
class Judgement:
    passed: bool
    reason: str
    gates: list[str]
    requested: str | None
    level: str
    metrics: dict = field(repr=False)
    verdicts: dict[str, Verdict] = field(repr=False)
    applicability: dict[str, tuple[bool, str]] = field(repr=False)


def judge_case(
    dy: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
    axes: Sequence[int] | int,
    dtype: str,
    *,
    requested: str | None = None,
    level: str = "L0",
    benchmark: np.ndarray | None = None,
    on_errors: Callable[[np.ndarray], None] | None = None,
    slab_elements: int = SLAB_ELEMENTS,
    k: int = 8,
    tolerance: Tolerance | None = None,
) -> Judgement:
    """Judge `out` (the operator's result, in `dtype`) for inputs dy, y reduced over `axes`.

    `benchmark`: a third-party result of the same inputs, for benchmark-ratio. `on_errors`
    receives the relative errors of each slab's compared elements (for a histogram; the array
    is reused for the next slab, copy it to keep it)."""
    shape = tuple(np.shape(dy))
    if np.shape(y) != shape or np.shape(out) != shape:
        raise ValueError(f"dy {shape}, y {np.shape(y)} and out {np.shape(out)} differ in shape")
    axes = check_axes(shape, axes)
    # Slab-sized arrays come from this thread's workspace (golden/workspace.py), kept for the
    # next case unless this one made it larger than KEEP_BYTES.
    ws = workspace_mod.workspace()
    # golden/fused.c's checked library when this host has it, else numpy: the same bits.
    kernel = fused_mod.kernel()
    acc = MetricsAccumulator(dtype, shape, k, ws, "m", fused=kernel)
    bench = (
        None if benchmark is None else MetricsAccumulator(dtype, shape, k, ws, "b", fused=kernel)
    )
    own = None if tolerance is None else ToleranceCount(dtype, tolerance)
    if int(np.prod(shape, dtype=np.int64)) > 0:
        try:
            _slabs(
                dy,
                y,
                out,
                benchmark,
                axes,
                dtype,
                slab_elements,
                ws,
                kernel,
                acc,
                bench,
                own,
                on_errors,
            )
        finally:
            if ws.nbytes > workspace_mod.KEEP_BYTES:
                ws.clear()
    metrics = acc.result()
    bench_metrics = None if bench is None else bench.result()

    names = [s for s in STANDARDS if s != "benchmark-ratio" or bench_metrics is not None]
    verdicts = {
        s: judge(s, out, None, dtype, level=level, metrics=metrics, benchmark_metrics=bench_metrics)
        for s in [*names, ERROR_BOUND]
    }
    applicability = {s: applicable(s, metrics, level) for s in names}
    gates = [ERROR_BOUND] + [s for s in names if applicability[s][0]]
    if own is not None:
        verdicts[CASE_TOLERANCE] = own.verdict()
        gates.append(CASE_TOLERANCE)
    failed = [s for s in gates if not verdicts[s].passed]
    passed = not failed
    reason = verdicts[failed[0]].reason if failed else verdicts[ERROR_BOUND].reason
    if requested is not None and requested not in gates:
        why = applicability.get(requested, (False, "no benchmark was computed"))[1]
        reason += f" | {requested} not gated: {why}"
    if passed:
        reason += f" | gates: {', '.join(gates)}"
    return Judgement(passed, reason, gates, requested, level, metrics, verdicts, applicability)


def _slabs(
    dy, y, out, benchmark, axes, dtype, budget, ws, kernel, acc, bench, own, on_errors
) -> None:
    """Feed the accumulators slab by slab of the merged [d0, d1, d2] shape."""
    d0, d1, d2 = merge_shape(tuple(np.shape(dy)), axes)
    dy3, y3, out3 = (np.asarray(a).reshape(d0, d1, d2) for a in (dy, y, out))
    b3 = None if benchmark is None else np.asarray(benchmark).reshape(d0, d1, d2)
    for rows, cols in slabs(d0, d1, d2, budget):
        # One set of arrays per slab: the golden, its classes and bound (golden/bound.py), the
        # golden rounded to the dtype; each accumulator derives the rest from them.
        g, allowed, bnd = bound_mod.golden_and_bound(
            dy3[rows, :, cols], y3[rows, :, cols], dtype, ws, fused=kernel
        )
        rg = rounding.rounded(g, dtype, ws, "rg")
        to_flat = _flat_index(rows, cols, d1, d2, g.shape)
        outs = out3[rows, :, cols]
        rel = acc.add(outs, g, to_flat, allowed, bnd, rounded=rg)
        if own is not None:
            own.add(outs, g, rounded=rg)
        if rel is not None and on_errors is not None:
            on_errors(rel)
        if bench is not None and b3 is not None:
            bench.add(b3[rows, :, cols], g, to_flat, allowed, bnd, rounded=rg)


CASE_TOLERANCE = "case-tolerance"


class ToleranceCount:
    """A case's own tolerance over the slabs: how many elements are outside
    atol + rtol * |golden|, the golden rounded to the dtype first (so rtol = atol = 0 asks for
    the correctly rounded result). NaN matches NaN and an inf the same inf."""

    def __init__(self, dtype: str, tolerance: Tolerance):
        self.dtype = dtype
        self.rtol, self.atol = float(tolerance.rtol), float(tolerance.atol)
        self.max_fail_fraction = float(tolerance.max_fail_fraction)
        self.n = self.failing = 0
        self.worst_excess = 0.0

    def add(self, out: np.ndarray, golden: np.ndarray, rounded: np.ndarray | None = None) -> None:
        """``rounded``: the golden already rounded to the dtype, if the caller has it."""
        rg = (
            rounding.rounded(np.asarray(golden, np.float64), self.dtype)
            if rounded is None
            else rounded
        )
        want = dtypes_mod.to_float64(rg)
        got = dtypes_mod.to_float64(out)
        ok = np.isclose(got, want, rtol=self.rtol, atol=self.atol, equal_nan=True)
        self.n += ok.size
        bad = ~ok
        count = int(np.count_nonzero(bad))
        if count:
            self.failing += count
            with np.errstate(invalid="ignore"):
                excess = np.abs(got[bad] - want[bad]) - (self.atol + self.rtol * np.abs(want[bad]))
            finite = excess[np.isfinite(excess)]
            worst = float(finite.max()) if finite.size else float("inf")
            self.worst_excess = max(self.worst_excess, worst)

    def verdict(self) -> Verdict:
        fraction = self.failing / self.n if self.n else 0.0
        passed = fraction <= self.max_fail_fraction
        limits = f"rtol {self.rtol:g}, atol {self.atol:g}"
        if passed:
            reason = (
                f"{self.failing} of {self.n} elements outside {limits} "
                f"(allowed fraction {self.max_fail_fraction:g})"
            )
        else:
            reason = (
                f"{self.failing} of {self.n} elements ({fraction:.3g}) outside {limits}, more "
                f"than the case allows ({self.max_fail_fraction:g}); worst by "
                f"{self.worst_excess:.3g}"
            )
        metrics = {"n": self.n, "failing": self.failing, "fraction": fraction}
        return Verdict(CASE_TOLERANCE, passed, reason, metrics)


def _flat_index(rows: slice, cols: slice, d1: int, d2: int, slab_shape):
    """Positions in a C-order [rows, d1, cols] slab -> flat indices in the whole tensor."""

    def to_flat(local: np.ndarray) -> np.ndarray:
        r, i, c = np.unravel_index(np.asarray(local, dtype=np.int64), slab_shape)
        return ((r + rows.start) * d1 + i) * d2 + c + cols.start

    return to_flat
