"""The package a case is rerun on by `farm repro` and `farm shrink`, and how: the run the case
last ran in, unless the command line says otherwise.

A failure of a run of a planted bug (`farm run --plant-bug`) is the bug's: rerun on the real
operator it passes, which reads as "fixed" or "flaky"; a failure on the acl backend may be the
device path's. So --target, --plant-bug and --backend default to the run's (the newest of the
store's last LOOKBACK runs that holds the case, or --run RUN), and a case of a case file is found
through the run's own copy of that file (its run directory's cases/, the run's selection) when
no --cases is given; the command says what it took in one line; `--plant-bug none` is the real
operator.

    resolve(case_id, run_id, target, plant_bug, store, backend, case_files) -> Package
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from farm.util import targets
from farm.util.errors import FarmError, UsageError

LOOKBACK = 50  # runs searched, newest first, for the one the case last ran in


@dataclass(frozen=True)
class Package:
    target: str
    plant_bug: str  # "" for the real operator
    run_id: str = ""  # the run it was taken from ("" when none)
    note: str = ""  # the one line that says so ("" when nothing was taken from a run)
    backend: str | None = None  # None: the target's (farm/util/targets.py)
    case_files: tuple[str, ...] = ()  # where the case is found (--cases, or the run's)


def _holds(store: Any, run_id: str, case_id: str) -> bool:
    row = store.db.execute(
        "SELECT 1 FROM results WHERE run_id=? AND case_id=?", (run_id, case_id)
    ).fetchone()
    return row is not None


def _holds_case(path: str, case_id: str) -> bool:
    """Whether the case file at `path` makes the case (a file that no longer loads: no)."""
    from suites import casefile

    try:
        return any(case.id == case_id for case in casefile.load_many([path]))
    except FarmError:
        return False


def last_run_of(store: Any, case_id: str) -> Mapping[str, Any] | None:
    """The newest of the store's last LOOKBACK runs that holds a result of the case."""
    for run in store.runs(limit=LOOKBACK):
        if _holds(store, run["run_id"], case_id):
            return run
    return None


def _find_run(case_id: str, run_id: str | None, store_spec: str | None):
    """The run to take the package of: --run's (an unknown one is an error), else the case's
    last run; None without a store or such a run."""
    from farm.results.store import RunStore

    try:
        with RunStore(store_spec, create=False) as store:
            if run_id:
                run = store.get_run(run_id)
                if run is None:
                    raise UsageError(
                        f"--run {run_id}: no such run in the store {store.location}; list them "
                        "with `farm runs`"
                    )
                return run
            return last_run_of(store, case_id)
    except UsageError:
        if run_id:
            raise
        return None  # no store yet: no run to take a package from
    except FarmError:
        if run_id:
            raise
        return None


def resolve(
    case_id: str,
    run_id: str | None,
    target: str | None,
    plant_bug: str | None,
    store: str | None = None,
    backend: str | None = None,
    case_files: Sequence[str] = (),
    take_case_files: bool = True,
) -> Package:
    """The package and backend to rerun ``case_id`` on and where the case is found: what the
    command line says (--target, --plant-bug, "none" being no bug; --backend; --cases), the rest
    from the case's run (see above); ``take_case_files`` False: not its case files (`farm shrink`
    has found the case already)."""
    from farm.pool import build
    from farm.run.metadata import planted_bug

    bug = "" if plant_bug == "none" else plant_bug
    files = tuple(case_files)
    given = Package(target or build.DEFAULT_TARGET, bug or "", backend=backend)
    given = replace(given, case_files=files)
    want_files = take_case_files and not files
    if target is not None and bug is not None and backend is not None and not want_files:
        return given
    run = _find_run(case_id, run_id, store)
    if run is None:
        return given
    run_bug = planted_bug(run)
    run_target = str(run.get("target") or build.DEFAULT_TARGET)
    run_backend = str(run.get("backend") or targets.default_backend(run_target))
    # The run's backend is taken where it is not the default of the target rerun.
    other_backend = run_backend != targets.default_backend(target or run_target)
    run_files = [str(f) for f in (run.get("selection") or {}).get("files") or ()]
    run_files = run_files if want_files else []
    # The run's copies of its case files (its run directory's cases/) that hold the case: none
    # for a case of a tier; a copy gone with its run directory is said.
    kept = tuple(f for f in run_files if Path(f).is_file() and _holds_case(f, case_id))
    chosen = Package(
        target or run_target,
        run_bug if bug is None else bug,
        str(run["run_id"]),
        backend=backend or run_backend,
        case_files=files or kept,
    )
    taken = []
    if target is None and run_target != build.DEFAULT_TARGET:
        taken.append(f"--target {run_target}")
    if bug is None and run_bug:
        taken.append(f"--plant-bug {run_bug}")
    if backend is None and other_backend:
        taken.append(f"--backend {run_backend}")
    taken += [f"--cases {f}" for f in kept]
    gone = [f for f in run_files if not Path(f).is_file()]
    if not taken and not gone:
        return chosen
    what = []
    if bug is None and run_bug:
        what.append(f"the planted bug {run_bug}")
    elif target is None and run_target != build.DEFAULT_TARGET:
        what.append(f"target {run_target}")
    if backend is None and other_backend:
        what.append(f"the {run_backend} backend")
    if kept:
        what.append(f"its case file{'s' if len(kept) > 1 else ''}")
    note = f"{case_id} last ran in run {run['run_id']}"
    if what:
        note += f", on {' and '.join(what)}: rerun so ({' '.join(taken)})"
        if bug is None and run_bug:
            note += " (--plant-bug none: the real operator)"
    if gone:
        note += (
            f"{';' if what else ','} its case file{'s' if len(gone) > 1 else ''} "
            f"{', '.join(gone)} {'are' if len(gone) > 1 else 'is'} gone (its run directory "
            "removed): if the case came from one, pass that case file with --cases"
        )
    return replace(chosen, note=note)
