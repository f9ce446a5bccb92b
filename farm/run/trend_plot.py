"""The precision trend over a tier's last runs (the report's `precision-trend.png`): what it shows
(`trend_data`: the runs, their kinds and time labels, each line's points) and its PNG
(`trend_png`), drawn from that data only.

A run's kind (farm/results/store/trends.py run_kind) decides where its points go: the tier's
whole runs and merges of shards (the whole tier, run in parts) make each line; a planted bug's
run, a shard, a degraded run (exit 2) and a subset are marked by their own marker, off the line,
so that neither a planted bug's numbers nor one shard's slice reads as the operator's trend. The
x axis is the runs in order, labelled with their start time (UTC; the date once when they share
it) and, under it, the kind of a run that is not whole.
"""

from __future__ import annotations

import datetime as _dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from farm.run.plots import _finite_positive, _png
from golden.dtypes import T as THRESHOLDS

# The kinds whose points make the trend's lines; every other kind is marked off them.
ON_LINE = ("whole", "merged")
# A marker per kind (farm/results/store/trends.py RUN_KINDS); an unknown kind gets "P".
MARKERS = {
    "whole": "o",
    "merged": "D",
    "shard": "s",
    "planted": "X",
    "degraded": "v",
    "subset": "^",
}
# What the legend says of a kind's marker.
KIND_LEGEND = {
    "merged": "merged shards (on the line)",
    "shard": "shard (off the line)",
    "planted": "planted bug (off the line)",
    "degraded": "degraded, exit 2 (off the line)",
    "subset": "subset of the tier (off the line)",
}
METRICS = ("mere", "mare")


@dataclass(frozen=True)
class TrendRun:
    x: int  # its place on the axis, oldest first
    run_id: str
    kind: str  # "whole", "merged", "shard", "planted", "degraded", "subset"
    label: str  # the axis label: its start time, and under it its kind when not whole


@dataclass(frozen=True)
class TrendPoint:
    x: int
    median: float
    top: float  # the max: the band above the median
    kind: str

    @property
    def on_line(self) -> bool:
        return self.kind in ON_LINE


@dataclass
class TrendData:
    runs: list[TrendRun]
    axis: str  # the x axis' title
    # metric ("mere", "mare") -> (family, dtype) -> its points, oldest first
    points: dict[str, dict[tuple[str, str], list[TrendPoint]]] = field(default_factory=dict)
    dtypes: set[str] = field(default_factory=set)

    def kinds(self) -> list[str]:
        """The kinds of the runs shown, in MARKERS' order."""
        seen = {r.kind for r in self.runs}
        return [k for k in MARKERS if k in seen] + sorted(seen - set(MARKERS))


def _started(value: object) -> _dt.datetime | None:
    try:
        t = _dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return t.astimezone(_dt.timezone.utc) if t.tzinfo else t


def time_labels(started: Sequence[object]) -> tuple[list[str], str]:
    """Each run's start as an axis label, and the axis' title: "15:12" under "run start (UTC),
    2026-11-29" when every run started that date, "11-29 15:12" otherwise (the year too when
    the years differ); seconds where two runs would share a label. A start that is no time is
    shown as "?"."""
    times = [_started(s) for s in started]
    known = [t for t in times if t is not None]
    dates = {t.date() for t in known}
    if len(dates) <= 1:
        day = f", {next(iter(dates)).isoformat()}" if dates else ""
        fmt, axis = "%H:%M", f"run start (UTC){day}"
    else:
        fmt = "%m-%d %H:%M" if len({d.year for d in dates}) == 1 else "%Y-%m-%d %H:%M"
        axis = "run start (UTC)"
    shown = [t.strftime(fmt) if t else "?" for t in times]
    if len({s for s in shown if s != "?"}) < len([s for s in shown if s != "?"]):
        shown = [t.strftime(fmt + ":%S") if t else "?" for t in times]
    return shown, axis


