"""Where `farm run`'s wall time goes after its cases: a timeline of its steps.

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/run_timeline.py                  # nightly, with its report
    .venv/bin/python benchmarks/run_timeline.py --tier smoke

Runs ``farm run --tier T --no-progress`` in this process (with its own ``FARM_RUNS`` and
``FARM_STORE`` in a temporary directory, after an untimed ``farm build``) with the steps below
wrapped by a timer, and prints each call's start (seconds from the command's start) and duration
in the order they ended. The steps run as they would; only their timing is recorded.

Reading it: pytest's end is where the cases stop; what follows until the end is the tail a
person waits for after the last case (the store import, the plots drawn in the background,
the report step, `allure generate` being the `subprocess.run` inside `generate`).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path

STEPS = [
    ("pytest", "main"),
    ("farm.cli.run_command", "collect_records"),
    ("farm.run.outputs", "RunOutputs.allure"),
    ("farm.results.store", "RunStore.add_results"),
    ("farm.results.store", "RunStore.finish_run"),
    ("farm.cli.run_command", "judgement"),
    ("farm.results.compare", "compare"),
    ("farm.results.triage_next", "with_baseline"),
    ("farm.results.gate", "farm_gate"),
    ("farm.run.outputs", "RunOutputs.rest"),
    ("farm.run.case_plots", "render_case_plots"),
    ("farm.run.runner", "print_summary"),
    ("farm.cli.run_command", "make_report"),
    ("farm.results.shrink_links", "link_shrinks"),
    ("farm.run.plots", "trend_png"),
    ("farm.results.report_generate", "history_copy"),
    ("farm.results.report_generate", "allure_input"),
    ("farm.results.report", "generate"),
    ("farm.results.report_generate", "keep_new_history_line"),
    ("subprocess", "run"),
]


def wrap(start: float, lines: list[str], module: str, attr: str) -> None:
    owner = importlib.import_module(module)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    func = getattr(owner, name)

    @functools.wraps(func)
    def timed(*args, **kwargs):
        began = time.monotonic()
        try:
            return func(*args, **kwargs)
        finally:
            took = time.monotonic() - began
            lines.append(f"{began - start:8.2f} {took:8.2f}  {module}.{attr}")

    setattr(owner, name, timed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", default="nightly")
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="run-timeline-") as tmp:
        work = Path(tmp)
        os.environ.update(FARM_RUNS=str(work / "runs"), FARM_STORE=str(work / "farm.sqlite"))
        # Imported after: farm.util.paths reads FARM_RUNS once, at import.
        from farm import cli
        from farm.pool import build

        print("building the operator package (untimed) ...", flush=True)
        build.build_package()

        start = time.monotonic()
        lines: list[str] = []
        for module, attr in STEPS:
            wrap(start, lines, module, attr)
        farm_args = ["run", "--tier", args.tier, "--no-progress"]
        farm_args += ["--no-report"] if args.no_report else []
        code = cli.main(farm_args)
        wall = time.monotonic() - start
        # The last record's write, on the same clock: where the cases end and pytest's own
        # end (the session's teardown, the workers' exit, JUnit) begins.
        records = list((work / "runs").glob("*/records/*.jsonl"))
        if records:
            last = max(p.stat().st_mtime for p in records) - (time.time() - time.monotonic())
            lines.append(f"{last - start:8.2f} {0:8.2f}  the last record written")
    print()
    print(f"farm {' '.join(farm_args)}: exit {code}, {wall:.2f} s")
    print(f"{'start s':>8} {'took s':>8}  step (in the order they ended)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
