"""The floor of a tier: the work a tier cannot avoid, beside `farm run` of the same tier.

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/floor.py                         # smoke and nightly, with reports
    .venv/bin/python benchmarks/floor.py --tiers nightly --no-report --json /tmp/floor.json

For every case `farm run --tier T` runs (suites.matrix.expand(T): the accepted cases, which
tests/test_precision judges, and the rejected ones, which test_rejection checks), exactly what
no test farm can skip, and nothing else:

* the inputs from the case's seed (the agent's own ``make_call_inputs``: values, fills, special
  placement, layouts over NaN storage);
* the operator call on the default target's library (``farm build``'s ascendc-cpu package: the
  emulated real kernel on the emulated device), through the agent's own
  ``execute.call_operator`` on the native backend, on the SoC the embedded pool serves the
  case's family with; descriptor-only cases are planned only, as the agent does;
* the float64 golden (golden.reference.log_softmax_grad) of every accepted case the operator
  computed: no metrics, no standards, no histogram, no torch benchmark.

No pytest, agents, protocol, records or store. The cases run in ``os.cpu_count()`` forked
processes (``--processes``), costliest first by the farm's own estimate (farm.run.leases
case_cost, what it balances its lanes with), one case per task. Its wall time (the pool's start
to the last case; expanding the tier is untimed, as is the build) is the floor.

Then, in the same invocation, ``farm run --tier T --no-progress`` on the embedded default pool
(tier_time.run_tier: its own FARM_RUNS and FARM_STORE in a temporary directory, the process tree
sampled as in scale.py). Reported per tier: floor wall, farm wall (with the report unless
``--no-report``), their ratio (issue 26's target: at most 1.5), the orchestrator's CPU per case,
the tail (the last record written to the command's end), the floor's CPU beside the agents' CPU
and beside the whole farm run's (every process, Allure's included: the kernel's count of the
reaped children), and the load average before and after each half; then the farm run's CPU by
role (agents, controller, xdist workers, plots, allure, other: benchmarks/scale.py role_of).

With ``--least``, also the least wall time a farm with one pytest item per case and this report
could take, measured in the same invocation: the floor's CPU, plus pytest's own CPU on as many
empty items (benchmarks/pytest_floor.py items_cpu: xdist, JUnit, allure-pytest, as `farm run`
runs them), plus the CPU the farm run's Allure and plots took, over the processes; and the farm
run's wall against it. The floor leaves out pytest and the report, which the issue's decisions
keep; this yardstick keeps them and leaves out only the farm's own code.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pytest_floor import items_cpu  # noqa: E402
from scale import ROLES  # noqa: E402
from tier_time import run_tier  # noqa: E402

from farm.agent import execute  # noqa: E402
from farm.agent.backends.native import load  # noqa: E402
from golden.reference import log_softmax_grad  # noqa: E402

# The forked workers' view of the run: the case dicts and their SoCs, set before the pool starts
# (fork shares them; nothing but an index and three timings crosses a pipe).
_CASES: list[dict] = []
_SOCS: list[str] = []


def unpack_library(archive: Path, into: Path) -> Path:
    """The C ABI library of an operator package archive, unpacked under `into` (what an agent
    of the embedded pool gets in LSG_NATIVE_LIB)."""
    from farm.pool.deploy import package_native_lib

    member = package_native_lib(archive)
    if member is None:
        raise SystemExit(f"{archive}: no native library in the package; farm build it again")
    # tarfile's extraction filters came in 3.11.4 (3.10.12): Debian 12's python is 3.11.2.
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(archive) as tar:
        tar.extract(member, into, **safe)
    return into / member


def tier_cases(tier: str) -> tuple[list[dict], list[str]]:
    """The tier's cases as they travel to an agent, costliest first, and each one's SoC."""
    from farm.run.leases import case_cost
    from golden.soc import representative_soc
    from suites import matrix

    cases = sorted(matrix.expand(tier), key=case_cost, reverse=True)
    return [c.to_dict() for c in cases], [representative_soc(c.family).name for c in cases]


def floor_case(index: int) -> tuple[float, float, float]:
    """One case's unavoidable work: (inputs, operator, golden) seconds."""
    case, soc = _CASES[index], _SOCS[index]
    started = time.perf_counter()
    if execute.descriptor_only(case):  # planned from descriptors alone, as the agent does
        execute._describe_only(case, "native", SimpleNamespace(soc=soc), 0)
        return 0.0, time.perf_counter() - started, 0.0
    dy, y = execute.make_call_inputs(case)
    made = time.perf_counter()
    result = execute.call_operator(case, dy, y, "native", soc)
    ran = time.perf_counter()
    judgeable = case["expect"]["kind"] == "precision" and dy is not None and y is not None
    if result.status == 0 and result.out is not None and judgeable:
        log_softmax_grad(dy, y, case["axes"])
    return made - started, ran - made, time.perf_counter() - ran


