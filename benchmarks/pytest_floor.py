"""What pytest itself costs per test item, as the farm runs it, with test bodies that do nothing.

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/pytest_floor.py                       # the nightly's 6,700 items
    .venv/bin/python benchmarks/pytest_floor.py --items 31700 --agents-cpu 596

A tier on the embedded pool shares the machine's cores between the agents (the operator, the
golden, the judging) and the orchestrator: pytest, pytest-xdist and allure-pytest, one test item
per case. This measures the orchestrator's least possible share: a module of ``--items``
parametrized tests whose body only asserts, each handed its parameter as the farm's plugin hands
a suite test its `case` (no per-item pseudo-fixture, so no Allure container file: since
2026-12-05, 1.97 -> 1.52 ms an item), run with the options `farm run` gives pytest
(farm/run/runner.py pytest_args: no cache, no terminal, JUnit XML, allure-pytest results) as a
subprocess, its CPU time (user + system of pytest and its workers) taken from the kernel's
accounting of the finished children. Each variant runs ``--repeat`` times; the least is reported
(this machine is shared, and noise only adds).

Variants: pytest alone in one process; with ``-n W`` xdist workers; with xdist and JUnit, with
xdist and allure-pytest (what each costs apart); with xdist, JUnit and allure-pytest (what a farm
run has before any farm code runs).

With ``--agents-cpu A`` (the agents' CPU of a tier, from benchmarks/tier_time.py), it also
prints the least ratio of wall time to A / cores that the floor allows, before any start-up,
farm code or report: (A + floor) / A.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BODY = """import pytest


@pytest.mark.parametrize("i", range({items}))
def test_item(i):
    assert i >= 0
"""

# The item's parameter handed to it as farm/run/plugin.py hands a suite test its `case`: without
# it, pytest sets up a pseudo-fixture per item, and allure-pytest writes a container file for it,
# which the farm's items do not have.
CONFTEST = """import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.funcargs.setdefault("i", item.callspec.params["i"])
"""

FARM_OPTIONS = ["-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:unraisableexception"]


def write_module(work: Path, items: int) -> None:
    (work / "test_floor.py").write_text(BODY.format(items=items))
    (work / "conftest.py").write_text(CONFTEST)


def variants(workers: int, work: Path) -> dict[str, list[str]]:
    junit = ["--junitxml", str(work / "junit.xml")]
    allure = ["--alluredir", str(work / "allure-results")]
    xdist = ["-n", str(workers)]
    return {
        "pytest, one process": ["-p", "no:xdist"],
        f"pytest-xdist, {workers} workers": xdist,
        f"pytest-xdist, {workers} workers, JUnit": [*xdist, *junit],
        f"pytest-xdist, {workers} workers, allure-pytest": [*xdist, *allure],
        f"pytest-xdist, {workers} workers, JUnit, allure-pytest": [*xdist, *junit, *allure],
    }


def run_once(work: Path, extra: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one pytest run over the module in ``work``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "test_floor.py", *FARM_OPTIONS, *extra],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"pytest {' '.join(extra)} failed ({proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def items_cpu(items: int, workers: int) -> float:
    """The CPU seconds of one pytest run over ``items`` empty items with everything a farm run
    has before any farm code (xdist on ``workers``, JUnit, allure-pytest): benchmarks/floor.py's
    least wall time of a farm with per-case items."""
    with tempfile.TemporaryDirectory(prefix="lsg-floor-") as tmp:
        work = Path(tmp)
        write_module(work, items)
        return run_once(work, list(variants(workers, work).values())[-1])[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=6_700, help="test items (default: nightly)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--agents-cpu", type=float, default=None, help="a tier's agents' CPU, s")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="lsg-floor-") as tmp:
        work = Path(tmp)
        write_module(work, args.items)
        print(f"{args.items:,} items, least of {args.repeat} runs each\n")
        print("| variant | wall | CPU | CPU per item |")
        print("|---|---|---|---|")
        floor = 0.0
        for name, extra in variants(args.workers, work).items():
            runs = [run_once(work, extra) for _ in range(args.repeat)]
            wall = min(w for w, _ in runs)
            cpu = min(c for _, c in runs)
            spread = statistics.pstdev(c for _, c in runs)
            floor = cpu
            print(
                f"| {name} | {wall:.1f} s | {cpu:.1f} s (±{spread:.1f}) | "
                f"{cpu / args.items * 1e3:.2f} ms |"
            )
    if args.agents_cpu:
        print(
            f"\nWith the agents' {args.agents_cpu:.0f} s of CPU, the orchestrator's floor alone "
            f"puts a tier at least at {(args.agents_cpu + floor) / args.agents_cpu:.2f}x of the "
            "agents' CPU over the cores, before start-up, the farm's own code and the report."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
