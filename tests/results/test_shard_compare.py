"""A shard is compared on its own slice: shard 2/2 took shard 1/2 as its baseline and printed
"REGRESSIONS (144 missing)" for the other shard's cases. Now its baseline is a whole run (or the
same shard of another group), only the slice's cases are compared, and a slice that cannot be
listed is compared with nothing, saying why. `farm runs` shows the shard and the group."""

from __future__ import annotations

import pytest

from farm.results import commands
from farm.results import compare as cmp
from farm.results import compare_render as render
from farm.results.store import RunStore
from farm.run import shard
from suites import casefile
from suites.case import Case

from .conftest import RUN_META, record

CASES = [Case("ascend910b", "float32", (4, n), (-1,)) for n in (16, 32, 48, 64, 80, 96)]


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "farm.sqlite") as s:
        yield s


def _slice(k: int) -> list[str]:
    return [c.id for c in shard.pick(CASES, shard.Shard(k, 2))]


def _run(store, day: int, ids, selection, **meta) -> str:
    run_id = store.begin_run(
        {
            **RUN_META,
            "tier": "cases:six",
            "selection": selection,
            "started_at": f"2026-12-0{day}T10:00:00+00:00",
            **meta,
        }
    )
    store.add_results(run_id, [record(i) for i in ids])
    store.finish_run(run_id, 0)
    return run_id


def _shard(store, day: int, k: int, selection, group: str = "p-1") -> str:
    meta = {"subset": True, "shard": f"{k}/2", "run_group": group}
    return _run(store, day, _slice(k), selection, **meta)


def test_a_shard_against_a_whole_run_reports_no_missing_cases(store, tmp_path, capsys):
    path = casefile.dump(CASES, tmp_path / "six.json")
    selection = {"tier": None, "files": [str(path)], "names": ["six"]}
    whole = _run(store, 1, [c.id for c in CASES], selection)
    _shard(store, 2, 1, selection)  # green and newer than the whole run: still not the baseline
    second = _shard(store, 3, 2, selection)
    assert 0 < len(_slice(2)) < len(CASES)

    comp = cmp.compare(store, second)
    assert comp.baseline_id == whole
    assert comp.missing_in_run == [] and not comp.has_regressions
    assert sum(g.n for g in comp.baseline_per_dtype) == len(_slice(2))  # the same slice only
    head = render.headline(comp)
    assert head[0].startswith(f"shard 2/2: its slice ({len(_slice(2))} cases)")
    assert "0 missing" in head[-1] and "no regressions" in head[-1]

    assert commands.main_runs(["--store", store.location.spec]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["run", "tier", "shard", "group"]
    row = next(line for line in lines if line.startswith(second))
    assert row.split()[1:4] == ["cases:six", "2/2", "p-1"]


def test_the_same_shard_of_another_group_is_a_baseline_another_shard_never(store, tmp_path):
    path = casefile.dump(CASES, tmp_path / "six.json")
    selection = {"tier": None, "files": [str(path)], "names": ["six"]}
    earlier = _shard(store, 1, 2, selection, group="p-0")
    _shard(store, 2, 1, selection)
    second = _shard(store, 3, 2, selection)
    assert store.baseline_for("cases:six", exclude_run_id=second) == earlier
    assert not cmp.compare(store, second).missing_in_run


def test_a_slice_that_cannot_be_listed_is_compared_with_nothing(store, tmp_path):
    path = casefile.dump(CASES, tmp_path / "six.json")
    selection = {"tier": None, "files": [str(path)], "names": ["six"]}
    _run(store, 1, [c.id for c in CASES], selection)
    second = _shard(store, 2, 2, selection)
    path.unlink()  # the shard's case file is gone: its slice is unknown
    comp = cmp.compare(store, second)
    assert comp.baseline_id is None and not comp.has_regressions
    assert "cannot be listed" in comp.scope and comp.scope in render.headline(comp)
