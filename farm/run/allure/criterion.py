"""The criterion that failed a precision case, as numbers a plot and a table show.

A case fails on the first of its gates that fails (golden/judge.py: the error bound first, then
each applicable public standard in golden/standards.py's order, then the case's own tolerance);
its message is that gate's reason and names that gate's worst element. `failing_criterion` says
which gate it was and measures each element and the case against that gate's own limit, so that
1 is the limit whatever the gate:

    error-bound         each element's error over its bound, |out - golden| / bound (the
                        rounding bias over its limit as a part of its own)
    experimental        each element's relative error over 10·T (MARE's limit); MERE over T
    mixed-tolerance     each element's |out - golden| over T + T·|golden|; the share of elements
                        outside it over 1%, max abs error over its limit
    double-thousandth   each element's relative error over the dtype's tolerance; the elements
                        over the relative and over the absolute tolerance, each over n·tol (it
                        fails only when both are over)

The elements are the worst the record keeps (golden/metrics.py: "bound_worst" ranked by error
over bound, "worst" by relative error), ranked by the criterion: the first is the one the failure
message names. Of the error bound the record also has every element's score, binned
(metrics["bound_hist"], golden/ratio_hist.py): the plot draws that (farm/run/bound_plot.py),
and ``"over"`` here says how many elements it puts above 1. A gate this module cannot measure
(benchmark-ratio, a case's own tolerance) is named, with no numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from golden import ratio_hist
from golden.dtypes import (
    BIAS_LIMIT,
    BIAS_MIN_N,
    DOUBLE_THOUSANDTH_TOL,
    MIXED_MAX_ABS,
    MIXED_MIN_OK_FRACTION,
    T,
)

# golden/standards.py ERROR_BOUND and STANDARDS, golden/judge.py CASE_TOLERANCE: the order in
# which golden/judge.py takes a case's failed gates (tests/results/test_allure_criterion.py
# keeps them equal; golden.judge is not imported in a test item for three names).
ERROR_BOUND = "error-bound"
GATE_ORDER = (
    ERROR_BOUND,
    "experimental",
    "mixed-tolerance",
    "double-thousandth",
    "benchmark-ratio",
    "case-tolerance",
)
# What each element's score is, by gate: the plot's axis and the worst-elements table's column.
MEASURES = {
    ERROR_BOUND: "error / bound",
    "experimental": "rel error / 10T",
    "mixed-tolerance": "abs error / (T + T|golden|)",
    "double-thousandth": "rel error / tol",
}


def failed_gate(record: Mapping) -> str | None:
    """The gate that failed the case (the one its message is of), or None: it passed, or no gate
    failed (a case that failed otherwise, a crash, a rejection)."""
    standards = record.get("standards")
    if not isinstance(standards, Mapping):
        return None
    failed = {
        name
        for name, v in standards.items()
        if isinstance(v, Mapping)
        and v.get("passed") is False
        and (v.get("gated") or name in (ERROR_BOUND, "case-tolerance"))
    }
    return next((name for name in GATE_ORDER if name in failed), None)


def failing_criterion(record: Mapping) -> dict[str, Any] | None:
    """The failed gate and its numbers: {"standard", "measure", "summary" (a line, or ""),
    "elements" (the worst elements with their "score", ranked by it), "parts" ({what: score} of
    the case as a whole), "max" (the largest score of all: above 1 for a failure this module
    measures; None where it cannot say), "over" (of the error bound: how many elements its
    histogram of every element puts above 1; None without one)}. None when no gate failed."""
    gate = failed_gate(record)
    if gate is None:
        return None
    metrics = record.get("metrics")
    m: Mapping = metrics if isinstance(metrics, Mapping) else {}
    dtype = str(m.get("dtype") or record.get("dtype") or "")
    elements: list[dict[str, Any]] = []
    parts: dict[str, float] = {}
    summary = ""
    over_hist: int | None = None
    if gate == ERROR_BOUND:
        elements = [_scored(w, _num(w.get("ratio"))) for w in _rows(m.get("bound_worst"))]
        over, of = _num(m.get("bound_violations")), _num(m.get("bound_n"))
        if over is not None and of is not None:
            summary = f"{int(over):,} of {int(of):,} elements over their bound"
        hist = m.get("bound_hist")
        if isinstance(hist, Mapping) and isinstance(hist.get("counts"), list):
            over_hist = ratio_hist.above_one(hist)
        ratio = _num(m.get("bound_max_ratio"))
        if ratio is not None:
            parts["max error / bound"] = ratio
        n_bias, bias = _num(m.get("rounding_bias_n")), _num(m.get("rounding_bias_ulp"))
        if n_bias is not None and bias is not None and n_bias >= BIAS_MIN_N:
            parts[f"|rounding bias| / {BIAS_LIMIT:g} ulp"] = abs(bias) / BIAS_LIMIT
    elif gate == "experimental" and dtype in T:
        t = T[dtype]
        elements = [_scored(w, _over(w.get("rel_err"), 10 * t)) for w in _rows(m.get("worst"))]
        _part(parts, "MERE / T", _over(m.get("mere"), t))
        _part(parts, "MARE / 10T", _over(m.get("mare"), 10 * t))
    elif gate == "mixed-tolerance" and dtype in MIXED_MAX_ABS:
        t = T[dtype]
        elements = [
            _scored(w, _over(w.get("abs_err"), t + t * abs(_num(w.get("golden")) or 0.0)))
            for w in _rows(m.get("worst"))
        ]
        frac = _num(m.get("mixed_ok_fraction"))
        if frac is not None:
            parts["share outside T+T|g| / 1%"] = (1 - frac) / (1 - MIXED_MIN_OK_FRACTION)
        _part(parts, "max abs / limit", _over(m.get("max_abs"), MIXED_MAX_ABS[dtype]))
    elif gate == "double-thousandth" and dtype in DOUBLE_THOUSANDTH_TOL:
        tol = DOUBLE_THOUSANDTH_TOL[dtype]
        elements = [_scored(w, _over(w.get("rel_err"), tol)) for w in _rows(m.get("worst"))]
        allowed = (_num(m.get("n")) or 0) * tol
        rel, abs_ = _over(m.get("dt_rel_over"), allowed), _over(m.get("dt_abs_over"), allowed)
        if rel is not None and abs_ is not None:
            # It fails only when both counts are over: the smaller says by how much.
            parts["min(over rel tol, over abs tol) / n·tol"] = min(rel, abs_)
    elements = [e for e in elements if e["score"] is not None]
    elements.sort(key=lambda e: -e["score"])
    scores = [e["score"] for e in elements] + list(parts.values())
    finite = [s for s in scores if not math.isnan(s)]
    return {
        "standard": gate,
        "measure": MEASURES.get(gate, ""),
        "summary": summary,
        "elements": elements,
        "parts": parts,
        "max": max(finite) if finite else None,
        "over": over_hist,
    }


def _rows(x: object) -> list[Mapping]:
    return [w for w in x if isinstance(w, Mapping)] if isinstance(x, list) else []


def _num(x: object) -> float | None:
    if isinstance(x, bool):
        return None
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if not math.isnan(v) else None


def _over(x: object, limit: float) -> float | None:
    v = _num(x)
    if v is None or limit <= 0:
        return None
    return abs(v) / limit


def _part(parts: dict[str, float], name: str, value: float | None) -> None:
    if value is not None:
        parts[name] = value


def _scored(row: Mapping, score: float | None) -> dict[str, Any]:
    out = {k: row.get(k) for k in ("index", "actual", "golden", "abs_err", "rel_err", "bound")}
    out = {k: v for k, v in out.items() if v is not None}
    out["score"] = score
    return out
