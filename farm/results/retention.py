"""Retention of the run store and the run directories: which runs `farm runs prune` removes, and
what the store and its run directories weigh.

A run goes when a rule picks it: older than `--older-than`, or beyond the `--keep` newest runs
of its suite key (RunStore.runs order: newest started first). Both given: either one is enough,
so the store holds at most N runs per suite, none older than the age, plus the runs
RunStore.protected_runs names (running runs, baselines, the newest finished run of each suite and
the runs those are compared with), which no rule removes.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import UsageError
from farm.results.report import run_dir_of
from farm.results.store.location import StoreLocation
from farm.sizes import size_text

AGE_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"(\d+)([mhdw])")


def parse_age(text: str) -> _dt.timedelta:
    """--older-than: a whole number and a unit, m (minutes), h, d or w: "90d", "12h", "2w"."""
    match = _AGE.fullmatch(text.strip().lower())
    if not match or int(match[1]) < 1:
        raise UsageError(
            f"--older-than {text!r} is not an age: give a number and a unit "
            f"({', '.join(AGE_UNITS)}), e.g. 90d or 12h"
        )
    return _dt.timedelta(seconds=int(match[1]) * AGE_UNITS[match[2]])


def started(run: Mapping) -> _dt.datetime | None:
    """When a run started, timezone-aware (a time without a zone is local); None if unreadable."""
    try:
        when = _dt.datetime.fromisoformat(str(run.get("started_at") or ""))
    except ValueError:
        return None
    return when if when.tzinfo else when.astimezone()


def chosen_by_rules(
    runs: Iterable[Mapping],
    *,
    now: _dt.datetime,
    older_than: _dt.timedelta | None = None,
    keep: int | None = None,
) -> dict[str, str]:
    """Run id -> the rule that picks it. `runs` newest first, as RunStore.runs gives them; a run
    whose start cannot be read is never picked by age."""
    picked: dict[str, str] = {}
    seen: dict[str, int] = defaultdict(int)
    cutoff = now - older_than if older_than is not None else None
    for run in runs:
        suite = run["tier"]
        seen[suite] += 1
        if keep is not None and seen[suite] > keep:
            picked[run["run_id"]] = f"beyond the {keep} newest of {suite}"
            continue
        when = started(run)
        if cutoff is not None and when is not None and when < cutoff:
            picked[run["run_id"]] = f"started before {cutoff.isoformat(timespec='seconds')}"
    return picked


# --------------------------------------------------------------------------- sizes


def tree_bytes(path: Path) -> int:
    """What a directory's files take (links are not followed); 0 when it is not there."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:  # a running run's worker moved it meanwhile
                pass
    return total


def run_directory(run: Mapping, store: StoreLocation) -> Path | None:
    """A run's directory, when it is one prune may remove: it exists, is no link, and is named
    after the run (a recorded run_dir elsewhere, say a shared folder, is never removed)."""
    path = run_dir_of(run, store)
    if path.name != run["run_id"] or path.is_symlink() or not path.is_dir():
        return None
    return path


@dataclass
class Footprint:
    """What the store and the run directories of its runs take."""

    store: int
    run_dirs: int
    n_dirs: int
    n_runs: int

    def line(self, store: StoreLocation) -> str:
        return (
            f"store {store}: {size_text(self.store)}; run directories: "
            f"{size_text(self.run_dirs)} ({self.n_dirs} of {self.n_runs} runs have one)"
        )


def footprint(runs: list[dict], store: StoreLocation, store_bytes: int) -> Footprint:
    dirs = [d for d in (run_directory(r, store) for r in runs) if d is not None]
    return Footprint(store_bytes, sum(map(tree_bytes, dirs)), len(dirs), len(runs))


# --------------------------------------------------------------------------- removing


@dataclass
class Removed:
    """What a prune removed (or, dry run, would remove)."""

    runs: list[dict]
    dir_bytes: dict[str, int] = field(default_factory=dict)  # run id -> its directory's size
    failed: list[str] = field(default_factory=list)  # directories that could not be removed


def remove_run_directories(runs: Iterable[Mapping], store: StoreLocation, dry_run: bool) -> Removed:
    """The directories of pruned runs, measured and (unless dry run) removed. Only runs already
    gone from the store come here: a running run's directory is never one of them."""
    done = Removed(runs=[dict(r) for r in runs])
    for run in done.runs:
        path = run_directory(run, store)
        if path is None:
            continue
        done.dir_bytes[run["run_id"]] = tree_bytes(path)
        if dry_run:
            continue
        try:
            shutil.rmtree(path)
        except OSError as exc:
            done.failed.append(f"{path}: {exc.strerror or exc}")
    return done
