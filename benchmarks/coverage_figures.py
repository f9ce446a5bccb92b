"""What `farm coverage` measures of a tier, and how long it takes (benchmarks/RESULTS.md, "Issue
59: coverage").

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/coverage_figures.py --tier smoke
    .venv/bin/python benchmarks/coverage_figures.py --tier nightly --merged

``farm coverage --tier T --json --no-report`` as a subprocess with its own ``FARM_RUNS`` and
``FARM_STORE`` in a temporary directory, after an untimed build of the coverage package (the
first `farm coverage` builds it otherwise). Printed: the wall time of the whole command (both
backends' runs, the merge of the counters, gcovr, the count of cases per branch unless
--merged), the line, branch and function figures, the uncovered lines (explained, unexplained),
the stale explanations, and the branches fewer than 3 cases take.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="smoke")
    parser.add_argument("--merged", action="store_true", help="farm coverage --merged")
    parser.add_argument("--out", type=Path, help="also write farm coverage's JSON here")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from farm.pool import build

    build.build_package("ascendc-cpu", coverage=True)  # untimed
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "FARM_RUNS": f"{tmp}/runs", "FARM_STORE": f"{tmp}/farm.sqlite"}
        cmd = [sys.executable, "-m", "farm.cli", "coverage", "--tier", args.tier, "--json"]
        cmd += ["--no-report"] + (["--merged"] if args.merged else [])
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode
    got = json.loads(proc.stdout)
    if args.out:
        args.out.write_text(proc.stdout)
    print(f"farm coverage --tier {args.tier}{' --merged' * args.merged}: exit {proc.returncode}")
    print(f"  wall          {wall:.1f} s (the command's own count: {got['seconds']} s)")
    for kind in ("lines", "branches", "functions"):
        f = got[kind]
        print(f"  {kind:<13} {f['percent']:.1f}% ({f['covered']} of {f['total']})")
    explained = len(got["uncovered"]) - got["unexplained"]
    print(
        f"  uncovered     {len(got['uncovered'])} lines: {explained} explained, "
        f"{got['unexplained']} unexplained; {len(got['stale'])} stale explanations"
    )
    per_case = got["per_case"]
    if per_case is not None:
        print(
            f"  per case      {per_case['branches_reached']} branches reached, "
            f"{per_case['fewer']} by fewer than {per_case['min_cases']} cases"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
