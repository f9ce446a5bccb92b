"""Regression comparison of a run against a baseline run, and the `farm runs|baseline|compare`
commands.

A *regression* is one of:
  - a new failure: the case failed in the run and passed in the baseline;
  - precision drift: one of MERE, MARE, RMSE, max_abs grew beyond drift_factor x its baseline
    value *and* above the noise floor of the case's dtype (both, so that a jump from 1e-9 to
    3e-9 in float32 is not news);
  - a case missing from the run (present in the baseline).
A case that is *broken* in the run (an infrastructure error after retries) was not verified; it is
listed apart and counts as a regression only with strict=True (`--strict`).

Exit codes of `farm compare`: 0 no regression (or no baseline to compare with), 1 regressions,
2 usage error (unknown run, empty store).
"""

from __future__ import annotations

import argparse
import html
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from farm.results.store import METRIC_COLUMNS, RunStore, default_store_path
from golden.dtypes import T as THRESHOLDS

DEFAULT_DRIFT_FACTOR = 1.5
# Default noise floor: T/16 of the dtype for every metric. Typical float32 MERE is ~1e-7, far
# below 2^-13/16 = 7.6e-6, so ordinary float32 jitter never reports; a float16 kernel whose
# rounding changed from nearest to truncation (about 2x the mean error) does.
DEFAULT_FLOOR_FRACTION = 1.0 / 16
DEFAULT_NOISE_FLOOR = {
    dt: {m: t * DEFAULT_FLOOR_FRACTION for m in METRIC_COLUMNS} for dt, t in THRESHOLDS.items()
}
FALLBACK_FLOOR = 2.0**-13 * DEFAULT_FLOOR_FRACTION


def resolve_noise_floor(noise_floor=None) -> dict[str, dict[str, float]]:
    """Normalise a floor spec to {dtype: {metric: floor}}.

    Accepts None (defaults), a number (every dtype and metric), {dtype: number} or
    {dtype: {metric: number}}; dtypes and metrics not named keep their defaults.
    """
    out = {dt: dict(v) for dt, v in DEFAULT_NOISE_FLOOR.items()}
    if noise_floor is None:
        return out
    if isinstance(noise_floor, (int, float)):
        return {dt: {m: float(noise_floor) for m in METRIC_COLUMNS} for dt in out} | {
            "*": {m: float(noise_floor) for m in METRIC_COLUMNS}
        }
    for dt, v in noise_floor.items():
        cur = out.setdefault(dt, {m: FALLBACK_FLOOR for m in METRIC_COLUMNS})
        if isinstance(v, Mapping):
            for m, x in v.items():
                if m not in METRIC_COLUMNS:
                    raise ValueError(
                        f"unknown metric {m!r} in noise floor; one of {METRIC_COLUMNS}"
                    )
                cur[m] = float(x)
        else:
            for m in METRIC_COLUMNS:
                cur[m] = float(v)
    return out


def _floor(floors: Mapping, dtype: str | None, metric: str) -> float:
    d = floors.get(str(dtype)) or floors.get("*")
    return float(d[metric]) if d else FALLBACK_FLOOR


# --------------------------------------------------------------------------- result model


@dataclass
class CaseChange:
    case_id: str
    family: str | None
    dtype: str | None
    baseline_outcome: str | None
    outcome: str | None
    category: str | None = None
    baseline_category: str | None = None


@dataclass
class Drift:
    case_id: str
    family: str | None
    dtype: str | None
    metric: str
    baseline: float
    value: float
    ratio: float
    floor: float


@dataclass
class GroupSummary:
    family: str | None
    dtype: str | None
    n: int = 0
    passed: int = 0
    failed: int = 0
    broken: int = 0
    pass_rate: float | None = None
    mere_median: float | None = None
    mere_max: float | None = None
    mare_median: float | None = None
    mare_max: float | None = None


@dataclass
class Comparison:
    run_id: str
    baseline_id: str | None
    drift_factor: float
    noise_floor: dict
    new_failures: list[CaseChange] = field(default_factory=list)
    fixed: list[CaseChange] = field(default_factory=list)
    still_failing: list[CaseChange] = field(default_factory=list)
    new_broken: list[CaseChange] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    missing_in_run: list[str] = field(default_factory=list)
    missing_in_baseline: list[str] = field(default_factory=list)
    per_dtype: list[GroupSummary] = field(default_factory=list)
    baseline_per_dtype: list[GroupSummary] = field(default_factory=list)
    strict: bool = False

    @property
    def has_regressions(self) -> bool:
        if self.baseline_id is None:
            return False
        strict_extra = bool(self.new_broken) if self.strict else False
        return bool(self.new_failures or self.drift or self.missing_in_run or strict_extra)

    @property
    def regressed_cases(self) -> list[str]:
        """Every case id that makes this a regression, sorted and unique."""
        ids = {c.case_id for c in self.new_failures} | {d.case_id for d in self.drift}
        ids |= set(self.missing_in_run)
        if self.strict:
            ids |= {c.case_id for c in self.new_broken}
        return sorted(ids)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["has_regressions"] = self.has_regressions
        d["regressed_cases"] = self.regressed_cases
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)


