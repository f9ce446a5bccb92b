"""How long a tier takes on the embedded pool, against what its agents' compute allows.

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/tier_time.py                     # nightly, with its report
    .venv/bin/python benchmarks/tier_time.py --tier full --no-report

``farm run --tier T --no-progress`` on the embedded default pool (the real operator: the CPU twin
of the kernel, the golden, the judging), as a subprocess with its own ``FARM_RUNS`` and
``FARM_STORE`` in a temporary directory, after an untimed ``farm build``. The store is empty
unless ``--store FILE`` gives one to start from (copied and opened once by the farm, untimed): a
store with a history, as a farm that runs every night has. Its process tree is
sampled from /proc as in benchmarks/scale.py. Reported:

* wall: the whole command (start-up, every case, and the report unless ``--no-report``), and the
  part from the first to the last record;
* the agents' compute: the CPU time of every agent process (user + system), summed; divided by
  the machine's cores, it is the shortest wall time that compute allows on this machine;
* the ratio of the wall time to that bound (the issue's target: at most 1.5), and the
  orchestrator's CPU beside it (what the farm itself costs; it competes for the same cores):
  farm run and pytest-xdist's workers, the forked plot processes included, Allure's node not;
* the CPU by role (agents, controller, xdist workers, plots, allure, other; scale.py role_of)
  and the whole process tree's, from the kernel's accounting of the reaped children.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import RUN_TIMEOUT, Monitor  # noqa: E402


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def run_tier(
    work: Path,
    tier: str,
    report: bool,
    interval: float,
    jobs: int | None = None,
    store: Path | None = None,
    backend: str | None = None,
) -> dict:
    """``store``: the run starts from a copy of this store (untimed), not an empty one."""
    env = dict(os.environ, FARM_RUNS=str(work / "runs"), FARM_STORE=str(work / "farm.sqlite"))
    if store is not None:
        copy_store(store, work / "farm.sqlite")
    argv = [sys.executable, "-m", "farm.cli", "run", "--tier", tier, "--no-progress"]
    argv += [] if report else ["--no-report"]
    argv += [] if jobs is None else ["--jobs", str(jobs)]
    argv += [] if backend is None else ["--backend", backend]
    tail: list[str] = []
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail[:] = (tail + [line.rstrip()])[-15:]

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    with Monitor(proc.pid, work / "runs", interval) as monitor:
        monitor.start = started
        try:
            code = proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    reader.join(10)
    wall = time.monotonic() - started
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    samples = monitor.samples
    cases = max(max((s.records for s in samples), default=0), monitor._records())
    first = next((s.t for s in samples if s.records > 0), None)
    last = next((s.t for s in samples if cases and s.records >= cases), None)
    agents_cpu = samples[-1].agent_cpu if samples else 0.0
    orch_cpu = samples[-1].orch_cpu if samples else 0.0
    cores = os.cpu_count() or 1
    bound = agents_cpu / cores
    return {
        "tier": tier,
        "exit": code,
        "cases": cases,
        "wall_s": wall,
        "first_record_s": first,
        "cases_wall_s": (last - first) if first is not None and last is not None else None,
        "last_record_s": last,
        # After the last case: pytest's end, the store import, the report (benchmarks/floor.py).
        "tail_s": (wall - last) if last is not None else None,
        "agents_cpu_s": agents_cpu,
        "orchestrator_cpu_s": orch_cpu,
        # Every process of the run, reaped: the kernel's count, which sampling cannot miss.
        "tree_cpu_s": _cpu(children_after) - _cpu(children_before),
        "cpu_by_role": monitor.cpu_by_role(),
        "cores": cores,
        "bound_s": bound,
        "ratio": wall / bound if bound else None,
        "agents": max((s.agents for s in samples), default=0),
        "tail": tail,
    }


def roles_line(r: dict) -> str:
    """Where the run's CPU went, by role (scale.py role_of), beside the kernel's count of all of
    it; the difference is what the samples missed (short-lived processes, last slices)."""
    roles = ", ".join(f"{role} {cpu:.1f}" for role, cpu in r["cpu_by_role"].items())
    return f"CPU by role (s): {roles}; every process {r['tree_cpu_s']:.1f}"


def copy_store(store: Path, to: Path) -> None:
    """A SQLite store copied whole, opened once by the farm as a farm that ran yesterday had
    (its whole read, and the record beside it that spares the next one: farm/results/store/
    checks.py), and on the disk before the timed run starts: none of it falls inside the run."""
    from farm.results.store import RunStore
    from farm.results.store.checks import CHECKED_SUFFIX
    from farm.results.store.transfer import backup_sqlite

    if not store.is_file():
        raise SystemExit(f"--store {store}: no such store file")
    backup_sqlite(store, to)
    RunStore(to, create=False).close()
    for path in (to, to.with_name(to.name + CHECKED_SUFFIX)):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", default="nightly")
    parser.add_argument("--no-report", action="store_true", help="time the run without its report")
    parser.add_argument("--jobs", type=int, default=None, help="farm run --jobs (default: its own)")
    parser.add_argument(
        "--backend", default=None, help="farm run --backend (default: the target's)"
    )
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--json", type=Path, default=None, help="write the result here")
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="start from a copy of this SQLite store (a store with history), not an empty one",
    )
    args = parser.parse_args(argv)

    from farm.pool import build

    print("building the operator package (untimed) ...", flush=True)
    build.build_package()
    with tempfile.TemporaryDirectory(prefix="lsg-tier-") as tmp:
        r = run_tier(
            Path(tmp),
            args.tier,
            not args.no_report,
            args.interval,
            args.jobs,
            args.store,
            args.backend,
        )
    if r["exit"] != 0:
        print("\n".join(r["tail"]))
    cases_wall = "—" if r["cases_wall_s"] is None else f"{r['cases_wall_s']:.1f} s"
    first = "—" if r["first_record_s"] is None else f"{r['first_record_s']:.1f} s"
    print(
        f"{r['tier']}: exit {r['exit']}, {r['cases']} cases, wall {r['wall_s']:.1f} s "
        f"({'with' if not args.no_report else 'without'} the report; first record at {first}, "
        f"first to last record {cases_wall})\n"
        f"agents' CPU {r['agents_cpu_s']:.1f} s in {r['agents']} agents / {r['cores']} cores = "
        f"{r['bound_s']:.1f} s; wall / that = {r['ratio']:.2f} (target <= 1.5)\n"
        f"orchestrator CPU {r['orchestrator_cpu_s']:.1f} s\n{roles_line(r)}"
    )
    if args.json:
        args.json.write_text(json.dumps({k: v for k, v in r.items() if k != "tail"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
