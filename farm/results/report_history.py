"""A report's history: Allure 3 appends one JSON line per generated report to a history file and
reads it back on the next generate, so each case's History tab shows its earlier runs. The lines
live in the run store, one series per tier (farm/results/store/history.py), so that every runner
of a team shares them: each report gets a copy of the newest ones (`history_copy`), and its own
line goes back into the store (`keep_new_history_line`).

A nightly report is thousands of passed cases: the history keeps of each case only what the
report shows of it (`compact_history_line`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from farm.results.store.stored_history import StoredHistory
from farm.util.errors import StoreError
from farm.util.heap import paused

# Earlier reports of a tier whose results each case's History tab shows. Allure 3 writes every
# case's entries into its data file (and the six newest reports whole): an all-pass nightly
# report grows by ~3.9 MiB for each of the first six reports kept, ~1.6 MiB for each one after
# (reports/README.md).
HISTORY_RUNS = 30

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


def keep_new_history_line(history: StoredHistory, path: Path, last_before: str | None) -> None:
    """The line Allure appended to the report's copy of the history (its last: Allure writes
    the lines it keeps before it), compacted, kept in the store. Only that line is read: the
    copy holds up to --history-runs lines of every case of the tier (17 MB each for the full
    tier's). A store that cannot take it (a read-only role) costs the next reports this run's
    point, not this report."""
    try:
        line = last_line(path)
        if line is None:
            return
        text = (compact_history_line(line, newest=True) or line).decode("utf-8")
        if text != last_before:
            history.keep(text)
    except (OSError, StoreError) as exc:
        sys.stderr.write(f"farm report: this report's history line not kept: {exc}\n")


def last_line(path: Path) -> bytes | None:
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
