"""PNG plots for the report: a case's error distribution (the trend over runs: trend_plot.py).

matplotlib runs headless (Agg) and every function returns PNG bytes, so a caller can attach them
to Allure or write them to a file. The agent never imports this module
(see farm/agent/histogram.py).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402  (after selecting the backend)
from matplotlib.ticker import FuncFormatter, NullLocator  # noqa: E402

from farm.run.bound_plot import bound_axes  # noqa: E402
from golden.dtypes import T as THRESHOLDS  # noqa: E402

_DPI = 80


def _png(fig: Figure, tight: bool = True) -> bytes:
    """The figure as PNG. `tight=False`, for the per-case plots that the report draws by the
    dozen (one per failure): the figure's own margins (one drawing, where a tight bounding box
    draws the figure once more to measure it) and 64 colours (a palette PNG, a quarter of the
    size of a true-colour one; the plot has a handful of flat colours and anti-aliased text)."""
    if tight:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=_DPI, bbox_inches="tight")
        return buf.getvalue()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    fig.set_dpi(_DPI)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    width, height = canvas.get_width_height()
    rgba = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    image = rgba.convert("RGB").quantize(colors=64, method=Image.Quantize.FASTOCTREE)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _finite_positive(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def _split(record_or_metrics: Mapping) -> tuple[Mapping, str | None, str]:
    """(metrics, dtype, title) from a result record or a bare metrics dict."""
    if "metrics" in record_or_metrics or "case_id" in record_or_metrics:
        metrics = record_or_metrics.get("metrics") or {}
        dtype = record_or_metrics.get("dtype")
        title = str(record_or_metrics.get("case_id", ""))
        fam = record_or_metrics.get("family")
        if fam:
            title = f"{title} [{fam}]"
    else:
        metrics = record_or_metrics
        dtype = metrics.get("dtype")
        title = ""
    return metrics, dtype, title


def _nonfinite_mismatch(metrics) -> int:
    """Positions whose NaN/inf class differs from the golden's (golden/metrics.py counts them
    apart: they are not in the relative errors, hence not in the histogram)."""
    if not isinstance(metrics, Mapping):
        return 0
    try:
        return int(metrics.get("nonfinite_mismatch") or 0)
    except (TypeError, ValueError):
        return 0


def _bound_hist(metrics) -> Mapping | None:
    """metrics["bound_hist"] when it is one (golden/ratio_hist.py result's form)."""
    h = metrics.get("bound_hist") if isinstance(metrics, Mapping) else None
    if not isinstance(h, Mapping) or not isinstance(h.get("counts"), list):
        return None
    return h if isinstance(h.get("log2_lo"), int) and h["counts"] else None


def error_histogram_png(record_or_metrics: Mapping, dtype: str | None = None) -> bytes:
    """Distribution of log10(relative error) for one case, with the dtype threshold T marked.

    Uses metrics["hist"] (as made by farm.agent.histogram.golden_free_histogram) when the record has
    one; otherwise it draws what the record does carry: the worst elements' relative errors and the
    MERE/MARE lines. Raises nothing for a record without metrics: the plot then says so.
    """
    metrics, rec_dtype, title = _split(record_or_metrics)
    dtype = dtype or rec_dtype
    t = THRESHOLDS.get(str(dtype)) if dtype else None
    criterion = record_or_metrics.get("criterion")
    if not (
        isinstance(criterion, Mapping) and (criterion.get("elements") or criterion.get("parts"))
    ):
        criterion = None

    # Every element's error over its bound (golden/ratio_hist.py), where the record has it: the
    # criterion of a case error-bound failed, and how far below it a passed case is.
    ratios = _bound_hist(metrics)
    if criterion is not None and criterion.get("standard") != "error-bound":
        ratios = None  # another gate failed it: that gate is drawn
    if criterion is None and ratios is None:
        fig = Figure(figsize=(7.0, 3.6))
        # Fixed margins (no tight bounding box, see _png): room for the tick labels, axis labels
        # and title of this one layout.
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.14, top=0.91)
        ax = fig.add_subplot(1, 1, 1)
    else:
        # The gate that failed the case above (what failed it, against its limit), the
        # relative errors below.
        fig = Figure(figsize=(7.0, 6.4))
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.08, top=0.95, hspace=0.42)
        if ratios is not None:
            bound_axes(fig.add_subplot(2, 1, 1), ratios, criterion, _nonfinite_mismatch(metrics))
        elif criterion is not None:
            _criterion_axes(fig.add_subplot(2, 1, 1), criterion)
        ax = fig.add_subplot(2, 1, 2)
    hist = metrics.get("hist") if isinstance(metrics, Mapping) else None
    drew = False
    if hist and hist.get("edges") and hist.get("counts"):
        edges = [float(e) for e in hist["edges"]]
        counts = [int(c) for c in hist["counts"]]
        widths = [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)]
        # One filled step outline, not one rectangle per bin: the same picture, drawn faster.
        ax.stairs(counts, edges, fill=True, color="#4477aa", label="elements")
        zeros = int(hist.get("zeros", 0) or 0)
        if zeros:
            w = widths[0] if widths else 0.25
            ax.bar(
                [edges[0] - 1.5 * w],
                [zeros],
                width=w,
                align="edge",
                color="#999999",
                label=f"exact (error 0): {zeros}",
            )
        nonfinite = int(hist.get("nonfinite", 0) or 0)
        if nonfinite:
            ax.text(
                0.99,
                0.95,
                f"NaN/inf positions: {nonfinite}",
                transform=ax.transAxes,
                ha="right",
                va="top",
                fontsize=8,
            )
        ax.set_ylabel("elements")
        if any(c > 0 for c in counts) and max(counts) / max(1, min(c for c in counts if c)) > 1e3:
            ax.set_yscale("log")
            # Plain labels (1, 1000, 1e+06), no minor ticks: mathtext labels cost more to draw
            # than the rest of the plot.
            ax.yaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}"))
        drew = any(c > 0 for c in counts) or zeros > 0
        if not drew:
            ax.set_ylim(0, 1)  # no element to count: an empty axis, not one around zero
    elif isinstance(metrics, Mapping) and metrics:
        worst = metrics.get("worst") or []
        found = [_finite_positive(w.get("rel_err")) for w in worst if isinstance(w, Mapping)]
        rel = [r for r in found if r is not None]
        if rel:
            xs = [math.log10(r) for r in rel]
            ax.scatter(xs, range(1, len(xs) + 1), color="#cc3311", s=18, label="worst elements")
            ax.set_ylabel("rank among worst")
            drew = True
    for name, style in (("mere", ":"), ("mare", "-.")):
        v = _finite_positive(metrics.get(name)) if isinstance(metrics, Mapping) else None
        if v is not None:
            ax.axvline(
                math.log10(v),
                color="#555555",
                linestyle=style,
                linewidth=1.2,
                label=f"{name.upper()} {v:.3g}",
            )
            drew = True
    if t is not None:
        ax.axvline(
            math.log10(t),
            color="#228833",
            linewidth=1.6,
            label=f"T ({dtype}) = 2^{round(math.log2(t))}",
        )
        ax.axvline(
            math.log10(10 * t),
            color="#ee7733",
            linewidth=1.2,
            linestyle="--",
            label="10·T (MARE limit)",
        )
    mismatch = _nonfinite_mismatch(metrics)
    if mismatch:
        n = metrics.get("n")
        ax.text(
            0.5,
            0.62,
            f"NaN/inf positions differing from the golden: {mismatch:,}"
            + (f" of {int(n):,} elements" if isinstance(n, (int, float)) else ""),
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=10,
            color="#cc3311",
            fontweight="bold",
        )
    if not drew:
        ax.text(
            0.5,
            0.5,
            "no finite element to compare" if mismatch else "no error metrics in this record",
            transform=ax.transAxes,
            ha="center",
            va="center",
        )
    ax.set_xlabel("log10(relative error)  |a-g| / (|g| + 1e-7)")
    heading = f"Error distribution {title}".strip()
    # The margins are fixed: a long case id gets a smaller font rather than a cut title.
    # At y=1.0, where it would be placed anyway (nothing drawn above the axes): matplotlib then
    # skips measuring the axes' decorations to find that place (the same PNG, bit for bit).
    ax.set_title(heading, fontsize=max(6.0, min(10.0, 820 / max(1, len(heading)))), y=1.0)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, alpha=0.3)
    return _png(fig, tight=False)


