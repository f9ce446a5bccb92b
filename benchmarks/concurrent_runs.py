"""Two `farm run`s at once against one SSH lab, against one run alone.

Run by hand (never from the tests); see benchmarks/README.md.

    .venv/bin/python benchmarks/concurrent_runs.py                 # the smoke tier
    .venv/bin/python benchmarks/concurrent_runs.py -k "f32"         # a -k selection of it
    .venv/bin/python benchmarks/concurrent_runs.py --tier nightly   # the target's scale

An SSH lab (``farm.pool.lab.core.lab_up``, three hosts) comes up in a temporary directory and goes
down at the end. Each run is ``farm run --tier T --no-report --no-progress --inventory <lab>``
as a subprocess with its own ``FARM_RUNS`` and ``FARM_STORE`` (so the two share only the lab and
its hosts' device locks). First one run alone, then two started at the same time. Printed: the
wall time of the run alone and of the pair, the pair against the two one after the other (twice
the run alone; the target: at most 1.2x), the machine's load average (1 min) as each phase began
and ended (the machine may be shared), each run's exit code, and whether every case of the tier
has exactly one record in each run's store (a query of its SQLite store).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from farm.pool.lab.core import lab_down, lab_up  # noqa: E402
from suites import matrix  # noqa: E402

RUN_TIMEOUT = 1800


def start(root: Path, inventory: Path, tier: str, k: str | None) -> subprocess.Popen:
    root.mkdir(parents=True)
    env = dict(os.environ, FARM_RUNS=str(root / "runs"), FARM_STORE=str(root / "farm.sqlite"))
    argv = [sys.executable, "-m", "farm.cli", "run", "--tier", tier, "--no-report"]
    argv += ["--no-progress", "--inventory", str(inventory)]
    argv += ["--", "-k", k] if k else []
    return subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def store_check(root: Path, want: list[str]) -> str:
    """'ok' when the store's one run has exactly one record per wanted case, else what is off."""
    db = sqlite3.connect(root / "farm.sqlite")
    try:
        runs = [r[0] for r in db.execute("SELECT run_id FROM runs")]
        if len(runs) != 1:
            return f"{len(runs)} runs in the store"
        got = Counter(
            r[0] for r in db.execute("SELECT case_id FROM results WHERE run_id=?", (runs[0],))
        )
    finally:
        db.close()
    doubled = sorted(c for c, n in got.items() if n > 1)
    lost = sorted(set(want) - set(got))
    stray = sorted(set(got) - set(want))
    if doubled or lost or stray:
        return f"doubled {len(doubled)}, lost {len(lost)}, stray {len(stray)}"
    return f"ok ({len(got)} cases, one record each)"


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=RUN_TIMEOUT)
    return proc.returncode, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="smoke")
    parser.add_argument("-k", help="a -k selection of the tier (case-id words joined by and)")
    args = parser.parse_args(argv)
    cases = matrix.expand(args.tier)
    if args.k:
        words = [w.strip().lower() for w in args.k.split(" and ")]
        cases = [c for c in cases if all(w in c.id.lower() for w in words)]
    want = sorted(c.id for c in cases)

    with tempfile.TemporaryDirectory(prefix="farm-concurrent-") as tmp:
        tmp_path = Path(tmp)
        lab_root = tmp_path / "lab"
        lab_up(lab_root, 3)
        try:
            inventory = lab_root / "inventory.toml"
            assert inventory.is_file(), inventory
            loads = [load()]
            t0 = time.monotonic()
            code, out = finish(start(tmp_path / "alone", inventory, args.tier, args.k))
            alone = time.monotonic() - t0
            loads.append(load())
            alone_store = store_check(tmp_path / "alone", want)
            if code not in (0, 1):
                print(out[-3000:])

            loads.append(load())
            t0 = time.monotonic()
            pair_roots = [tmp_path / "pair-a", tmp_path / "pair-b"]
            procs = [start(r, inventory, args.tier, args.k) for r in pair_roots]
            results = [finish(p) for p in procs]
            pair = time.monotonic() - t0
            loads.append(load())
            pair_stores = [store_check(tmp_path / n, want) for n in ("pair-a", "pair-b")]
            for c, o in results:
                if c not in (0, 1):
                    print(o[-3000:])
        finally:
            lab_down(lab_root)

    sel = f" -k {args.k!r}" if args.k else ""
    print(f"concurrent runs: tier {args.tier}{sel}, {len(want)} cases, SSH lab of 3 hosts")
    print(f"  one run alone : {alone:7.1f} s  exit {code}  store {alone_store}")
    print(
        f"  two at once   : {pair:7.1f} s  (the pair, wall; {pair / alone:.2f}x one alone, "
        f"{pair / (2 * alone):.2f}x the two one after the other)"
    )
    print(f"  load average  : alone {loads[0]} -> {loads[1]}, pair {loads[2]} -> {loads[3]}")
    for name, (c, _), check in zip(("a", "b"), results, pair_stores, strict=True):
        print(f"    run {name}       : exit {c}  store {check}")
    good = all(s.startswith("ok") for s in [alone_store, *pair_stores])
    return 0 if good and all(c in (0, 1) for c, _ in [(code, ""), *results]) else 1


if __name__ == "__main__":
    sys.exit(main())
