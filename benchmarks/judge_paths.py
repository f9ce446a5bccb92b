"""Judging on the numpy path against the fused one (golden/fused.c), case by case (issue 26).

    .venv/bin/python benchmarks/judge_paths.py [--tier nightly] [--every 1]

Run by hand (never from the tests; see benchmarks/README.md). For every ``--every``-th case of
the tier that the agent judges (accepted, not descriptor-only, the operator returned an output),
the inputs and the operator's output are made once (`execute.make_call_inputs`, the default
target's library through `execute.call_operator`, as benchmarks/floor.py does), then the
agent's judging, `execute._judge`, runs once with $LSG_FUSED=off and once with it on, in turns
(which goes first alternates from case to case, so the machine's load falls on both alike).
Printed: the judged cases, each path's CPU seconds (the process's, summed over the calls) and
how many records differ between the two paths (the fused path must make the same bits: 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import tier_cases  # noqa: E402

from farm.agent import execute  # noqa: E402
from golden import fused  # noqa: E402


def operator_output(case: dict, soc: str):
    """(dy, y, out) of a case the agent would judge, else None."""
    if execute.descriptor_only(case) or case["expect"]["kind"] != "precision":
        return None
    dy, y = execute.make_call_inputs(case)
    if dy is None or y is None:
        return None
    result = execute.call_operator(case, dy, y, "native", soc)
    return None if result.status != 0 or result.out is None else (dy, y, result.out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="nightly")
    parser.add_argument("--every", type=int, default=1, help="judge every N-th case")
    args = parser.parse_args(argv)
    os.environ[fused.ENV_MODE] = "require"
    print(f"fused path: {fused.status()}")
    cases, socs = tier_cases(args.tier)
    cpu = {"off": 0.0, "require": 0.0}
    judged = differ = 0
    for index in range(0, len(cases), args.every):
        case = cases[index]
        made = operator_output(case, socs[index])
        if made is None:
            continue
        records = {}
        for path in ("off", "require") if judged % 2 == 0 else ("require", "off"):
            os.environ[fused.ENV_MODE] = path
            started = time.process_time()
            records[path] = execute._judge(case, *made, case["expect"])
            cpu[path] += time.process_time() - started
        differ += repr(records["off"]) != repr(records["require"])
        judged += 1
    print(
        f"{args.tier}, every {args.every}: {judged} judged cases; numpy {cpu['off']:.2f} s, "
        f"fused {cpu['require']:.2f} s of CPU; records that differ: {differ}"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
