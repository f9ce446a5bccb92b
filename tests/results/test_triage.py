"""farm triage on synthetic runs: the ranking, a run with no failure and one where every case
failed, ties, the store's counts, and that each group's rerun command selects exactly its cases
(pytest's own -k over items named as the farm names them, and the case file of --group)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest

from farm.agent.record import CASE_FIELDS
from farm.results import triage, triage_command
from farm.results.store import RunStore
from suites import casefile
from suites.case import Case
from tests import stores


def record(case: Case, outcome: str = "passed", category: str | None = None) -> dict:
    data: Mapping[str, Any] = case.to_dict()
    rec = {k: data[k] for k in CASE_FIELDS if k in data}
    rec.update(case_id=case.id, outcome=outcome, category=category, soc="Ascend910B1")
    return rec


def mid_run() -> tuple[list[Case], set[str]]:
    """Cases of the three schedules over several d1; the REDUCE_MID ones with d1 > 64 fail."""
    cases = []
    for d1 in (16, 64, 130, 200):
        for dtype in ("float32", "float16"):
            cases.append(Case("ascend910b", dtype, (2, d1, 5), (1,)))  # REDUCE_MID
            # Larger in all than the REDUCE_MID ones: no size alone tells the failures apart.
            cases.append(Case("ascend910b", dtype, (12, d1), (-1,)))  # REDUCE_TAIL
            cases.append(Case("ascend910b", dtype, (12, 1, d1), (1,), y_dist="arbitrary"))
    failing = {c.id for c in cases if c.schedule == "REDUCE_MID" and c.shape[1] > 64}
    return cases, failing


# What the top group of mid_run's failures reads.
MID = "a middle extent reduced (REDUCE_MID) with reduce extent > 64 (d1)"


def records_of(cases, failing, category="precision") -> list[dict]:
    return [
        record(c, "failed", category) if c.id in failing else record(c, "passed") for c in cases
    ]


def test_the_top_group_is_what_the_failures_share_with_its_counts():
    cases, failing = mid_run()
    result = triage.triage(records_of(cases, failing), {"run_id": "R"})

    top = result.groups[0]
    assert top.text == MID
    assert (top.failed, top.failures, top.passed, top.passes) == (4, 4, 0, len(cases) - 4)
    assert top.case_ids == sorted(failing)
    assert top.categories == {"precision": 4}
    assert result.lines()[0] == (
        f"1. 4 of 4 failures (4 precision): {MID}; and none of the {len(cases) - 4} passing cases"
    )
    # The threshold is one of the data's own extents (64), not a number made up between them.
    assert triage.Predicate("d1", ">", 64) in top.predicates


def test_later_groups_say_something_the_first_does_not():
    cases, failing = mid_run()
    result = triage.triage(records_of(cases, failing))
    first = set(result.groups[0].case_ids)
    for group in result.groups[1:]:
        # Each covers a failure the top group does not, or leaves out a pass it holds.
        assert set(group.case_ids) != first
        assert group.passed >= result.groups[0].passed


def test_a_run_without_failures_has_no_groups_and_says_so():
    cases, _ = mid_run()
    result = triage.triage(records_of(cases, set()), {"run_id": "R"})
    assert result.groups == []
    assert result.lines() == ["no failures in run R: nothing to triage"]


def test_a_run_where_every_case_failed_says_nothing_distinguishes_them():
    cases, _ = mid_run()
    result = triage.triage(records_of(cases, {c.id for c in cases}))
    assert result.groups == []
    assert result.lines() == ["every case failed: no shared feature distinguishes them"]
    assert triage.ALL_FAILED == "every case failed: no shared feature distinguishes them"


def test_broken_cases_count_on_neither_side():
    cases, failing = mid_run()
    records = records_of(cases, failing)
    broken = next(r for r in records if r["case_id"] not in failing)
    broken.update(outcome="broken", category="infrastructure")
    result = triage.triage(records)
    assert (result.failures, result.passes, result.broken) == (4, len(cases) - 5, 1)
    assert result.groups[0].passes == len(cases) - 5
    assert result.lines()[-1].startswith("(1 broken cases left out")


def test_ties_one_group_per_set_of_cases_the_simplest_name_and_any_row_order():
    # float16 is exactly the 310b family here: several names of one set of cases.
    cases = [Case("ascend910b", "float32", (2, n), (-1,)) for n in (5, 37, 200)]
    cases += [Case("ascend310b", "float16", (2, n), (-1,)) for n in (5, 37, 200)]
    failing = {c.id for c in cases if c.dtype == "float16"}
    records = records_of(cases, failing)
    result = triage.triage(records)
    names = [g.text for g in result.groups]
    # The single before any pair; among equals, the feature named first (triage.FEATURES).
    assert names[0] == "family ascend310b"
    assert "dtype float16" not in names  # the same cases as the first: not named again
    assert "a 2-byte dtype (float16, bfloat16)" not in names
    assert len({tuple(g.case_ids) for g in result.groups}) == len(result.groups)
    random.Random(3).shuffle(records)
    assert [g.text for g in triage.triage(records).groups] == names


def test_a_pair_beats_its_parts_only_when_it_tells_more():
    cases, failing = mid_run()
    # d1 > 64 alone also holds for the passing REDUCE_TAIL and NO_REDUCE cases of d1 130, 200.
    result = triage.triage(records_of(cases, failing))
    singles = [g for g in result.groups if len(g.predicates) == 1]
    assert all(g.score < result.groups[0].score for g in singles)


def stored_run(tmp_path, records, selection) -> tuple[RunStore, str]:
    store = RunStore(tmp_path / "farm.sqlite")
    run_id = store.begin_run({"tier": "smoke", "selection": selection, "target": "ascendc-cpu"})
    store.add_results(run_id, records)
    store.finish_run(run_id, 1)
    return store, run_id


def test_counts_are_the_stores(tmp_path):
    cases, failing = mid_run()
    store, run_id = stored_run(tmp_path, records_of(cases, failing), {"tier": "smoke"})
    with store:
        lines = triage.triage_lines(store, run_id)
        run = stores.stored_run(store, run_id)
        rows = store.result_rows(run_id)
    failed = [r for r in rows if r["outcome"] == "failed"]
    assert run["counts"]["failed"] == len(failed) == 4
    passed = run["counts"]["passed"]
    assert lines[0] == (
        f"1. 4 of 4 failures (4 precision): {MID}; and none of the {passed} passing cases"
    )
    assert lines[1].startswith("   rerun: farm run --tier smoke -- -k ")


def collected(tmp_path, case_ids: list[str], expression: str) -> list[str]:
    """The case ids pytest's -k selects among items named as the farm's suites name them
    (suites/test_precision.py::test_precision[<case id>], farm/run/plugin.py)."""
    suite = tmp_path / "suites"
    suite.mkdir(exist_ok=True)
    (suite / "ids.json").write_text(json.dumps(case_ids))
    (suite / "test_precision.py").write_text(
        "import json, pathlib, pytest\n"
        "IDS = json.loads((pathlib.Path(__file__).parent / 'ids.json').read_text())\n"
        "@pytest.mark.parametrize('case', IDS, ids=IDS)\n"
        "def test_precision(case):\n    pass\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["-p", "no:farm", "-p", "no:randomly", "-k", expression, str(suite)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr
    return [line.split("[", 1)[1][:-1] for line in proc.stdout.splitlines() if "::" in line]


def test_the_rerun_command_selects_exactly_the_groups_cases(tmp_path):
    cases, failing = mid_run()
    # Ids that are prefixes of others (a strided twin) must not drag their longer twins in.
    cases += [Case("ascend910b", "float32", (2, 130, 5), (1,), out_layout="strided")]
    result = triage.triage(records_of(cases, failing), {"run_id": "R", "tier": "smoke"})
    all_ids = [c.id for c in cases]
    for group in result.groups:
        command = group.rerun
        assert command.startswith("farm run --tier smoke -- -k ")
        expression = command.split(" -k ", 1)[1].strip("'")
        assert sorted(collected(tmp_path, all_ids, expression)) == group.case_ids


def test_a_large_group_is_rerun_from_the_case_file_triage_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(triage, "INLINE_IDS", 2)
    cases, failing = mid_run()
    path = tmp_path / "cases.json"
    casefile.dump(cases, path, source="test")
    selection = {"tier": None, "files": [str(path)], "explore": None, "names": ["cases"]}
    store, run_id = stored_run(tmp_path, records_of(cases, failing), selection)
    store.close()
    result = triage.triage(records_of(cases, failing), {"run_id": run_id})
    out = tmp_path / "group.json"
    assert result.groups[0].rerun == (
        f"farm triage {run_id} --group 1 -o triage-{run_id}-1.json && "
        f"farm run --cases triage-{run_id}-1.json"
    )
    code = triage_command.main(
        [run_id, "--store", str(tmp_path / "farm.sqlite"), "--group", "1", "-o", str(out)]
    )
    assert code == 0
    assert sorted(c.id for c in casefile.load(out)) == sorted(failing)


def test_the_command_names_the_runs_operator_and_selection():
    run = {
        "selection": {"tier": "nightly", "files": ["a.json"], "explore": "s1", "explore_count": 9},
        "target": "twin",
        "backend": "torch",
        "package": {"file": "/d/logsoftmaxgrad-0.1.0-twin-bug-tail.tar.gz"},
    }
    assert triage.selection_arguments(run) == [
        "--tier", "nightly", "--cases", "a.json", "--explore", "s1", "--explore-count", "9",
    ]  # fmt: skip
    assert triage.operator_arguments(run) == [
        "--target", "twin", "--backend", "torch", "--plant-bug", "tail",
    ]  # fmt: skip
    # tail_mod's archive is not tail's.
    tail_mod = {"package": {"file": "logsoftmaxgrad-0.1.0-ascendc-cpu-bug-tail_mod.tar.gz"}}
    assert triage.planted_bug(tail_mod) == "tail_mod"


def test_farm_triage_json_and_its_mistakes(tmp_path, capsys):
    cases, failing = mid_run()
    store, run_id = stored_run(tmp_path, records_of(cases, failing), {"tier": "smoke"})
    store.close()
    db = str(tmp_path / "farm.sqlite")
    assert triage_command.main([run_id, "--store", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (
        data["groups"][0]["group"]
        == "a middle extent reduced (REDUCE_MID) with reduce extent > 64 (d1)"
    )
    assert data["groups"][0]["case_ids"] == sorted(failing)
    from farm.util.errors import UsageError

    with pytest.raises(UsageError, match="no run 'nope'"):
        triage_command.main(["nope", "--store", db])
    with pytest.raises(UsageError, match="no group 7"):
        triage_command.main([run_id, "--store", db, "--group", "7", "-o", str(tmp_path / "x.json")])


def test_farm_triage_prints_the_groups_through_the_command_table(tmp_path, capsys):
    from farm import cli

    cases, failing = mid_run()
    store, run_id = stored_run(tmp_path, records_of(cases, failing), {"tier": "smoke"})
    store.close()
    assert cli.main(["triage", run_id, "--store", str(tmp_path / "farm.sqlite")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"run {run_id}: 4 failed, {len(cases) - 4} passed"
    assert out[1].startswith(f"1. 4 of 4 failures (4 precision): {MID}; and none of ")
    assert cli.main(["triage", "--group", "1", "--store", str(tmp_path / "farm.sqlite")]) == 2
    assert "--group N and -o FILE go together" in capsys.readouterr().err


# -- what to run next (farm/results/triage_next.py) ------------------------------------------

GOOD, BAD = "a" * 40, "b" * 40


def test_each_group_says_what_to_shrink_and_what_to_bisect(tmp_path):
    """The representative is the group's smallest failing case; the bisect goes from the
    baseline's commit to the run's, over the group's failures, and farm bisect and farm shrink
    take the commands as they are."""
    import shlex

    from farm.cli import bisect_command, shrink_command
    from farm.results import triage_next

    cases, failing = mid_run()
    records = records_of(cases, failing)
    run = {"run_id": "R", "tier": "smoke", "git_commit": BAD, "target": "twin"}
    result = triage.triage(records, run)
    (step, *_) = triage_next.next_steps(result, records, run, {"run_id": "B", "git_commit": GOOD})
    by_id = {c.id: c for c in cases}
    smallest = min(failing, key=lambda cid: (by_id[cid].numel, cid))
    assert step.representative == smallest
    assert step.shrink == f"farm shrink {smallest} --target twin"
    assert step.bisect == shlex.join(
        ["farm", "bisect", "--good", GOOD, "--bad", BAD, "--target", "twin", *sorted(failing)]
    )
    parsed = bisect_command._parser().parse_args(shlex.split(step.bisect)[2:])
    assert (parsed.good, parsed.bad, sorted(parsed.case_ids)) == (GOOD, BAD, sorted(failing))
    assert shrink_command._parser().parse_args(shlex.split(step.shrink)[2:]).case_id == smallest
    lines = triage_next.lines(result, [step])
    assert lines[:4] == [
        result.lines()[0],
        result.lines()[1],
        f"   shrink: {step.shrink}",
        f"   bisect: {step.bisect}",
    ]


def test_no_bisect_without_a_baseline_of_another_commit():
    from farm.results import triage_next

    cases, failing = mid_run()
    records = records_of(cases, failing)
    run = {"run_id": "R", "git_commit": BAD}
    result = triage.triage(records, run)
    none = triage_next.next_steps(result, records, run, None)[0]
    assert none.bisect == "" and "no baseline" in none.no_bisect
    same = triage_next.next_steps(result, records, run, {"run_id": "B", "git_commit": BAD})[0]
    assert same.bisect == "" and same.no_bisect.startswith("the baseline B ran the same commit")
    assert triage_next.lines(result, [none])[3] == f"   bisect: {none.no_bisect}"
    # A planted bug's failures are no commit's (farm bisect builds the real operator at each):
    # the run was told to bisect from its baseline's commit to its own.
    planted = {**run, "package": {"file": "logsoftmaxgrad-0.1.0-ascendc-cpu-bug-tail.tar.gz"}}
    (step,) = triage_next.next_steps(result, records, planted, {"run_id": "B", "git_commit": GOOD})
    assert step.bisect == "" and step.no_bisect.startswith("the run's operator has the planted bug")
    assert step.shrink.endswith(" --plant-bug tail")


def test_a_large_group_is_bisected_from_its_case_file_and_summarised_without_ids(monkeypatch):
    from farm.results import triage_next

    monkeypatch.setattr(triage, "INLINE_IDS", 2)
    cases, failing = mid_run()
    records = records_of(cases, failing)
    run = {"run_id": "R", "git_commit": BAD, "selection": {"files": ["x.json"]}}
    result = triage.triage(records, run)
    steps = triage_next.next_steps(result, records, run, {"run_id": "B", "git_commit": GOOD})
    assert steps[0].bisect == (
        "farm triage R --group 1 -o triage-R-1.json && "
        f"farm bisect --good {GOOD} --bad {BAD} --cases triage-R-1.json"
    )
    assert steps[0].shrink.endswith(" --cases x.json")
    summary = triage_next.triage_json(result, steps)
    top = summary["groups"][0]
    assert top["line"] == result.groups[0].line() and top["rerun"] == result.groups[0].rerun
    assert (top["failed"], top["cases"], top["representative"]) == (4, 4, steps[0].representative)
    assert "case_ids" not in top  # 4 cases, more than INLINE_IDS (2)
    monkeypatch.setattr(triage, "INLINE_IDS", 40)
    assert triage_next.triage_json(result, steps)["groups"][0]["case_ids"] == sorted(failing)


def test_the_triage_of_a_stored_run_bisects_from_its_baseline(tmp_path):
    from farm.results import triage_next

    cases, failing = mid_run()
    with RunStore(tmp_path / "farm.sqlite") as store:
        good = store.begin_run({"tier": "smoke", "git_commit": GOOD})
        store.add_results(good, records_of(cases, set()))
        store.finish_run(good, 0)
        bad = store.begin_run({"tier": "smoke", "git_commit": BAD})
        store.add_results(bad, records_of(cases, failing))
        store.finish_run(bad, 1)
        result, steps = triage_next.run_triage(store, bad)
        assert triage_next.run_triage(store, good)[0].why_none.startswith("no failures")
    assert result.groups and steps[0].bisect.startswith(f"farm bisect --good {GOOD} --bad {BAD} ")


def test_the_reports_metadata_gives_each_group_whole_and_says_where_it_is_read_whole():
    """Allure 3 cuts a Metadata value where its column ends (~40 characters; a click shows it
    whole): each group's line is given whole, and the first entry says how to read it so."""
    from farm.results import triage_render

    cases, failing = mid_run()
    result = triage.triage(records_of(cases, failing), {"run_id": "R"})
    meta = triage_render.overview(result, [])
    assert list(meta)[0] == "triage.1" and list(meta)[-1] == "triage"  # the groups first
    assert meta["triage"].startswith("whole lines: click one, or triage.html")
    assert "Global Attachments" in meta["triage"]
    assert meta["triage.1"] == result.groups[0].line() and len(meta["triage.1"]) > 40
