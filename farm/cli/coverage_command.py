"""`farm coverage [--tier T] [-- PYTEST_ARGS]`: line and branch coverage of the operator's real
sources (op/ascendc/op_kernel, op_host, op_api and op/tiling) over a tier, measured on the CPU.

The tier runs through `farm run` on the embedded local pool with the operator's coverage build
(gcov: build/ascendc-cpu-coverage), once per backend: acl (the aclnn layer on the emulated ACL
runtime) and native (the C ABI; the only caller of op/tiling/views.cpp). Each case's counters
are kept apart (farm/agent/coverage_dump.py), so that every branch's count of distinct cases is
known; --merged adds them up as the cases run instead, for a tier too large for that. gcovr makes
the figures and the HTML (docs/coverage.md). Every line or branch no case reaches is listed,
explained by op/coverage_unreachable.toml or not.

Exit 0: every uncovered line and branch is explained and no explanation is stale; 1: one is not
(or a case failed); 2: usage or infrastructure errors (a run that did not finish).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from rich.markup import escape

from farm.agent.coverage_dump import ENV_DIR, ENV_MODE, MERGED_DIR
from farm.results import coverage_data, coverage_files, coverage_unreachable, measured
from farm.util import paths
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import UsageError

BACKENDS = ("acl", "native")
MIN_CASES = 3  # the smoke tier's aim: every reachable branch taken by at least this many cases
EXPLANATIONS = paths.REPO_ROOT / "op" / "coverage_unreachable.toml"


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="farm coverage",
        description="line and branch coverage of the operator's real sources (kernel, op_host, "
        "op_api, tiling) over a tier, with gcov and gcovr, on the local pool; every uncovered "
        "line and branch listed with its explanation (op/coverage_unreachable.toml). Exit 0: "
        "all explained; 1: one unexplained, a stale explanation, or a failed case; 2: usage or "
        "infrastructure errors.",
    )
    parser.add_argument("--tier", default="smoke", help="smoke | nightly | full (default smoke)")
    parser.add_argument(
        "--backend",
        default=",".join(BACKENDS),
        help="the backends the tier runs on, comma-separated (default acl,native: the aclnn "
        "layer needs acl, op/tiling/views.cpp native)",
    )
    parser.add_argument(
        "--inventory",
        metavar="FILE",
        help="refused unless all its hosts are local: the counters are written under this "
        "machine's build directory",
    )
    parser.add_argument(
        "--merged",
        action="store_true",
        help="add the cases' counters up as they run, without counting the cases per branch "
        "(for nightly and full)",
    )
    parser.add_argument(
        "--explanations",
        type=Path,
        metavar="FILE",
        default=EXPLANATIONS,
        help="the reviewed explanations of what no case reaches (default "
        "op/coverage_unreachable.toml)",
    )
    parser.add_argument("--jobs", type=int, help="pytest-xdist workers (farm run's --jobs)")
    parser.add_argument("--no-report", action="store_true", help="skip the Allure report")
    parser.add_argument("--json", action="store_true", help="print the coverage JSON instead")
    parser.add_argument(
        "--store",
        help="the run store of the runs and of the coverage, as farm run's (default: "
        "$FARM_STORE, else runs/farm.sqlite); farm runs lists it",
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest (e.g. -k)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown or not backends:
        raise UsageError(f"--backend {args.backend}: give acl, native or acl,native")
    _local_only(args.inventory)
    if args.store:  # the runs and every command after them find the store where farm run's do
        os.environ["FARM_STORE"] = args.store
    coverage_data.gcovr_available()
    explanations = coverage_unreachable.load(args.explanations)  # a bad file stops here
    console = FarmConsole(stderr=True, highlight=False)
    started = time.perf_counter()
    # The cases' counters, kept until the coverage is written (removed however it ends).
    (paths.RUNS_DIR / "coverage").mkdir(parents=True, exist_ok=True)
    counters = Path(
        tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=paths.RUNS_DIR / "coverage")
    )
    try:
        runs, code = _run_backends(args, backends, counters)
        if code not in (0, 1):
            console.print(f"farm coverage: a run ended with exit {code}: no coverage measured")
            return code
        result = measure(
            counters, args.tier, runs, explanations, _run_cases(runs), per_case=not args.merged
        )
        result["seconds"] = round(time.perf_counter() - started, 1)
        out = _write(result, runs)
    finally:
        shutil.rmtree(counters, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        show(FarmConsole(highlight=False), result, out)
    if not args.no_report:
        with contextlib.redirect_stdout(sys.stderr):
            _report(runs[0][1])
    failed = not result["accounted"]
    code = 1 if failed else code
    # Last, once its files are written: a store that cannot take it leaves them and the exit code.
    stored, line = measured.record(
        lambda store: measured.coverage_measure(result, out, store, code), out
    )
    console.print(escape(line), style=None if stored else "yellow")
    return code


def _local_only(inventory: str | None) -> None:
    if inventory is None:
        return
    from farm.pool.inventory import load_inventory

    remote = [h.name for h in load_inventory(inventory).hosts if h.transport != "local"]
    if remote:
        raise UsageError(
            f"--inventory {inventory}: host {remote[0]} is not local; farm coverage runs on the "
            "embedded local pool only (its counters are written under this machine's build "
            "directory): drop --inventory"
        )


def _run_backends(args, backends: list[str], counters: Path) -> tuple[list[tuple[str, str]], int]:
    """The tier on each backend with the coverage build; [(backend, run_id)], the worst exit."""
    from farm.cli import run_command
    from suites.caseset import Selection

    runs: list[tuple[str, str]] = []
    worst = 0
    for backend in backends:
        os.environ[ENV_DIR] = str(counters / backend)
        if args.merged:
            os.environ[ENV_MODE] = MERGED_DIR
        summary = counters / f"{backend}-summary.json"
        try:  # the run's lines on stderr: stdout is the coverage's (--json: JSON alone)
            with contextlib.redirect_stdout(sys.stderr):
                code = run_command.run(
                    Selection(tier=args.tier),
                    args.inventory,
                    backend,
                    jobs=args.jobs,
                    report=False,
                    extra_pytest=args.pytest_args,
                    coverage=True,
                    json_summary=str(summary),
                )
        finally:
            os.environ.pop(ENV_DIR, None)
            os.environ.pop(ENV_MODE, None)
        if code not in (0, 1):
            return runs, code
        runs.append((backend, json.loads(summary.read_text(encoding="utf-8"))["run_id"]))
        worst = max(worst, code)
    return runs, worst


def _run_cases(runs: list[tuple[str, str]]) -> set[str]:
    """The case ids the runs stored (not the health checks' canaries, which ran on the same
    agents and left counters too)."""
    from farm.results.store import RunStore

    with RunStore() as store:
        return {row["case_id"] for _, run_id in runs for row in store.result_rows(run_id)}


def measure(
    counters: Path,
    tier: str,
    runs: list[tuple[str, str]],
    explanations: list[coverage_unreachable.Entry],
    case_ids: set[str],
    *,
    per_case: bool = True,
) -> dict:
    """The coverage of the counters under `counters` (one directory per backend) of the cases
    `case_ids`: gcovr's figures and HTML, what is uncovered and why, the branches fewer than
    MIN_CASES cases reach. (--merged: the canaries' counters are in the sum.)"""
    from farm.pool.build import default_build_dir
    from farm.pool.build.cmake import locked

    build_dir = default_build_dir(target="ascendc-cpu", coverage=True)
    by_case = {c: ds for c, ds in coverage_data.case_dirs(counters).items() if c in case_ids}
    trees = (
        [d for ds in by_case.values() for d in ds]
        if per_case
        else sorted(counters.glob(f"*/{MERGED_DIR}"))
    )
    html_dir = counters / "out"
    with locked(build_dir):  # one coverage at a time reads and writes the build's .gcda files
        coverage_data.drop_stale_notes(build_dir)
        coverage_data.merge_into_build(trees, build_dir, counters / "merging")
        gcovr = coverage_data.run_gcovr(build_dir, html_dir, f"LogSoftmaxGrad {tier} coverage")
        per_branch = coverage_data.cases_per_branch(by_case, build_dir) if per_case else {}
    summary = json.loads((html_dir / "summary.json").read_text(encoding="utf-8"))
    names = [f["file"] for f in gcovr["files"]]
    source = coverage_unreachable.read_sources(coverage_data.OP_DIR, names)
    items = coverage_unreachable.uncovered(gcovr, source)
    accounting = coverage_unreachable.account(items, explanations, source)
    return {
        "tier": tier,
        "runs": dict(runs),
        "cases": len(by_case) if per_case else None,
        "lines": _figure(summary, "line"),
        "branches": _figure(summary, "branch"),
        "functions": _figure(summary, "function"),
        "files": [
            {"file": f["filename"], "lines": _figure(f, "line"), "branches": _figure(f, "branch")}
            for f in summary["files"]
        ],
        "uncovered": [_item(i, None) for i in accounting.unexplained]
        + [_item(i, e.why) for i, e in accounting.explained],
        "unexplained": len(accounting.unexplained),
        "stale": [{"file": e.file, "text": e.text, "why": why} for e, why in accounting.stale],
        "accounted": accounting.ok,
        "per_case": _per_case(per_branch, source) if per_case else None,
        "html_work": str(html_dir),
    }


def _figure(summary: Mapping, kind: str) -> dict:
    total, covered = summary[f"{kind}_total"], summary[f"{kind}_covered"]
    # gcovr's percent is null where there is nothing to cover: 100 % of nothing
    percent = summary[f"{kind}_percent"]
    return {"covered": covered, "total": total, "percent": 100.0 if percent is None else percent}


def _item(item: coverage_unreachable.Uncovered, why: str | None) -> dict:
    return {
        "file": item.file,
        "line": item.line,
        "text": item.text,
        "line_missed": item.line_missed,
        "branches_missed": item.branches,
        "branches": item.of,
        "why": why,
    }


def _per_case(per_branch: Mapping, source: Mapping[str, list[str]]) -> dict:
    few = sorted((b, n) for b, n in per_branch.items() if n < MIN_CASES)
    return {
        "min_cases": MIN_CASES,
        "branches_reached": len(per_branch),
        "fewer": len(few),
        "branches": [
            {
                "file": f,
                "line": line,
                "branch": i,
                "cases": n,
                "text": source.get(f, [""] * line)[line - 1].strip(),
            }
            for (f, line, i), n in few
        ],
    }


def _write(result: dict, runs: list[tuple[str, str]]) -> Path:
    """The coverage into the first run's directory (coverage/: coverage.json, the HTML, the
    single page the report attaches)."""
    from farm.results.run_paths import run_dir_of
    from farm.results.store import RunStore, store_location

    location = store_location(None)
    with RunStore(location) as store:
        run = store.get_run(runs[0][1])
    if run is None:
        raise UsageError(f"run {runs[0][1]} is not in the store {location.display}")
    out = coverage_files.coverage_dir(run_dir_of(run, location))
    work = Path(result.pop("html_work"))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copytree(work / "html", out / "html")
    coverage_data.single_page(work / "gcovr.json", out / coverage_files.PAGE)
    (out / coverage_files.JSON).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return out


def _report(run_id: str) -> None:
    from farm.results.report import ReportRequest, make_report

    make_report(ReportRequest(run=run_id))


def show(console: FarmConsole, result: dict, out: Path) -> None:
    runs = ", ".join(f"{b} {r}" for b, r in result["runs"].items())
    cases = f", {result['cases']} cases" if result["cases"] is not None else ""
    console.print(
        f"[bold]coverage[/] of the real sources, tier {result['tier']}{cases} ({runs}) in "
        f"{result['seconds']} s"
    )
    for kind in ("lines", "branches", "functions"):
        f = result[kind]
        console.print(f"  {kind:<10} {f['percent']:5.1f}%  ({f['covered']} of {f['total']})")
    for f in result["files"]:
        console.print(
            f"  {escape(f['file']):<48} lines {f['lines']['percent']:5.1f}%  branches "
            f"{f['branches']['percent']:5.1f}%"
        )
    listed = result["uncovered"]
    console.print(
        f"uncovered: {len(listed)} lines ({result['unexplained']} unexplained; "
        "op/coverage_unreachable.toml explains the rest)"
    )
    for item in listed:
        mark = "[green]explained[/]" if item["why"] else "[red]UNEXPLAINED[/]"
        what = (
            "line never runs"
            if item["line_missed"]
            else f"{item['branches_missed']} of {item['branches']} branches never taken"
        )
        console.print(
            f"  {mark} op/{escape(item['file'])}:{item['line']}  {escape(item['text'][:70])}"
            f"  ({what})"
        )
    for e in result["stale"]:
        console.print(f"  [red]stale[/] {escape(e['file'])}: {escape(e['text'])!r}: {e['why']}")
    per_case = result["per_case"]
    if per_case is not None:
        console.print(
            f"per case: {per_case['fewer']} of {per_case['branches_reached']} reached branches "
            f"taken by fewer than {per_case['min_cases']} cases"
        )
        for b in per_case["branches"][:20]:
            console.print(
                f"  op/{escape(b['file'])}:{b['line']} branch {b['branch']}: {b['cases']} "
                f"case(s)  {escape(b['text'][:60])}"
            )
        if per_case["fewer"] > 20:
            console.print(f"  ... {per_case['fewer'] - 20} more in coverage.json")
    console.print(f"html     {out / 'html' / 'index.html'}")
    console.print(f"json     {out / coverage_files.JSON}")
