"""The error-bound panel of a case's plot: every element's error over its bound (issue 58).

The record carries the histogram of |out - golden| / bound over all compared elements
(golden/ratio_hist.py, metrics["bound_hist"]); this draws it on a log axis with the limit, 1,
as a line, the bins above it in red and shaded: a case the error bound failed shows every
element against that criterion (the worst few are in the worst-elements table), a passed one
how far below it its elements are. farm/run/plots.py puts it above the relative errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from matplotlib.ticker import FuncFormatter, NullLocator

from golden import ratio_hist


def bound_axes(ax, hist: Mapping, criterion: Mapping | None, nonfinite: int = 0) -> None:
    """Draw ``hist`` (golden/ratio_hist.py result's form) on ``ax``; ``criterion``: the failed
    error-bound gate (farm/run/allure/criterion.py failing_criterion), or None for a pass;
    ``nonfinite``: the elements whose NaN/inf class differs from the golden's (not in ``hist``:
    not compared; the error bound fails them too)."""
    edges = ratio_hist.log10_edges(hist)
    counts = [int(c) for c in hist["counts"]]
    over = ratio_hist.above_one(hist)
    n = sum(counts) + int(hist.get("zeros") or 0)
    # The bins at or below 1 in blue, those above it in red: the edge at 1 is a bin edge.
    first_over = next(i for i, e in enumerate(edges) if e >= 0)
    below = [c if i < first_over else 0 for i, c in enumerate(counts)]
    above = [c if i >= first_over else 0 for i, c in enumerate(counts)]
    ax.stairs(below, edges, fill=True, color="#4477aa", label="elements at or below")
    if over:
        ax.stairs(above, edges, fill=True, color="#cc3311", label=f"over their bound: {over:,}")
    used = [i for i, c in enumerate(counts) if c]
    lo = edges[used[0]] if used else -3.0
    hi = edges[used[-1] + 1] if used else 0.0
    parts = {}
    if criterion is not None:
        for name, v in (criterion.get("parts") or {}).items():
            if isinstance(v, (int, float)) and math.isfinite(v) and v > 0:
                parts[str(name)] = math.log10(float(v))
    lo = min([lo, *parts.values(), -1.0]) - 0.3
    hi = max([hi, *parts.values(), 0.5]) + 0.3
    ax.set_xlim(lo, hi)
    ax.axvspan(0.0, hi, color="#cc3311", alpha=0.08)
    ax.axvline(0.0, color="#cc3311", linewidth=1.8, label="limit (1)")
    for (name, x), style in zip(parts.items(), (":", "-.", "--"), strict=False):
        ax.axvline(x, color="#555555", linestyle=style, linewidth=1.2, label=f"{name} {10**x:.3g}")
    zeros = int(hist.get("zeros") or 0)
    if zeros:
        ax.text(0.99, 0.95, f"no error: {zeros:,}", transform=ax.transAxes, ha="right", va="top",
                fontsize=8)  # fmt: skip
    nonzero = [c for c in counts if c]
    if nonzero and max(nonzero) / min(nonzero) > 1e3:
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}"))
    ax.set_ylabel("elements")
    if criterion is None:
        heading = f"error-bound: {n - over:,} of {n:,} elements at or below their bound"
    elif not over and nonfinite:
        heading = f"Failed error-bound: NaN/inf at {nonfinite:,} elements where the golden has none"
        heading += f"; the {n:,} compared within bound" if n else ""
    elif not over:  # failed on its rounding bias alone (the line drawn with its own limit)
        heading = f"Failed error-bound on its rounding bias; all {n:,} elements within bound"
    else:
        heading = f"Failed error-bound: {over:,} of {n:,} elements over their bound"
        worst = (criterion.get("elements") or [None])[0]
        if isinstance(worst, Mapping) and worst.get("index") is not None:
            where = ", ".join(str(i) for i in worst["index"])
            heading += f"; worst ({where}) {float(worst['score']):.3g}x"
    ax.set_title(heading, fontsize=max(6.0, min(10.0, 820 / max(1, len(heading)))), y=1.0)
    ax.set_xlabel("log10(error / bound)  |a-g| / bound of each element  (0: the limit)")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, alpha=0.3)
