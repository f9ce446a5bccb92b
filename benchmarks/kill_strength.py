"""How strongly each tier catches each planted bug: bug x tier -> the cases that fail, and how
far past its limit the weakest of those failures is.

    .venv/bin/python benchmarks/kill_strength.py                        # every bug, smoke
    .venv/bin/python benchmarks/kill_strength.py --tiers smoke,nightly --bugs tail,round_half_away

Each planted bug (farm/pool/build/bugs.py PLANT_BUGS) is built into the emulated real kernel
(ascendc-cpu:
every bug is an edit of copies of the real sources) and the tier's cases run through the agent's
own path (farm.agent.execute.run_case), as in benchmarks/precision_survey.py. The correct operator
runs first: a tier whose correct run fails a case is reported, since a kill there means nothing.

A kill's margin is how far past its limit the failing case is (1.0 = exactly at the limit), the
largest over the standards that gated it and failed: error-bound (the worst element over its
bound; the rounding bias over 0.05 ulp), experimental (MERE / T, MARE / 10T), mixed-tolerance
(the share of elements out of tolerance over 1%, max abs error over its limit),
double-thousandth (the smaller of its two counts over n * tol) and benchmark-ratio (each ratio
over its level's limit). A failure that is not a number (a rejection where an acceptance was due,
a kernel fault, a tiling mismatch, NaN where a number was due) has no margin: it cannot be
near its limit. A kill within 20% of its limit (margin below 1.2) is weak: a kernel a little
less wrong would pass it, so it does not count. The target (issue 20): every bug killed by at
least 3 smoke cases that are not weak; the weak kills are listed beside.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.pool import build  # noqa: E402
from farm.run.margins import margin  # noqa: E402
from golden.soc import representative_soc  # noqa: E402
from suites import matrix  # noqa: E402

WEAK = 1.2  # a kill below this many times its limit is weak
MIN_KILLS = 3


def _init(library: str) -> None:
    os.environ["LSG_NATIVE_LIB"] = library


class _Host:
    def __init__(self, soc: str):
        self.soc, self.host = soc, "kill-strength"


def _run(payload: dict) -> dict:
    from farm.agent.execute import run_case

    record = run_case(payload, "native", 0, _Host(representative_soc(payload["family"]).name))
    failed = record["outcome"] != "passed"
    return {
        "case_id": payload["id"],
        "failed": failed,
        "category": record.get("category"),
        "margin": margin(record) if failed else None,
        "message": record.get("message", "")[:200],
    }


def run_tier(cases, library: str, jobs: int) -> list[dict]:
    payloads = sorted((c.to_dict() for c in cases), key=lambda p: -math.prod(p["shape"] or [1]))
    with ProcessPoolExecutor(jobs, initializer=_init, initargs=(library,)) as pool:
        return list(pool.map(_run, payloads, chunksize=4))


def library_of(bug: str) -> str:
    target = "ascendc-cpu"
    return str(
        build.build_native(target, build.default_build_dir(bug, target=target), plant_bug=bug)
    )


def summarize(results: list[dict]) -> dict:
    kills = [r for r in results if r["failed"]]
    margins = [r["margin"] for r in kills]
    weakest = min(margins, default=None)
    return {
        "cases": len(results),
        "kills": len(kills),
        "strong_kills": sum(1 for x in margins if x >= WEAK),
        "weakest": weakest,
        "categories": dict(collections.Counter(r["category"] for r in kills)),
        "weak": sorted(
            ((r["margin"], r["case_id"]) for r in kills if r["margin"] < WEAK), key=lambda t: t[0]
        ),
    }


def _margin_text(x: float | None) -> str:
    if x is None:
        return "-"
    return "not a number" if math.isinf(x) else f"{x:.3g}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default="smoke")
    # The aclnn layer's bugs run on the acl backend only (tests/e2e/test_reason_planted.py).
    native = [b for b in build.PLANT_BUGS[1:] if b not in build.ACLNN_BUGS]
    parser.add_argument("--bugs", default=",".join(native))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    bugs = [b for b in args.bugs.split(",") if b]
    unknown = [b for b in bugs if b not in build.PLANT_BUGS[1:]]
    if unknown:
        parser.error(
            f"unknown planted bugs {unknown}; use some of {', '.join(build.PLANT_BUGS[1:])}"
        )
    tiers = [t for t in args.tiers.split(",") if t]
    cases = {tier: matrix.expand(tier) for tier in tiers}

    started = time.perf_counter()
    correct = library_of("")
    false_alarms = {}
    for tier in tiers:
        bad = [r["case_id"] for r in run_tier(cases[tier], correct, args.jobs) if r["failed"]]
        false_alarms[tier] = bad
        print(f"correct operator, {tier}: {len(cases[tier])} cases, {len(bad)} failed {bad[:5]}")

    figures: dict = {"tiers": {t: len(c) for t, c in cases.items()}, "bugs": {}}
    for bug in bugs:
        library = library_of(bug)
        figures["bugs"][bug] = {
            tier: summarize(run_tier(cases[tier], library, args.jobs)) for tier in tiers
        }
        line = "; ".join(
            f"{tier} {s['kills']} kills ({s['strong_kills']} strong), "
            f"weakest {_margin_text(s['weakest'])}"
            for tier, s in figures["bugs"][bug].items()
        )
        print(f"{bug}: {line}", flush=True)

    print()
    print(
        "| planted bug | "
        + " | ".join(f"{t}: kills (strong) | weakest" for t in tiers)
        + " | categories |"
    )
    print("|---|" + "---|---|" * len(tiers) + "---|")
    missed = []
    for bug, per_tier in figures["bugs"].items():
        cells = []
        for tier in tiers:
            s = per_tier[tier]
            cells += [f"{s['kills']} ({s['strong_kills']})", _margin_text(s["weakest"])]
        first = per_tier[tiers[0]]
        print(f"| {bug} | " + " | ".join(cells) + f" | {first['categories']} |")
        if first["strong_kills"] < MIN_KILLS:
            missed.append(bug)
    print(
        f"\n{time.perf_counter() - started:.0f} s. Below target on {tiers[0]} "
        f"(fewer than {MIN_KILLS} kills at {WEAK}x their limit or more): {missed or 'none'}"
    )
    for bug, per_tier in figures["bugs"].items():
        for tier in tiers:
            for x, case_id in per_tier[tier]["weak"]:
                print(f"  weak kill of {bug} in {tier}: {case_id} at {x:.3g}x its limit")
    figures["false_alarms"] = false_alarms
    figures["below_target"] = missed
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))
    return 1 if missed or any(false_alarms.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
