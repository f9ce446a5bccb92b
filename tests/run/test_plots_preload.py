"""farm run under pytest-xdist imports matplotlib for the report's plots while the workers run
the cases (farm/run/session_plugins.py PlotsPreload), once, in the background."""

from __future__ import annotations

import sys
import threading

from farm.results import case_plots
from farm.run.session_plugins import PlotsPreload


def test_the_first_worker_collection_starts_one_import_in_the_background(monkeypatch):
    started: list[threading.Thread] = []
    real = case_plots.preload_in_background

    def preload() -> threading.Thread:
        thread = real()
        started.append(thread)
        return thread

    monkeypatch.setattr(case_plots, "preload_in_background", preload)
    monkeypatch.delitem(sys.modules, "farm.results.plots", raising=False)
    plugin = PlotsPreload()
    for node in ("gw0", "gw1"):  # every worker reports its collection
        plugin.pytest_xdist_node_collection_finished(node=node, ids=[])
    assert len(started) == 1 and started[0].daemon
    started[0].join(timeout=120)
    assert "farm.results.plots" in sys.modules  # matplotlib's Agg backend with it
