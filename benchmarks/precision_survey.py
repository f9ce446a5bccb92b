"""Does every verdict hold? Run the operator over the tiers and over inputs the farm's generators
never made, through the agent's own path (farm.agent.execute.run_case), and count what fails.

    .venv/bin/python benchmarks/precision_survey.py                       # the correct twin
    .venv/bin/python benchmarks/precision_survey.py --tiers smoke --plant trunc_narrow,fp16_sum

With the correct operator every case must pass: a failure of its gates (error-bound and the
public standards the numbers make applicable) is a false alarm, and is listed. With a planted bug
(farm/pool/build/bugs.py PLANT_BUGS) the survey lists which cases caught it, per tier.

The outside families (--outside N cases, drawn from --seed) are written with the case fields
that carry other suites' inputs: y arbitrary in [-1000, 1000] and [1, 1000], outputs that
overflow fp16/bf16, constant fills of dy and y (0, +-1, +-inf, NaN, the dtype's max), NaN/inf at
random positions or at the start, middle or end of a reduce row, strided out alone and every
tensor strided with its own storage, and long rows (up to 2^20 elements).

The full tier takes about half an hour on 2 cores (--jobs 2); the outside families a few minutes.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.pool import build  # noqa: E402
from golden import soc  # noqa: E402
from golden.layouts import View  # noqa: E402
from suites import matrix  # noqa: E402
from suites.case import Case  # noqa: E402

MAX_LONG_ROWS = 40  # each holds up to 2^21 elements
OUTSIDE_KINDS = (
    "y_pm1000",
    "y_1_1000",
    "overflow",
    "dy_fill",
    "y_fill",
    "special_random",
    "special_row",
    "out_strided",
    "all_strided",
    "long_row",
)


@dataclass(frozen=True)
class Identity:
    """What run_case needs to know of the host: its SoC and a name."""

    soc: str
    host: str = "survey"


def outside_cases(n: int, seed: int) -> list[Case]:
    """n cases from families the farm's generators did not make before, drawn from `seed`."""
    rng = np.random.default_rng(seed)
    out: dict[str, Case] = {}
    tries = long_rows = 0
    while len(out) < n and tries < 20 * n:
        tries += 1
        kind = OUTSIDE_KINDS[tries % len(OUTSIDE_KINDS)]
        if kind == "long_row":
            if long_rows >= MAX_LONG_ROWS:
                continue
            long_rows += 1
        family = "ascend910b" if rng.random() < 0.85 else "ascend310b"
        dtype = str(rng.choice(["float32", "float16", "bfloat16"]))
        if family == "ascend310b" and dtype == "bfloat16":
            dtype = "float16"
        case = _outside_case(kind, family, dtype, rng)
        out.setdefault(case.id, case)
    return list(out.values())


def _shape(rng, long: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if long:
        n = int(rng.choice([65_537, 152_064, 262_144, 1 << 20]))
        return (int(rng.integers(1, 3)), n), (-1,)
    rank = int(rng.integers(1, 5))
    shape = tuple(
        int(rng.choice([1, 2, 3, 7, 17, 33, 64, 65, 129, 1000, 4097])) for _ in range(rank)
    )
    while int(np.prod(shape)) > 300_000:
        shape = shape[1:]
    rank = len(shape)
    first = int(rng.integers(0, rank))
    last = int(rng.integers(first, rank))
    axes = tuple(range(first, last + 1))
    if len(axes) == 1 and rng.random() < 0.5:
        axes = (axes[0] - rank,)  # a negative dim
    return shape, axes


def _outside_case(kind: str, family: str, dtype: str, rng) -> Case:
    shape, axes = _shape(rng, long=kind == "long_row")
    api = "dim" if len(axes) == 1 else "axes"
    kw: dict = {}
    big = {"float16": 6e4, "bfloat16": 3e38, "float32": 3e38}[dtype]
    top = {"float16": 65504.0, "bfloat16": 3.3895e38, "float32": 3.4028e38}[dtype]
    if kind == "y_pm1000":
        kw = {"y_dist": "range", "y_range": (-1000.0, 1000.0)}
    elif kind == "y_1_1000":
        kw = {"y_dist": "range", "y_range": (1.0, 1000.0)}
    elif kind == "overflow":
        kw = {
            "dy_dist": "range",
            "dy_range": (-big, big),
            "y_dist": "range",
            "y_range": (-3.0, 3.0),
        }
    elif kind == "dy_fill":
        value = float(rng.choice([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, top, -top]))
        kw = {
            "dy_dist": "fill",
            "dy_fill": value,
            "y_dist": str(rng.choice(["uniform", "arbitrary"])),
        }
    elif kind == "y_fill":
        value = float(rng.choice([0.0, -1.0, -np.inf, np.inf, np.nan, 100.0, -100.0, 10.0]))
        kw = {"y_dist": "fill", "y_fill": value}
    elif kind in ("special_random", "special_row"):
        special = str(rng.choice(["nan_dy", "inf_dy", "nan_y", "neginf_y", "inf_y"]))
        at = (
            "random"
            if kind == "special_random"
            else str(rng.choice(["row_start", "row_middle", "row_end"]))
        )
        kw = {
            "special": special,
            "special_at": at,
            "y_dist": str(rng.choice(["uniform", "arbitrary"])),
        }
    elif kind == "out_strided":
        kw = {"out_layout": "strided"}
    elif kind == "long_row":
        kw = {
            "y_dist": str(rng.choice(["uniform", "arbitrary", "peaked", "flat"])),
            "dy_dist": str(rng.choice(["normal", "uniform", "ones"])),
        }
    elif kind == "all_strided":
        kw = {
            "dy_layout": "strided",
            "y_layout": "strided",
            "out_layout": _explicit_view(shape, rng),
        }
    return Case(family, dtype, shape, axes, api=api, origin=f"outside:{kind}", **kw)


def _explicit_view(shape: tuple[int, ...], rng) -> View:
    """A C-order view with a gap after every innermost run and an offset into its storage."""
    pad = int(rng.integers(1, 4))
    offset = int(rng.integers(0, 5))
    strides = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1) + (pad if not strides[:-1] else 0)
    strides = tuple(reversed(strides))
    storage = offset + sum((e - 1) * s for e, s in zip(shape, strides, strict=True)) + 1 + pad
    return View(strides=strides, storage=storage, offset=offset)


