"""Report generation and run-store queries at nightly scale.

The questions (issue 5's closing note): how long does `farm report` take for a nightly run, and
how big is the report; how long does the run store take to answer `farm compare` for two nightly
runs. Run by hand from the repository root; nothing here asserts a time.

    .venv/bin/python benchmarks/report_scale.py                    # runs the nightly tier once
    .venv/bin/python benchmarks/report_scale.py --work /tmp/nightly --reuse   # an earlier run

It never touches the developer's runs/: `farm run --tier nightly --no-report --no-progress` runs
with FARM_RUNS=<work> and FARM_STORE=<work>/farm.sqlite (skipped with --reuse when <work> already
holds a finished nightly run). Then:

* **report**: `farm report <run> --no-history` as a subprocess, timed (`--repeat` times), with the
  size of the report directory (bytes, files) and of the allure-results it was made from. Without
  history, so that repeats measure the same work.
* **compare**: the second nightly run is the first one's records written again under a new run
  id (`RunStore.begin_run` + `add_results` into a copy of the store): the store's work is the
  same as for a second real nightly run (same row count, same columns), which would take as long
  as the first to make. Timed: `RunStore.result_rows` of one run (the query), `compare.compare`
  of the two (two queries + the comparison, in process) and `farm compare RUN2 --baseline RUN1
  --format json` as a subprocess (what a person waits for, interpreter start-up included).
  With `--perturb`, 1 % of the second run's cases are made to fail, so the comparison has
  something to list.

Prints a markdown table; `--json FILE` writes the figures too.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _env(work: Path, store: Path) -> dict:
    env = dict(os.environ, FARM_RUNS=str(work), FARM_STORE=str(store), NO_COLOR="1")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _farm(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("farm")
    return [str(script), *args] if script.is_file() else [sys.executable, "-m", "farm.cli", *args]


def _tree_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def nightly_run(work: Path, store: Path, reuse: bool) -> tuple[dict, float | None]:
    from farm.results.store import RunStore

    if reuse and store.is_file():
        with RunStore(store) as s:
            run = s.latest_run(tier="nightly", finished=True)
        if run is not None:
            return run, None
    started = time.perf_counter()
    proc = subprocess.run(
        _farm("run", "--tier", "nightly", "--no-report", "--no-progress"),
        cwd=ROOT,
        env=_env(work, store),
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"farm run --tier nightly failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    with RunStore(store) as s:
        return s.latest_run(tier="nightly", finished=True), took


def time_report(work: Path, store: Path, run: dict, repeat: int) -> dict:
    out = work / "report-bench"
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.run(
            _farm("report", run["run_id"], "--no-history", "--out", str(out)),
            cwd=ROOT,
            env=_env(work, store),
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - started)
        if proc.returncode not in (0, 1) or not (out / "index.html").is_file():
            sys.exit(f"farm report failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    report_bytes, report_files = _tree_size(out)
    results = Path(run["run_dir"]) / "allure-results"
    results_bytes, results_files = _tree_size(results)
    summary = json.loads((out / "summary.json").read_text())
    return {
        "cases": summary["stats"]["total"],
        "report_s": times,
        "report_s_median": statistics.median(times),
        "report_bytes": report_bytes,
        "report_files": report_files,
        "results_bytes": results_bytes,
        "results_files": results_files,
    }


def time_compare(work: Path, store: Path, run: dict, repeat: int, perturb: bool) -> dict:
    from farm.results import compare as cmp
    from farm.results.store import RunStore

    bench_store = work / "compare-bench.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{bench_store}{suffix}").unlink(missing_ok=True)
    with RunStore(store) as s:  # a checkpointed, consistent copy (WAL included)
        s.db.execute("VACUUM INTO ?", (str(bench_store),))
    with RunStore(bench_store) as s:
        records = s.results(run["run_id"])
        if perturb:
            records = copy.deepcopy(records)
            for r in records[::100]:
                r.update(outcome="failed", category="precision", message="perturbed")
        meta = {k: run[k] for k in ("tier", "backend", "git_commit", "run_dir") if run.get(k)}
        started = time.perf_counter()
        run2 = s.begin_run({**meta, "run_id": run["run_id"] + "-copy"})
        s.add_results(run2, records)
        s.finish_run(run2, 1 if perturb else 0)
        insert_s = time.perf_counter() - started
        query, full = [], []
        for _ in range(repeat):
            t = time.perf_counter()
            rows = s.result_rows(run2)
            query.append(time.perf_counter() - t)
            t = time.perf_counter()
            comp = cmp.compare(s, run2, run["run_id"])
            full.append(time.perf_counter() - t)
    cli = []
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(
            _farm("compare", run2, "--baseline", run["run_id"], "--format", "json"),
            cwd=ROOT,
            env=_env(work, bench_store),
            capture_output=True,
            text=True,
        )
        cli.append(time.perf_counter() - t)
        assert proc.returncode in (0, 1), proc.stderr
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import farm.results.commands"], cwd=ROOT, check=True)
    import_s = time.perf_counter() - t
    return {
        "rows_per_run": len(rows),
        "store_bytes": bench_store.stat().st_size,
        "add_results_s": insert_s,
        "result_rows_s_median": statistics.median(query),
        "compare_in_process_s_median": statistics.median(full),
        "farm_compare_cli_s_median": statistics.median(cli),
        "python_import_farm_compare_s": import_s,
        "regressions": len(comp.regressed_cases),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--work", help="working directory (default: a new temporary one)")
    p.add_argument("--reuse", action="store_true", help="use the nightly run already in --work")
    p.add_argument("--keep", action="store_true", help="keep a temporary --work")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--perturb", action="store_true", help="1 %% of the copy's cases fail")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)

    temp = args.work is None
    work = Path(args.work or tempfile.mkdtemp(prefix="report-scale-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    store = work / "farm.sqlite"
    try:
        run, run_s = nightly_run(work, store, args.reuse)
        figures = {
            "machine": f"{platform.node()} {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
            "run_id": run["run_id"],
            "nightly_run_s": run_s,
            "report": time_report(work, store, run, args.repeat),
            "compare": time_compare(work, store, run, args.repeat, args.perturb),
        }
    finally:
        if temp and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    rep, cmp_ = figures["report"], figures["compare"]
    rows = [
        ("nightly run (farm run --no-report)", _s(figures["nightly_run_s"])),
        ("cases in the report", f"{rep['cases']:,}"),
        (f"farm report (median of {len(rep['report_s'])})", _s(rep["report_s_median"])),
        ("report size", f"{rep['report_bytes'] / 2**20:.1f} MiB in {rep['report_files']:,} files"),
        (
            "allure-results size",
            f"{rep['results_bytes'] / 2**20:.1f} MiB in {rep['results_files']:,} files",
        ),
        ("store rows per run", f"{cmp_['rows_per_run']:,}"),
        ("store file (2 runs)", f"{cmp_['store_bytes'] / 2**20:.1f} MiB"),
        ("add_results (one run)", _s(cmp_["add_results_s"])),
        ("result_rows (one run's query)", _s(cmp_["result_rows_s_median"])),
        ("compare() of two runs, in process", _s(cmp_["compare_in_process_s_median"])),
        ("`farm compare` CLI, whole command", _s(cmp_["farm_compare_cli_s_median"])),
        (
            "  of which python + import farm.results.commands",
            _s(cmp_["python_import_farm_compare_s"]),
        ),
    ]
    print(f"report_scale on {figures['machine']}, run {figures['run_id']}\n")
    print("| measure | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


def _s(x) -> str:
    return "(reused)" if x is None else f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


if __name__ == "__main__":
    sys.exit(main())
