"""A tier run whole and as N shards merged (`farm run --shard K/N --run-group G`, `farm merge G`):
the same case ids and verdicts, and how long each took.

Run by hand (never from the tests); see benchmarks/README.md.

    .venv/bin/python benchmarks/sharded_run.py                       # the smoke tier, 4 shards
    .venv/bin/python benchmarks/sharded_run.py --tier nightly        # issue 25's check
    .venv/bin/python benchmarks/sharded_run.py --parallel -k f32     # the shards at once

Every run is a `farm run --no-report --no-progress` subprocess on the embedded pool, all in one
temporary FARM_RUNS and FARM_STORE (SQLite): the whole run first, then shards 1..N one after the
other (or, with --parallel, all started together, as CI jobs would be), then `farm merge` (with
the report unless --no-report). Printed: each run's wall time and exit code, the merged run's,
and whether the merged run holds exactly the whole run's case ids with the same verdicts. Exit 0
when it does and both runs exit alike, else 1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from farm.results.store import RunStore  # noqa: E402

GROUP = "benchmark"
RUN_TIMEOUT = 7200


def farm(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "farm.cli", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen, what: str, started: float) -> int:
    _, err = proc.communicate(timeout=RUN_TIMEOUT)
    print(f"{what:<14} exit {proc.returncode}  {time.monotonic() - started:7.1f} s", flush=True)
    if proc.returncode not in (0, 1):
        print(err[-2000:], file=sys.stderr)
    return proc.returncode


def verdicts(store: RunStore, run_id: str) -> dict[str, str]:
    return {r["case_id"]: r["outcome"] for r in store.result_rows(run_id)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", default="smoke")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("-k", help="a -k selection of the tier")
    parser.add_argument("--parallel", action="store_true", help="start the shards together")
    parser.add_argument("--no-report", action="store_true", help="farm merge without a report")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="farm-sharded-"))
    env = dict(os.environ, FARM_RUNS=str(root / "runs"), FARM_STORE=str(root / "farm.sqlite"))
    run = ["run", "--tier", args.tier, "--no-report", "--no-progress"]
    tail = ["--", "-k", args.k] if args.k else []
    print(f"{args.tier}{f' -k {args.k}' if args.k else ''}, {args.shards} shards, in {root}")

    started = time.monotonic()
    whole_code = finish(farm(env, *run, *tail), "whole", started)
    started = time.monotonic()
    shards = []
    for k in range(1, args.shards + 1):
        part = ["--shard", f"{k}/{args.shards}", "--run-group", GROUP]
        proc = farm(env, *run, *part, *tail)
        if args.parallel:
            shards.append((k, proc))
        else:
            finish(proc, f"shard {k}/{args.shards}", started)
    for k, proc in shards:
        finish(proc, f"shard {k}/{args.shards}", started)
    print(f"{'all shards':<14}         {time.monotonic() - started:7.1f} s")
    started = time.monotonic()
    merge = ["merge", GROUP, *(["--no-report"] if args.no_report else [])]
    merged_code = finish(farm(env, *merge), "farm merge", started)

    with RunStore(root / "farm.sqlite") as store:
        runs = store.runs(limit=None)
        (single,) = [r for r in runs if not r.get("run_group")]
        merged = [r for r in store.group_runs(GROUP) if r.get("merged_from")]
        if not merged:
            print("no merged run in the store")
            return 1
        want, got = verdicts(store, single["run_id"]), verdicts(store, merged[-1]["run_id"])
    same = want == got
    print(
        f"merged run {merged[-1]['run_id']}: {len(got)} cases, whole run {len(want)}; "
        f"same case ids and verdicts: {same}; exit codes {whole_code} (whole), "
        f"{merged_code} (merged)"
    )
    if not same:
        print(f"  only whole: {sorted(set(want) - set(got))[:5]}")
        print(f"  only merged: {sorted(set(got) - set(want))[:5]}")
        print(f"  other verdict: {[c for c in want if c in got and want[c] != got[c]][:5]}")
    return 0 if same and whole_code == merged_code else 1


if __name__ == "__main__":
    sys.exit(main())
