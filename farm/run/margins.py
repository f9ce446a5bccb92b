"""How far a judged case is from its limits, from its record's metrics: ``margin`` for a case
that failed (how far past its limit; benchmarks/kill_strength.py), ``closeness`` for one that
passed (how near to failing; `farm mutate`'s survivors keep the cases that came closest).

1.0 is exactly at the limit: the largest over the gated standards of error-bound (the worst
element over its bound; the rounding bias over 0.05 ulp), experimental (MERE / T, MARE / 10T),
mixed-tolerance (the share of elements out of tolerance over 1%, max abs error over its limit),
double-thousandth (the smaller of its two counts over n * tol) and benchmark-ratio (each ratio
over its level's limit). A failure that is not a number (a rejection where an acceptance was
due, a kernel fault, a tiling mismatch, NaN where a number was due) has no margin: inf.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from golden.dtypes import (
    BIAS_LIMIT,
    BIAS_MIN_N,
    DOUBLE_THOUSANDTH_TOL,
    MIXED_MAX_ABS,
    MIXED_MIN_OK_FRACTION,
    T,
)

_RATIO = re.compile(r"(MARE|MERE|RMSE) ratio ([0-9.e+-]+) \(limit ([0-9.e+-]+)\)")
_SMALL = re.compile(r"small-value errors (\d+) \(limit (\d+)\)")


def margin(record: Mapping[str, Any]) -> float:
    """How far past its limit a failed case is (inf: not a number to be near a limit)."""
    if record.get("category") != "precision":
        return math.inf
    m = record.get("metrics") or {}
    if not m.get("nonfinite_ok", True):
        return math.inf
    dtype = str(record.get("dtype") or m.get("dtype"))
    worst = 0.0
    for name, verdict in (record.get("standards") or {}).items():
        if verdict.get("passed") or not verdict.get("gated"):
            continue
        worst = max(worst, standard_margin(name, m, dtype, verdict.get("reason", "")))
    return worst if worst > 0 else math.inf


def closeness(record: Mapping[str, Any]) -> float | None:
    """How near to its limits a judged precision case came, passed or not: the largest over
    its gated standards (None: no metrics, as for a rejection)."""
    m = record.get("metrics")
    if not m:
        return None
    dtype = str(record.get("dtype") or m.get("dtype"))
    found = [
        standard_margin(name, m, dtype, verdict.get("reason", ""), passed=True)
        for name, verdict in (record.get("standards") or {}).items()
        if verdict.get("gated")
    ]
    finite = [x for x in found if math.isfinite(x)]
    return max(finite) if finite else None


def standard_margin(
    name: str, m: Mapping[str, Any], dtype: str, reason: str, passed: bool = False
) -> float:
    """One standard's ratio to its limit; `passed`: measured whether or not it failed (the
    bound ratio of a case without violations, a benchmark ratio the text does not give: 0)."""
    try:
        if name == "error-bound":
            ratio = m.get("bound_max_ratio", 0.0) if passed or m.get("bound_violations") else 0.0
            if m.get("rounding_bias_n", 0) >= BIAS_MIN_N:
                ratio = max(ratio, abs(m.get("rounding_bias_ulp", 0.0)) / BIAS_LIMIT)
            return float(ratio)
        if name == "experimental":
            return max(m["mere"] / T[dtype], m["mare"] / (10 * T[dtype]))
        if name == "mixed-tolerance":
            out = (1 - m["mixed_ok_fraction"]) / (1 - MIXED_MIN_OK_FRACTION)
            return max(out, m["max_abs"] / MIXED_MAX_ABS[dtype])
        if name == "double-thousandth":
            allowed = m["n"] * DOUBLE_THOUSANDTH_TOL[dtype]
            return min(m["dt_rel_over"], m["dt_abs_over"]) / max(allowed, 1e-300)
    except (KeyError, TypeError, ZeroDivisionError):
        return 0.0 if passed else math.inf  # metrics this standard was not measured by
    if name == "benchmark-ratio":
        found = [float(v) / float(lim) for _, v, lim in _RATIO.findall(reason)]
        found += [int(v) / max(int(lim), 1) for v, lim in _SMALL.findall(reason)]
        return max(found, default=0.0 if passed else math.inf)
    return 0.0 if passed else math.inf  # a case's own tolerance: no public limit to measure
