"""A run's cases are expanded once and shared with its pytest processes, and the controller's
lane scheduler hands each worker exactly its lane's items."""

from __future__ import annotations

from dataclasses import asdict
from types import SimpleNamespace

import pytest

from farm.run import plan as plan_mod
from farm.run.pipeline import plan_lanes
from farm.run.plugin import _make_slot_scheduling
from farm.run.slots import SlotInfo
from suites.caseset import Selection

SLOTS = [
    SlotInfo.from_json(s)
    for s in (
        {"id": "a:0", "host": "a", "family": "ascend910b", "soc": "Ascend910B1", "device": 0},
        {"id": "a:1", "host": "a", "family": "ascend910b", "soc": "Ascend910B1", "device": 1},
        {"id": "b:0", "host": "b", "family": "ascend310b", "soc": "Ascend310B1", "device": 0},
    )
]


def make_plan(tmp_path, run_id="run-1", tier="smoke") -> plan_mod.Plan:
    plan = plan_mod.Plan(
        run_id=run_id,
        run_dir=tmp_path,
        tier=tier,
        backend="native",
        inventory={"source": "embedded"},
        slots=SLOTS,
        hosts={},
    )
    plan.save()
    return plan


@pytest.fixture
def expanded(monkeypatch):
    """Counts expansions of a selection."""
    calls = []
    real = Selection.cases

    def counting(self):
        calls.append(self.tier)
        return real(self)

    monkeypatch.setattr(Selection, "cases", counting)
    return calls


def test_the_saved_cases_are_what_the_plan_loads_without_expanding(tmp_path, expanded):
    plan = make_plan(tmp_path)
    cases = Selection(tier="smoke").cases()
    plan.save_cases(cases)
    expanded.clear()
    loaded = plan_mod.Plan.load(plan.path).cases()
    assert expanded == []
    assert [c.id for c in loaded] == [c.id for c in cases]
    assert [repr(asdict(c)) for c in loaded] == [repr(asdict(c)) for c in cases]  # NaN fills
    assert [c.expected for c in loaded] == [c.expected for c in cases]


@pytest.mark.parametrize("change", ["run_id", "tier", "corrupt", "stale", "missing"])
def test_cases_of_another_plan_or_no_file_are_expanded_again(tmp_path, expanded, change):
    make_plan(tmp_path).save_cases(Selection(tier="smoke").cases()[:3])
    cases_file = tmp_path / plan_mod.CASES_FILE
    plan = make_plan(tmp_path)
    if change == "run_id":
        plan = make_plan(tmp_path, run_id="run-2")
    elif change == "tier":  # the same run id, another selection
        plan.selection = Selection(tier="nightly").to_json()
    elif change == "corrupt":
        cases_file.write_bytes(cases_file.read_bytes()[:100])
    elif change == "stale":  # a class that no longer exists where the pickle says
        cases_file.write_bytes(b"csuites.no_such_module\nCase\n.")
    else:
        cases_file.unlink()
    expanded.clear()
    cases = plan.cases()
    assert len(expanded) == 1
    want = Selection.from_json(plan.selection, plan.tier).cases()
    assert [c.id for c in cases] == [c.id for c in want]


def test_cases_that_cannot_be_saved_are_expanded_by_each_process(tmp_path, monkeypatch, expanded):
    plan = make_plan(tmp_path)
    cases = Selection(tier="smoke").cases()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plan_mod.pickle, "dump", full_disk)
    plan.save_cases(cases)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
    expanded.clear()
    assert [c.id for c in plan.cases()] == [c.id for c in cases]
    assert len(expanded) == 1


class FakeConfig:
    def __init__(self):
        self.stash = pytest.Stash()  # where the plugin keeps the run's cases

    def getvalue(self, name):
        return {"tx": ["2*popen"], "dist": "loadgroup"}[name]


class FakeNode:
    def __init__(self, name):
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shut = False
        self.shutting_down = False

    def send_runtest_some(self, indexes):
        self.sent += indexes

    def shutdown(self):
        self.shut = True


def test_each_worker_gets_the_items_of_its_lane_once(tmp_path):
    plan = make_plan(tmp_path)
    cases = Selection(tier="smoke").cases()
    plan.save_cases(cases)
    collection = [f"suites/test_precision.py::test_precision[{c.id}]" for c in cases]
    nodes = [FakeNode("gw0"), FakeNode("gw1")]
    scheduler = _make_slot_scheduling(FakeConfig(), None, plan)
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()

    given = {
        node.name: [scheduler.registered_collections[node][i] for i in node.sent] for node in nodes
    }
    assert sorted(given["gw0"] + given["gw1"]) == sorted(collection)
    assignment, slot_lane = plan_lanes(cases, plan.slot_infos(), plan.slots_by_family(), 2)
    lane_of = {c.id: slot_lane[assignment[c.id]] for c in cases}
    for name, nodeids in given.items():
        lanes = {lane_of[nodeid.rpartition("[")[2][:-1]] for nodeid in nodeids}
        assert len(lanes) == 1, f"{name} got items of lanes {lanes}"
    assert given["gw0"] and given["gw1"]
