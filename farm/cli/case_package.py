"""The package a case is rerun on by `farm repro` and `farm shrink`: the one of the run the case
last ran in, unless the command line names one.

A failure of a run of a planted bug (`farm run --plant-bug`) is the bug's: rerun on the real
operator it passes, which reads as "fixed" or "flaky". So --target and --plant-bug default to
the run's (the newest of the store's last LOOKBACK runs that holds the case, or --run RUN), and
the command says so in one line; `--plant-bug none` is the real operator.

    resolve(case_id, run_id, target, plant_bug, store) -> Package
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from farm.util.errors import FarmError, UsageError

LOOKBACK = 50  # runs searched, newest first, for the one the case last ran in


@dataclass(frozen=True)
class Package:
    target: str
    plant_bug: str  # "" for the real operator
    run_id: str = ""  # the run it was taken from ("" when none)
    note: str = ""  # the one line that says so ("" when nothing was taken from a run)


def _holds(store: Any, run_id: str, case_id: str) -> bool:
    row = store.db.execute(
        "SELECT 1 FROM results WHERE run_id=? AND case_id=?", (run_id, case_id)
    ).fetchone()
    return row is not None


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
) -> Package:
    """The package to rerun ``case_id`` on: what the command line says (--target, --plant-bug;
    "none" is no bug), the rest from the case's run (see above)."""
    from farm.pool import build
    from farm.run.metadata import planted_bug

    bug = "" if plant_bug == "none" else plant_bug
    if target is not None and bug is not None:
        return Package(target, bug)
    run = _find_run(case_id, run_id, store)
    if run is None:
        return Package(target or build.DEFAULT_TARGET, bug or "")
    run_bug = planted_bug(run)
    run_target = str(run.get("target") or build.DEFAULT_TARGET)
    chosen = Package(target or run_target, run_bug if bug is None else bug, str(run["run_id"]))
    taken = []
    if target is None and run_target != build.DEFAULT_TARGET:
        taken.append(f"--target {run_target}")
    if bug is None and run_bug:
        taken.append(f"--plant-bug {run_bug}")
    if not taken:
        return chosen
    what = f"the planted bug {run_bug}" if bug is None and run_bug else f"target {run_target}"
    opt_out = " (--plant-bug none: the real operator)" if bug is None and run_bug else ""
    note = (
        f"{case_id} last ran in run {run['run_id']}, on {what}: rerun on that package "
        f"({' '.join(taken)}){opt_out}"
    )
    return Package(chosen.target, chosen.plant_bug, chosen.run_id, note)
