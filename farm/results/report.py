"""Allure 3 report generation, with history carried from run to run, and the quality gate.

`generate()` runs Allure 3, installed in reports/node_modules (`npm ci` in reports/), through
reports/generate.mjs, which is `allure generate RESULTS -c reports/allurerc.mjs` and hands the
report the farm's quality gate (below):

    node reports/generate.mjs RESULTS

or by an `AllureProcess`, the same script started with `--stdin` before the results exist (farm
run starts it with its cases, so that Allure's modules are loaded by the time the report is made).
Per-run settings travel in environment variables that reports/allurerc.mjs reads (see there).
History: Allure 3 appends one JSON line per generated report to a history file and reads it back
on the next generate, so each case's History tab shows its earlier runs. The lines live in the run
store, one series per tier (farm/results/store/history.py), so that every runner of a team shares
them: each report gets a copy of the newest ones, and its own line goes back into the store.

Two details of Allure 3.x matter here:
  - it never cleans the output directory, and it flattens its plugin's directory into the output
    only when that directory is the only one there; so every report is generated into a fresh
    directory that then replaces OUT;
  - `allure generate` evaluates no quality gate, and `allure quality-gate` crashes on Node 20
    (3.15+ use Iterator helpers; Node >= 22 needed), so the gate that decides the exit code is
    evaluated here (`farm_gate`): the rules of reports/quality-gate.json on the allure-results
    files themselves, the run finished, no regression against the baseline. generate.mjs hands
    its results to the report (as `allure run` does with its own), so the report's Quality
    Gates tab shows the very rules, values and verdict `farm report` prints and exits with.

The regression summary, the triage of the failures (farm/results/triage_render.py) and the
precision trend are added as the report's *global attachments* (Allure 3's "Global Attachments"
tab), so they do not count as test cases; each triage group's line is also among the overview's
Metadata, first.

Before Allure runs, the cases' error-distribution PNGs are drawn from the data the test items left
in allure-results (farm/run/case_plots.py), so a test item never draws one.

A nightly report is thousands of passed cases, so what each case costs in the report is kept small
(its size and time grow with failures, not passes): Allure reads the allure-results without the
containers of fixtures that passed (`allure_input`), the labels no one reads are hidden
(HIDDEN_LABELS), and the history keeps of each case only what the report shows of it
(`compact_history_line`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.results.store.history import StoredHistory
from farm.results.store.location import StoreLocation
from farm.util import interrupts
from farm.util.argparsing import CommandParser, make_output_dir, whole_number
from farm.util.children import dying_with_this_process
from farm.util.console import FarmConsole
from farm.util.errors import ToolMissing, UsageError
from farm.util.paths import REPO_ROOT
from golden import soc

REPORTS_DIR = REPO_ROOT / "reports"
TREND_RUNS = 20  # the runs the precision trend plot shows


def environment_names() -> dict[str, str]:
    """Allure environment per SoC family: golden's display name ("/" is not allowed there)."""
    return {family: name.replace("/", "-") for family, name in soc.FAMILIES.items()}


SETUP_FIX = "bash .ci/setup.sh run"

# Earlier reports of a tier whose results each case's History tab shows. Allure 3 writes every
# case's entries into its data file (and the six newest reports whole): an all-pass nightly
# report grows by ~3.9 MiB for each of the first six reports kept, ~1.6 MiB for each one after
# (reports/README.md).
HISTORY_RUNS = 30
# farm report's exit code when it made no report (an unknown run, Allure missing or failing).
EXIT_NO_REPORT = 2

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


def generate_command(reports_dir: Path = REPORTS_DIR) -> list[str]:
    """The command that makes a report with the pinned Allure 3 (reports/generate.mjs);
    ToolMissing when node or Allure is missing."""
    node, _ = allure_command(reports_dir)
    return [node, str(Path(reports_dir) / "generate.mjs")]