# --------------------------------------------------------------------------- the comparison


def _summaries(rows: Sequence[Mapping]) -> list[GroupSummary]:
    groups: dict[tuple, dict] = defaultdict(lambda: {"rows": []})
    for r in rows:
        groups[(r.get("family"), r.get("dtype"))]["rows"].append(r)
    out = []
    for (fam, dt), g in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        rs = g["rows"]
        s = GroupSummary(family=fam, dtype=dt, n=len(rs))
        s.passed = sum(r["outcome"] == "passed" for r in rs)
        s.failed = sum(r["outcome"] == "failed" for r in rs)
        s.broken = sum(r["outcome"] == "broken" for r in rs)
        s.pass_rate = s.passed / s.n if s.n else None
        for m in ("mere", "mare"):
            vals = [r[m] for r in rs if r.get(m) is not None]
            if vals:
                setattr(s, f"{m}_median", statistics.median(vals))
                setattr(s, f"{m}_max", max(vals))
        out.append(s)
    return out


def compare_rows(
    run_rows: Sequence[Mapping],
    base_rows: Sequence[Mapping] | None,
    *,
    run_id: str = "run",
    baseline_id: str | None = "baseline",
    drift_factor: float = DEFAULT_DRIFT_FACTOR,
    noise_floor=None,
    strict: bool = False,
) -> Comparison:
    """Compare two lists of result rows (RunStore.result_rows or full records)."""
    if drift_factor <= 0:
        raise ValueError("drift_factor must be positive")
    floors = resolve_noise_floor(noise_floor)
    comp = Comparison(
        run_id=run_id,
        baseline_id=baseline_id if base_rows is not None else None,
        drift_factor=float(drift_factor),
        noise_floor=floors,
        strict=strict,
    )
    run_rows = [_flat(r) for r in run_rows]
    comp.per_dtype = _summaries(run_rows)
    if base_rows is None:
        return comp
    base_rows = [_flat(r) for r in base_rows]
    comp.baseline_per_dtype = _summaries(base_rows)
    run = {r["case_id"]: r for r in run_rows}
    base = {r["case_id"]: r for r in base_rows}
    comp.missing_in_run = sorted(set(base) - set(run))
    comp.missing_in_baseline = sorted(set(run) - set(base))
    for cid in sorted(set(run) & set(base)):
        a, b = run[cid], base[cid]
        change = CaseChange(
            cid,
            a.get("family"),
            a.get("dtype"),
            b["outcome"],
            a["outcome"],
            a.get("category"),
            b.get("category"),
        )
        if a["outcome"] == "failed":
            if b["outcome"] == "passed":
                comp.new_failures.append(change)
            elif b["outcome"] == "failed":
                comp.still_failing.append(change)
            else:  # broken in the baseline: it was not verified then, so it is news now
                comp.new_failures.append(change)
        elif a["outcome"] == "passed" and b["outcome"] in ("failed", "broken"):
            comp.fixed.append(change)
        elif a["outcome"] == "broken" and b["outcome"] != "broken":
            comp.new_broken.append(change)
        for m in METRIC_COLUMNS:
            va, vb = a.get(m), b.get(m)
            if va is None or vb is None:
                continue
            floor = _floor(floors, a.get("dtype"), m)
            if va > drift_factor * vb and va > floor:
                ratio = va / vb if vb > 0 else float("inf")
                comp.drift.append(
                    Drift(cid, a.get("family"), a.get("dtype"), m, vb, va, ratio, floor)
                )
    return comp


def _flat(r: Mapping) -> dict:
    """A result row with metric columns whether it came as a store row or a full record."""
    if "metrics" not in r or any(m in r for m in METRIC_COLUMNS):
        return dict(r)
    d = dict(r)
    metrics = r.get("metrics") or {}
    for m in METRIC_COLUMNS:
        v = metrics.get(m)
        try:
            v = float(v) if v is not None else None
        except (TypeError, ValueError):
            v = None
        d[m] = v if v is not None and v == v and abs(v) != float("inf") else None
    return d


