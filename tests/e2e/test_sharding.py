"""A sharded run end to end: a slice of the smoke tier (report_fixtures' slice, with the planted
tail bug so that its verdicts are mixed) run whole, then as 4 shards of one run group with
`farm merge` before the last shard (incomplete: exit 2) and after it (the last shard merged).
The merged run must hold the same case ids and verdicts as the unsharded run, with one
summary, one JUnit, one Allure results directory and one exit code; an empty shard still
records its run.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.results import merge
from farm.results.store import RunStore
from farm.run.plugin import case_id_of
from farm.run.reconcile import allure_case_id
from tests.e2e.conftest import Farm
from tests.e2e.report_fixtures import K_EXPR, selected_cases
from tests.requirements import need_allure

GROUP = "pipeline-1001"
RUN = (
    "run",
    "--tier",
    "smoke",
    "--no-progress",
    "--no-report",
    "--target",
    "twin",
    "--plant-bug",
    "tail",
    "--jobs",
    "2",
)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    farm = Farm(tmp_path_factory.mktemp("sharding"))
    whole = farm.run(*RUN, "--", "-k", K_EXPR)
    shards = [
        farm.run(*RUN, "--shard", f"{k}/4", "--run-group", GROUP, "--", "-k", K_EXPR)
        for k in (1, 2, 3)
    ]
    early = farm.run("merge", GROUP, "--no-report")
    shards.append(farm.run(*RUN, "--shard", "4/4", "--run-group", GROUP, "--", "-k", K_EXPR))
    return farm, whole, shards, early


def _runs(farm: Farm) -> list[dict]:
    with RunStore(farm.store) as store:
        return store.runs(limit=None)


def _verdicts(farm: Farm, run_id: str) -> dict[str, str]:
    with RunStore(farm.store) as store:
        return {r["case_id"]: r["outcome"] for r in store.result_rows(run_id)}


def _whole_run(farm: Farm) -> dict:
    (run,) = [r for r in _runs(farm) if not r.get("run_group")]
    return run


def _merged(farm: Farm) -> list[dict]:
    with RunStore(farm.store) as store:
        return merge.merged_runs(store, GROUP)


def test_the_unsharded_run_fails_some_cases_of_the_slice(sharded):
    farm, whole, _, _ = sharded
    assert whole.code == 1, whole.text[-3000:]
    verdicts = _verdicts(farm, _whole_run(farm)["run_id"])
    assert sorted(verdicts) == sorted(c.id for c in selected_cases())
    assert set(verdicts.values()) == {"passed", "failed"}


def test_each_case_ran_in_exactly_one_shard(sharded):
    farm, whole, shards, _ = sharded
    for k, shard in enumerate(shards, 1):
        assert shard.code in (0, 1), f"shard {k}:\n{shard.text[-3000:]}"
    runs = {r["shard"]: r for r in _runs(farm) if r.get("shard")}
    assert sorted(runs) == ["1/4", "2/4", "3/4", "4/4"]
    seen: list[str] = []
    for run in runs.values():
        assert run["run_group"] == GROUP and run["subset"] and run["status"] == "finished"
        seen += _verdicts(farm, run["run_id"])
    assert sorted(seen) == sorted(c.id for c in selected_cases())


def test_a_merge_before_the_last_shard_is_incomplete_and_exits_2(sharded):
    farm, _, _, early = sharded
    assert early.code == 2, early.text[-3000:]
    assert "is incomplete (exit 2): shard 4/4 is missing" in early.text
    incomplete = [r for r in _merged(farm) if r["status"] != "finished"]
    assert len(incomplete) == 1
    run = incomplete[0]
    assert run["status"] == merge.INCOMPLETE_STATUS and run["exit_code"] == 2
    assert run["incomplete"] == ["shard 4/4 is missing"] and not run["green"]


def test_the_last_shard_merges_into_the_runs_twin(sharded):
    """Same case ids and verdicts as the unsharded run of the same commit and selection, the
    same exit code, one summary, one JUnit and one allure-results holding exactly them."""
    farm, whole, shards, _ = sharded
    assert "merged run" in shards[-1].text
    finished = [r for r in _merged(farm) if r["status"] == "finished"]
    assert len(finished) == 1
    merged, single = finished[0], _whole_run(farm)
    assert merged["run_id"] in shards[-1].text
    want = _verdicts(farm, single["run_id"])
    assert _verdicts(farm, merged["run_id"]) == want
    assert merged["exit_code"] == single["exit_code"] == whole.code == 1
    assert merged["git_commit"] == single["git_commit"]
    assert merged["package_sha256"] == single["package_sha256"]
    assert merged["subset"] == single["subset"] is True  # -k: a slice of the tier
    run_dir = Path(merged["run_dir"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cases"] == len(want) and summary["exit_code"] == 1
    assert summary["outcomes"] == _counts(want)
    assert sorted(summary["shards"]) == ["1", "2", "3", "4"] and summary["incomplete"] == []
    junit = ET.parse(run_dir / "junit.xml").getroot()
    names = [case_id_of(c.get("name", "")) for c in junit.iter("testcase")]
    ids = [n for n in names if n is not None]
    assert len(ids) == len(names), names  # every testcase is a case's
    assert sorted(ids) == sorted(want)
    failed = {
        case_id_of(c.get("name", ""))
        for c in junit.iter("testcase")
        if c.find("failure") is not None
    }
    assert failed == {cid for cid, v in want.items() if v == "failed"}
    results = [
        json.loads(p.read_text()) for p in (run_dir / "allure-results").glob("*-result.json")
    ]
    assert sorted(allure_case_id(r) for r in results) == sorted(want)
    assert {allure_case_id(r): r["status"] for r in results} == want


def _counts(verdicts: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in verdicts.values():
        out[v] = out.get(v, 0) + 1
    return out


def test_merging_again_makes_the_report_of_the_same_run(sharded):
    """The CI merge job after the last shard merged: no second run, the report made once."""
    need_allure()
    farm, _, _, _ = sharded
    again = farm.run("merge", GROUP)
    assert again.code == 1, again.text[-3000:]
    assert "merged already as run" in again.text
    finished = [r for r in _merged(farm) if r["status"] == "finished"]
    assert len(finished) == 1
    assert (Path(finished[0]["run_dir"]) / "report" / "index.html").is_file()


def test_an_empty_shard_records_its_run(farm):
    """N over the cases (here: -k leaves this shard none): exit 0, a finished run of no case."""
    result = farm.run(
        "run", "--tier", "smoke", "--no-progress", "--no-report", "--target", "twin", "--jobs", "1",
        "--shard", "2/2", "--run-group", "empty-1", "--", "-k", "no_such_case_word",
    )  # fmt: skip
    assert result.code == 0, result.text[-3000:]
    with RunStore(farm.store) as store:
        (run,) = store.runs(limit=None)
    assert run["shard"] == "2/2" and run["run_group"] == "empty-1"
    assert run["status"] == "finished" and run["counts"]["total"] == 0 and run["subset"]
    assert "not merged yet (shard 1/2 is missing); once every shard is done: farm merge" in (
        result.text
    )
