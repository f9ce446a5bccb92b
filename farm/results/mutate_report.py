"""The page of a `farm mutate` run (farm/cli/mutate_command.py): one self-contained HTML file,
report/index.html in the run directory, from its mutation.json. The score and the counts first,
then what needs a person: the survivors (file:line, the line and its edit, the cases that came
closest to failing: what the tier lacks), the weak kills (and the cases that made them), the
policy-only kills (refused by a rule of the emulated device that CANN does not enforce, and by no
case's results: what CANN would run) and, beside the kills with both kinds, a case that catches
them through the results; then the stillborn and equivalent mutants, folded."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
code { font-family: ui-monospace, monospace; font-size: 0.9em; }
.score { font-size: 1.6em; font-weight: bold; }
.survived { color: #b00; } .killed { color: #070; } .weak { color: #a60; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _edit(m: dict[str, Any]) -> str:
    return (
        f"<code>{_e(m['source_line'].strip())}</code><br><code>{_e(m['old'])}</code> &rarr; "
        f"<code>{_e(m['new']) or '(removed)'}</code>"
    )


def _where(m: dict[str, Any]) -> str:
    return f"<code>op/{_e(m['file'])}:{m['line']}</code><br><small>{_e(m['id'])}</small>"


def _survivors(mutants: list[dict[str, Any]]) -> str:
    rows = []
    for m in mutants:
        closest = "<br>".join(
            f"<code>{_e(c['case_id'])}</code> {_num(c['closeness'])} of its limit "
            f"(original {_num(c['baseline'])})"
            for c in m["closest"]
        )
        rows.append(
            f"<tr><td>{_where(m)}</td><td>{_e(m['rule'])}</td><td>{_edit(m)}</td>"
            f"<td>{closest or 'no precision case'}</td>"
            f"<td>{_e(m.get('explained') or '')}</td></tr>"
        )
    return _table(["where", "rule", "line and edit", "closest cases", "why no case kills it"], rows)


def _weak(mutants: list[dict[str, Any]]) -> str:
    rows = []
    for m in mutants:
        cases = "<br>".join(
            f"<code>{_e(c['case_id'])}</code> {_e(c['outcome'])} ({_e(c['category'])})"
            for c in m["failing_cases"]
        )
        rows.append(
            f"<tr><td>{_where(m)}</td><td>{_e(m['rule'])}</td><td>{_edit(m)}</td>"
            f"<td>{m['failing']}</td><td>{cases}</td></tr>"
        )
    return _table(["where", "rule", "line and edit", "failing", "the cases"], rows)


def _policy_only(mutants: list[dict[str, Any]]) -> str:
    rows = [
        f"<tr><td>{_where(m)}</td><td>{_e(m['rule'])}</td><td>{_edit(m)}</td>"
        f"<td>{m['policy_failing']}</td><td>"
        + "<br>".join(f"<code>{_e(c)}</code>" for c in m["policy_cases"])
        + "</td></tr>"
        for m in mutants
    ]
    return _table(["where", "rule", "line and edit", "policy cases", "the cases"], rows)


def _both(mutants: list[dict[str, Any]]) -> str:
    rows = []
    for m in mutants:
        c = m["caught_by"]
        rows.append(
            f"<tr><td>{_where(m)}</td><td>{_e(m['rule'])}</td><td>{_edit(m)}</td>"
            f"<td>{m['policy_failing']} of {m['failing']}</td>"
            f"<td><code>{_e(c['case_id'])}</code> {_e(c['outcome'])} ({_e(c['category'])})"
            + (" without the output policies" if c.get("without_policy") else "")
            + "</td></tr>"
        )
    return _table(
        ["where", "rule", "line and edit", "policy cases", "caught through the results by"], rows
    )


def _plain(mutants: list[dict[str, Any]], extra: str | None = None) -> str:
    rows = [
        f"<tr><td>{_where(m)}</td><td>{_e(m['rule'])}</td><td>{_edit(m)}</td>"
        + (f"<td><code>{_e(m[extra])}</code></td>" if extra else "")
        + "</tr>"
        for m in mutants
    ]
    return _table(
        ["where", "rule", "line and edit"] + ([extra.replace("_", " ")] if extra else []), rows
    )


def _table(head: list[str], rows: list[str]) -> str:
    if not rows:
        return "<p>none</p>"
    cells = "".join(f"<th>{_e(h)}</th>" for h in head)
    return f"<table><tr>{cells}</tr>{''.join(rows)}</table>"


def render(doc: dict[str, Any]) -> str:
    """The page's HTML for a mutation.json document."""
    s = doc["summary"]
    mutants = doc["mutants"]
    survivors = [m for m in mutants if m["status"] == "survived"]
    weak = [m for m in mutants if m.get("weak")]
    policy_only = [m for m in mutants if m.get("policy_only")]
    both = [m for m in mutants if m.get("caught_by") and m.get("policy_failing")]
    stillborn = [m for m in mutants if m["status"] == "stillborn"]
    equivalent = [m for m in mutants if m["status"] == "equivalent"]
    same_library = [m for m in equivalent if m.get("equivalent_by") != "review"]
    reviewed = [m for m in equivalent if m.get("equivalent_by") == "review"]
    selection = (
        f"tier {doc['tier']}"
        + (f" -k {doc['k']}" if doc.get("k") else "")
        + f", backend {doc.get('backend', 'native')}"
    )
    counts = _table(
        [
            "mutants",
            "killed",
            "weak kills",
            "policy-only kills",
            "survived",
            "equivalent",
            "stillborn",
            "seconds",
        ],
        [
            f"<tr><td>{s['mutants']}</td><td class=killed>{s['killed']}</td>"
            f"<td class=weak>{s['weak']}</td><td class=weak>{s.get('policy_only', 0)}</td>"
            f"<td class=survived>{s['survived']}</td>"
            f"<td>{s['equivalent']}</td><td>{s['stillborn']}</td><td>{doc['seconds']}</td></tr>"
        ],
    )
    left_out = (
        f"<p>{len(doc['baseline_failing'])} cases fail on the original operator and judge no "
        f"mutant: {_e(', '.join(doc['baseline_failing']))}</p>"
        if doc["baseline_failing"]
        else ""
    )
    errors = "".join(f"<p class=survived>error: {_e(e)}</p>" for e in doc.get("errors") or [])
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>farm mutate {_e(doc["mutate_id"])}</title>
<style>{_STYLE}</style></head><body>
<h1>Mutation score: {_e(selection)}</h1>
<p class=score>{_pct(s["score"])} of {s["judged"]} non-equivalent mutants killed</p>
<p>{_pct(s.get("killable_score"))} without the {s.get("explained", 0)} survivors that
op/mutants_explained.toml explains as unreached (they differ, but no case of the farm reaches
the difference); {len(reviewed)} survivors it shows equivalent are counted with the equivalents.</p>
<p>{_pct(s["strong_score"])} killed by {doc["weak_kill"]} failing cases or more;
{_pct(s.get("results_score"))} killed through the results (not by an emulation policy alone);
{doc["cases_judged"]} of {doc["cases"]} cases judged each mutant; run {_e(doc["mutate_id"])}.</p>
{errors}{counts}{left_out}
<h2 class=survived>Survivors ({len(survivors)})</h2>
<p>Every case passed: what the tier does not check. The closest cases are those whose metrics
moved most toward their limits (1 = at the limit).</p>
{_survivors(survivors)}
<h2 class=weak>Weak kills ({len(weak)}): fewer than {doc["weak_kill"]} failing cases</h2>
{_weak(weak)}
<h2 class=weak>Policy-only kills ({len(policy_only)})</h2>
<p>Every failing case was refused by an emulation policy: a rule of the emulated device that
CANN does not enforce. No case's results caught these; CANN would run them.</p>
{_policy_only(policy_only)}
<h2>Kills refused by a policy and caught through the results ({len(both)})</h2>
<p>A kill whose every failing case a policy refused runs those cases again on the device
without its output policies (as CANN's runs); a case that then fails is named "without the
output policies".</p>
{_both(both)}
<details><summary><h2 style="display:inline">Stillborn ({len(stillborn)}): do not compile</h2>
</summary>{_plain(stillborn, "build_error")}</details>
<details><summary><h2 style="display:inline">Equivalent ({len(same_library)}): the same library
</h2></summary>{_plain(same_library)}</details>
<details><summary><h2 style="display:inline">Equivalent by review ({len(reviewed)}): no call
can tell them from the operator (op/mutants_explained.toml)</h2></summary>
{_plain(reviewed, "explained")}</details>
</body></html>
"""


def write_report(doc: dict[str, Any], out_dir: Path) -> Path:
    """Write the page into `out_dir` (report/ of the run directory); its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "index.html"
    page.write_text(render(doc))
    return page