def trend_data(series: Sequence[Mapping] | Mapping) -> TrendData:
    """What the trend plot shows of RunStore.metric_series(...) (a list of points, or a dict
    with "points"): the runs in order with their kinds and labels, and per metric each
    (family, dtype)'s points that have a finite positive median."""
    pts = series.get("points", []) if isinstance(series, Mapping) else list(series)
    first: dict[str, Mapping] = {}
    for p in pts:
        first.setdefault(str(p["run_id"]), p)
    labels, axis = time_labels([p.get("started_at") for p in first.values()])
    runs = []
    for x, ((run_id, p), label) in enumerate(zip(first.items(), labels, strict=True)):
        kind = str(p.get("kind") or "whole")
        shown = str(p.get("kind_text") or ("" if kind == "whole" else kind))
        runs.append(TrendRun(x, run_id, kind, label + (f"\n{shown}" if shown else "")))
    x_of = {r.run_id: r for r in runs}
    data = TrendData(runs, axis, {m: defaultdict(list) for m in METRICS})
    for p in pts:
        run = x_of[str(p["run_id"])]
        line = (str(p.get("family")), str(p.get("dtype")))
        data.dtypes.add(line[1])
        for metric in METRICS:
            med = _finite_positive(p.get(f"{metric}_median"))
            if med is not None:
                top = _finite_positive(p.get(f"{metric}_max")) or med
                data.points[metric][line].append(TrendPoint(run.x, med, top, run.kind))
    return data


def trend_png(series: Sequence[Mapping] | Mapping) -> bytes:
    """MERE and MARE per dtype and family over the last runs (log scale): each (family,
    dtype)'s medians of whole runs as a line with a band to the max; other kinds' points
    marked off it (trend_data)."""
    data = trend_data(series)
    fig = Figure(figsize=(9.0, 5.6))
    axes = [fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)]
    colours: dict[tuple[str, str], str] = {}
    for ax, metric in zip(axes, METRICS, strict=True):
        lines = data.points[metric]
        for key, points in sorted(lines.items()):
            on = [p for p in points if p.on_line]
            (line,) = ax.plot(
                [p.x for p in on],
                [p.median for p in on],
                color=colours.get(key),
                marker="o",
                markersize=3,
                label=f"{key[0]} {key[1]}",
            )
            colours[key] = to_hex(line.get_color())
            ax.fill_between(
                [p.x for p in on],
                [p.median for p in on],
                [p.top for p in on],
                color=colours[key],
                alpha=0.12,
            )
            for p in points:
                if p.kind != "whole":
                    ax.plot(
                        [p.x], [p.median], linestyle="none", color=colours[key],
                        marker=MARKERS.get(p.kind, "P"), markersize=7 if p.on_line else 6,
                    )  # fmt: skip
        for dt, t in THRESHOLDS.items():
            if dt in data.dtypes:
                ax.axhline(
                    t if metric == "mere" else 10 * t,
                    color="#999999",
                    linewidth=0.8,
                    linestyle="--",
                )
        if lines:
            ax.set_yscale("log")
            handles, names = ax.get_legend_handles_labels()
            for kind in data.kinds():
                if kind in KIND_LEGEND:
                    (h,) = ax.plot([], [], linestyle="none", color="#444444", marker=MARKERS[kind])
                    handles.append(h)
                    names.append(KIND_LEGEND[kind])
            ax.legend(handles, names, fontsize=7, loc="best", ncol=3)  # off the points
        else:
            ax.text(
                0.5,
                0.5,
                "no precision results yet",
                transform=ax.transAxes,
                ha="center",
                va="center",
            )
        ax.set_ylabel(f"{metric.upper()} (median, band to max)")
        ax.grid(True, alpha=0.3)
        ax.set_xticks([r.x for r in data.runs])
    many = len(data.runs) > 8  # side by side they would overlap
    axes[1].set_xticklabels(
        [r.label for r in data.runs],
        fontsize=7,
        rotation=30 if many else 0,
        ha="right" if many else "center",
    )
    axes[1].set_xlabel(data.axis, fontsize=8)
    axes[0].set_xticklabels([])
    axes[0].set_title(
        "Precision trend per family and dtype (dashed: T for MERE, 10·T for MARE)", fontsize=10
    )
    return _png(fig)