def _warm(_: int) -> int:
    """Each worker's library load (a forked copy of the parent's, once), before the cases."""
    load()
    return os.getpid()


def run_floor(tier: str, processes: int) -> dict[str, Any]:
    expand_started = time.monotonic()
    _CASES[:], _SOCS[:] = tier_cases(tier)
    expand_s = time.monotonic() - expand_started
    load_before = os.getloadavg()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    context = multiprocessing.get_context("fork")
    with context.Pool(processes) as pool:
        pool.map(_warm, range(processes), chunksize=1)
        warm_s = time.monotonic() - started
        parts = list(pool.imap_unordered(floor_case, range(len(_CASES)), chunksize=1))
        wall = time.monotonic() - started
        pool.close()
        pool.join()
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return {
        "cases": len(parts),
        "accepted": sum(c["expect"]["kind"] == "precision" for c in _CASES),
        "processes": processes,
        "expand_s": expand_s,
        "warm_s": warm_s,
        "wall_s": wall,
        "cpu_s": cpu,
        "inputs_s": sum(p[0] for p in parts),
        "operator_s": sum(p[1] for p in parts),
        "golden_s": sum(p[2] for p in parts),
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }


def measure(
    tier: str,
    report: bool,
    processes: int,
    interval: float,
    keep: Path | None = None,
    least: bool = False,
    store: Path | None = None,
) -> dict[str, Any]:
    floor = run_floor(tier, processes)
    load_before = os.getloadavg()
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="lsg-floor-") as tmp:
            farm = run_tier(Path(tmp), tier, report, interval, store=store)
    else:  # the run directory and store kept, for verdicts_identical.py
        (keep / tier).mkdir(parents=True, exist_ok=True)
        farm = run_tier(keep / tier, tier, report, interval, store=store)
    if farm["exit"] == 0:
        farm.pop("tail", None)  # the command's last lines, kept to show a failure
    farm["load_before"], farm["load_after"] = load_before, os.getloadavg()
    cases = farm["cases"] or floor["cases"]
    least_s = None
    if least and cases:
        roles = farm["cpu_by_role"]
        items = items_cpu(cases, processes)
        least_s = (floor["cpu_s"] + items + roles["allure"] + roles["plots"]) / processes
        floor["pytest_items_cpu_s"] = items
    return {
        "tier": tier,
        "report": report,
        "floor": floor,
        "farm": farm,
        "ratio": farm["wall_s"] / floor["wall_s"] if floor["wall_s"] else None,
        "orchestrator_cpu_per_case_ms": 1000 * farm["orchestrator_cpu_s"] / cases,
        "tail_s": farm["tail_s"],
        # The same comparison in CPU seconds, which a loaded machine distorts less than walls.
        # Every process of the run (Allure's node included), from the kernel's count.
        "cpu_ratio": farm["tree_cpu_s"] / floor["cpu_s"] if floor["cpu_s"] else None,
        "least_s": least_s,
        "least_ratio": farm["wall_s"] / least_s if least_s else None,
    }


