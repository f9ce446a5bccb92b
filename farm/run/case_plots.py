"""The cases' error-distribution PNGs, drawn when the report is written, not in the test items.

Inside a test item `farm.run.allure.glue.annotate` attaches, for each case `wants_plot`
selects, only the numbers its plot is drawn from: a small JSON attachment named PLOT_DATA_NAME.
`render_case_plots(results_dir)` (called by `farm.results.report_generate.generate` before
Allure runs) draws each of them with `farm.run.plots.error_histogram_png`, writes the PNG into the
allure-results directory as `<uuid>-attachment.png` (the way allure-pytest names its attachment
files) and, in that test's result file, puts the entry

    {"name": "error distribution.png", "source": "<uuid>-attachment.png", "type": "image/png"}

where the data attachment's entry was: the report shows the same attachments, in the same order,
as when the PNG was drawn inside the test. A plot that cannot be drawn becomes a "plot error" text
attachment instead; nothing else in the result (status, message) is ever touched.

Every failure's plot is drawn; of the passes the test items sampled
(allure_attachments.wants_plot, a fixed fraction of them), at most PASS_PLOTS_PER_GROUP per family
and dtype, the first in the order of allure_attachments.sample_hash: a deterministic sample (the
same cases in every run of the same cases) whose size does not grow with the number of passes.
The data entries of the other sampled passes are taken out of their results (no plot, no
attachment).

Idempotent: a rendered result has no data entry left, so a second `farm report` draws nothing.
The data files stay in allure-results (unreferenced). The PNG's file name is derived from the data
file's name, so a report step interrupted between writing a PNG and rewriting its result file
writes the same file again the next time, never a second one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from farm.run.allure.attachments import (
    PLOT_DATA_NAME,
    PLOT_ERROR_NAME,
    PLOT_NAME,
    plot_error_text,
    sample_hash,
)
from farm.run.result_files import read_file, result_files
from farm.util import waits
from farm.util.children import die_with_parent
from farm.util.run_dir import write_whole

# Below this many plots one process draws them all (a worker pool costs more than it saves).
# The workers are forked after this process has imported matplotlib (_draw_all): a worker's
# start is a fork, not matplotlib's ~1 s import.
PARALLEL_FROM = 4
# The most passes per (family, dtype) whose plot is drawn (failures: all of them).
PASS_PLOTS_PER_GROUP = 8
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "lsg-farm:error-distribution")


@dataclass
class PlotCounts:
    plots: int = 0  # PNGs drawn and attached
    errors: int = 0  # "plot error" attachments instead
    passes_left: int = 0  # sampled passes beyond PASS_PLOTS_PER_GROUP: data entry removed


def render_case_plots(
    results_dir: str | os.PathLike,
    *,
    jobs: int | None = None,
    passes_per_group: int = PASS_PLOTS_PER_GROUP,
) -> PlotCounts:
    """Draw every pending error-distribution plot of an allure-results directory (see above).

    `jobs`: worker processes (default: one per CPU once there are PARALLEL_FROM plots or more).
    `passes_per_group`: the most passed cases per (family, dtype) whose plot is drawn.
    """
    results_dir = Path(results_dir)
    pending: dict[Path, dict] = {}
    for name in result_files(results_dir):
        try:
            raw = read_file(name)
        except OSError:
            continue
        if PLOT_DATA_NAME.encode() not in raw:  # most results: no need to parse them
            continue
        path = Path(name)
        try:
            result = json.loads(raw)
        except ValueError:
            continue
        if isinstance(result, dict) and _data_entries(result):
            pending[path] = result
    counts = PlotCounts()
    if not pending:
        return counts
    left = _passes_left(results_dir, pending, passes_per_group)
    sources = [e["source"] for p, r in pending.items() if p not in left for e in _data_entries(r)]
    drawn = dict(zip(sources, _draw_all(results_dir, sources, jobs), strict=True))
    for path, result in pending.items():
        for entries, i in reversed(list(_data_slots(result))):
            if path in left:
                del entries[i]
                counts.passes_left += 1
                continue
            entry = drawn[entries[i]["source"]]
            entries[i] = entry
            if entry["name"] == PLOT_NAME:
                counts.plots += 1
            else:
                counts.errors += 1
        write_whole(path, json.dumps(result, ensure_ascii=False).encode("utf-8"))
    return counts


def render_quietly(results_dir: str | os.PathLike) -> bool:
    """render_case_plots, as the report step needs it: a results directory it cannot write
    (read-only, say) leaves the report without the plots, and says so. True when every pending
    plot was drawn."""
    try:
        render_case_plots(results_dir)
    except OSError as exc:
        sys.stderr.write(f"farm report: error-distribution plots not drawn: {exc}\n")
        return False
    return True


class BackgroundDrawing:
    """A finished run's plots drawn while its records are stored (`farm run`): the drawing runs
    in worker processes, the store import in this one, and on a machine of few cores the report
    step then starts with its plots done. :meth:`join` before the report: True when every plot
    was drawn, and the report need not look for pending ones again (a scan of every result
    file: 0.7 s for the full tier's 31,831)."""

    def __init__(self, results_dir: str | os.PathLike):
        self._drawn = False
        self._thread = threading.Thread(
            target=self._draw, args=(results_dir,), name="farm-case-plots"
        )
        self._thread.start()

    def _draw(self, results_dir: str | os.PathLike) -> None:
        self._drawn = render_quietly(results_dir)

    def join(self) -> bool:
        waits.join(self._thread)
        return self._drawn


def preload_in_background() -> threading.Thread:
    """Import matplotlib (farm.run.plots, ~1 s of CPU) while the cases run, in a process
    that mostly waits for them (`farm run` under pytest-xdist): the report step's first plot then
    starts drawing at once, and the processes that draw the plots, forked from it, inherit the
    import. A matplotlib that fails to import is left for the drawing to report."""
    thread = threading.Thread(target=_preload, name="farm-plots-import", daemon=True)
    thread.start()
    return thread


def _preload() -> None:
    try:
        import farm.run.plots  # noqa: F401
    except Exception:  # noqa: BLE001 - each plot then says why (draw_one: a "plot error")
        pass


def _passes_left(results_dir: Path, pending: dict[Path, dict], per_group: int) -> set[Path]:
    """The passed results beyond the first `per_group` of their (family, dtype) group."""
    groups: dict[tuple[str, str], list[tuple[int, str, Path]]] = {}
    for path, result in pending.items():
        if result.get("status") != "passed":
            continue
        key = _plot_group(results_dir, result)
        name = str(result.get("name") or "")
        groups.setdefault(key, []).append((sample_hash(name), name, path))
    left: set[Path] = set()
    for members in groups.values():
        left.update(path for _, _, path in sorted(members)[max(0, per_group) :])
    return left


def _plot_group(results_dir: Path, result: dict) -> tuple[str, str]:
    """The (family, dtype) a result's plot data names (the result says the dtype only in text)."""
    for entry in _data_entries(result):
        try:
            data = json.loads((results_dir / entry["source"]).read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return str(data.get("family", "")), str(data.get("dtype", ""))
    return "", ""


def _data_slots(node: dict) -> Iterator[tuple[list, int]]:
    """(attachments list, index) of every plot-data entry in a result, its steps included."""
    entries = node.get("attachments")
    if isinstance(entries, list):
        for i, e in enumerate(entries):
            if isinstance(e, dict) and e.get("name") == PLOT_DATA_NAME and e.get("source"):
                yield entries, i
    for step in node.get("steps") or ():
        if isinstance(step, dict):
            yield from _data_slots(step)


def _data_entries(node: dict) -> list[dict]:
    return [entries[i] for entries, i in _data_slots(node)]


def _draw_all(results_dir: Path, sources: list[str], jobs: int | None) -> list[dict]:
    if jobs is None:
        jobs = (os.cpu_count() or 1) if len(sources) >= PARALLEL_FROM else 1
    jobs = max(1, min(jobs, len(sources)))
    if jobs > 1:
        _preload()  # once, here: the forked workers inherit matplotlib
        try:
            # A worker ends with this process (farm/util/children.py): a command killed mid-report
            # leaves no worker drawing on.
            with ProcessPoolExecutor(
                max_workers=jobs,
                mp_context=multiprocessing.get_context("fork"),
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            ) as pool:
                return list(
                    pool.map(
                        draw_one,
                        [results_dir] * len(sources),
                        sources,
                        chunksize=max(1, len(sources) // (4 * jobs)),
                    )
                )
        except Exception:  # noqa: BLE001 - no pool (fork refused, a worker killed): draw here
            pass
    return [draw_one(results_dir, s) for s in sources]


def draw_one(results_dir: Path, data_source: str) -> dict:
    """Draw the plot of one data attachment into its PNG file; return the entry that replaces
    the data attachment's: the PNG, or a "plot error" text when it could not be drawn."""
    stem = str(uuid.uuid5(_NAMESPACE, data_source))
    try:
        from farm.run.plots import error_histogram_png

        data = json.loads((results_dir / data_source).read_text(encoding="utf-8"))
        png = error_histogram_png(data)
        name = f"{stem}-attachment.png"
        (results_dir / name).write_bytes(png)
        return {"name": PLOT_NAME, "source": name, "type": "image/png"}
    except Exception as exc:  # noqa: BLE001 - a plot must never change a case's verdict
        name = f"{stem}-attachment.txt"
        (results_dir / name).write_text(plot_error_text(exc), encoding="utf-8")
        return {"name": PLOT_ERROR_NAME, "source": name, "type": "text/plain"}
