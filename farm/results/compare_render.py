"""Renderings of a Comparison (farm/results/compare.py): plain text, rich tables, Markdown and a
self-contained HTML page, all made of the same tables (`_sections`)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from farm.results.compare import Comparison


def _g(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def verdict(c: Comparison) -> str:
    """One line: the run, its baseline, and whether it regressed (with the counts)."""
    if c.baseline_id is None:
        return f"run {c.run_id}: no baseline to compare with"
    word = "REGRESSIONS" if c.has_regressions else "no regressions"
    apart = f", {len(c.not_in_both_suites)} not in both suites" if c.suites_differ else ""
    return (
        f"run {c.run_id} vs baseline {c.baseline_id}: {word} "
        f"({len(c.new_failures)} new failures, {len({d.case_id for d in c.drift})} cases "
        f"drifted ({len(c.drift)} metrics), "
        f"{len(c.missing_in_run)} missing; {len(c.fixed)} fixed, "
        f"{len(c.still_failing)} still failing, {len(c.new_broken)} newly broken{apart})"
    )


def _cases(n: int) -> str:
    return f"{n:,} case" + ("" if n == 1 else "s")


def summary_line(c: Comparison) -> str:
    """The comparison in one line, counted per case (a case that drifted in four metrics is one
    drifted case), and where its tables are: what `farm run` and `farm report` print."""
    if c.baseline_id is None:
        return f"run {c.run_id}: no baseline to compare with (farm baseline set RUN makes one)"
    drifted = len({d.case_id for d in c.drift})
    why = [
        f"{n:,} {what}"
        for n, what in (
            (len(c.new_failures), "newly failing"),
            (drifted, "drifted"),
            (len(c.missing_in_run), "missing"),
            (len(c.new_broken) if c.strict else 0, "newly broken"),
        )
        if n
    ]
    regressed = _cases(len(c.regressed_cases)) + " regressed"
    if why:
        regressed += f" ({', '.join(why)})"
    rest = [f"{len(c.fixed):,} fixed", f"{len(c.still_failing):,} still failing"]
    if c.new_broken and not c.strict:
        rest.append(f"{len(c.new_broken):,} newly broken")
    if c.suites_differ:
        rest.append(f"{_cases(len(c.not_in_both_suites))} not in both suites")
    word = "REGRESSIONS" if c.has_regressions else "no regressions"
    return (
        f"vs baseline {c.baseline_id}: {word}: {regressed}, {', '.join(rest)} "
        f"(the tables: farm compare {c.run_id}, and the report's regression summary)"
    )


def suites_line(c: Comparison) -> str:
    """The line every rendering starts with when the two runs are of different suites (else
    empty): the cases only one of them has are why, not regressions."""
    if not c.suites_differ or c.run_suite is None or c.baseline_suite is None:
        return ""
    return (
        f"the runs are of different suites ({c.run_suite.shown} vs {c.baseline_suite.shown}): "
        f"{len(c.not_in_both_suites)} cases are only in one of them"
    )


def headline(c: Comparison) -> list[str]:
    """The lines above the tables: what was compared (a shard's slice), that the suites differ
    (when they do), then the verdict."""
    return [line for line in (c.scope, suites_line(c), verdict(c)) if line]


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
                f"Precision drift ({_cases(len({d.case_id for d in c.drift}))}, "
                f"{len(c.drift)} metrics; factor {c.drift_factor:g})",
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
        if c.suites_differ:
            out.append(
                (
                    f"Not in both suites, not compared ({len(c.not_in_both_suites)})",
                    ["case"],
                    more([[x] for x in cut(c.not_in_both_suites)], c.not_in_both_suites, 1),
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
    lines = [*headline(c), ""]
    for title, hdr, rows in _sections(c, limit):
        if not rows:
            continue
        lines.append(title)
        lines += plain_table(hdr, rows)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_rich(c: Comparison, console=None, limit: int | None = 50) -> None:
    """Rich tables on the terminal."""
    from rich.table import Table
    from rich.text import Text  # case ids, tiers and messages are text, not rich's markup

    from farm.util.console import FarmConsole

    console = console or FarmConsole()
    style = "bold red" if c.has_regressions else "bold green"
    if suites_line(c):
        console.print(Text(suites_line(c), style="bold yellow"))
    console.print(Text(verdict(c), style=style))
    for title, hdr, rows in _sections(c, limit):
        if not rows:
            continue
        t = Table(title=title, title_justify="left")
        for h in hdr:
            t.add_column(h)
        for r in rows:
            t.add_row(*[Text("" if v is None else str(v)) for v in r])
        console.print(t)


def to_markdown(c: Comparison, limit: int | None = 100) -> str:
    def esc(v):
        return "" if v is None else str(v).replace("|", "\\|")

    lines = ["## Regression summary", ""]
    if suites_line(c):
        lines += [f"**{esc(suites_line(c))}**", ""]
    lines += [f"**{esc(verdict(c))}**", ""]
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
        # The report shows the page in a frame as wide as its overview: the table fits that
        # width, and a cell wraps, anywhere in a case id that has no space, where it would run
        # past the frame's right edge and be cut there.
        "<style>body{font-family:sans-serif;font-size:14px;margin:16px}"
        "table{border-collapse:collapse;margin-bottom:16px;max-width:100%}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;overflow-wrap:anywhere}"
        "img{max-width:100%}"
        "th{background:#f3f3f3}h2{margin-top:0}</style></head><body>",
        "<h2>Regression summary</h2>",
    ]
    if suites_line(c):
        parts.append(f"<p id='suites' style='font-weight:bold'>{e(suites_line(c))}</p>")
    parts.append(f"<p id='verdict' style='color:{colour};font-weight:bold'>{e(verdict(c))}</p>")
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