# -- running -----------------------------------------------------------------------------------


def _init(library: str) -> None:
    os.environ["LSG_NATIVE_LIB"] = library


def _run(payload: dict) -> dict:
    from farm.agent.execute import run_case

    identity = Identity(soc.representative_soc(payload["family"]).name)
    started = time.perf_counter()
    try:
        record = run_case(payload, "native", 0, identity)
    except Exception as exc:  # noqa: BLE001 - a crash of the survey's case is a finding
        return {
            "case_id": payload["id"],
            "outcome": "failed",
            "category": "crash",
            "message": f"{type(exc).__name__}: {exc}",
            "standards": {},
            "seconds": 0.0,
        }
    standards = record.get("standards") or {}
    return {
        "case_id": payload["id"],
        "outcome": record["outcome"],
        "category": record.get("category"),
        "message": record.get("message", ""),
        "bound_failed": not standards.get("error-bound", {}).get("passed", True),
        "gates": (record.get("verdict") or {}).get("gates") or [],
        "seconds": time.perf_counter() - started,
    }


def survey(cases: list[Case], library: str, jobs: int) -> list[dict]:
    payloads = [c.to_dict() for c in cases]
    # Big cases first, so that the pool does not end on one long case.
    payloads.sort(key=lambda p: -int(np.prod(p["shape"] or [1])))
    with ProcessPoolExecutor(jobs, initializer=_init, initargs=(library,)) as pool:
        return list(pool.map(_run, payloads, chunksize=4))


def summarize(name: str, results: list[dict], planted: str, show: int) -> dict:
    outcomes = collections.Counter(r["outcome"] for r in results)
    categories = collections.Counter(r["category"] for r in results if r["outcome"] != "passed")
    failed = [r for r in results if r["outcome"] != "passed"]
    bound = sum(1 for r in results if r.get("bound_failed"))
    seconds = sum(r["seconds"] for r in results)
    verb = "caught it" if planted else "failed (false alarms)"
    print(
        f"\n## {name}: {len(results)} cases, {outcomes['passed']} passed, {len(failed)} {verb}; "
        f"error-bound failed on {bound}; categories {dict(categories)}; {seconds:.0f} s of work"
    )
    for r in sorted(failed, key=lambda r: r["case_id"])[:show]:
        print(f"  {r['case_id']}: [{r['category']}] {r['message'][:160]}")
    if len(failed) > show:
        print(f"  ... and {len(failed) - show} more")
    return {
        "cases": len(results),
        "passed": outcomes["passed"],
        "failed": len(failed),
        "bound_failed": bound,
        "categories": dict(categories),
        "failed_ids": [r["case_id"] for r in failed],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default="smoke,nightly,full")
    parser.add_argument("--outside", type=int, default=2400, help="outside-family cases (0: none)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--plant", default="", help="planted bugs, comma-separated (farm build)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--show", type=int, default=12, help="failures listed per section")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    groups: list[tuple[str, list[Case]]] = []
    seen: set[str] = set()
    for tier in filter(None, args.tiers.split(",")):
        cases = [c for c in matrix.expand(tier) if c.id not in seen]  # tiers overlap
        seen.update(c.id for c in cases)
        groups.append((f"tier {tier} (cases not in a smaller tier)", cases))
    if args.outside:
        groups.append(
            (f"outside families (seed {args.seed})", outside_cases(args.outside, args.seed))
        )

    figures: dict = {}
    for bug in args.plant.split(",") if args.plant else [""]:
        if bug not in build.PLANT_BUGS:
            parser.error(
                f"unknown planted bug {bug!r}; use one of {', '.join(build.PLANT_BUGS[1:])}"
            )
        library = str(build.build_twin(build.default_build_dir(bug), plant_bug=bug))
        title = f"planted bug {bug}" if bug else "the correct operator"
        print(f"# {title} ({library})")
        for name, cases in groups:
            started = time.perf_counter()
            results = survey(cases, library, args.jobs)
            figures[f"{bug or 'correct'}: {name}"] = summarize(name, results, bug, args.show)
            print(f"  ({time.perf_counter() - started:.0f} s wall)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    false_alarms = sum(f["failed"] for k, f in figures.items() if k.startswith("correct:"))
    return 1 if false_alarms else 0


if __name__ == "__main__":
    sys.exit(main())