def compare(
    store: RunStore,
    run_id: str,
    baseline_id: str | None = None,
    drift_factor: float = DEFAULT_DRIFT_FACTOR,
    noise_floor=None,
    *,
    strict: bool = False,
) -> Comparison:
    """Compare `run_id` with `baseline_id` (default: store.baseline_for(the run's tier))."""
    run = store.get_run(run_id)
    if run is None:
        raise KeyError(f"unknown run {run_id!r}")
    if baseline_id is None:
        baseline_id = store.baseline_for(run["tier"], exclude_run_id=run_id)
    elif store.get_run(baseline_id) is None:
        raise KeyError(f"unknown baseline run {baseline_id!r}")
    base_rows = store.result_rows(baseline_id) if baseline_id else None
    return compare_rows(
        store.result_rows(run_id),
        base_rows,
        run_id=run_id,
        baseline_id=baseline_id,
        drift_factor=drift_factor,
        noise_floor=noise_floor,
        strict=strict,
    )


# --------------------------------------------------------------------------- rendering


def _g(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _verdict(c: Comparison) -> str:
    if c.baseline_id is None:
        return f"run {c.run_id}: no baseline to compare with"
    word = "REGRESSIONS" if c.has_regressions else "no regressions"
    return (
        f"run {c.run_id} vs baseline {c.baseline_id}: {word} "
        f"({len(c.new_failures)} new failures, {len(c.drift)} drifts, "
        f"{len(c.missing_in_run)} missing; {len(c.fixed)} fixed, "
        f"{len(c.still_failing)} still failing, {len(c.new_broken)} newly broken)"
    )


def _sections(c: Comparison, limit: int | None):
    """(title, header, rows) tables shared by every renderer."""

    def cut(items):
        return items if limit is None else items[:limit]

    def more(rows, items, width):
        """A last row that says how many were left out, so a cut table never looks whole."""
        left = len(items) - len(rows) if limit is not None else 0
        if left > 0:
            rows.append([f"... and {left} more"] + [""] * (width - 1))
        return rows

    change_hdr = ["case", "family", "dtype", "baseline", "now", "category"]

    def change_rows(items):
        rows = [
            [x.case_id, x.family, x.dtype, x.baseline_outcome, x.outcome, x.category or ""]
            for x in cut(items)
        ]
        return more(rows, items, len(change_hdr))

    out = []
    if c.baseline_id is not None:
        out.append(
            (f"New failures ({len(c.new_failures)})", change_hdr, change_rows(c.new_failures))
        )
        out.append(
            (
                f"Precision drift ({len(c.drift)}; factor {c.drift_factor:g})",
                ["case", "family", "dtype", "metric", "baseline", "now", "ratio", "floor"],
                [
                    [
                        d.case_id,
                        d.family,
                        d.dtype,
                        d.metric,
                        _g(d.baseline),
                        _g(d.value),
                        "inf" if d.ratio == float("inf") else f"{d.ratio:.2f}",
                        _g(d.floor),
                    ]
                    for d in cut(c.drift)
                ],
            )
        )
        more(out[-1][2], c.drift, len(out[-1][1]))
        out.append(
            (
                f"Missing from the run ({len(c.missing_in_run)})",
                ["case"],
                more([[x] for x in cut(c.missing_in_run)], c.missing_in_run, 1),
            )
        )
        out.append(
            (
                f"Newly broken, not verified ({len(c.new_broken)})",
                change_hdr,
                change_rows(c.new_broken),
            )
        )
        out.append((f"Fixed ({len(c.fixed)})", change_hdr, change_rows(c.fixed)))
        out.append(
            (f"Still failing ({len(c.still_failing)})", change_hdr, change_rows(c.still_failing))
        )
        out.append(
            (
                f"New in the run ({len(c.missing_in_baseline)})",
                ["case"],
                more([[x] for x in cut(c.missing_in_baseline)], c.missing_in_baseline, 1),
            )
        )
    out.append(
        (
            "Per family and dtype",
            [
                "family",
                "dtype",
                "cases",
                "passed",
                "failed",
                "broken",
                "pass rate",
                "MERE median",
                "MERE max",
                "MARE median",
                "MARE max",
            ],
            [
                [
                    s.family,
                    s.dtype,
                    s.n,
                    s.passed,
                    s.failed,
                    s.broken,
                    _pct(s.pass_rate),
                    _g(s.mere_median),
                    _g(s.mere_max),
                    _g(s.mare_median),
                    _g(s.mare_max),
                ]
                for s in c.per_dtype
            ],
        )
    )
    return out


def plain_table(hdr: Sequence[str], rows: Sequence[Sequence], indent: str = "  ") -> list[str]:
    """Rows of a left-aligned plain-text table."""
    table = [list(hdr)] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(hdr))]
    return [
        indent + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        for r in table
    ]


