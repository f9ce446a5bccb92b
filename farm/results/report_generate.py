"""Allure 3 report generation (`generate`), with history carried from run to run.

`generate()` runs Allure 3, installed in reports/node_modules (`npm ci` in reports/), through
reports/generate.mjs, which is `allure generate RESULTS -c reports/allurerc.mjs` and hands the
report the farm's quality gate (farm/results/gate.py):

    node reports/generate.mjs RESULTS

or by an `AllureProcess` (farm/run/allure/process.py), the same script started with `--stdin`
before the results exist (farm run starts it with its cases, so that Allure's modules are loaded
by the time the report is made). Per-run settings travel in environment variables that
reports/allurerc.mjs reads (see there). History: farm/results/report_history.py.

Two details of Allure 3.x matter here:
  - it never cleans the output directory, and it flattens its plugin's directory into the output
    only when that directory is the only one there; so every report is generated into a fresh
    directory that then replaces OUT (farm/results/report_out_dir.py says which OUT may be);
  - `allure generate` evaluates no quality gate, so the farm's (farm/results/gate.py farm_gate)
    is handed to it: generate.mjs hands its results to the report (as `allure run` does with its
    own), so the report's Quality Gates tab shows the very rules, values and verdict `farm
    report` prints and exits with.

The regression summary, the triage of the failures (farm/results/triage_render.py) and the
precision trend are added as the report's *global attachments* (Allure 3's "Global Attachments"
tab), so they do not count as test cases; each triage group's line is also among the overview's
Metadata, first.

A report small enough (farm/results/report_single_file.py) has its index.html made the whole
report, which opens from disk; a larger one is served (`farm report --open`).

Before Allure runs, the cases' error-distribution PNGs are drawn from the data the test items left
in allure-results (farm/run/case_plots.py), so a test item never draws one.

A nightly report is thousands of passed cases, so what each case costs in the report is kept small
(its size and time grow with failures, not passes): Allure reads the allure-results without the
containers of fixtures that passed (farm/results/allure_input.py), the labels no one reads are
hidden (HIDDEN_LABELS), and the history keeps of each case only what the report shows of it
(farm/results/report_history.py compact_history_line).
"""

from __future__ import annotations

import base64
import errno
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from farm.results.allure_input import allure_input
from farm.results.gate import GateRule
from farm.results.report_history import HISTORY_RUNS, history_copy, keep_new_history_line
from farm.results.report_out_dir import REPORT_MARK
from farm.results.report_single_file import single_file
from farm.results.store.stored_history import StoredHistory
from farm.run.allure.process import REPORTS_DIR, AllureProcess, generate_command, run_generate
from golden import soc


def environment_names() -> dict[str, str]:
    """Allure environment per SoC family: golden's display name ("/" is not allowed there)."""
    return {family: name.replace("/", "-") for family, name in soc.FAMILIES.items()}


# Labels the report does not show. allure-pytest gives every test the orchestrator's hostname
# ("host", not the pool host, which is a parameter), the xdist thread, "pytest", "cpython3", the
# suite's module and "suites", and the suite (test_precision, test_rejection: what the feature
# says); the farm's own `epic` (the report is one operator's: its name says which) and `family`
# (it picks the environment, which the report shows) are for the allure-results, which may be
# merged with other operators' or read by other tools. Each shown label is repeated in every
# case's data file and twice in the search indexes; Allure's timeline and environments still
# read the hidden ones.
HIDDEN_LABELS = (
    "host",
    "thread",
    "framework",
    "language",
    "package",
    "parentSuite",
    "suite",
    "epic",
    "family",
)


# --------------------------------------------------------------------------- summary files


def write_summary_files(
    dest: Path,
    comparison=None,
    trend_png: bytes | None = None,
    run_meta: Mapping | None = None,
    triage=None,
) -> list[Path]:
    """The run-level attachments: the triage (HTML, Markdown) of a run with failures, the
    regression summary (HTML, Markdown, JSON) and trend PNG. `triage`: (Triage, [NextSteps])."""
    from farm.results import compare_render, triage_render

    dest.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    if triage is not None and triage[0].failures:
        p = dest / triage_render.HTML_NAME
        p.write_text(triage_render.to_html(*triage), encoding="utf-8")
        files.append(p)
        p = dest / triage_render.MARKDOWN_NAME
        p.write_text(triage_render.to_markdown(*triage), encoding="utf-8")
        files.append(p)
    if trend_png:
        p = dest / "precision-trend.png"
        p.write_bytes(trend_png)
        files.append(p)
    if comparison is not None:
        page = compare_render.to_html(comparison)
        if trend_png:
            img = (
                "<h3>Precision trend</h3><p><img alt='precision trend' style='max-width:100%'"
                " src='data:image/png;base64," + base64.b64encode(trend_png).decode() + "'></p>"
            )
            page = page.replace("</body>", img + "</body>")
        p = dest / "regression-summary.html"
        p.write_text(page, encoding="utf-8")
        files.append(p)
        p = dest / "regression-summary.md"
        p.write_text(compare_render.to_markdown(comparison), encoding="utf-8")
        files.append(p)
        p = dest / "regression-summary.json"
        p.write_text(comparison.to_json(), encoding="utf-8")
        files.append(p)
    if run_meta:
        p = dest / "run.json"
        p.write_text(json.dumps(dict(run_meta), indent=2, default=str), encoding="utf-8")
        files.append(p)
    return files


