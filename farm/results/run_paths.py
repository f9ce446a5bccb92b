"""Where a stored run's files are on this machine: its directory, its allure-results and its
report (`farm report`'s defaults, and what `farm runs prune` removes)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from farm.results.store.location import StoreLocation


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
