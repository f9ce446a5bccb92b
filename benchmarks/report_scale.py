"""Report generation and run-store queries at nightly scale.

The questions (issue 5's closing note, issue 13's "reports that scale"): how long does `farm
report` take for a nightly run, how big is the report, and how do both grow with failures (they
should grow with failures, not with passes) and with the history kept; how long does the run store
take to answer `farm compare` for two nightly runs. Run by hand from the repository root; nothing
here asserts a time.

    .venv/bin/python benchmarks/report_scale.py --work /tmp/rs          # runs the nightly tier
    .venv/bin/python benchmarks/report_scale.py --work /tmp/rs --reuse --phases --repeat 2
        --failures 100,1000 --bug-run --history 3 --no-compare          # and more, see below

It never touches the developer's runs/: `farm run --tier nightly --no-report --no-progress` runs
with FARM_RUNS=<work>/pass and FARM_STORE=<work>/pass/farm.sqlite (skipped with --reuse when it
already holds a finished nightly run). With --failures or --bug-run, a second nightly run of an
operator built with a planted bug (`--bug`, default trunc_narrow: the fp16/bf16 output cast
truncates, a precision failure with its metrics, plot and worst elements in most fp16/bf16 cases;
`--bug tail` fails about three quarters of the cases as kernel faults, without metrics) in
<work>/bug-<BUG>. Then:

* **report**: `farm report <run> --no-history --results COPY --out OUT` as a subprocess, timed
  (`--repeat` times; wall and CPU of the command and everything it started), with the size of the
  report directory (MiB, files) and of the allure-results it was made from. Each repeat reads a
  fresh copy of the allure-results as the run left them: the report step writes into them (the
  error-distribution plots), and a second report of the same directory would not draw them again.
  Configurations: the all-pass nightly run; with `--failures N,...` the same run with N of its
  cases' allure-results (result, attachments, containers) swapped for the bug run's of the same
  cases (the first N of the cases that fail there, in the order of a hash of their ids), so N
  cases fail; with `--bug-run`, the bug run as it is. With `--phases`, for each configuration
  also the report step's parts, in a subprocess: drawing the cases' plots
  (case_plots.render_case_plots) and `allure generate` alone (report_generate.generate on the
  drawn copy).
* **history**: with `--history K`, the all-pass report made K+1 times in a row with the history
  (a copy of the store of its own, so that its history JSONL starts empty): the last one is timed
  and measured, and the history file's size is given.
* **compare**: the second nightly run is the first one's records written again under a new run
  id (`RunStore.begin_run` + `add_results` into a copy of the store): the store's work is the
  same as for a second real nightly run (same row count, same columns), which would take as long
  as the first to make. Timed: `RunStore.result_rows` of one run (the query), `compare.compare`
  of the two (two queries + the comparison, in process) and `farm compare RUN2 --baseline RUN1
  --format json` as a subprocess (what a person waits for, interpreter start-up included).
  With `--perturb`, 1 % of the second run's cases are made to fail, so the comparison has
  something to list. `--no-compare` leaves it out.

`--src DIR`: the checkout whose farm makes the runs and the reports (default: this one), e.g. an
earlier commit's (`git archive COMMIT | tar -x -C DIR`, with reports/node_modules, build and dist
linked in), to measure the code before a change: the allure-results are what the test items of
that code wrote, the report what its report step made of them.

Prints markdown tables; `--json FILE` writes the figures too.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TIER = "nightly"


def _env(work: Path, store: Path) -> dict:
    env = dict(os.environ, FARM_RUNS=str(work), FARM_STORE=str(store), NO_COLOR="1")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _farm(*args: str, src: Path = ROOT) -> list[str]:
    script = Path(sys.executable).with_name("farm")
    if src == ROOT and script.is_file():
        return [str(script), *args]
    return [sys.executable, "-m", "farm.cli", *args]


def _tree_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, float, float]:
    """(process, wall s, CPU s of it and of every process it waited for)."""
    cpu, started = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return proc, time.perf_counter() - started, _children_cpu() - cpu


def nightly_run(
    runs: Path, reuse: bool, src: Path, plant_bug: str = ""
) -> tuple[dict, float | None]:
    """The finished nightly run in `runs` (made there unless --reuse finds one)."""
    from farm.results.store import RunStore

    store = runs / "farm.sqlite"
    if reuse and store.is_file():
        with RunStore(store) as s:
            run = s.latest_run(tier=TIER, finished=True)
        if run is not None:
            return run, None
    runs.mkdir(parents=True, exist_ok=True)
    args = ["run", "--tier", TIER, "--no-report", "--no-progress"]
    if plant_bug:
        args += ["--plant-bug", plant_bug]
    proc, took, _ = _timed(_farm(*args, src=src), cwd=src, env=_env(runs, store))
    if proc.returncode not in (0, 1):
        sys.exit(f"farm run --tier {TIER} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    with RunStore(store) as s:
        return s.latest_run(tier=TIER, finished=True), took


def results_of(run: dict, runs: Path) -> Path:
    """The run's allure-results: under `runs` (a copied work directory) or its run_dir."""
    here = runs / run["run_id"] / "allure-results"
    return here if here.is_dir() else Path(run["run_dir"]) / "allure-results"


