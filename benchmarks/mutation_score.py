"""The mutation score of a tier (issue 59), as benchmarks/RESULTS.md gives it: `farm mutate` over
every mutant of the real sources, then its figures in markdown: the counts, the score, the time,
a row per source file, every survivor and every weak kill.

    .venv/bin/python benchmarks/mutation_score.py                    # farm mutate --tier smoke
    .venv/bin/python benchmarks/mutation_score.py --tier smoke --jobs 2 --out /tmp/mutate
    .venv/bin/python benchmarks/mutation_score.py --from /tmp/mutate  # the figures of a run made

--from reads a run directory: its mutation.json, or, of a run stopped before its end, the
mutants.jsonl it had written so far (then the figures say how many of the mutants it holds).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.run.mutate import STATUSES, WEAK_KILL, summarize  # noqa: E402


def load(run_dir: Path) -> tuple[list[dict], dict]:
    """The outcomes of a run directory, and what is known of the run."""
    whole = run_dir / "mutation.json"
    if whole.exists():
        doc = json.loads(whole.read_text())
        facts = {"seconds": doc["seconds"], "complete": True, "tier": doc["tier"]}
        return doc["mutants"], {**facts, "backend": doc.get("backend", "native")}
    lines = (run_dir / "mutants.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()], {"complete": False}


def _edit(o: dict) -> str:
    return f"`{o['old']}` -> " + (f"`{o['new']}`" if o["new"] else "(removed)")


def report(outcomes: list[dict], facts: dict, total: int | None) -> str:
    outcomes = [o for o in outcomes if "status" in o]
    s = summarize(outcomes)
    out = []
    held = f"{len(outcomes)} of {total}" if total and total != len(outcomes) else str(len(outcomes))
    when = f"{facts['seconds']:.0f} s" if "seconds" in facts else "stopped before its end"
    out.append(
        f"{held} mutants ({when}): {s['killed']} killed ({s['weak']} weak: fewer than "
        f"{WEAK_KILL} failing cases; {s.get('policy_only', 0)} policy-only), {s['survived']} "
        f"survived, {s['equivalent']} equivalent, "
        f"{s['stillborn']} stillborn"
    )
    if s["score"] is not None:
        out.append(
            f"mutation score **{s['score'] * 100:.1f}%** of {s['judged']} non-equivalent mutants; "
            f"{s['strong_score'] * 100:.1f}% killed by {WEAK_KILL}+ cases; "
            f"{s['results_score'] * 100:.1f}% through the results (not by an emulation policy "
            "alone)"
        )
    out += [
        "",
        "| source (op/) | " + " | ".join(STATUSES) + " | weak | score |",
        "|---|" + "---|" * (len(STATUSES) + 2),
    ]
    by_file = collections.defaultdict(list)
    for o in outcomes:
        by_file[o["file"]].append(o)
    for file, rows in by_file.items():
        f = summarize(rows)
        score = "-" if f["score"] is None else f"{f['score'] * 100:.1f}%"
        out.append(
            f"| {file} | " + " | ".join(str(f[k]) for k in STATUSES) + f" | {f['weak']} | {score} |"
        )
    out += [
        "",
        "Survivors (id, the edit, the cases that came closest: closeness / the original's):",
        "",
    ]
    for o in sorted((o for o in outcomes if o["status"] == "survived"), key=lambda o: o["id"]):
        closest = ", ".join(
            f"{c['case_id']} {c['closeness']:.3g}/{c['baseline']:.3g}"
            if c["baseline"] is not None
            else f"{c['case_id']} {c['closeness']:.3g}"
            for c in o["closest"]
        )
        out.append(
            f"- `{o['id']}` `{o['source_line'].strip()}`: {_edit(o)}; closest: {closest or 'none'}"
        )
    out += ["", "Weak kills (id, the edit, the failing cases):", ""]
    for o in sorted((o for o in outcomes if o.get("weak")), key=lambda o: o["id"]):
        cases = ", ".join(f"{c['case_id']} ({c['category']})" for c in o["failing_cases"])
        out.append(
            f"- `{o['id']}` `{o['source_line'].strip()}`: {_edit(o)}; "
            f"{o['failing']} failing: {cases}"
        )
    out += ["", "Policy-only kills (id, the edit, the cases an emulation policy refused):", ""]
    for o in sorted((o for o in outcomes if o.get("policy_only")), key=lambda o: o["id"]):
        out.append(
            f"- `{o['id']}` `{o['source_line'].strip()}`: {_edit(o)}; {o['policy_failing']} "
            f"cases: {', '.join(o['policy_cases'])}"
        )
    out += ["", "Kills refused by a policy too (id, the case that catches it through the results):"]
    out.append("")
    for o in sorted((o for o in outcomes if o.get("caught_by")), key=lambda o: o["id"]):
        c = o["caught_by"]
        out.append(
            f"- `{o['id']}`: {o['policy_failing']} of {o['failing']} failing cases by a policy; "
            f"{c['case_id']} ({c['category']})"
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="smoke")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--backend", help="farm mutate --backend (default the target's)")
    parser.add_argument("--out", default="/tmp/farm-mutation-score")
    parser.add_argument("--from", dest="source", help="a run directory farm mutate made")
    parser.add_argument("--total", type=int, help="the mutants of the run (for a partial one)")
    args = parser.parse_args()
    run_dir = Path(args.source or args.out)
    if not args.source:
        started = time.perf_counter()
        cmd = [sys.executable, "-m", "farm.cli", "mutate", "--tier", args.tier]
        cmd += ["--jobs", str(args.jobs), "--out", str(run_dir)]
        cmd += ["--backend", args.backend] if args.backend else []
        code = subprocess.run(cmd, cwd=ROOT).returncode
        print(f"farm mutate exit {code} after {time.perf_counter() - started:.0f} s\n")
    outcomes, facts = load(run_dir)
    print(report(outcomes, facts, args.total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
