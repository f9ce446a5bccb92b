"""Retention of the run store and the run directories: which runs `farm runs prune` removes, and
what the store and its run directories weigh.

A run goes when a rule picks it: older than `--older-than`, or beyond the `--keep` newest runs
of its suite key (RunStore.runs order: newest started first). Both given: either one is enough,
so the store holds at most N runs per suite, none older than the age, plus the runs
RunStore.protected_runs names (running runs, baselines, the newest finished run of each suite and
the runs those are compared with), which no rule removes.

**Resumable.** What a prune is to do after its transaction (remove the pruned runs' directories,
then VACUUM) is written down first, in the same transaction, beside the runs
(``<runs home>/.prune-pending-<store>.json``): a prune killed after its transaction leaves that
note, and the next prune finishes the work before its own (the directories of the runs no longer
in the store, then the VACUUM). `farm runs` counts every run directory on disk, those of runs no
longer in the store too.

**Runs no store holds.** `pytest suites/` without `farm run` makes a run directory (named as a
run, marked with farm/run/plan.py UNSTORED_MARK) that no store records: `farm runs` lists each as
"not stored" with its size (:func:`unstored`), and `farm runs prune --older-than AGE` removes
those started longer ago than AGE (:func:`unstored_by_age`; --keep counts stored runs only).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from farm.results.run_paths import run_dir_of
from farm.results.store.location import SQLITE, StoreLocation
from farm.run.plan import UNSTORED_MARK
from farm.util.errors import StoreError, UsageError
from farm.util.sizes import size_text

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


# A run directory's name: the run id, its start's local time first (farm/run/prepare.py
# new_run_id, farm/results/store/timestamps.py stamp).
_RUN_DIR_NAME = re.compile(r"\d{8}-\d{6}-.+")


@dataclass
class Footprint:
    """What the store and the run directories on disk take: those of its runs, and those of runs
    it no longer holds (``stray``: in its runs home, named as runs are; ``left``: how many of
    them a prune that was stopped left, which the next prune removes)."""

    store: int
    run_dirs: int
    n_dirs: int
    n_runs: int
    stray: int = 0
    stray_bytes: int = 0
    left: int = 0

    def line(self, store: StoreLocation) -> str:
        line = (
            f"store {store}: {size_text(self.store)}; run directories: "
            f"{size_text(self.run_dirs + self.stray_bytes)} ({self.n_dirs} of {self.n_runs} runs "
            "have one"
        )
        if self.stray:
            line += f"; {self.stray} more of runs not in the store, {size_text(self.stray_bytes)}"
            if self.left:
                line += (
                    f", {self.left} of them left by a prune that was stopped: the next farm "
                    "runs prune removes them"
                )
        return line + ")"


def footprint(runs: list[dict], store: StoreLocation, store_bytes: int) -> Footprint:
    dirs = [d for d in (run_directory(r, store) for r in runs) if d is not None]
    ids = {r["run_id"] for r in runs}
    stray = [d for d in _run_dirs_in(store.runs_home) if d.name not in ids and d not in dirs]
    pending = {Path(p) for p in _pending_dirs(store)}
    return Footprint(
        store_bytes,
        sum(map(tree_bytes, dirs)),
        len(dirs),
        len(runs),
        stray=len(stray),
        stray_bytes=sum(map(tree_bytes, stray)),
        left=sum(1 for d in stray if d in pending),
    )


def _run_dirs_in(home: Path) -> list[Path]:
    """The directories in ``home`` named as run directories are (no links)."""
    try:
        entries = sorted(home.iterdir())
    except OSError:
        return []
    return [
        p for p in entries if _RUN_DIR_NAME.fullmatch(p.name) and p.is_dir() and not p.is_symlink()
    ]


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
        _remove(path, run["run_id"], done, dry_run)
    return done


def _remove(path: Path, run_id: str, done: Removed, dry_run: bool) -> None:
    """A run's directory counted into ``done`` and removed (not on a dry run); what cannot be
    removed is in done.failed."""
    done.dir_bytes[run_id] = tree_bytes(path)
    if dry_run:
        return
    try:
        shutil.rmtree(path)
    except OSError as exc:
        done.failed.append(f"{path}: {exc.strerror or exc}")


# --------------------------------------------------------------------------- what is left to do


def pending_path(store: StoreLocation) -> Path:
    """Where a prune writes down what it is to do after its transaction (one file a store)."""
    key = hashlib.sha256(store.display.encode()).hexdigest()[:12]
    return store.runs_home / f".prune-pending-{key}.json"


def write_pending(store: StoreLocation, doomed: Iterable[Mapping], vacuum: bool) -> None:
    """Write down, before the store deletes them, the pruned runs' directories and whether the
    store is to be vacuumed: a prune killed after its transaction is finished by the next."""
    dirs = [str(d) for d in (run_directory(r, store) for r in doomed) if d is not None]
    if not dirs and not (vacuum and store.kind == SQLITE):
        return  # nothing on this machine for a later prune to finish
    path = pending_path(store)
    left = read_pending(store) or {}
    entry = {
        "store": store.display,
        "runs": sorted({*left.get("runs", []), *(str(r["run_id"]) for r in doomed)}),
        "dirs": sorted({*left.get("dirs", []), *dirs}),
        # PostgreSQL gives deleted rows' space back by itself (autovacuum).
        "vacuum": store.kind == SQLITE and bool(vacuum or left.get("vacuum")),
    }
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(entry, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(
            f"prune: cannot write {path} ({exc.strerror or exc}), where it notes what is left to "
            "do should it be stopped; nothing was pruned: free space in or make writable "
            f"{path.parent}, then rerun"
        ) from None


def read_pending(store: StoreLocation) -> dict | None:
    """What a prune that was stopped left to do (write_pending), or None."""
    try:
        data = json.loads(pending_path(store).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _pending_dirs(store: StoreLocation) -> list[str]:
    return [str(d) for d in (read_pending(store) or {}).get("dirs", [])]


def clear_pending(store: StoreLocation) -> None:
    pending_path(store).unlink(missing_ok=True)


def finish_stopped(db, store: StoreLocation, dry_run: bool) -> tuple[Removed, bool] | None:
    """What a prune that was stopped left (read_pending): the directories of its runs that the
    store no longer holds are removed here (a run still there was not pruned: its prune stopped
    before its transaction ended), and whether it left the VACUUM to do. None when nothing was
    left."""
    left = read_pending(store)
    if left is None:
        return None
    gone = {r for r in left.get("runs", []) if db.get_run(r) is None}
    done = Removed(runs=[])
    for text in left.get("dirs", []):
        path = Path(text)
        if path.name not in gone or path.is_symlink() or not path.is_dir():
            continue
        _remove(path, path.name, done, dry_run)
    return done, bool(left.get("vacuum"))


# --------------------------------------------------------------------------- runs no store holds


@dataclass(frozen=True)
class Unstored:
    """The run directory of a `pytest suites/` run, which no store records."""

    run_id: str
    path: Path
    bytes: int
    started: _dt.datetime | None  # from its name (the run id's local start time)


def unstored(store: StoreLocation, stored_ids: Iterable[str] = ()) -> list[Unstored]:
    """The marked run directories (UNSTORED_MARK) in the store's runs home that it does not hold,
    newest first."""
    ids = set(stored_ids)
    found = [
        Unstored(d.name, d, tree_bytes(d), _started_from_name(d.name))
        for d in _run_dirs_in(store.runs_home)
        if d.name not in ids and (d / UNSTORED_MARK).is_file()
    ]
    return sorted(found, key=lambda u: u.run_id, reverse=True)


def _started_from_name(run_id: str) -> _dt.datetime | None:
    try:
        return _dt.datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").astimezone()
    except ValueError:
        return None


def unstored_by_age(
    found: Iterable[Unstored], *, now: _dt.datetime, older_than: _dt.timedelta | None
) -> list[Unstored]:
    """Those started before ``now - older_than`` (none without an age, nor one whose start its
    name does not tell)."""
    if older_than is None:
        return []
    cutoff = now - older_than
    return [u for u in found if u.started is not None and u.started < cutoff]


def remove_unstored(found: Iterable[Unstored], dry_run: bool) -> Removed:
    """The directories of ``found`` removed (not on a dry run), counted as prune counts."""
    done = Removed(runs=[])
    for u in found:
        if not u.path.is_symlink() and u.path.is_dir():
            _remove(u.path, u.run_id, done, dry_run)
    return done


def unstored_json(u: Unstored) -> dict:
    """`farm runs --json`'s entry of a run no store holds: a stored run's keys that say what a
    run is and how it ended, null where nothing recorded it (docs/store.md), "stored" false and
    "status" "not-stored", its directory and its size."""
    return {
        "run_id": u.run_id,
        "kind": "run",
        "stored": False,
        "status": "not-stored",
        "tier": None,
        "started_at": None if u.started is None else u.started.isoformat(timespec="seconds"),
        "ended_at": None,
        "exit_code": None,
        "finished": False,
        "green": False,
        "counts": None,
        "run_dir": str(u.path),
        "bytes": u.bytes,
        "note": "pytest suites/ without farm run",
    }


def unstored_lines(found: Iterable[Unstored]) -> list[str]:
    """`farm runs`' lines of the runs no store holds."""
    return [
        f"{u.run_id}  not stored (pytest suites/ without farm run), {size_text(u.bytes)}"
        for u in found
    ]
