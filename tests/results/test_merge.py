"""`farm merge` (farm/results/merge.py, farm/cli/merge_command.py) over shards written straight
into a real store and run directories: what makes a group whole or incomplete, and the merged run's
records, exit code, JUnit, Allure results and summary. The shards run for real in
tests/e2e/test_sharding.py."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import cast

import pytest
from rich.console import Console

from farm.cli import merge_command
from farm.results import merge
from farm.results.store import RunStore, store_location
from farm.util.errors import UsageError
from tests.stores import newest_run

from .conftest import RUN_META, failed, record

GROUP = "pipeline-42"


def _shard_dir(root: Path, run_id: str, records: list[dict]) -> Path:
    """What a shard leaves in its run directory: junit.xml, allure-results, summary.json."""
    where = root / run_id
    (where / "allure-results").mkdir(parents=True)
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name="pytest")
    for r in records:
        case = ET.SubElement(
            suite, "testcase", classname="suites.test_precision", name=f"test_x[{r['case_id']}]"
        )
        if r["outcome"] == "failed":
            ET.SubElement(case, "failure", message=r["message"])
        result = {"name": r["case_id"], "uuid": f"u-{r['case_id']}", "status": r["outcome"]}
        (where / "allure-results" / f"u-{r['case_id']}-result.json").write_text(json.dumps(result))
        (where / "allure-results" / f"u-{r['case_id']}-attachment.txt").write_text("plot")
    (where / "allure-results" / "environment.properties").write_text(f"shard={run_id}\n")
    (where / "junit.xml").write_bytes(ET.tostring(suites))
    (where / "summary.json").write_text(json.dumps({"quarantined_during_run": {}}))
    return where


def _shard(store, root, k, n, records, *, status="finished", code=0, group=GROUP, **meta):
    run_id = f"shard-{group}-{k}-of-{n}-{meta.get('git_commit', 'c')[:4]}-{status}"
    run_dir = _shard_dir(root, run_id, records)
    store.begin_run(
        {
            **RUN_META,
            "run_id": run_id,
            "run_dir": str(run_dir),
            "shard": f"{k}/{n}",
            "run_group": group,
            "subset": True,
            **meta,
        }
    )
    store.add_results(run_id, records)
    store.finish_run(run_id, code, status=status, subset=True)
    return run_id


@pytest.fixture
def where(tmp_path):
    return tmp_path


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "farm.sqlite"


def _merge(store_path, runs_dir):
    console = Console(stderr=True, soft_wrap=True, width=200)
    location = store_location(store_path)
    return merge_command.merge(console, location, GROUP, runs_dir, report=False)


def _merged(store_path) -> dict:
    with RunStore(store_path) as store:
        (run,) = merge.merged_runs(store, GROUP)
        return dict(run, records=store.results(run["run_id"]))


def test_four_whole_shards_make_one_run_of_all_their_cases(where, store_path, capsys):
    runs = where / "runs"
    with RunStore(store_path) as store:
        for k in range(1, 5):  # the CI's jobs start one after another
            started = f"2026-12-01T02:0{k}:00+00:00"
            _shard(store, runs, k, 4, [record(f"c{k}a"), record(f"c{k}b")], started_at=started)
    assert _merge(store_path, runs) == 0
    run = _merged(store_path)
    assert run["status"] == "finished" and run["exit_code"] == 0
    assert sorted(r["case_id"] for r in run["records"]) == sorted(
        f"c{k}{x}" for k in range(1, 5) for x in "ab"
    )
    assert run["run_group"] == GROUP and len(run["merged_from"]) == 4
    assert "shard" not in run  # the merged run is no shard: it may be a baseline
    out = Path(run["run_dir"])
    assert out.parent == runs
    junit = ET.parse(out / "junit.xml").getroot()
    assert len(list(junit.iter("testcase"))) == 8
    assert [s.get("name") for s in junit.iter("testsuite")] == [
        f"pytest shard {k}/4" for k in range(1, 5)
    ]
    results = sorted(p.name for p in (out / "allure-results").glob("*-result.json"))
    assert len(results) == 8
    assert len(list((out / "allure-results").glob("*-attachment.txt"))) == 8
    env = (out / "allure-results" / "environment.properties").read_text()
    assert "shard=" not in env  # the run's own extras, not a shard's
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == 8 and summary["exit_code"] == 0
    assert summary["incomplete"] == [] and sorted(summary["shards"]) == ["1", "2", "3", "4"]
    with RunStore(store_path) as store:  # what farm report and compare take without a run id
        assert newest_run(store, finished=True)["run_id"] == run["run_id"]


def test_a_failure_in_one_shard_fails_the_merged_run(where, store_path):
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        _shard(store, runs, 2, 2, [failed("b")], code=1)
    assert _merge(store_path, runs) == 1
    assert _merged(store_path)["exit_code"] == 1


def test_a_shard_degraded_by_infrastructure_degrades_the_merged_run(where, store_path):
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        _shard(store, runs, 2, 2, [record("b")], code=2)
    assert _merge(store_path, runs) == 2
    assert _merged(store_path)["status"] == "finished"


def test_a_missing_shard_makes_an_incomplete_run_never_a_green_one(where, store_path, capsys):
    runs = where / "runs"
    with RunStore(store_path) as store:
        for k in (1, 2, 4):
            _shard(store, runs, k, 4, [record(f"c{k}")])
    assert _merge(store_path, runs) == 2
    run = _merged(store_path)
    assert run["status"] == merge.INCOMPLETE_STATUS and run["exit_code"] == 2 and run["subset"]
    assert not run["green"]
    assert run["incomplete"] == ["shard 3/4 is missing"]
    lines = capsys.readouterr().err.splitlines()
    assert any("is incomplete (exit 2): shard 3/4 is missing" in line for line in lines)
    with RunStore(store_path) as store:
        assert store.baseline_for("smoke") is None


def test_missing_shards_are_named_in_runs_not_one_by_one(where, store_path):
    runs = where / "runs"
    with RunStore(store_path) as store:
        for k in (1, 6, 9):
            _shard(store, runs, k, 10, [record(f"c{k}")])
    assert _merge(store_path, runs) == 2
    assert _merged(store_path)["incomplete"] == ["shards 2-5, 7-8, 10 of 10 are missing"]


@pytest.mark.parametrize("status", ["interrupted", "aborted"])
def test_a_shard_that_did_not_finish_makes_the_run_incomplete(where, store_path, status):
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        bad = _shard(store, runs, 2, 2, [record("b")], status=status, code=130)
        found = merge.gather(store, GROUP, runs)
    assert found.problems == [f"shard 2/2 (run {bad}) is {status}"]
    assert _merge(store_path, runs) == 2


def test_a_shard_whose_run_directory_is_not_here_makes_the_run_incomplete(where, store_path):
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        gone = _shard(store, runs, 2, 2, [record("b")])
    for path in sorted((runs / gone).rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (runs / gone).rmdir()
    with RunStore(store_path) as store:
        (problem,) = merge.gather(store, GROUP, runs).problems
    assert problem.startswith(f"shard 2/2 (run {gone}): its run directory is not found")
    assert str(runs / gone) in problem
    assert _merge(store_path, runs) == 2


def test_shards_of_another_commit_are_not_one_run(where, store_path):
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        _shard(store, runs, 2, 2, [record("b")], git_commit="f" * 40)
        (problem,) = merge.gather(store, GROUP, runs).problems
    assert "has another git_commit" in problem


def test_a_shard_of_another_tier_is_one_problem_naming_each_difference(where, store_path):
    """Another tier changes the label too: that was two problems, the same shard twice."""
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        _shard(store, runs, 2, 2, [record("b")], tier="nightly", label="tier nightly")
        (problem,) = merge.gather(store, GROUP, runs).problems
    assert "has another tier ('nightly', not 'smoke') and label ('tier nightly'" in problem


def test_an_incomplete_merge_of_shards_sharing_cases_counts_what_it_stores(where, store_path):
    """Shards of two tiers hold some of the same cases: the merged run is aborted (incomplete),
    and its summary, JUnit and Allure results count the cases it stores (before: the summary
    counted each shared case twice, 301 against 299 stored)."""
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a"), record("b"), record("c")])
        _shard(
            store, runs, 2, 2, [record("b"), failed("c"), record("d")], tier="nightly", label="n"
        )
    assert _merge(store_path, runs) == 2
    run = _merged(store_path)
    assert run["status"] == "aborted" and sorted(r["case_id"] for r in run["records"]) == [
        "a",
        "b",
        "c",
        "d",
    ]
    out = Path(run["run_dir"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == len(run["records"]) == run["counts"]["total"] == 4
    assert sum(summary["outcomes"].values()) == 4
    assert len(list(ET.parse(out / "junit.xml").getroot().iter("testcase"))) == 4
    assert len(list((out / "allure-results").glob("*-result.json"))) == 4
    assert any("2 case(s) in more than one shard" in p for p in summary["incomplete"])


def test_shards_that_disagree_on_n_are_not_one_run(where, store_path):
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        _shard(store, runs, 2, 3, [record("b")])
        problems = merge.gather(store, GROUP, runs).problems
    assert problems[0] == "its shards disagree on N (2, 3)"
    assert "shard 3/3 is missing" in problems


def test_a_retried_shard_counts_its_finished_try(where, store_path):
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        _shard(store, runs, 2, 2, [record("b")], status="aborted", code=2)
        again = _shard(store, runs, 2, 2, [record("b")], git_commit=RUN_META["git_commit"])
        found = merge.gather(store, GROUP, runs)
    assert found.complete and found.shards[2]["run_id"] == again


def test_merging_again_makes_no_second_run(where, store_path, capsys):
    """The last shard to finish merges; the CI merge job after it finds the merged run."""
    runs = where / "runs"
    with RunStore(store_path) as store:
        for k in (1, 2):
            _shard(store, runs, k, 2, [record(f"c{k}")])
    assert _merge(store_path, runs) == 0
    assert _merge(store_path, runs) == 0
    assert "merged already as run" in capsys.readouterr().err
    with RunStore(store_path) as store:
        assert len(merge.merged_runs(store, GROUP)) == 1


def _two_shards(store_path, runs, second=None):
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("c1")])
        _shard(store, runs, 2, 2, [second or record("c2")], code=1 if second else 0)


def test_a_merge_that_ran_while_this_one_worked_is_the_one_merged_run(
    where, store_spec, monkeypatch, capsys
):
    """Three merges at once stored two or three merged runs, each a baseline candidate: each
    looked, found none, and began its own. Here another merge runs whole between this one's look
    and its claim: this one stores nothing and answers with that run and its exit code."""
    runs = where / "runs"
    _two_shards(store_spec, runs, failed("c2"))
    real = merge.quarantined_in
    inner: list[int] = []
    calls: list[int] = []

    def meanwhile(group):
        calls.append(1)
        if len(calls) == 1:  # the other merge, from look to end, inside this one's window
            inner.append(_merge(store_spec, runs))
        return real(group)

    monkeypatch.setattr(merge, "quarantined_in", meanwhile)
    assert _merge(store_spec, runs) == inner[0] == 1
    assert _merged(store_spec)["exit_code"] == 1  # exactly one merged run
    assert "merged already as run" in capsys.readouterr().err


def test_a_merge_waits_for_one_still_making_the_merged_run_then_answers_as_it(
    where, store_spec, monkeypatch
):
    """The other merge has claimed the group and is still writing: this one says so once, waits
    until it is done (woken by the line it prints, not by time), and answers with its run."""
    import threading

    runs = where / "runs"
    _two_shards(store_spec, runs)
    claimed, waiting = threading.Event(), threading.Event()
    real = merge.merged_allure

    def slow_allure(group, results, records):  # the first merge, once it holds the claim
        claimed.set()
        assert waiting.wait(timeout=60), "the second merge never said it waits"
        return real(group, results, records)

    monkeypatch.setattr(merge, "merged_allure", slow_allure)
    first: list[int] = []
    other = threading.Thread(target=lambda: first.append(_merge(store_spec, runs)))
    other.start()
    lines: list[str] = []

    class NotingConsole:
        def print(self, text, **_):
            lines.append(str(text))
            if "another farm merge is making its merged run" in str(text):
                waiting.set()

    assert claimed.wait(timeout=60)
    console = cast(Console, NotingConsole())  # merge only prints
    code = merge_command.merge(console, store_location(store_spec), GROUP, runs, report=False)
    other.join(timeout=60)
    assert first == [0] and code == 0, (first, code, lines)
    assert sum("waiting for it" in line for line in lines) == 1
    assert any("merged already as run" in line for line in lines)
    assert _merged(store_spec)["status"] == "finished"


def test_a_merge_whose_process_was_killed_is_made_again_by_the_next(where, store_spec):
    """A merged run left running by a merge killed mid-way is recovered as aborted (exit 2); it
    holds nothing: before, the next merge answered with it, "merged already", exit 2."""
    runs = where / "runs"
    _two_shards(store_spec, runs)
    with RunStore(store_spec) as store:
        ids = [r["run_id"] for r in merge.shard_runs(store, GROUP)][::-1]
        store.begin_run(
            {
                **RUN_META,
                "run_id": "killed-merge",
                "run_group": GROUP,
                "merged_from": ids,
                "incomplete": [],
                "owner": f"{socket.gethostname()}:999999999:0",  # this machine's, gone
            }
        )
    assert _merge(store_spec, runs) == 0
    with RunStore(store_spec) as store:
        made = merge.merged_runs(store, GROUP)
    assert [(r["run_id"] == "killed-merge", r["status"]) for r in made] == [
        (False, "finished"),
        (True, "aborted"),
    ]


def test_a_group_with_no_shard_is_a_usage_error(store_path):
    with RunStore(store_path) as store:
        store.begin_run(dict(RUN_META))
        with pytest.raises(UsageError, match=f"run group '{GROUP}': no shard of it"):
            merge.gather(store, GROUP)


def test_shards_of_the_whole_tier_merge_into_its_baseline_candidate(where, store_path):
    """Shards that ran every case of their tier make a whole run: not a subset, the tier's
    baseline once green (no shard ever is)."""
    from suites import matrix

    runs = where / "runs"
    ids = [c.id for c in matrix.expand("smoke")]
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record(cid) for cid in ids[::2]])
        _shard(store, runs, 2, 2, [record(cid) for cid in ids[1::2]])
        assert store.baseline_for("smoke") is None
    assert _merge(store_path, runs) == 0
    run = _merged(store_path)
    assert not run["subset"] and run["green"]
    with RunStore(store_path) as store:
        assert store.baseline_for("smoke") == run["run_id"]


def test_shards_with_their_own_copies_of_one_case_file_are_one_run(where, store_path):
    """A case-file run records its copy of the file (runs/<run id>/cases/): not a difference."""
    runs = where / "runs"
    with RunStore(store_path) as store:
        for k in (1, 2):
            selection = {
                "tier": None,
                "files": [f"/ci/job{k}/runs/r{k}/cases/0-mine.yaml"],
                "names": ["mine.yaml"],
                "explore": None,
                "explore_count": 50,
            }
            _shard(store, runs, k, 2, [record(f"c{k}")], tier="cases:mine", selection=selection)
        found = merge.gather(store, GROUP, runs)
    assert found.complete, found.problems
    assert merge.whole_selection(found) is None  # no copy of the file here: a subset, to be safe


def test_farm_merge_names_its_merged_run_on_the_last_line_made_now_or_before(
    where, store_path, capsys
):
    """A CI merge job reads run_id=<merged run id> from stdout's last line (never ls -td), and
    --json-summary copies the merged run's summary; merging again names the same run."""
    runs = where / "runs"
    with RunStore(store_path) as store:
        _shard(store, runs, 1, 2, [record("a")])
        _shard(store, runs, 2, 2, [failed("b")], code=1)
    wanted = where / "merged.json"
    argv = [GROUP, "--runs-dir", str(runs), "--store", str(store_path), "--no-report"]
    assert merge_command.main([*argv, "--json-summary", str(wanted)]) == 1
    run_id = _merged(store_path)["run_id"]
    assert capsys.readouterr().out.splitlines()[-1] == f"run_id={run_id}"
    assert json.loads(wanted.read_text())["run_id"] == run_id
    assert wanted.read_bytes() == (runs / run_id / "summary.json").read_bytes()
    assert merge_command.main(argv) == 1  # merged already: the same run, named the same way
    assert capsys.readouterr().out.splitlines()[-1] == f"run_id={run_id}"