# --------------------------------------------------------------------------- generate


def generate(
    results_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    history: StoredHistory | None,
    *,
    report_name: str | None = None,
    comparison=None,
    trend_series: Sequence[Mapping] | None = None,
    trend: bytes | None = None,
    run_meta: Mapping | None = None,
    extra_attachments: Sequence[str | os.PathLike] = (),
    gate: Sequence[GateRule] | None = None,
    triage=None,
    history_limit: int = HISTORY_RUNS,
    reports_dir: Path = REPORTS_DIR,
    timeout: float = 600,
    allure: AllureProcess | None = None,
    plots_drawn: bool = False,
) -> tuple[int, Path]:
    """Generate the Allure 3 report of `results_dir` into `out_dir` (replaced whole: a run's own
    report directory, or one `farm report --out` checked with check_out_dir).

    Returns (exit code of the Allure CLI, path of index.html). A non-zero code, or no
    index.html, means the report was not produced; out_dir is then left as it was.
    `history`: the tier's history in the store, which Allure reads (its newest
    `history_limit` lines) and to which the report's line is added; None: no history.
    `gate`: the rules the report's Quality Gates tab shows (farm_gate). `triage`: (Triage,
    [NextSteps]) of the run (farm/results/triage_next.py run_triage), shown on the overview and
    as a global attachment. `allure`: Allure already started and waiting (AllureProcess).

    First the cases' pending error-distribution plots are drawn into results_dir
    (case_plots.render_quietly; idempotent), even when Allure then turns out to be missing
    (ToolMissing), so that the allure-results are whole for any Allure to read; not when
    `plots_drawn` says they already are.
    """
    from farm.run.case_plots import render_quietly

    results_dir = Path(results_dir).resolve()
    out_dir = Path(out_dir).resolve()
    if not results_dir.is_dir():
        raise FileNotFoundError(
            f"no allure results at {results_dir} (the run's directory was removed or moved): "
            "pass --results DIR where they are"
        )
    if not plots_drawn:
        render_quietly(results_dir)
    cmd = generate_command(reports_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        staging = work / "report"
        if trend is None and trend_series:
            from farm.run.trend_plot import trend_png

            trend = trend_png(trend_series)
        attachments = [
            str(p)
            for p in write_summary_files(work / "summary", comparison, trend, run_meta, triage)
        ]
        attachments += [str(Path(p).resolve()) for p in extra_attachments]
        changes: dict[str, str | None] = {
            "FARM_ALLURE_OUTPUT": str(staging),
            "FARM_ALLURE_NAME": report_name or "LogSoftmaxGrad farm",
            "FARM_ALLURE_HISTORY_LIMIT": str(int(history_limit)),
            "FARM_ALLURE_GLOBAL_ATTACHMENTS": json.dumps(attachments),
            "FARM_ALLURE_ENVIRONMENTS": json.dumps(environment_names()),
            "FARM_ALLURE_HIDE_LABELS": json.dumps(HIDDEN_LABELS),
            "NO_COLOR": "1",
            "FARM_ALLURE_QUALITY_GATE": None,
            "FARM_ALLURE_HISTORY": None,
        }
        if gate is not None:
            gate_file = work / "quality-gate-results.json"
            gate_file.write_text(json.dumps([r.to_allure() for r in gate]), encoding="utf-8")
            changes["FARM_ALLURE_QUALITY_GATE"] = str(gate_file)
        metadata = {}
        if triage is not None:
            from farm.results import triage_render

            metadata = triage_render.overview(*triage)
        hp, last_before = None, None
        if history is not None:
            hp = work / "history.jsonl"
            last_before = history_copy(history, hp, history_limit)
            changes["FARM_ALLURE_HISTORY"] = str(hp)
        view = allure_input(results_dir, work / "allure-input", metadata)
        code, stdout, stderr = run_generate(cmd, view, changes, reports_dir, timeout, allure)
        index = staging / "index.html"
        if code != 0 or not index.is_file():
            refused = _disk_refusal(stdout + stderr)
            if refused is not None:  # the directory's fault, said as Python's would be: one line
                raise OSError(refused, os.strerror(refused), str(out_dir))
            sys.stderr.write(stdout[-4000:] + stderr[-4000:])
            return (code or 1), out_dir / "index.html"
        if history is not None and hp is not None:
            keep_new_history_line(history, hp, last_before)
        single_file(staging)  # small enough: index.html is the whole report, it opens from disk
        (staging / REPORT_MARK).write_text("a report the farm wrote; replaced whole\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        staging.rename(out_dir)
        return 0, out_dir / "index.html"
    finally:
        shutil.rmtree(work, ignore_errors=True)


# What node says of a write its disk refused (Allure writing the report: "Error: ENOSPC: no space
# left on device, write", then "code: 'ENOSPC'" in its stack): the directory's fault, which the
# callers say in one line naming the directory and the fix (farm/util/run_dir.py), never node's
# stacks.
_NODE_DISK_REFUSAL = re.compile(r"\b(ENOSPC|EDQUOT|EROFS)\b")


def _disk_refusal(output: str) -> int | None:
    """The errno of the disk's refusal that Allure's output names, or None."""
    found = _NODE_DISK_REFUSAL.search(output)
    return getattr(errno, found.group(1)) if found else None
