"""`farm shrink` without a pool: the candidate generator (suites/shrink.py), the greedy search
over a fake runner (farm/run/shrink.py), and the report's shrunk-form links
(farm/results/shrink_links.py)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from farm.results import shrink_links
from farm.results.store import RunStore
from farm.run import shrink as search_mod
from golden.contract import axes_consecutive, axes_in_range, normalize_axes
from golden.layouts import View
from suites import casefile, explore, matrix, shrink
from suites.case import Case

VOCAB = Case("ascend910b", "float16", (1, 32000), (1,), standard="mixed-tolerance")


def _interesting() -> list[Case]:
    """Tier cases of every kind the generator has a move for, and explored ones."""
    wanted = {
        "view": lambda c: any(isinstance(getattr(c, f"{n}_layout"), View) for n in TENSORS),
        "strided": lambda c: c.dy_layout == "strided",
        "y_shape": lambda c: c.y_shape is not None,
        "out_shape": lambda c: c.out_shape is not None,
        "missing": lambda c: c.missing is not None,
        "axes": lambda c: c.api == "axes" and len(c.axes) > 1,
        "negative": lambda c: any(a < 0 for a in c.axes),
        "range": lambda c: "range" in (c.y_dist, c.dy_dist),
        "fill": lambda c: "fill" in (c.y_dist, c.dy_dist),
        "at": lambda c: c.special_at != "random",
        "special": lambda c: c.special != "none",
        "rank": lambda c: len(c.shape) >= 5,
        "rejected": lambda c: not c.accepted,
        "empty": lambda c: c.numel == 0,
    }
    found: dict[str, list[Case]] = {k: [] for k in wanted}
    for case in matrix.expand("nightly"):
        for kind, test in wanted.items():
            if test(case) and len(found[kind]) < 6:
                found[kind].append(case)
    missing = [k for k, v in found.items() if not v]
    assert not missing, f"no nightly case of kind {missing}"
    return [c for cs in found.values() for c in cs] + explore.draw("shrinktest", 120) + [VOCAB]


TENSORS = ("dy", "y", "out")
CASES = _interesting()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_candidate_is_a_valid_smaller_case_that_the_contract_treats_alike(case):
    here = shrink.size(case)
    found = shrink.candidates(case)
    ids = [c.id for c in found]
    assert len(ids) == len(set(ids)), "a candidate given twice"
    assert case.id not in ids
    assert [shrink.size(c) for c in found] == sorted(shrink.size(c) for c in found)
    for smaller in found:
        # Valid: it makes the same case again from its JSON form (every field re-validated).
        assert Case.from_dict(json.loads(json.dumps(smaller.to_dict()))) == smaller
        assert shrink.size(smaller) < here, smaller.id
        assert (smaller.family, smaller.dtype) == (case.family, case.dtype)
        assert smaller.expected.reason == case.expected.reason, smaller.id
        assert smaller.explore == ""
        if case.accepted:  # the reduce axes stay a valid set of the new shape
            rank = len(smaller.shape)
            assert axes_in_range(smaller.axes, rank)
            assert axes_consecutive(normalize_axes(smaller.axes, rank))
            assert smaller.api == "axes" or len(smaller.axes) == 1


def test_a_vocabulary_row_shrinks_by_halves_first_and_loses_its_extent_one_dim():
    ids = [c.shape for c in shrink.candidates(VOCAB)]
    assert ids[:5] == [(1, 1), (1, 16000), (1, 24000), (1, 31999), (32000,)]
    flat = next(c for c in shrink.candidates(VOCAB) if c.shape == (32000,))
    assert flat.axes == (0,)


@pytest.mark.parametrize("pick", ["first", "last", "random"])
def test_the_greedy_search_ends_whichever_candidate_it_takes(pick):
    """Every candidate is smaller by `size`, so any chain of candidates ends; here within a
    generous bound, from a case with something of every kind to shrink."""
    rnd = random.Random(7)
    start = Case(
        "ascend910b",
        "float32",
        (2, 3, 5, 4),
        (-3, -2),
        api="axes",
        y_dist="range",
        y_range=(-20.0, 4.0),
        dy_dist="fill",
        dy_fill=float("inf"),
        special="nan_y",
        special_at="row_end",
        out_layout="strided",
        explore="abc.3",
    )
    case, steps = start, 0
    while True:
        found = shrink.candidates(case)
        if not found:
            break
        case = {"first": found[0], "last": found[-1], "random": rnd.choice(found)}[pick]
        steps += 1
        assert steps < 2000
    assert shrink.complexity(case) == 0
    assert case.numel == 1 if pick == "first" else case.numel <= start.numel


def test_values_layouts_and_specials_become_simpler():
    case = Case(
        "ascend910b",
        "float32",
        (4, 8),
        (1,),
        y_dist="range",
        y_range=(-8.0, 0.0),
        dy_dist="fill",
        dy_fill=2.0,
        special="nan_dy",
        special_at="row_middle",
        dy_layout="strided",
        y_layout="strided",
        out_layout=View((16, 1), 80, 3),
    )
    same_shape = {c.id: c for c in shrink.candidates(case) if c.shape == case.shape}
    changes = [
        {k: v for k, v in c.to_dict().items() if case.to_dict().get(k) != v and k != "id"}
        for c in same_shape.values()
    ]
    for want in (
        {"special": "none"},
        {"special_at": "random"},
        {"y_dist": "uniform"},
        {"dy_dist": "normal"},
        {"y_range": [-8.0, -4.0]},
        {"y_range": [-4.0, 0.0]},
        {"out_layout": "contiguous"},
        {"out_layout": "strided"},
        {"dy_layout": "contiguous"},
    ):
        assert any(want.items() <= change.items() for change in changes), want


def test_a_range_is_narrowed_only_while_it_is_wide():
    narrow = Case("ascend910b", "float32", (2, 4), (1,), y_dist="range", y_range=(0.0, 0.75))
    assert not [c for c in shrink.candidates(narrow) if c.y_dist == "range" and c.shape == (2, 4)]


def test_views_follow_their_tensors_shape():
    view = View((40, 2), 130, 5)  # every other element, rows 40 apart, 5 past the view
    case = Case("ascend910b", "float32", (3, 16), (1,), dy_layout=view)
    found = {c.shape: c for c in shrink.candidates(case)}
    half = found[(3, 8)].dy_layout
    assert isinstance(half, View) and half.strides == view.strides
    assert half.storage == 5 + 40 * 2 + 2 * 7 + 1 + (130 - (5 + 80 + 30 + 1))
    row = found[(16,)].dy_layout  # the kept dim dropped, with its stride
    assert isinstance(row, View) and row.strides == (2,)


def test_a_shape_mismatch_keeps_its_mismatch():
    case = Case("ascend910b", "float32", (4, 8), (1,), y_shape=(4, 9))
    assert case.expected.reason == "shape_mismatch"
    found = shrink.candidates(case)
    assert found and all(c.y_shape != c.shape for c in found)
    assert ((2, 8), (2, 9)) in [(c.shape, c.y_shape) for c in found]  # follows dy's extent
    assert ((4, 8), (4, 4)) in [(c.shape, c.y_shape) for c in found]  # shrinks on its own


def test_the_only_reduce_axis_stays():
    case = Case("ascend910b", "float32", (4, 1, 33), (1,))  # a no-reduce case
    for smaller in shrink.candidates(case):
        assert smaller.schedule == "NO_REDUCE"
        assert smaller.shape[smaller.axes[0]] == 1


def test_a_minimal_case_has_no_candidates():
    assert shrink.candidates(Case("ascend910b", "float32", (1,), (0,))) == []


# -- the search, over a fake pool -------------------------------------------------------------


class FakePool:
    """Fails with `category` when `fails(case)`; passes otherwise; `broken` ids come back
    broken (as many times as listed)."""

    def __init__(self, fails, category="precision", broken=()):
        self.fails, self.category = fails, category
        self.broken = list(broken)
        self.ran: list[str] = []

    def run(self, case: Case) -> dict:
        self.ran.append(case.id)
        if case.id in self.broken:
            self.broken.remove(case.id)
            return {"outcome": "broken", "category": "infrastructure", "message": "lost"}
        if self.fails(case):
            return {"outcome": "failed", "category": self.category, "status": 0, "message": "x"}
        return {"outcome": "passed", "category": None, "status": 0, "message": "ok"}


def long_rows(case: Case) -> bool:
    """A bug of rows of at least 300 elements (a reduce extent, that is)."""
    return case.numel > 0 and case.shape[case.axes[0]] >= 300


def shrink_with(pool: FakePool, case: Case = VOCAB, **kw) -> search_mod.Search:
    first = search_mod.run_sure(pool.run, case)
    signature = search_mod.Signature.of(case, first)
    assert signature is not None
    return search_mod.search(case, signature, pool.run, **kw)


def test_the_search_finds_the_smallest_failing_row_and_runs_nothing_twice():
    pool = FakePool(long_rows)
    found = shrink_with(pool)
    assert found.shrunk.shape == (300,) and found.shrunk.dy_dist == "normal"
    assert long_rows(found.shrunk)
    assert not found.exhausted
    assert len(pool.ran) == len(set(pool.ran)) == found.tried + 1
    assert [t.verdict for t in found.tries].count("same") == found.steps
    # Deterministic: the same verdicts give the same search.
    again = shrink_with(FakePool(long_rows))
    assert [t.case.id for t in again.tries] == [t.case.id for t in found.tries]


def test_another_failure_is_not_the_same_failure():
    class TwoBugs(FakePool):
        def run(self, case):
            record = super().run(case)
            if record["outcome"] == "failed" and case.numel < 1000:
                record["category"] = "kernel_fault"
            return record

    found = shrink_with(TwoBugs(long_rows))
    assert found.shrunk.numel >= 1000
    assert "different" in {t.verdict for t in found.tries}


def test_the_search_stops_at_max_tries():
    pool = FakePool(long_rows)
    found = shrink_with(pool, max_tries=5)
    assert found.tried == 5 and found.exhausted
    assert len(pool.ran) == 6


def test_a_broken_candidate_is_rerun_and_broken_twice_stops_the_search():
    first = shrink.candidates(VOCAB)[1]  # 1x16000, which fails
    once = shrink_with(FakePool(long_rows, broken=[first.id]))
    assert once.shrunk.shape == (300,)

    with pytest.raises(search_mod.ShrinkBroken, match="broken twice") as caught:
        shrink_with(FakePool(long_rows, broken=[first.id, first.id]))
    assert caught.value.exit_code == 2
    assert caught.value.search is not None and caught.value.search.shrunk == VOCAB


def test_a_rejection_failure_must_keep_its_status():
    case = Case("ascend910b", "float32", (4, 8), (1,), y_shape=(4, 9))
    record = {"outcome": "failed", "category": "wrong_status", "status": 161001}
    signature = search_mod.Signature.of(case, record)
    assert signature == search_mod.Signature("wrong_status", 161001)

    def run(c):
        status = 161001 if c.numel >= 8 else 161002
        return {"outcome": "failed", "category": "wrong_status", "status": status}

    found = search_mod.search(case, signature, run)
    assert found.shrunk.numel >= 8
    assert any(t.verdict == "different" for t in found.tries)


def test_the_repro_line_names_the_package_it_failed_on():
    line = search_mod.repro_command(
        "id1", Path("/tmp/a b.json"), target="ascendc-cpu", plant_bug="tail"
    )
    assert line == "farm repro id1 --cases '/tmp/a b.json' --plant-bug tail"
    assert "--target twin" in search_mod.repro_command("id1", "f.json", target="twin")


# -- the report's links -----------------------------------------------------------------------


def _result(results: Path, case_id: str, status: str) -> Path:
    path = results / f"{case_id[:8]}-{status}-result.json"
    path.write_text(
        json.dumps(
            {
                "uuid": f"u-{case_id}",
                "name": case_id,
                "status": status,
                "description": "the case's own text",
                "attachments": [{"name": "metrics.json", "source": "m.json", "type": "x"}],
                "parameters": [{"name": "case", "value": f"'{case_id}'", "excluded": True}],
            }
        )
    )
    return path


def test_the_report_links_a_failing_case_to_its_shrunk_form(tmp_path, monkeypatch):
    monkeypatch.setattr("farm.util.paths.RUNS_DIR", tmp_path / "runs")
    results = tmp_path / "allure-results"
    results.mkdir()
    failing = _result(results, VOCAB.id, "failed")
    other = Case("ascend910b", "float32", (2, 8), (1,))
    passing = _result(results, other.id, "passed")
    untouched = passing.read_text()
    store_path = tmp_path / "farm.sqlite"
    small = replace(VOCAB, shape=(2,), axes=(0,))
    with RunStore(store_path) as store:
        store.add_shrink(VOCAB.id, "sha-1", small.to_dict(), "precision", "ascendc-cpu", 32000, 20)
        store.add_shrink(other.id, "sha-1", small.to_dict(), "precision", "ascendc-cpu", 16, 3)
        store.add_shrink(VOCAB.id, "sha-2", VOCAB.to_dict(), "precision", "ascendc-cpu", 1, 1)
    run = {
        "package_sha256": "sha-1",
        "package": {"file": "/x/logsoftmaxgrad-0.1.0-ascendc-cpu-bug-trunc_narrow.tar.gz"},
    }
    written = casefile.dump([small], tmp_path / "runs" / "shrinks" / f"{VOCAB.id}.json")

    assert shrink_links.link_shrinks(results, store_path, run) == 1
    assert passing.read_text() == untouched  # a passed case gets no link
    result = json.loads(failing.read_text())
    names = [a["name"] for a in result["attachments"]]
    assert names == ["metrics.json", "shrunk form", "shrunk form.json"]
    text = (results / result["attachments"][1]["source"]).read_text()
    repro = f"farm repro {small.id} --cases {written} --plant-bug trunc_narrow"  # the file is there
    assert small.id in text and "2 elements; the case has 32,000" in text and repro in text
    document = results / result["attachments"][2]["source"]
    assert [c.id for c in casefile.load(document.rename(tmp_path / "shrunk.json"))] == [small.id]
    assert result["description"].startswith("the case's own text\n\n**shrunk form:** ")
    assert repro in result["description"]

    # Again (a second `farm report`): the same entries, not two of each.
    assert shrink_links.link_shrinks(results, store_path, run) == 1
    again = json.loads(failing.read_text())
    assert [a["name"] for a in again["attachments"]] == names
    assert again["description"].count("shrunk form") == 1

    # Another package's run: its shrink, not this one's; none: nothing.
    assert shrink_links.link_shrinks(results, store_path, dict(run, package_sha256="sha-3")) == 0


def test_a_report_without_a_store_or_results_goes_on(tmp_path, capsys):
    results = tmp_path / "allure-results"
    results.mkdir()
    _result(results, VOCAB.id, "failed")
    run = {"package_sha256": "sha-1"}
    assert shrink_links.link_shrinks(results, tmp_path / "none.sqlite", run) == 0
    assert "shrunk forms not linked" in capsys.readouterr().err
    assert shrink_links.link_shrinks(tmp_path / "nowhere", tmp_path / "none.sqlite", run) == 0


def test_a_tiling_that_differs_from_the_design_fails_as_in_a_run():
    from farm.agent.record import ResultRecord
    from farm.run.session import judged
    from suites.tiling import expected_tiling

    case = Case("ascend910b", "float32", (4, 33), (1,))
    tiling = expected_tiling(case, "Ascend910B1", contiguous=True)
    passed: ResultRecord = {
        "outcome": "passed",
        "category": None,
        "soc": "Ascend910B1",
        "tiling": tiling,
    }
    assert judged(case, passed) is passed
    wrong: ResultRecord = {**passed, "tiling": {**tiling, "cores_used": 99}}
    record = judged(case, wrong)
    assert (record["outcome"], record["category"]) == ("failed", "tiling")
    assert "cores_used 99" in record["message"]
    failed: ResultRecord = {**wrong, "outcome": "failed", "category": "precision"}
    assert judged(case, failed) is failed


@pytest.mark.parametrize("command", ["shrink", "repro"])
@pytest.mark.parametrize("case_id", ["", "   "])
def test_an_empty_case_id_is_named_as_such_before_anything_runs(command, case_id, capsys):
    """`farm shrink ''` blamed a case file (runs/shrinks/.json, its default output); it is the
    case id that is wrong, said before any tier is expanded or any host touched."""
    from farm.cli import main

    assert main([command, case_id]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"error: case id {case_id!r} is empty: pass the id of a case, as `farm cases --tier "
        "nightly` or a run's report names it"
    )
