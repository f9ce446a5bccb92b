"""benchmarks/verdicts_identical.py on two small stores built with RunStore: identical verdicts
pass whatever the timings and hosts, and every kind of difference is listed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from farm.results.store import RunStore
from tests.results.conftest import RUN_META, failed, record, rejected_ok

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "verdicts_identical.py"


def _script():
    spec = importlib.util.spec_from_file_location("verdicts_identical", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


verdicts = _script()


def _store(path: Path, records: list[dict], tier: str = "nightly") -> str:
    with RunStore(path) as store:
        run_id = store.begin_run(dict(RUN_META, tier=tier))
        store.add_results(run_id, records)
        store.finish_run(run_id, 0)
    return run_id


def _nightly() -> list[dict]:
    return [record("c1"), failed("c2"), rejected_ok("c3")]


def test_same_verdicts_other_timings_and_hosts_are_identical(tmp_path, capsys):
    _store(tmp_path / "a.sqlite", _nightly())
    other = _nightly()
    for r in other:
        r.update(host="emu-310b-01", slot="emu-310b-01:0", attempts=2)
        r["timings"] = {"backend_s": 9.0, "golden_s": 9.0, "total_s": 9.0, "wall_s": 9.0}
    _store(tmp_path / "b.sqlite", other)

    assert verdicts.main([str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")]) == 0
    assert "verdicts identical" in capsys.readouterr().out


def test_each_difference_is_one_line(tmp_path, capsys):
    run_a = _store(tmp_path / "a.sqlite", _nightly() + [record("c4")])
    changed = _nightly()
    changed[0]["standards"] = {"experimental": {"passed": False, "reason": "MERE 2e-3 >= T"}}
    changed[1]["category"] = "nan_inf"
    changed[2]["outcome"] = "failed"
    run_b = _store(tmp_path / "b.sqlite", changed + [record("c5")])

    assert verdicts.main([str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("5 differences")
    assert out[1] == (
        'c1: standards {"experimental": {"passed": true, "reason": "ok"}} in '
        f'{run_a}, {{"experimental": {{"passed": false, "reason": "MERE 2e-3 >= T"}}}} in {run_b}'
    )
    assert out[2] == f'c2: category "precision" in {run_a}, "nan_inf" in {run_b}'
    assert out[3] == f'c3: outcome "passed" in {run_a}, "failed" in {run_b}'
    assert out[4:] == [f"c4: only in {run_a}", f"c5: only in {run_b}"]


def test_default_is_the_latest_finished_run_of_the_tier(tmp_path):
    path = tmp_path / "a.sqlite"
    chosen = _store(path, _nightly())
    _store(path, [failed("c1")], tier="smoke")  # another tier, newer
    with RunStore(path) as store:  # a newer nightly that did not finish
        store.add_results(store.begin_run(dict(RUN_META, tier="nightly")), [failed("c1")])
        assert verdicts.chosen_run(store, None, "nightly")["run_id"] == chosen
        assert verdicts.chosen_run(store, chosen, "smoke")["run_id"] == chosen


def test_a_store_without_such_a_run_is_one_line(tmp_path):
    _store(tmp_path / "a.sqlite", _nightly(), tier="smoke")
    with pytest.raises(SystemExit, match="no finished run of tier 'nightly'"):
        verdicts.main([str(tmp_path / "a.sqlite"), str(tmp_path / "a.sqlite")])
    with pytest.raises(SystemExit, match="nowhere.sqlite"):
        verdicts.main([str(tmp_path / "a.sqlite"), str(tmp_path / "nowhere.sqlite")])