def allure_command(reports_dir: Path = REPORTS_DIR) -> list[str]:
    """The command that runs the pinned Allure 3 CLI; ToolMissing when node or it is missing."""
    cli = Path(reports_dir) / "node_modules" / "allure" / "cli.js"
    node = shutil.which("node")
    if node is None:
        raise ToolMissing(f"node (Node.js 20+, for Allure 3) is not installed: run `{SETUP_FIX}`")
    if not cli.is_file():
        raise ToolMissing(
            f"Allure 3 ({cli}) is not installed: run `{SETUP_FIX}` (or `npm ci` in {reports_dir})"
        )
    return [node, str(cli)]


class AllureProcess:
    """`node reports/generate.mjs --stdin`, started before the run's results exist: Allure's
    modules load (~1.5 s of CPU) while the cases run, not after the last one. `generate` hands
    it the results and the settings; a report that is not made leaves it to `discard`."""

    def __init__(self, reports_dir: Path = REPORTS_DIR):
        self.reports_dir = Path(reports_dir)
        self._proc: subprocess.Popen | None = subprocess.Popen(
            [*generate_command(self.reports_dir), "--stdin"],
            cwd=str(self.reports_dir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def take(self) -> subprocess.Popen | None:
        """The waiting process, once (None when it has exited meanwhile: start a new one)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is not None:
            _reap(proc)
            return None
        return proc

    def discard(self) -> None:
        """End it unused: its input closes, and it exits writing nothing."""
        proc = self.take()
        if proc is not None:
            _reap(proc)


def _reap(proc: subprocess.Popen) -> None:
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        proc.kill()
        proc.wait()


def _run_generate(
    cmd: list[str],
    results: Path,
    changes: Mapping[str, str | None],
    reports_dir: Path,
    timeout: float,
    allure: AllureProcess | None,
) -> tuple[int, str, str]:
    """generate.mjs on `results` with the environment changed by `changes` (None: unset), by
    `allure` when it is waiting for the same reports_dir, else by a new process:
    (exit code, stdout, stderr)."""
    proc = allure.take() if allure is not None else None
    if proc is not None and allure is not None and allure.reports_dir == Path(reports_dir):
        request = json.dumps({"results": str(results), "env": dict(changes)}) + "\n"
        try:
            out, err = proc.communicate(request, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
        except BaseException:  # a stop: it must not go on writing into a work dir being removed
            proc.kill()
            proc.wait()
            raise
        return proc.returncode, out, err
    if proc is not None:
        _reap(proc)
    env = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    with _killed_on_stop([*cmd, str(results)], cwd=str(reports_dir), env=env) as started:
        try:
            out, err = started.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            started.kill()
            out, err = started.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
    return started.returncode, out, err


@contextlib.contextmanager
def _killed_on_stop(argv: list[str], **kwargs: Any) -> Iterator[subprocess.Popen]:
    """``argv`` started with its output piped, and killed if a stop (KeyboardInterrupt) ends the
    block. A stop that comes while it starts (between the fork and the block, where
    subprocess.run has no process to kill yet) is held and given again inside the block, where
    the process is there to be killed: while it starts, the stop signals only note themselves
    (Python runs handlers in the main thread, whichever thread the signal came to)."""
    main = threading.current_thread() is threading.main_thread()
    came: list[int] = []
    held = interrupts.catch(lambda signum, frame: came.append(signum)) if main else {}
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=dying_with_this_process(),  # ends with this process (farm/util/children.py)
            **kwargs,
        )
    finally:
        for s, previous in held.items():
            signal.signal(s, previous)
    try:
        for signum in came:  # given again, to the handlers that were there: a stop lands here
            signal.raise_signal(signum)
        yield proc
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def allure_available(reports_dir: Path = REPORTS_DIR) -> bool:
    try:
        allure_command(reports_dir)
    except ToolMissing:
        return False
    return True


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
            from farm.run.plots import trend_png

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
        code, stdout, stderr = _run_generate(cmd, view, changes, reports_dir, timeout, allure)
        index = staging / "index.html"
        if code != 0 or not index.is_file():
            refused = _disk_refusal(stdout + stderr)
            if refused is not None:  # the directory's fault, said as Python's would be: one line
                raise OSError(refused, os.strerror(refused), str(out_dir))
            sys.stderr.write(stdout[-4000:] + stderr[-4000:])
            return (code or 1), out_dir / "index.html"
        if history is not None and hp is not None:
            _keep_new_history_line(history, hp, last_before)
        (staging / REPORT_MARK).write_text("a report the farm wrote; replaced whole\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        staging.rename(out_dir)
        return 0, out_dir / "index.html"
    finally:
        shutil.rmtree(work, ignore_errors=True)


# What node says of a write its disk refused (Allure writing the report: "Error: ENOSPC: no space
# left on device, write", then "code: 'ENOSPC'" in its stack): the directory's fault, which the
# callers say in one line naming the directory and the fix (farm/run/run_dir.py), never node's
# stacks.
_NODE_DISK_REFUSAL = re.compile(r"\b(ENOSPC|EDQUOT|EROFS)\b")


def _disk_refusal(output: str) -> int | None:
    """The errno of the disk's refusal that Allure's output names, or None."""
    found = _NODE_DISK_REFUSAL.search(output)
    return getattr(errno, found.group(1)) if found else None


# A report replaces its directory whole: only one that is empty or holds a report the farm wrote
# (its mark, or, before the mark, only what an Allure report is made of) may be replaced.
REPORT_MARK = ".farm-report"
_REPORT_ENTRIES = re.compile(
    r"(index\.html|data|widgets|history|artifacts\.json|quality-gate\.json|summary\.json|"
    r"test-results\.json|app-[0-9a-f]+\.(js|css)(\.LICENSE\.txt)?|favicon\.ico)"
)


def _older_report(names: list[str]) -> bool:
    """A report from before the mark: an Allure report's page and script, and nothing else."""
    return (
        "index.html" in names
        and any(n.startswith("app-") and n.endswith(".js") for n in names)
        and all(_REPORT_ENTRIES.fullmatch(n) for n in names)
    )


def check_out_dir(out_dir: Path) -> None:
    """UsageError when ``out_dir`` holds anything but a report the farm wrote: `--out ~/work`
    removed the whole of ~/work to put the report there."""
    try:
        names = [p.name for p in out_dir.iterdir()]
    except FileNotFoundError:
        return
    except NotADirectoryError:
        if out_dir.is_file():
            raise UsageError(
                f"--out {out_dir}: a file, not a directory; name a new directory"
            ) from None
        return  # under a file: making it says so
    if not names or REPORT_MARK in names or _older_report(names):
        return
    others = sorted(n for n in names if not _REPORT_ENTRIES.fullmatch(n)) or sorted(names)
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3:,} more" if len(others) > 3 else "")
    raise UsageError(
        f"--out {out_dir}: holds {shown}, not a report the farm wrote; the report replaces its "
        "directory whole: name a new or empty one"
    )


# --------------------------------------------------------------------------- what Allure reads

# A fixture container that says something: one of its fixtures failed or broke.
_FIXTURE_FAILED = re.compile(rb'"status"\s*:\s*"(?:failed|broken)"')


def allure_input(results_dir: Path, view: Path, metadata: Mapping[str, str] | None = None) -> Path:
    """The directory `allure generate` reads: `view`, holding hard links to the files of
    `results_dir` (copies where a link cannot be made) less the fixture containers whose
    fixtures all passed; `metadata` (the triage's lines) put first in its environment.properties,
    the overview's Metadata (a file of its own: the run's results are not changed).

    allure-pytest writes a container per fixture per test, and a session fixture's container
    names every test of its worker as a child: Allure then lists the farm's session fixtures
    (plan, dispatcher, records) in the set-up and tear-down of every case, ~1.6 KB in each case's
    data file and 13,000 files to read for a nightly run, for nothing a person reads. A fixture
    that failed or broke keeps its container, and so its place in the report. (The farm's runs
    no longer write the others, farm/run/allure_output.py; results written without it, by
    an older run or an allure-pytest it does not recognise, are read the same way.)"""
    try:
        view.mkdir(parents=True)
        with os.scandir(results_dir) as entries:
            for entry in entries:
                if not entry.is_file() or entry.name.endswith(".tmp"):
                    continue
                if entry.name.endswith("-container.json"):
                    with open(entry.path, "rb") as fh:
                        if not _FIXTURE_FAILED.search(fh.read()):
                            continue
                try:
                    os.link(entry.path, view / entry.name)
                except OSError:  # another file system, or links not allowed
                    shutil.copyfile(entry.path, view / entry.name)
        if metadata:
            _put_first(view / "environment.properties", metadata)
    except OSError as exc:  # Allure reads the results as they are
        sys.stderr.write(f"farm report: reading the allure-results whole: {exc}\n")
        return results_dir
    return view


def _put_first(properties: Path, entries: Mapping[str, str]) -> None:
    """environment.properties with `entries` before its own lines; replaced, never written
    through (it is a hard link to the run's own)."""
    from farm.run.allure_glue import properties_text

    try:
        own = properties.read_text(encoding="utf-8")
    except FileNotFoundError:
        own = ""
    properties.unlink(missing_ok=True)
    properties.write_text(properties_text(entries) + own, encoding="utf-8")


# --------------------------------------------------------------------------- history

# What a history entry keeps of a case. Allure 3 appends each case's whole result to the history
# (~1.1 KB: every label allure-pytest adds included), and the report embeds every entry of a case,
# one per run kept (history_limit), in that case's data file: the report grows by the entry's size
# times cases times runs kept. Kept: what the History tab shows (status, start, stop, duration,
# message, url) and what Allure finds entries by (historyId, id, environment); in the newest run's
# entries also the name and the labels its charts compare the current run with (behaviours: epic,
# feature, story; severity): the coverage diff reads the newest run only, and the status charts
# read statuses.
HISTORY_ITEM_KEYS = (
    "id",
    "environment",
    "status",
    "message",
    "start",
    "stop",
    "duration",
    "url",
    "historyId",
)
HISTORY_NEWEST_KEYS = ("name", "labels")
HISTORY_LABELS = ("epic", "feature", "story", "severity")
# In a line Allure wrote and compact_history_line has not rewritten yet.
_WHOLE = (b'"fullName"', b'"reportLinks"')


def compact_history_line(line: bytes, newest: bool) -> bytes | None:
    """One line of a history JSONL with each case's entry cut to HISTORY_ITEM_KEYS, and in the
    newest line also HISTORY_NEWEST_KEYS (with HISTORY_LABELS only); None where it is so already
    (or is no history point: it stays as it is)."""
    from farm.util.heap import paused

    if not any(m in line for m in _WHOLE) and (newest or b'"labels"' not in line):
        return None
    # A line is every case of its run (the full tier's: 31,831 entries, 30 MB as Allure writes
    # it); parsed JSON holds no reference cycles for the collector to find.
    with paused():
        try:
            point = json.loads(line)
        except ValueError:
            return None
        if not isinstance(point, dict) or not isinstance(point.get("testResults"), dict):
            return None
        point["testResults"] = {
            k: _history_item(v, newest) if isinstance(v, dict) else v
            for k, v in point["testResults"].items()
        }
        return json.dumps(point, separators=(",", ":"), ensure_ascii=False).encode()


def _history_item(item: dict, newest: bool) -> dict:
    keys = HISTORY_ITEM_KEYS + (HISTORY_NEWEST_KEYS if newest else ())
    out = {k: item[k] for k in keys if k in item}
    if isinstance(out.get("labels"), list):
        out["labels"] = [
            lb for lb in out["labels"] if isinstance(lb, dict) and lb.get("name") in HISTORY_LABELS
        ]
    return out


def history_copy(history: StoredHistory, path: Path, limit: int) -> str | None:
    """The file Allure reads: the tier's newest `limit` lines, compacted (the name and labels
    only in the newest: compact_history_line); returns the newest line as the store has it."""
    lines = history.lines(limit)
    with open(path, "wb") as out:
        for i, line in enumerate(lines):
            raw = line.encode("utf-8")
            out.write((compact_history_line(raw, newest=i == len(lines) - 1) or raw) + b"\n")
    return lines[-1] if lines else None


def _keep_new_history_line(history: StoredHistory, path: Path, last_before: str | None) -> None:
    """The line Allure appended to the report's copy of the history (its last: Allure writes
    the lines it keeps before it), compacted, kept in the store. Only that line is read: the
    copy holds up to --history-runs lines of every case of the tier (17 MB each for the full
    tier's). A store that cannot take it (a read-only role) costs the next reports this run's
    point, not this report."""
    from farm.util.errors import StoreError

    try:
        line = _last_line(path)
        if line is None:
            return
        text = (compact_history_line(line, newest=True) or line).decode("utf-8")
        if text != last_before:
            history.keep(text)
    except (OSError, StoreError) as exc:
        sys.stderr.write(f"farm report: this report's history line not kept: {exc}\n")


def _last_line(path: Path) -> bytes | None:
    """A file's last line that is not blank, read from its end."""
    with open(path, "rb") as f:
        start = end = f.seek(0, os.SEEK_END)
        tail = b""
        while start > 0:
            start = max(0, start - max(1 << 20, end - start))  # twice as much each time
            f.seek(start)
            tail = f.read(end - start)
            body = tail.rstrip()
            cut = body.rfind(b"\n")
            if cut >= 0:
                return body[cut + 1 :]
        return tail.rstrip() or None


# --------------------------------------------------------------------------- quality gate


def load_gate_rules(reports_dir: Path = REPORTS_DIR) -> dict:
    p = Path(reports_dir) / "quality-gate.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {"maxFailures": 0}


def read_results(results_dir: str | os.PathLike) -> list[dict]:
    """The final attempt of every test in an allure-results directory (one per historyId)."""
    from farm.run.result_files import read_file, result_files
    from farm.util.heap import paused

    latest: dict[str, dict] = {}
    # Parsed JSON holds no reference cycles: the collector would only walk the results read so
    # far, again and again (half the time of the full tier's 31,831 in farm run's tail).
    with paused():
        for f in result_files(results_dir):
            try:
                r = json.loads(read_file(f))  # bytes: no text decoding before the parser's own
            except (OSError, ValueError):
                continue
            key = r.get("historyId") or r.get("uuid") or os.path.basename(f)
            prev = latest.get(key)
            if prev is None or (r.get("stop") or 0) >= (prev.get("stop") or 0):
                latest[key] = r
    return list(latest.values())


@dataclass(frozen=True)
class GateRule:
    """One rule of the farm's quality gate, evaluated: what the report's Quality Gates tab shows
    (Allure 3's quality gate result) and `farm report` prints."""

    rule: str
    expected: Any
    actual: Any
    success: bool
    message: str

    def to_allure(self) -> dict:
        return {
            "rule": self.rule,
            "expected": self.expected,
            "actual": self.actual,
            "success": self.success,
            "message": self.message,
            "testResults": [],
        }


def gate_rules(
    results_dir: str | os.PathLike, rules: Mapping | None = None, reports_dir: Path = REPORTS_DIR
) -> list[GateRule]:
    """Allure-3-style gate rules evaluated on allure results, each passed or failed.

    Rules: maxFailures (failed + broken tests allowed), minTestsCount, successRate (0..1,
    passed / all). Retries of a test count once (its last attempt).
    """
    rules = dict(load_gate_rules(reports_dir) if rules is None else rules)
    trs = read_results(results_dir)
    total = len(trs)
    failures = sum(r.get("status") in ("failed", "broken") for r in trs)
    passed = sum(r.get("status") == "passed" for r in trs)
    out = []
    if "maxFailures" in rules:
        most = int(rules["maxFailures"])
        ok = failures <= most
        verb = "within" if ok else "exceed"
        out.append(
            GateRule(
                "maxFailures",
                most,
                failures,
                ok,
                f"maxFailures: {failures} failed or broken tests {verb} the allowed {most}",
            )
        )
    if "minTestsCount" in rules:
        least = int(rules["minTestsCount"])
        ok = total >= least
        how = "at least" if ok else "fewer than"
        msg = f"minTestsCount: {total} tests, {how} {least}"
        out.append(GateRule("minTestsCount", least, total, ok, msg))
    if "successRate" in rules:
        least_rate = float(rules["successRate"])
        rate = passed / total if total else 0.0
        ok = rate >= least_rate
        msg = f"successRate: {rate:.4f} {'at least' if ok else 'below'} {least_rate}"
        out.append(GateRule("successRate", least_rate, round(rate, 4), ok, msg))
    return out


def quality_gate(
    results_dir: str | os.PathLike, rules: Mapping | None = None, reports_dir: Path = REPORTS_DIR
) -> tuple[int, list[str]]:
    """The rules of gate_rules: (0 | 1, the failed rules' messages)."""
    msgs = [r.message for r in gate_rules(results_dir, rules, reports_dir) if not r.success]
    return (1 if msgs else 0), msgs


def farm_gate(
    results_dir: str | os.PathLike,
    run: Mapping,
    comparison=None,
    *,
    regression_gate: bool = True,
    reports_dir: Path = REPORTS_DIR,
) -> list[GateRule]:
    """The farm's quality gate of a run: the rules of reports/quality-gate.json (gate_rules),
    the run finished (runFinished: an interrupted or aborted run did not run every case), and,
    unless `regression_gate` is off, no regression against its baseline (noRegressions: new
    failures, precision drift, cases gone, farm/results/compare.py; for a subset run the cases
    it did not select are not gone). The last can fail when every case passed (a drift), and
    then makes `farm run` exit 1 too."""
    out = gate_rules(results_dir, reports_dir=reports_dir)
    finished = run.get("status") == "finished"
    out.append(
        GateRule(
            "runFinished",
            "finished",
            str(run.get("status")),
            finished,
            f"run {run.get('run_id')} is {run.get('status')}"
            + ("" if finished else ": not every case ran"),
        )
    )
    if regression_gate and comparison is not None:
        regressed_ids = set(comparison.regressed_cases) if comparison.has_regressions else set()
        if run.get("subset"):  # the cases a -k, -m or -x left out are not gone from the operator
            regressed_ids -= set(comparison.missing_in_run)
        regressed = len(regressed_ids)
        if comparison.baseline_id is None:
            msg = "noRegressions: no baseline to compare with"
        elif regressed:
            msg = (
                f"noRegressions: {regressed} cases regressed against the baseline "
                f"{comparison.baseline_id} (farm compare {comparison.run_id})"
            )
        else:
            msg = f"noRegressions: no regression against the baseline {comparison.baseline_id}"
        out.append(GateRule("noRegressions", 0, regressed, not regressed, msg))
    return out


@dataclass(frozen=True)
class Judged:
    """What `farm run` has already worked out of the run it stored, with farm report's defaults
    (the tier's baseline, the default drift factor, the regression gate on): the comparison, the
    quality gate (farm_gate) and the triage (Triage, [NextSteps]). Its report takes them as they
    are: each costs a read of the whole run (its results files, its stored records)."""

    comparison: Any
    gate: list[GateRule]
    triage: Any
    # The precision trend PNG of the tier's last TREND_RUNS runs, this one's included (`farm run`
    # draws it while its cases' plots are drawn); None: the report draws it.
    trend: bytes | None = None
    # Every pending error-distribution plot is drawn (`farm run` drew them while it stored the
    # records): the report does not look for them again.
    plots_drawn: bool = False


def gate_exit_code(gate: Sequence[GateRule]) -> int:
    """0 every rule passed; 2 the run did not finish (infrastructure or a stop); else 1."""
    if any(r.rule == "runFinished" and not r.success for r in gate):
        return EXIT_NO_REPORT
    return 0 if all(r.success for r in gate) else 1


# --------------------------------------------------------------------------- farm report


def run_dir_of(run: Mapping, store: StoreLocation) -> Path:
    """The run's directory: its recorded run_dir; else, or when that is not on this machine (a
    shared store's run made by another runner, its directory fetched as a CI artifact),
    <runs home>/<run_id> (the SQLite store's directory, or the runs directory)."""
    recorded = Path(run["run_dir"]) if run.get("run_dir") else None
    if recorded is not None and recorded.is_dir():
        return recorded
    here = store.runs_home / run["run_id"]
    return here if recorded is None or here.is_dir() else recorded


def default_results_dir(run: Mapping, store: StoreLocation) -> Path:
    return run_dir_of(run, store) / "allure-results"


def default_report_dir(run: Mapping, store: StoreLocation) -> Path:
    return run_dir_of(run, store) / "report"


# --history-runs: reports the tier's history keeps.
history_runs = whole_number(1, "a number of reports")


def add_history_runs_option(parser: argparse.ArgumentParser, default: int | None) -> None:
    """--history-runs, as `farm report` and `farm run` take it."""
    parser.add_argument(
        "--history-runs",
        type=history_runs,
        default=default,
        help=f"reports the tier's history keeps, which each case's History tab shows (default "
        f"{HISTORY_RUNS}; each adds to a report's size, see reports/README.md; fewer also cuts "
        "the older ones from the tier's history)",
    )


def main(
    argv: Sequence[str] | None = None,
    judged: Judged | None = None,
    allure: AllureProcess | None = None,
) -> int:
    """`farm report [RUN]`: Allure report of a run with history, regression summary and trend.

    Exit code: the farm's quality gate (farm_gate, the report's Quality Gates tab): 0 when every
    rule passes (reports/quality-gate.json's, and no regression against the baseline), 1
    otherwise, 2 when the run did not finish or the report could not be generated (tools missing,
    no results; a runs directory that refuses the report's files is a RunDirUnwritable)."""
    from farm.results.commands import drift_factor, unknown_run
    from farm.results.compare import DEFAULT_DRIFT_FACTOR, compare
    from farm.results.compare_render import to_text
    from farm.results.store import StoredHistory, open_existing, store_location
    from farm.results.triage_next import run_triage

    p = CommandParser(prog="farm report", description=main.__doc__)
    p.add_argument("run", nargs="?", help="default: the newest run")
    p.add_argument("--store", default=None, help="default: $FARM_STORE or runs/farm.sqlite")
    p.add_argument(
        "--results",
        help="allure-results dir (default: <run dir>/allure-results,"
        " the run dir being the run's recorded run_dir, else <store dir>/<run>)",
    )
    p.add_argument(
        "--out",
        help="report dir (default: <run dir>/report); it is replaced whole, so a new or empty "
        "one, or a report the farm wrote",
    )
    p.add_argument("--baseline", help="baseline run (default: the tier's baseline)")
    p.add_argument("--drift-factor", type=drift_factor, default=DEFAULT_DRIFT_FACTOR)
    p.add_argument("--trend-runs", type=whole_number(1), default=TREND_RUNS)
    p.add_argument("--no-history", action="store_true")
    add_history_runs_option(p, default=HISTORY_RUNS)
    p.add_argument(
        "--no-regression-gate",
        action="store_true",
        help="exit 0 on regressions: the gate leaves out its noRegressions rule (the rules of "
        "reports/quality-gate.json still apply)",
    )
    args = p.parse_args(argv)
    if args.out:  # before any work, not after it
        out = Path(args.out).resolve()
        check_out_dir(out)
        make_output_dir(out, "--out")

    location = store_location(args.store)
    with open_existing(location) as store:
        # Without a run: the last one that finished (an interrupted run is no report's default).
        run = store.get_run(args.run) if args.run else store.latest_run(finished=True)
        if run is None and args.run:
            raise unknown_run(f"unknown run {args.run!r}", location)
        if run is None:
            print(
                f"farm report: no finished run in the store {location}; `farm run` makes one",
                file=sys.stderr,
            )
            return EXIT_NO_REPORT
        run_id, tier = run["run_id"], run["tier"]
        # `judged` (farm run's, of the run it stored) stands for the comparison, gate and
        # triage only where these arguments ask for the defaults it was made with.
        defaults = args.baseline is None and args.drift_factor == DEFAULT_DRIFT_FACTOR
        if judged is not None and not (
            defaults and not args.no_regression_gate and judged.comparison.run_id == run_id
        ):
            judged = None
        try:
            comp = (
                compare(store, run_id, args.baseline, args.drift_factor)
                if judged is None
                else judged.comparison
            )
        except KeyError as exc:
            print(f"farm report: {exc.args[0]}", file=sys.stderr)
            return EXIT_NO_REPORT
        except ValueError as exc:  # a bad --drift-factor
            print(f"farm report: {exc}", file=sys.stderr)
            return EXIT_NO_REPORT
        trend = judged.trend if judged is not None and args.trend_runs == TREND_RUNS else None
        series = store.metric_series(tier, args.trend_runs) if trend is None else None
        # bisected from --baseline
        triage = run_triage(store, run_id, comp.baseline_id) if judged is None else judged.triage
    results = Path(args.results) if args.results else default_results_dir(run, location)
    from farm.results.shrink_links import link_shrinks
    from farm.run import run_dir

    out = Path(args.out) if args.out else default_report_dir(run, location)
    history = None if args.no_history else StoredHistory(location, tier, run_id)
    try:
        # Allure's generation and the plots take seconds (tens for the full tier): a spinner
        # on a terminal says what the wait is; in a log or pipe it prints nothing.
        with FarmConsole(stderr=True).status(f"making the report of run {run_id}"):
            link_shrinks(results, location, run)  # a failing case's shrunk form (farm shrink)
            gate = (
                farm_gate(results, run, comp, regression_gate=not args.no_regression_gate)
                if judged is None
                else judged.gate
            )
            code, index = generate(
                results,
                out,
                history,
                report_name=f"LogSoftmaxGrad {tier} {run_id}",
                comparison=comp,
                trend_series=series,
                trend=trend,
                run_meta=run,
                gate=gate,
                triage=triage,
                history_limit=args.history_runs,
                allure=allure,
                plots_drawn=judged is not None and judged.plots_drawn,
            )
    except (ToolMissing, FileNotFoundError) as exc:
        print(f"farm report: {exc}", file=sys.stderr)
        return EXIT_NO_REPORT
    except OSError as exc:  # a full or read-only disk where the report is written
        if not run_dir.is_fault(exc):
            raise
        then = f"then make the report with farm report {run_id} (the run's results are stored)"
        raise run_dir.unwritable(exc, then=then) from None
    if code != 0:
        print(f"farm report: allure generate failed with exit code {code}", file=sys.stderr)
        return EXIT_NO_REPORT
    print(f"report: {index}")
    sys.stdout.write(to_text(comp, limit=20))
    for rule in gate:
        if not rule.success:
            print(f"quality gate: {rule.message}")
    verdict = gate_exit_code(gate)
    if verdict == 0:
        print("quality gate: passed")
    return verdict