def to_text(c: Comparison, limit: int | None = 50) -> str:
    """Plain text, for files and logs."""
    lines = [_verdict(c), ""]
    for title, hdr, rows in _sections(c, limit):
        if not rows:
            continue
        lines.append(title)
        lines += plain_table(hdr, rows)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_rich(c: Comparison, console=None, limit: int | None = 50) -> None:
    """Rich tables on the terminal."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    style = "bold red" if c.has_regressions else "bold green"
    console.print(_verdict(c), style=style)
    for title, hdr, rows in _sections(c, limit):
        if not rows:
            continue
        t = Table(title=title, title_justify="left")
        for h in hdr:
            t.add_column(h)
        for r in rows:
            t.add_row(*["" if v is None else str(v) for v in r])
        console.print(t)


def to_markdown(c: Comparison, limit: int | None = 100) -> str:
    def esc(v):
        return "" if v is None else str(v).replace("|", "\\|")

    lines = ["## Regression summary", "", f"**{esc(_verdict(c))}**", ""]
    for title, hdr, rows in _sections(c, limit):
        lines.append(f"### {title}")
        lines.append("")
        if not rows:
            lines += ["none", ""]
            continue
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "---|" * len(hdr))
        lines += ["| " + " | ".join(esc(v) for v in r) + " |" for r in rows]
        lines.append("")
    return "\n".join(lines)


def to_html(c: Comparison, limit: int | None = 200, trend_png_name: str | None = None) -> str:
    """A self-contained HTML page (the report attaches it as the run summary)."""
    e = html.escape
    colour = "#b00020" if c.has_regressions else "#1b7f3b"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Regression summary</title>",
        "<style>body{font-family:sans-serif;font-size:14px;margin:16px}"
        "table{border-collapse:collapse;margin-bottom:16px}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
        "th{background:#f3f3f3}h2{margin-top:0}</style></head><body>",
        "<h2>Regression summary</h2>",
        f"<p id='verdict' style='color:{colour};font-weight:bold'>{e(_verdict(c))}</p>",
    ]
    if trend_png_name:
        parts.append(f"<p><img alt='trend' src='{e(trend_png_name)}'></p>")
    for title, hdr, rows in _sections(c, limit):
        parts.append(f"<h3>{e(title)}</h3>")
        if not rows:
            parts.append("<p>none</p>")
            continue
        parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in hdr) + "</tr>")
        for r in rows:
            parts.append(
                "<tr>" + "".join(f"<td>{e('' if v is None else str(v))}</td>" for v in r) + "</tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


# --------------------------------------------------------------------------- CLI commands


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store", default=None, help="run store (default: $FARM_STORE or runs/farm.sqlite)"
    )


def _open(args) -> RunStore:
    return RunStore(args.store or default_store_path())


def main_runs(argv: Sequence[str] | None = None) -> int:
    """`farm runs [--tier T] [--limit N] [--json]`: list the recorded runs, newest first."""
    p = argparse.ArgumentParser(prog="farm runs", description=main_runs.__doc__)
    _store_arg(p)
    p.add_argument("--tier")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args(argv)
    with _open(args) as store:
        runs = store.runs(limit=args.limit, tier=args.tier)
        baselines = {r["tier"]: store.explicit_baseline(r["tier"]) for r in runs}
    if args.json:
        print(json.dumps(runs, indent=2, sort_keys=True))
        return 0
    hdr = (
        "run",
        "tier",
        "started",
        "ended",
        "exit",
        "cases",
        "passed",
        "failed",
        "broken",
        "package",
        "commit",
        "baseline",
    )
    rows = []
    for r in runs:
        c = r["counts"]
        rows.append(
            [
                r["run_id"],
                r["tier"],
                r["started_at"] or "",
                r["ended_at"] or "(running)",
                "" if r["exit_code"] is None else str(r["exit_code"]),
                str(c["total"]),
                str(c["passed"]),
                str(c["failed"]),
                str(c["broken"]),
                f"{r.get('package_version') or ''} {(r.get('package_sha256') or '')[:12]}".strip(),
                (r.get("git_commit") or "")[:12],
                "yes" if baselines.get(r["tier"]) == r["run_id"] else "",
            ]
        )
    if not runs:
        print("no runs recorded yet")
    elif sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        t = Table(title="Runs (newest first)", title_justify="left")
        for h in hdr:
            t.add_column(h, no_wrap=h == "run")
        for row in rows:
            t.add_row(*row)
        Console().print(t)
    else:  # pipes and logs get every character of the run ids
        print("\n".join(plain_table(hdr, rows, indent="")))
    return 0


def main_baseline(argv: Sequence[str] | None = None) -> int:
    """`farm baseline set RUN [--tier T]` | `farm baseline show [--tier T]` |
    `farm baseline clear --tier T`."""
    p = argparse.ArgumentParser(prog="farm baseline", description=main_baseline.__doc__)
    _store_arg(p)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("set", help="make RUN the baseline of its tier (or of --tier)")
    s.add_argument("run")
    s.add_argument("--tier", help="default: the run's own tier")
    sh = sub.add_parser("show", help="the baseline each tier would use now")
    sh.add_argument("--tier")
    cl = sub.add_parser("clear", help="drop the explicit baseline (back to last green)")
    cl.add_argument("--tier", required=True)
    args = p.parse_args(argv)
    with _open(args) as store:
        if args.cmd == "set":
            run = store.get_run(args.run)
            if run is None:
                print(f"farm baseline: unknown run {args.run!r}", file=sys.stderr)
                return 2
            tier = args.tier or run["tier"]
            store.set_baseline(tier, args.run)
            print(f"baseline of tier {tier}: {args.run}")
            return 0
        if args.cmd == "clear":
            store.clear_baseline(args.tier)
            print(f"baseline of tier {args.tier} cleared (last green run is used)")
            return 0
        tiers = [args.tier] if args.tier else sorted({r["tier"] for r in store.runs(limit=None)})
        for tier in tiers:
            explicit = store.explicit_baseline(tier)
            eff = store.baseline_for(tier)
            how = "explicit" if explicit and eff == explicit else "last green"
            print(f"{tier}: {eff or '(none)'}" + (f" ({how})" if eff else ""))
        return 0


def _parse_floor(items: Sequence[str] | None):
    if not items:
        return None
    spec: dict = {}
    for item in items:
        if "=" not in item:
            return float(item)
        key, val = item.split("=", 1)
        if ":" in key:
            dt, m = key.split(":", 1)
            spec.setdefault(dt, {})[m] = float(val)
        else:
            spec[key] = float(val)
    return spec


def main_compare(argv: Sequence[str] | None = None) -> int:
    """`farm compare [RUN] [--baseline RUN] [--drift-factor F] [--noise-floor SPEC]...`

    Compares RUN (default: the newest finished run) with its baseline and exits 1 on
    regressions."""
    p = argparse.ArgumentParser(prog="farm compare", description=main_compare.__doc__)
    _store_arg(p)
    p.add_argument("run", nargs="?", help="default: the newest finished run")
    p.add_argument("--baseline", help="default: the tier's explicit baseline, else last green")
    p.add_argument("--drift-factor", type=float, default=DEFAULT_DRIFT_FACTOR)
    p.add_argument(
        "--noise-floor",
        action="append",
        metavar="SPEC",
        help="a number for every dtype, or DTYPE=X, or DTYPE:METRIC=X; repeatable",
    )
    p.add_argument(
        "--strict", action="store_true", help="count cases broken by infrastructure as regressions"
    )
    p.add_argument("--format", choices=("rich", "text", "json", "markdown", "html"), default="rich")
    p.add_argument("--output", "-o", help="write the rendering to this file instead of stdout")
    p.add_argument("--limit", type=int, default=50, help="rows per table (0: all)")
    args = p.parse_args(argv)
    limit = None if args.limit == 0 else args.limit
    with _open(args) as store:
        run_id = args.run
        if run_id is None:
            latest = store.latest_run(finished=True)
            if latest is None:
                print("farm compare: no finished run in the store", file=sys.stderr)
                return 2
            run_id = latest["run_id"]
        try:
            comp = compare(
                store,
                run_id,
                args.baseline,
                args.drift_factor,
                _parse_floor(args.noise_floor),
                strict=args.strict,
            )
        except KeyError as exc:
            print(f"farm compare: {exc.args[0]}", file=sys.stderr)
            return 2
    fmt = args.format
    if fmt == "rich" and (args.output or not sys.stdout.isatty()):
        fmt = "text"  # rich truncates cells to the terminal width; files and pipes get it all
    if fmt == "rich":
        render_rich(comp, limit=limit)
    else:
        text = {
            "text": lambda: to_text(comp, limit),
            "json": comp.to_json,
            "markdown": lambda: to_markdown(comp, limit),
            "html": lambda: to_html(comp, limit),
        }[fmt]()
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
            print(_verdict(comp))
        else:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 1 if comp.has_regressions else 0