def _criterion_axes(ax, criterion: Mapping) -> None:
    """The failed gate's scores (farm/run/allure/criterion.py) on a log axis, with its limit, 1,
    drawn: each worst element by rank (the first is the one the failure message names) and the
    case's own scores as lines, what lies right of the limit shaded."""
    standard, measure = str(criterion.get("standard", "")), str(criterion.get("measure", ""))
    elements = [e for e in criterion.get("elements") or () if isinstance(e, Mapping)]
    scores = [_finite_positive(e.get("score")) for e in elements]
    parts = {
        str(k): v
        for k, v in (criterion.get("parts") or {}).items()
        if _finite_positive(v) is not None
    }
    logs = [math.log10(v) for v in scores if v is not None]
    logs += [math.log10(float(v)) for v in parts.values()]
    lo = min([*logs, -1.0]) - 0.3
    hi = max([*logs, 0.5]) + 0.3
    ax.set_xlim(lo, hi)
    ax.axvspan(0.0, hi, color="#cc3311", alpha=0.08)
    ax.axvline(0.0, color="#cc3311", linewidth=1.8, label="limit (1)")
    shown = [(rank, math.log10(v)) for rank, v in enumerate(scores, 1) if v is not None]
    over = [e.get("score") for e in elements if e.get("score") == math.inf]
    if shown:
        ax.scatter(
            [x for _, x in shown],
            [r for r, _ in shown],
            color="#cc3311",
            s=22,
            zorder=3,
            label=f"worst elements ({measure})",
        )
        first = elements[0]
        index = first.get("index")
        if index is not None:
            where = "(" + ", ".join(str(i) for i in index) + ")"
            ax.annotate(
                f"{where}: {float(first['score']):.3g}x",
                (shown[0][1], shown[0][0]),
                fontsize=8,
                va="center",
                ha="right",
                xytext=(-8, 0),
                textcoords="offset points",
            )
        ax.set_ylim(len(scores) + 0.8, 0.2)
        ax.set_ylabel("rank")
    else:
        ax.set_yticks([])
    if over:
        ax.text(
            0.99,
            0.05,
            f"{len(over)} with a zero bound (inf)",
            transform=ax.transAxes,
            ha="right",
            fontsize=8,
        )
    for (name, value), style in zip(parts.items(), (":", "-.", "--"), strict=False):
        ax.axvline(
            math.log10(float(value)),
            color="#555555",
            linestyle=style,
            linewidth=1.2,
            label=f"{name} {float(value):.3g}",
        )
    heading = f"Failed {standard}" + (
        f": {criterion['summary']}" if criterion.get("summary") else ""
    )
    ax.set_title(heading, fontsize=max(6.0, min(10.0, 820 / max(1, len(heading)))), y=1.0)
    ax.set_xlabel(f"log10({measure or 'score'})  (0: the limit)")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, alpha=0.3)
