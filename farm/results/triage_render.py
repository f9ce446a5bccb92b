"""A run's triage for the report (farm/results/report.py): the overview's Metadata lines, and the
triage page (HTML and Markdown), a global attachment beside the regression summary.

Each failure group: its line (what its cases share, its counts, how they failed), the command that
reruns exactly its cases, `farm shrink` of a representative failing case and, where the run has a
baseline of another commit, `farm bisect` between the two (farm/results/triage_next.py).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from farm.results.triage import Triage
from farm.results.triage_next import NextSteps

# The global attachment's names; the overview's Metadata says where the commands are.
HTML_NAME = "triage.html"
MARKDOWN_NAME = "triage.md"


def overview(result: Triage, steps: Sequence[NextSteps]) -> dict[str, str]:
    """The overview's Metadata entries (shown first): each group's line, and where its commands
    are. None for a run without failures."""
    if not result.groups and not result.failures:
        return {}
    if not result.groups:
        return {"triage": result.why_none}
    # Allure 3 shows a Metadata value on one line, cut where its column ends (~40 characters);
    # a click on it shows it whole. The note, after the groups' lines, says so.
    out = {f"triage.{n}": group.line() for n, group in enumerate(result.groups, 1)}
    out["triage"] = f"whole lines: click one, or {HTML_NAME} in Global Attachments (with commands)"
    return out


def _title(result: Triage) -> str:
    return f"Triage of run {result.run_id}" if result.run_id else "Triage"


def to_markdown(result: Triage, steps: Sequence[NextSteps]) -> str:
    out = [f"# {_title(result)}", ""]
    if result.why_none:
        return "\n".join([*out, result.why_none, ""])
    out.append(
        f"{result.failures:,} failures, {result.passes:,} passing cases"
        + (f", {result.broken:,} broken (left out)" if result.broken else "")
    )
    for n, (group, step) in enumerate(zip(result.groups, steps, strict=True), 1):
        out += ["", f"## {n}. {group.text}", "", group.line(), ""]
        out += ["rerun:", "", f"    {group.rerun}", ""]
        out += [f"shrink (representative {step.representative}):", "", f"    {step.shrink}", ""]
        out += ["bisect:", "", f"    {step.bisect}" if step.bisect else step.no_bisect]
    return "\n".join(out) + "\n"


def _command(text: str) -> str:
    return f"<pre><code>{html.escape(text)}</code></pre>"


def to_html(result: Triage, steps: Sequence[NextSteps]) -> str:
    title = html.escape(_title(result))
    body = [f"<h2>{title}</h2>"]
    if result.why_none:
        body.append(f"<p>{html.escape(result.why_none)}</p>")
    else:
        body.append(
            f"<p>{result.failures:,} failures, {result.passes:,} passing cases"
            + (f", {result.broken:,} broken (left out)" if result.broken else "")
            + ". Each group: what its cases share, and what to run next.</p>"
        )
    for n, (group, step) in enumerate(zip(result.groups, steps, strict=True), 1):
        body.append(f"<h3>{n}. {html.escape(group.text)}</h3>")
        body.append(f"<p class='line'>{html.escape(group.line())}</p>")
        body.append("<p>rerun exactly its cases:</p>" + _command(group.rerun))
        body.append(
            f"<p>shrink a representative failing case, "
            f"<code>{html.escape(step.representative)}</code>:</p>" + _command(step.shrink)
        )
        if step.bisect:
            body.append("<p>bisect from the baseline's commit:</p>" + _command(step.bisect))
        else:
            body.append(f"<p>bisect: {html.escape(step.no_bisect)}</p>")
    style = (
        "body{font-family:sans-serif;margin:1em}pre{background:#f4f4f4;padding:.5em;"
        "white-space:pre-wrap;word-break:break-all}.line{font-weight:bold}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>"
    )
