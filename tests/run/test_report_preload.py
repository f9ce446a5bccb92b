"""farm run prepares its report while the cases run (farm/run/session_plugins.py): under
pytest-xdist it imports matplotlib for the plots (PlotsPreload), and it starts Allure
(AllurePrewarm), each once."""

from __future__ import annotations

import sys
import threading

from farm.run import case_plots
from farm.run.session_plugins import AllurePrewarm, PlotsPreload
from tests.requirements import need_allure


def test_the_first_worker_collection_starts_one_import_in_the_background(monkeypatch):
    started: list[threading.Thread] = []
    real = case_plots.preload_in_background

    def preload() -> threading.Thread:
        thread = real()
        started.append(thread)
        return thread

    monkeypatch.setattr(case_plots, "preload_in_background", preload)
    monkeypatch.delitem(sys.modules, "farm.run.plots", raising=False)
    plugin = PlotsPreload()
    for node in ("gw0", "gw1"):  # every worker reports its collection
        plugin.pytest_xdist_node_collection_finished(node=node, ids=[])
    assert len(started) == 1 and started[0].daemon
    started[0].join(timeout=120)
    assert "farm.run.plots" in sys.modules  # matplotlib's Agg backend with it


def test_allure_starts_once_with_the_cases_and_ends_unused_when_discarded():
    need_allure()
    plugin = AllurePrewarm()
    plugin.pytest_collection_finish(session=None)  # without xdist
    plugin.pytest_xdist_node_collection_finished(node="gw0", ids=[])  # with: once all the same
    allure = plugin.allure
    assert allure is not None
    proc = allure._proc
    assert proc is not None and proc.poll() is None  # waiting for its results
    plugin.discard()
    assert proc.returncode == 0 and allure.take() is None
