"""The one maker of run ids (farm/run/metadata.py new_run_id)."""

from __future__ import annotations

import datetime as _dt

from farm.run import metadata

WHEN = _dt.datetime(2026, 12, 7, 4, 40, 0)


def test_a_run_id_names_its_time_and_tier():
    run_id = metadata.new_run_id("smoke/slice 1", WHEN)
    assert run_id.startswith("20261207-044000-smoke-slice-1-")
    assert len(run_id.rsplit("-", 1)[1]) == 4


def test_runs_begun_in_one_second_never_share_an_id(monkeypatch):
    """The store's tests begin several runs of one tier within a second; two drew the same
    4 random hex digits and PostgreSQL refused the second ("two runs given one id")."""
    draws = iter(["ab12", "ab12", "ab12", "cd34"])
    monkeypatch.setattr(metadata.secrets, "token_hex", lambda n: next(draws))
    first = metadata.new_run_id("collide", WHEN)
    second = metadata.new_run_id("collide", WHEN)
    assert first.endswith("-ab12") and second.endswith("-cd34")