# --------------------------------------------------------------------------- failures swapped in


def _case_files(results: Path) -> dict[str, list[str]]:
    """Case id -> the files of its test in an allure-results directory: the result, the files
    its attachments name (steps included), the containers whose only children are its results."""
    by_uuid: dict[str, str] = {}
    out: dict[str, list[str]] = {}

    def sources(node: dict) -> list[str]:
        found = [a["source"] for a in node.get("attachments") or () if a.get("source")]
        for step in node.get("steps") or ():
            found += sources(step)
        return found

    for f in results.glob("*-result.json"):
        r = json.loads(f.read_text(encoding="utf-8"))
        cid = str(r.get("name") or "")
        by_uuid[r.get("uuid", "")] = cid
        out.setdefault(cid, []).extend([f.name, *sources(r)])
    for f in results.glob("*-container.json"):
        c = json.loads(f.read_text(encoding="utf-8"))
        owners = {by_uuid.get(u) for u in c.get("children") or ()}
        if len(owners) == 1 and None not in owners:
            out[owners.pop()].append(f.name)
    return out


def swap_in_failures(passed: Path, failing: Path, n: int, dest: Path) -> int:
    """`dest`: `passed` with the test files of n cases replaced by `failing`'s (the first n of
    the cases failed there, by a hash of their ids). Returns how many were swapped."""
    failed_ids = []
    for f in failing.glob("*-result.json"):
        r = json.loads(f.read_text(encoding="utf-8"))
        if r.get("status") in ("failed", "broken"):
            failed_ids.append(str(r.get("name") or ""))
    failed_ids.sort(key=lambda c: hashlib.sha256(c.encode()).hexdigest())
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(passed, dest)
    ours, theirs = _case_files(passed), _case_files(failing)
    swapped = 0
    for cid in failed_ids:
        if swapped == n:
            break
        if cid not in ours or cid not in theirs:
            continue
        for name in ours[cid]:
            (dest / name).unlink(missing_ok=True)
        for name in theirs[cid]:
            shutil.copy2(failing / name, dest / name)
        swapped += 1
    return swapped


# --------------------------------------------------------------------------- reports


_PHASES = r"""
import json, os, resource, sys, time
from pathlib import Path
from farm.results import report_generate
from farm.run.case_plots import render_case_plots

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

results, out = Path(sys.argv[1]), Path(sys.argv[2])
c, t = cpu(), time.perf_counter()
counts = render_case_plots(results)
plots = (time.perf_counter() - t, cpu() - c, getattr(counts, "plots", 0) + counts.errors)
c, t = cpu(), time.perf_counter()
code, _ = report_generate.generate(results, out, None)
allure = (time.perf_counter() - t, cpu() - c)
assert code == 0, code
print(json.dumps({"plots_s": plots[0], "plots_cpu_s": plots[1], "plots": plots[2],
                  "allure_s": allure[0], "allure_cpu_s": allure[1]}))
"""


