"""What a pytest worker spends on each case, step by step, in this checkout and another, in turns.

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/case_phases.py --against /tmp/base          # nightly, 4 rounds
    .venv/bin/python benchmarks/case_phases.py --rounds 2 --tier smoke       # this checkout only

The orchestrator's CPU per case (benchmarks/scale.py) moves by a fifth from one quarter hour to
the next on this machine, more than most changes to it. This measures the worker's own share
directly and in turns: ``farm run --jobs 1 --no-report --no-progress`` (pytest in the farm's own
process) on the 5-slot pool of scale.py, whose hosts answer with the instant executor (so that
no operator runs), with a pytest plugin (this file, ``-p case_phases``) that sums the CPU time of
the thread that runs the test items in each pytest phase (setup, call, teardown, makereport,
logreport, logfinish: the whole protocol) and in the farm's own steps inside them (the record's
JSON and its append, the Allure annotations, the Allure result's file). ``--against DIR`` runs a
second checkout (its ``farm`` on PYTHONPATH; its build/ must hold a built operator package) in
turns with this one, the order alternating each round. Printed per checkout: the median over the
rounds of each figure in ms a case, and the whole process's CPU (every thread, start-up and
store import included) per case.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
REPO = HERE.parent
PHASES = ("setup", "call", "teardown", "makereport", "logreport", "logfinish")
# (module, attribute) of the farm's own steps; a checkout without one reports none.
STEPS = {
    "record JSON + append": ("farm.run.records_file", "RecordWriter.write"),
    "record append": ("farm.util.run_dir", "append"),
    "Allure annotations": ("farm.run.plugin", "_annotate"),
    "Allure result file": ("farm.run.allure.output", "write_item"),
}
OUT_ENV = "CASE_PHASES_OUT"


# -- the pytest plugin (-p case_phases, in the farm run's process) ------------------------------

_spent: dict[str, float] = defaultdict(float)
_items = [0]


def _timed(name: str, fn):
    def wrapper(*args, **kwargs):
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _spent[name] += time.thread_time() - started

    return wrapper


def pytest_configure(config):
    import importlib

    for name, (module, attr) in STEPS.items():
        owner = importlib.import_module(module)
        *path, last = attr.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is not None and hasattr(owner, last):
            setattr(owner, last, _timed(name, getattr(owner, last)))


def _phase(name: str):
    started = time.thread_time()
    yield
    _spent[name] += time.thread_time() - started


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    yield from _phase("protocol")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    yield from _phase("setup")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    yield from _phase("call")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    yield from _phase("teardown")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    yield from _phase("makereport")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_logreport(report):
    yield from _phase("logreport")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_logfinish(nodeid, location):
    yield from _phase("logfinish")


def pytest_runtest_logstart(nodeid, location):
    _items[0] += 1


def pytest_sessionfinish(session):
    out = os.environ.get(OUT_ENV)
    if out:
        Path(out).write_text(json.dumps({"items": _items[0], "spent_s": dict(_spent)}))


# -- the driver ---------------------------------------------------------------------------------


def run_once(checkout: Path, work: Path, tier: str) -> dict:
    """One farm run of `checkout` on the instant pool: per-case ms of each figure."""
    from scale import write_inventory

    inventory = work / "inventory.toml"
    if not inventory.exists():
        write_inventory(work, 5)
    out = work / "phases.json"
    out.unlink(missing_ok=True)
    cpu_file = work / "cpu.txt"
    # The process's own CPU, every thread, read at its exit (its agents are not its threads).
    launcher = (
        "import atexit, resource, runpy, sys\n"
        "def done():\n"
        "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
        f"    open({str(cpu_file)!r}, 'w').write(str(r.ru_utime + r.ru_stime))\n"
        "atexit.register(done)\n"
        "sys.argv = ['farm'] + sys.argv[1:]\n"
        "runpy.run_module('farm.cli', run_name='__main__')\n"
    )
    env = dict(
        os.environ,
        FARM_RUNS=str(work / "runs"),
        FARM_STORE=str(work / "farm.sqlite"),
        PYTHONPATH=os.pathsep.join([str(checkout), str(HERE)]),
        **{OUT_ENV: str(out)},
    )
    argv = [sys.executable, "-c", launcher, "run", "--tier", tier, "--inventory", str(inventory)]
    argv += ["--jobs", "1", "--no-report", "--no-progress", "--", "-p", "case_phases"]
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not out.exists():
        said = (proc.stdout + proc.stderr)[-2000:]
        raise SystemExit(f"farm run of {checkout} failed ({proc.returncode}):\n{said}")
    data = json.loads(out.read_text())
    n = max(data["items"], 1)
    row = {k: 1000 * v / n for k, v in data["spent_s"].items()}
    row["process, every thread"] = 1000 * float(cpu_file.read_text()) / n
    row["items"] = n
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", default="nightly")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--against", type=Path, default=None, help="another checkout, in turns")
    args = parser.parse_args(argv)
    checkouts = {"this": REPO} | ({"against": args.against.resolve()} if args.against else {})
    subprocess.run([sys.executable, "-m", "farm.cli", "build"], cwd=REPO, check=True)
    rows: dict[str, list[dict]] = {name: [] for name in checkouts}
    with tempfile.TemporaryDirectory(prefix="lsg-phases-") as tmp:
        for r in range(args.rounds):
            order = list(checkouts.items())
            for name, checkout in order if r % 2 == 0 else order[::-1]:
                work = Path(tmp) / name
                work.mkdir(exist_ok=True)
                row = run_once(checkout, work, args.tier)
                rows[name].append(row)
                print(
                    f"round {r + 1} {name}: protocol {row.get('protocol', 0):.3f} ms a case, "
                    f"process {row['process, every thread']:.3f} ms",
                    flush=True,
                )
    figures = ["protocol", *PHASES, *STEPS, "process, every thread"]
    names = list(checkouts)
    print(
        f"\n{args.tier}, {rows[names[0]][0]['items']} cases, median of {args.rounds} rounds, "
        "ms of CPU a case\n"
    )
    print("| figure | " + " | ".join(f"{n} ({checkouts[n]})" for n in names) + " |")
    print("|---|" + "--:|" * len(names))
    for fig in figures:
        cells = []
        for n in names:
            values = [row[fig] for row in rows[n] if fig in row]
            cells.append(f"{statistics.median(values):.3f}" if values else "—")
        print(f"| {fig} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
