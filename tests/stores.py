"""A run the test has just written, read back from its store: there, or the test fails naming it
(RunStore.get_run and latest_run answer None for a run that is not there)."""

from __future__ import annotations

from typing import Any

from farm.results.store import RunStore


def stored_run(store: RunStore, run_id: str) -> dict[str, Any]:
    """The run ``run_id`` of ``store``, which the test made."""
    run = store.get_run(run_id)
    assert run is not None, f"run {run_id} is not in the store"
    return run


def newest_run(store: RunStore, tier: str | None = None, finished: bool = False) -> dict[str, Any]:
    """The store's newest run (of ``tier``; only a finished one where ``finished``)."""
    run = store.latest_run(tier, finished)
    assert run is not None, "the store has no such run"
    return run