def _load(values) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def table(results: list[dict]) -> str:
    rows = [
        "| tier | cases | floor wall | farm wall | farm / floor | orchestrator CPU / case | tail "
        "| floor CPU | agents' CPU | farm CPU / floor CPU | load (floor; farm) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in results:
        f, m = r["floor"], r["farm"]
        tail = "—" if r["tail_s"] is None else f"{r['tail_s']:.1f} s"
        rows.append(
            f"| {r['tier']} | {f['cases']} | {f['wall_s']:.1f} s "
            f"| {m['wall_s']:.1f} s{'' if r['report'] else ' (no report)'} | {r['ratio']:.2f} "
            f"| {r['orchestrator_cpu_per_case_ms']:.1f} ms | {tail} | {f['cpu_s']:.1f} s "
            f"| {m['agents_cpu_s']:.1f} s | {r['cpu_ratio']:.2f} "
            f"| {_load(f['load_before'])} → {_load(f['load_after'])}; "
            f"{_load(m['load_before'])} → {_load(m['load_after'])} |"
        )
    return "\n".join(rows)


def roles_table(results: list[dict]) -> str:
    """Where each farm run's CPU went (tier_time.roles_line), beside the floor's."""
    rows = [
        "| tier | floor CPU | farm CPU, every process | " + " | ".join(ROLES) + " | not sampled |",
        "|---|" + "--:|" * (len(ROLES) + 3),
    ]
    for r in results:
        m = r["farm"]
        roles = m["cpu_by_role"]
        missed = m["tree_cpu_s"] - sum(roles.values())
        rows.append(
            f"| {r['tier']} | {r['floor']['cpu_s']:.1f} s | {m['tree_cpu_s']:.1f} s | "
            + " | ".join(f"{roles[role]:.1f} s" for role in ROLES)
            + f" | {missed:.1f} s |"
        )
    return "\n".join(rows)


def least_table(results: list[dict]) -> str:
    """The farm run's wall against the least a farm with per-case items and the report could
    take (``--least``): (floor CPU + pytest on the items + Allure + plots) / processes."""
    rows = [
        "| tier | floor CPU | pytest on the items | Allure + plots | least wall | farm wall "
        "| farm / least |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        if r["least_s"] is None:
            continue
        f, m = r["floor"], r["farm"]
        report_cpu = m["cpu_by_role"]["allure"] + m["cpu_by_role"]["plots"]
        rows.append(
            f"| {r['tier']} | {f['cpu_s']:.1f} s | {f['pytest_items_cpu_s']:.1f} s "
            f"| {report_cpu:.1f} s | {r['least_s']:.1f} s | {m['wall_s']:.1f} s "
            f"| {r['least_ratio']:.2f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiers", default="smoke,nightly", help="comma-separated tiers")
    parser.add_argument("--no-report", action="store_true", help="time farm run without its report")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep each farm run's runs/ and store in KEEP/<tier>/ (default: a temporary one)",
    )
    parser.add_argument(
        "--least",
        action="store_true",
        help="also measure pytest on the tier's items and report the farm against the least "
        "wall a farm with per-case items and the report could take",
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="farm run starts from a copy of this SQLite store (a store with history), not an "
        "empty one",
    )
    args = parser.parse_args(argv)

    from farm.agent.backends.native import ENV_LIB
    from farm.pool import build

    print("building the operator package (untimed) ...", flush=True)
    archive = build.build_package()
    results = []
    with tempfile.TemporaryDirectory(prefix="lsg-floor-lib-") as lib_dir:
        # The package's own library, as an agent of the embedded pool loads it; the forked
        # workers inherit the variable (farm run's agents get theirs from the deployment).
        os.environ[ENV_LIB] = str(unpack_library(archive, Path(lib_dir)))
        for tier in [t for t in args.tiers.split(",") if t]:
            r = measure(
                tier,
                not args.no_report,
                args.processes,
                args.interval,
                args.keep,
                args.least,
                args.store,
            )
            results.append(r)
            f, m = r["floor"], r["farm"]
            print(
                f"{tier}: {f['cases']} cases ({f['accepted']} accepted); floor {f['wall_s']:.1f} s "
                f"on {f['processes']} processes (CPU {f['cpu_s']:.1f} s; summed wall: inputs "
                f"{f['inputs_s']:.1f}, operator {f['operator_s']:.1f}, "
                f"golden {f['golden_s']:.1f}); "
                f"farm run exit {m['exit']}, {m['cases']} records, {m['wall_s']:.1f} s "
                f"({'with' if r['report'] else 'without'} the report); ratio {r['ratio']:.2f}",
                flush=True,
            )
            if m["exit"] != 0:
                print("\n".join(m.get("tail", [])))
    print(table(results))
    print()
    print(roles_table(results))
    if args.least:
        print()
        print(least_table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["farm"]["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
