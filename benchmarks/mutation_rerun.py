"""The mutation score after new cases (issue 59), from a whole run of `farm mutate` and a rerun
of its survivors, weak and policy-only kills (`farm mutate --only ID ...`) on today's sources
and cases: each mutant of the rerun is matched with the whole run's by its file, its line's
text and its rule id (lines may have moved), the kills of the whole run are kept, and the
rerun's outcome replaces the old one. The survivors op/mutants_explained.toml explains are
counted apart.

    .venv/bin/python benchmarks/mutation_rerun.py --full /tmp/mut-full --rerun /tmp/mut-rerun \
        --rerun /tmp/mut-rerun2
    .venv/bin/python benchmarks/mutation_rerun.py --full /tmp/mut-full --print-ids  # ids to rerun
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.results.mutants_explained import explain, load  # noqa: E402
from farm.run import mutants as rules  # noqa: E402
from farm.run.mutate import summarize  # noqa: E402


def _key(file: str, text: str, mutant_id: str) -> tuple[str, str, str]:
    return file, text.strip(), mutant_id.rsplit(":", 1)[1]


def _mutants(run_dir: Path) -> list[dict]:
    """A run's outcomes: its mutation.json, or what a run not yet done wrote (mutants.jsonl)."""
    whole = run_dir / "mutation.json"
    if whole.exists():
        return json.loads(whole.read_text())["mutants"]
    lines = (run_dir / "mutants.jsonl").read_text().splitlines()
    return [o for o in map(json.loads, filter(None, lines)) if "status" in o]


def current_ids(old: list[dict]) -> list[str]:
    """Today's ids of the old run's survivors and weak kills (every line with the same text)."""
    op = ROOT / "op"
    source = {f: (op / f).read_text().splitlines() for f in rules.SOURCES}
    by_key: dict[tuple, list[str]] = {}
    for m in rules.generate(op, list(rules.SOURCES), None):
        by_key.setdefault(_key(m.file, source[m.file][m.line - 1], m.id), []).append(m.id)
    wanted = [m for m in old if m["status"] == "survived" or m.get("weak") or m.get("policy_only")]
    return list(
        dict.fromkeys(i for m in wanted for i in by_key[_key(m["file"], m["source_line"], m["id"])])
    )


def _shifts(old: list[dict], new: dict[tuple, list[dict]]) -> dict[str, int]:
    """How far each file's lines moved: the commonest move of the lines whose text is unique."""
    moves: dict[str, Counter] = {}
    for o in old:
        same = new.get(_key(o["file"], o["source_line"], o["id"]), [])
        if len(same) == 1:
            moves.setdefault(o["file"], Counter())[same[0]["line"] - o["line"]] += 1
    return {f: c.most_common(1)[0][0] for f, c in moves.items()}


def _line(o: dict) -> str:
    edit = f"`{o['old']}` -> " + (f"`{o['new']}`" if o["new"] else "(removed)")
    return f"- `{o['id']}` `{o['source_line'].strip()}`: {edit}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--full",
        type=Path,
        action="append",
        required=True,
        help="a whole run's directory; repeatable: runs of other files are joined (a later "
        "run's outcome of an id wins)",
    )
    parser.add_argument(
        "--rerun",
        type=Path,
        action="append",
        default=[],
        help="a rerun's directory; repeatable (a later rerun's outcome of an id wins)",
    )
    parser.add_argument("--print-ids", action="store_true", help="the ids to rerun, one a line")
    args = parser.parse_args()
    old = list({o["id"]: o for run in args.full for o in _mutants(run)}.values())
    if args.print_ids or not args.rerun:
        print("\n".join(current_ids(old)))
        return 0
    latest = {o["id"]: o for run in args.rerun for o in _mutants(run)}
    new: dict[tuple, list[dict]] = {}
    for o in latest.values():
        new.setdefault(_key(o["file"], o["source_line"], o["id"]), []).append(o)
    shift = _shifts(old, new)
    merged, rerun = [], []
    for o in old:
        same = new.get(_key(o["file"], o["source_line"], o["id"]), [])
        # a line's text may recur (a copy in each schedule): the one where the file's lines moved
        now = min(
            same, key=lambda n: abs(n["line"] - o["line"] - shift.get(o["file"], 0)), default=None
        )
        if now is not None and (o["status"] == "survived" or o.get("weak") or o.get("policy_only")):
            rerun.append((o, now))
            merged.append(now)
        else:
            merged.append(o)
    explain(merged, load(ROOT / "op" / "mutants_explained.toml"))
    was = summarize(old)
    s = summarize(merged)
    killed = [n for o, n in rerun if o["status"] == "survived" and n["status"] == "killed"]
    strong = [n for o, n in rerun if o.get("weak") and n["status"] == "killed" and not n["weak"]]
    print(
        f"rerun: {len(rerun)} of the whole run's {was['survived']} survivors and "
        f"{was['weak']} weak kills"
    )
    print(f"survivors killed now: {len(killed)} ({sum(not n['weak'] for n in killed)} by 3+ cases)")
    print(f"weak kills now by 3+ cases: {len(strong)}")
    print(
        f"{s['mutants']} mutants: {s['killed']} killed ({s['weak']} weak), "
        f"{s['survived']} survived ({s['explained']} unreached), {s['equivalent']} equivalent "
        f"({s['reviewed_equivalent']} by review), "
        f"{s['stillborn']} stillborn"
    )
    print(
        f"mutation score {s['score'] * 100:.1f}% of {s['judged']} (was {was['score'] * 100:.1f}%); "
        f"{s['strong_score'] * 100:.1f}% by 3+ cases; {s['killable_score'] * 100:.1f}% without "
        f"the {s['explained']} unreached survivors"
    )
    print("\nSurvivors killed now:\n")
    print("\n".join(f"{_line(n)} ({n['failing']} failing)" for n in killed))
    left = [o for o in merged if o["status"] == "survived"]
    print("\nUnexplained survivors:\n")
    print("\n".join(_line(o) for o in left if not o.get("explained")) or "(none)")
    print("\nUnreached survivors (explained):\n")
    print("\n".join(f"{_line(o)}: {o['explained']}" for o in left if o.get("explained")))
    print("\nEquivalent by review:\n")
    reviewed = [o for o in merged if o.get("equivalent_by") == "review"]
    print("\n".join(f"{_line(o)}: {o['explained']}" for o in reviewed) or "(none)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