def time_report(
    runs: Path,
    run: dict,
    results: Path,
    repeat: int,
    src: Path,
    phases: bool,
    history: int = 0,
) -> dict:
    """`farm report` of a fresh copy of `results`, `repeat` times (see the module's doc)."""
    store = runs / "farm.sqlite"
    bench = runs / "report-bench"
    bench.mkdir(exist_ok=True)
    out, copy_dir = bench / "report", bench / "allure-results"
    args = ["--no-history"]
    if history:  # a store of its own: its history JSONL (beside it) starts empty
        hist_dir = bench / "history"
        shutil.rmtree(hist_dir, ignore_errors=True)
        hist_dir.mkdir()
        store_copy = hist_dir / "farm.sqlite"
        shutil.copy2(store, store_copy)
        store, args, repeat = store_copy, [], history + 1
    walls, cpus = [], []
    for _ in range(repeat):
        shutil.rmtree(copy_dir, ignore_errors=True)
        shutil.copytree(results, copy_dir)
        cmd = _farm(
            "report", run["run_id"], *args, "--results", str(copy_dir), "--out", str(out), src=src
        )
        proc, wall, cpu = _timed(cmd, cwd=src, env=_env(runs, store))
        if proc.returncode not in (0, 1) or not (out / "index.html").is_file():
            sys.exit(f"farm report failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        walls.append(wall)
        cpus.append(cpu)
    if history:  # the last report, the one with K runs of history before it
        walls, cpus = walls[-1:], cpus[-1:]
    report_bytes, report_files = _tree_size(out)
    results_bytes, results_files = _tree_size(results)
    summary = json.loads((out / "summary.json").read_text())
    fig = {
        "cases": summary["stats"]["total"],
        "failed": summary["stats"].get("failed", 0) + summary["stats"].get("broken", 0),
        "report_s": walls,
        "report_s_median": statistics.median(walls),
        "report_cpu_s_median": statistics.median(cpus),
        "report_bytes": report_bytes,
        "report_files": report_files,
        "results_bytes": results_bytes,
        "results_files": results_files,
        "pngs": len(list(out.glob("data/attachments/*.png"))),
    }
    if history:
        hist = list(store.parent.glob("allure-history-*.jsonl"))
        fig["history_runs_before"] = history
        fig["history_bytes"] = sum(h.stat().st_size for h in hist)
    if phases and not history:
        shutil.rmtree(copy_dir, ignore_errors=True)
        shutil.copytree(results, copy_dir)
        proc = subprocess.run(
            [sys.executable, "-c", _PHASES, str(copy_dir), str(bench / "phases-out")],
            cwd=src,
            env={**_env(runs, store), "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            sys.exit(f"phases failed:\n{proc.stderr[-3000:]}")
        fig.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    shutil.rmtree(copy_dir, ignore_errors=True)
    return fig


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
    p.add_argument("--reuse", action="store_true", help="use the nightly runs already in --work")
    p.add_argument("--keep", action="store_true", help="keep a temporary --work")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--failures", default="", help="N,N,...: reports with N failing cases")
    p.add_argument("--bug", default="trunc_narrow", help="the bug planted in the failing run")
    p.add_argument("--bug-run", action="store_true", help="the report of the bug run as it is")
    p.add_argument("--history", type=int, default=0, help="K: a report after K with history")
    p.add_argument("--phases", action="store_true", help="plots and allure generate apart")
    p.add_argument("--src", default=str(ROOT), help="the checkout whose farm makes the reports")
    p.add_argument("--no-compare", action="store_true", help="leave out the run-store part")
    p.add_argument("--perturb", action="store_true", help="1 %% of the copy's cases fail")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)

    temp = args.work is None
    work = Path(args.work or tempfile.mkdtemp(prefix="report-scale-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    src = Path(args.src).resolve()
    failures = [int(n) for n in args.failures.split(",") if n.strip()]
    try:
        passes, pass_dir = work / "pass", None
        run, run_s = nightly_run(passes, args.reuse, src)
        pass_dir = results_of(run, passes)
        figures: dict = {
            "machine": f"{platform.node()} {os.cpu_count()} CPUs",
            "load_before": os.getloadavg()[0],
            "src": str(src),
            "run_id": run["run_id"],
            "nightly_run_s": run_s,
            "reports": {},
        }
        reports = figures["reports"]
        reports["all pass"] = time_report(passes, run, pass_dir, args.repeat, src, args.phases)
        if failures or args.bug_run:
            bug_runs = work / f"bug-{args.bug}"
            bug, bug_s = nightly_run(bug_runs, args.reuse, src, plant_bug=args.bug)
            figures["bug"], figures["bug_run_s"] = args.bug, bug_s
            bug_dir = results_of(bug, bug_runs)
            for n in failures:
                mixed = work / f"mixed-{n}"
                got = swap_in_failures(pass_dir, bug_dir, n, mixed)
                reports[f"{got:,} failures ({args.bug})"] = time_report(
                    passes, run, mixed, args.repeat, src, args.phases
                )
                shutil.rmtree(mixed, ignore_errors=True)
            if args.bug_run:
                reports[f"{args.bug} run"] = time_report(
                    bug_runs, bug, bug_dir, args.repeat, src, args.phases
                )
        if args.history:
            reports[f"all pass, history of {args.history}"] = time_report(
                passes, run, pass_dir, 1, src, False, history=args.history
            )
        if not args.no_compare:
            store = passes / "farm.sqlite"
            figures["compare"] = time_compare(passes, store, run, args.repeat, args.perturb)
        figures["load_after"] = os.getloadavg()[0]
    finally:
        if temp and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"report_scale on {figures['machine']} (load {figures['load_before']:.1f} before,"
        f" {figures['load_after']:.1f} after), run {figures['run_id']}, reports by {src}\n"
    )
    print("| nightly run (farm run --no-report) | " + _s(figures["nightly_run_s"]) + " |")
    print("|---|---|")
    if "bug_run_s" in figures:
        print(f"| nightly run with --plant-bug {figures['bug']} | {_s(figures['bug_run_s'])} |")
    print(
        "\n| report of | cases | failed | farm report (wall) | CPU | report | files | PNGs"
        " | allure-results | plots (wall, CPU, n) | allure generate (wall, CPU) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in reports.items():
        extra = ""
        if "history_bytes" in r:
            extra = f" (history file {r['history_bytes'] / 2**20:.1f} MiB)"
        plots = (
            f"{_s(r['plots_s'])}, {_s(r['plots_cpu_s'])}, {r['plots']}" if "plots_s" in r else ""
        )
        allure = f"{_s(r['allure_s'])}, {_s(r['allure_cpu_s'])}" if "allure_s" in r else ""
        print(
            f"| {name} | {r['cases']:,} | {r['failed']:,} | {_s(r['report_s_median'])}"
            f" (median of {len(r['report_s'])}) | {_s(r['report_cpu_s_median'])}"
            f" | {r['report_bytes'] / 2**20:.1f} MiB{extra} | {r['report_files']:,}"
            f" | {r['pngs']} | {r['results_bytes'] / 2**20:.1f} MiB,"
            f" {r['results_files']:,} files | {plots} | {allure} |"
        )
    cmp_ = figures.get("compare")
    if cmp_:
        rows = [
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
        print("\n| measure | value |\n|---|---|")
        for k, v in rows:
            print(f"| {k} | {v} |")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


def _s(x) -> str:
    return "(reused)" if x is None else f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


if __name__ == "__main__":
    sys.exit(main())
