"""The measurements of `farm mutate` and `farm coverage` as `farm runs` shows them: a row each
in the listing, a measurement whole (`farm runs show ID`: its survivors and weak kills with
their cases), and a tier's trend (`farm runs trend`). Pure: text from Measure records."""

from __future__ import annotations

from collections.abc import Sequence

from farm.results.store.measure_rows import MUTATE, Figure, Measure, MutantNote

LISTING_HEADER = (
    "measurement",
    "kind",
    "tier",
    "backend",
    "ended",
    "exit",
    "result",
    "commit",
    "directory",
)
CASES_SHOWN = 3  # of a note's cases (`farm runs show --json` has them all)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _figure(f: Figure) -> str:
    return f"{f['percent']:.1f}% ({f['covered']} of {f['total']})"


def headline(m: Measure) -> str:
    """Its figures in a few words: the scores, or the lines' and branches' coverage."""
    if m.kind == MUTATE:
        s = m.mutate
        return f"score {pct(s['score'])}, strong {pct(s['strong_score'])}"
    c = m.coverage
    return f"lines {c['lines']['percent']:.1f}%, branches {c['branches']['percent']:.1f}%"


def result_text(m: Measure) -> str:
    """The listing's result cell: the figures and what a person has to look at."""
    if m.kind == MUTATE:
        s = m.mutate
        text = f"{headline(m)}, {s['survived']} survived, {s['weak']} weak"
        return text + (f", {s['policy_only']} policy-only" if s.get("policy_only") else "")
    c = m.coverage
    text = f"{headline(m)}, {c['unexplained']} unexplained"
    return text + (f", {c['stale']} stale" if c["stale"] else "")


def listing_row(m: Measure) -> list[str]:
    return [
        m.measure_id,
        m.kind + (" (subset)" if m.subset else ""),
        m.tier,
        m.backend or "",
        m.ended_at or "",
        "" if m.exit_code is None else str(m.exit_code),
        result_text(m),
        (m.git_commit or "")[:12],
        m.run_dir or "",
    ]


def show_lines(m: Measure) -> list[str]:
    """`farm runs show ID`: the measurement whole."""
    what = f"farm {m.kind}, tier {m.tier}, backend {m.backend or '?'}"
    if m.meta.get("k"):
        what += f" -k {m.meta['k']}"
    lines = [f"{m.measure_id}: {what}" + (" (a subset: not the tier's figure)" if m.subset else "")]
    facts = [f"started {m.started_at}"]
    facts += [] if m.seconds is None else [f"{m.seconds:.0f} s"]
    facts += [] if m.exit_code is None else [f"exit {m.exit_code}"]
    facts += [f"commit {m.git_commit[:12]}"] if m.git_commit else []
    facts += [f"package {m.package_sha256[:12]}"] if m.package_sha256 else []
    lines.append(", ".join(facts))
    lines += _mutate_lines(m) if m.kind == MUTATE else _coverage_lines(m)
    lines.append(f"files: {m.run_dir or '(none recorded)'}")
    return lines


def _mutate_lines(m: Measure) -> list[str]:
    s = m.mutate
    lines = [
        f"mutation score {pct(s['score'])} of {s['judged']} non-equivalent mutants; strong "
        f"{pct(s['strong_score'])}; through the results {pct(s.get('results_score'))}; "
        f"killable {pct(s.get('killable_score'))}",
        f"{s['mutants']} mutants: {s['killed']} killed ({s['weak']} weak, "
        f"{s.get('policy_only', 0)} policy-only), {s['survived']} survived "
        f"({s.get('explained', 0)} explained as unreached), {s['equivalent']} equivalent "
        f"({s.get('reviewed_equivalent', 0)} by review), {s['stillborn']} stillborn",
    ]
    survivors = [n for n in m.mutants if n.status == "survived"]
    kills = [n for n in m.mutants if n.status != "survived"]
    for title, notes in (("survivors", survivors), ("weak and policy-only kills", kills)):
        lines.append(f"{title} ({len(notes)}):")
        for n in notes:
            lines += _note_lines(n)
    return lines


def _note_lines(n: MutantNote) -> list[str]:
    head = f"  op/{n.mutant_id}  {n.source_line}  {n.old!r} -> {n.new!r}"  # id: file:line:rule.n
    if n.status != "survived":
        head += f"  {n.what}, {n.failing} failing"
    lines = [head]
    if n.explained_kind:
        lines.append(f"    {n.explained_kind} (op/mutants_explained.toml): {n.explained_why}")
    for c in n.cases[:CASES_SHOWN]:
        if n.status == "survived":
            lines.append(
                f"    closest: {c.get('case_id')} {_num(c.get('closeness'))} of its limit "
                f"(original {_num(c.get('baseline'))})"
            )
        else:
            lines.append(
                f"    failing: {c.get('case_id')} {c.get('outcome')} ({c.get('category')})"
                + (f": {c['message']}" if c.get("message") else "")
            )
    if len(n.cases) > CASES_SHOWN:
        lines.append(f"    ... {len(n.cases) - CASES_SHOWN} more (farm runs show --json)")
    if n.status == "survived" and not n.cases:
        lines.append("    closest: no precision case")
    return lines


def _num(x: object) -> str:
    return "-" if not isinstance(x, (int, float)) else f"{x:.3g}"


def _coverage_lines(m: Measure) -> list[str]:
    c = m.coverage
    lines = [
        f"lines {_figure(c['lines'])}, branches {_figure(c['branches'])}, functions "
        f"{_figure(c['functions'])}",
        f"uncovered: {c['uncovered']} lines ({c['unexplained']} unexplained), {c['stale']} "
        "stale explanations",
    ]
    if c.get("fewer_cases") is not None:
        lines.append(
            f"per case: {c['fewer_cases']} of {c['branches_reached']} reached branches taken by "
            f"fewer than {c['min_cases']} cases ({c['cases']} cases)"
        )
    runs = ", ".join(f"{b} {r}" for b, r in c["runs"].items())
    lines.append(f"runs: {runs}")
    return lines


def trend_lines(series: Sequence[Measure]) -> list[str]:
    """A tier's last measurements of one kind and backend, oldest first, each with its change
    from the one before."""
    if not series:
        return []
    first = series[0]
    lines = [
        f"{first.kind}, tier {first.tier}, backend {first.backend or '?'}: the last "
        f"{len(series)} of the whole tier, oldest first"
    ]
    before: Measure | None = None
    for m in series:
        change = "" if before is None else f"  ({_change(before, m)})"
        lines.append(
            f"  {m.ended_at or m.started_at}  {m.measure_id}  {result_text(m)}"
            + (f"  commit {m.git_commit[:12]}" if m.git_commit else "")
            + change
        )
        before = m
    return lines


def _change(a: Measure, b: Measure) -> str:
    """The change of the main figure: score points, or lines' and branches' points."""

    def points(x: float | None, y: float | None, scale: float = 1.0) -> str:
        return "-" if x is None or y is None else f"{(y - x) * scale:+.1f}"

    if b.kind == MUTATE:
        return f"score {points(a.mutate['score'], b.mutate['score'], 100)} points"
    ca, cb = a.coverage, b.coverage
    return (
        f"lines {points(ca['lines']['percent'], cb['lines']['percent'])}, branches "
        f"{points(ca['branches']['percent'], cb['branches']['percent'])} points"
    )
