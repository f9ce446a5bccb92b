"""A team's store takes runs from machines in several time zones (runners in UTC, a laptop in
UTC+8). The store sorts runs by when they started: newest first, the last green baseline. A
start written in the machine's local time without its zone sorted by each machine's clock: the
laptop's earlier run was the store's newest for eight hours."""

from __future__ import annotations

import re

from farm.results.store import RunStore

K = "910b and f32 and 2x"


def run_id(result) -> str:
    """The run the output names (its directory's name is the local time it began)."""
    found = re.search(r"^run (\S+)", result.err, re.M)
    assert found, result.text
    return found[1]


def test_runs_of_machines_in_other_time_zones_sort_by_when_they_ran(farm, monkeypatch):
    monkeypatch.setenv("TZ", "CST-8")  # POSIX: UTC+8, with or without the zone database
    laptop = farm.run_tier(k=K)
    monkeypatch.setenv("TZ", "UTC0")
    runner = farm.run_tier(k=K)
    assert laptop.code == runner.code == 0, laptop.text + runner.text
    with RunStore(farm.store) as store:
        newest_first = [r["run_id"] for r in store.runs(tier="smoke")]
        starts = [r["started_at"] for r in store.runs(tier="smoke")]
        latest = store.latest_run("smoke", finished=True)
    assert newest_first == [run_id(runner), run_id(laptop)]
    assert latest is not None and latest["run_id"] == run_id(runner)
    assert all(s.endswith("+00:00") for s in starts), starts
