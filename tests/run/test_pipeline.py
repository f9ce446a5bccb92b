"""The pipeline keeps every slot of a worker's lane busy while the items wait in order: each case
is run once, on a slot of its family, results reach their own items, and what ran ahead of items
that never came is dropped, not reported."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import cast

import pytest

from farm.run.dispatch import Dispatcher
from farm.run.leases import (
    BENCHMARK_IMPORT_ELEMENTS,
    WORKER_CASE_ELEMENTS,
    assign_slots,
    case_cost,
    slot_loads,
)
from farm.run.pipeline import Pipeline, lanes, plan_lanes
from farm.run.slots import SlotInfo
from suites.case import Case

SLOTS = [
    SlotInfo("a:0", "a", "ascend910b", "Ascend910B1", 0),
    SlotInfo("a:1", "a", "ascend910b", "Ascend910B1", 1),
    SlotInfo("b:0", "b", "ascend910b", "Ascend910B1", 0),
    SlotInfo("c:0", "c", "ascend310b", "Ascend310B1", 0),
]


class FakeDispatcher:
    def __init__(self, slots, delay=0.01, fail=()):
        self.slots = {s.id: s for s in slots}
        self.fail = set(fail)
        self.delay = delay
        self.ran: list[tuple[str, str | None]] = []
        self.busy: Counter[str] = Counter()
        self.most_at_once = 0
        self._lock = threading.Lock()

    def run(self, case, preferred=None):
        with self._lock:
            self.ran.append((case.id, preferred))
            self.busy[preferred or "-"] += 1
            self.most_at_once = max(self.most_at_once, sum(self.busy.values()))
            assert self.busy[preferred or "-"] == 1 or preferred is None, "a slot ran two at once"
        time.sleep(self.delay)
        with self._lock:
            self.busy[preferred or "-"] -= 1
        if case.id in self.fail:
            raise RuntimeError(f"agent lost running {case.id}")
        return {"case_id": case.id, "outcome": "passed", "slot": preferred}


def dispatching(fake: FakeDispatcher) -> Dispatcher:
    """The fake as the Dispatcher a Pipeline takes (it uses only the slots and run)."""
    return cast(Dispatcher, fake)


def cases(n, family="ascend910b"):
    return [Case(family, "float32", (2 + i, 3), (-1,)) for i in range(n)]


def test_lanes_deal_every_family_over_the_lanes():
    assert lanes(SLOTS, 2) == {"c:0": "lane0", "a:0": "lane1", "a:1": "lane0", "b:0": "lane1"}
    assert set(lanes(SLOTS, 1).values()) == {"lane0"}
    assert lanes([{"id": "x:0", "family": "f"}], 8) == {"x:0": "lane0"}


def test_lanes_balance_the_slots_estimated_work():
    # The one Ascend310B slot of the embedded pool carries as much as three Ascend910B slots:
    # dealt round-robin, lane0 would get it and a 910B slot (40 against 20).
    loads = {"c:0": 30, "a:0": 10, "a:1": 10, "b:0": 10}
    assert lanes(SLOTS, 2, loads) == {
        "c:0": "lane0",
        "a:0": "lane1",
        "a:1": "lane1",
        "b:0": "lane1",
    }
    # Equal loads deal every family over the lanes, as without loads.
    assert lanes(SLOTS, 2, dict.fromkeys(loads, 7)) == lanes(SLOTS, 2)


def test_assignment_balances_estimated_cost_and_the_estimate_tells_cases_apart():
    big = Case("ascend910b", "float32", (64, 2048), (-1,))
    assert case_cost(Case("ascend910b", "bfloat16", (64, 2048), (-1,))) > case_cost(big)
    rejected = Case("ascend310b", "bfloat16", (64, 2048), (-1,))  # bf16 is refused on 310B
    assert not rejected.accepted and case_cost(rejected) < case_cost(big) / 3
    small = cases(12)
    assignment = assign_slots([big, *small], {"ascend910b": ["a:0", "a:1"]})
    loads = slot_loads([big, *small], assignment)
    assert assignment[big.id] == "a:0" and {assignment[c.id] for c in small} == {"a:1"}
    # A slot's load is what its cases cost its lane: the agent's work and the worker's items.
    assert loads == {
        "a:0": case_cost(big) + WORKER_CASE_ELEMENTS,
        "a:1": sum(case_cost(c) + WORKER_CASE_ELEMENTS for c in small),
    }
    # The emulation runs a block per vector core: the same case costs more on a 48-core SoC.
    assert case_cost(Case("ascend910b", "float32", (4, 8), (-1,))) > case_cost(
        Case("ascend310b", "float32", (4, 8), (-1,))
    )


def test_a_familys_benchmark_ratio_cases_share_one_slot_that_carries_pytorchs_import():
    """Spread over the slots, every agent of a family would import PyTorch for its first
    benchmark-ratio case (2.8 s of CPU each): they go to one slot, whose load counts the import
    once, and evening out the lanes never moves them."""
    bench = [
        Case(family, "float32", (8, 129 + i), (-1,), standard="benchmark-ratio", level=level)
        for family in ("ascend910b", "ascend310b")
        for i, level in enumerate(("L0", "L1", "L2") * 3)
    ]
    rest = cases(90) + [Case("ascend310b", "float32", (2, 3 + i), (-1,)) for i in range(30)]
    mine = [*rest, *bench]
    by_family = {"ascend910b": ["a:0", "a:1", "b:0"], "ascend310b": ["c:0"]}
    assignment = assign_slots(mine, by_family)
    assert {assignment[c.id] for c in bench if c.family == "ascend910b"} == {"a:0"}
    loads = slot_loads(mine, assignment)
    work = {
        slot: sum(case_cost(c) + WORKER_CASE_ELEMENTS for c in mine if assignment[c.id] == slot)
        for slot in loads
    }
    assert {slot: loads[slot] - work[slot] for slot in loads} == {
        "a:0": BENCHMARK_IMPORT_ELEMENTS,
        "a:1": 0,
        "b:0": 0,
        "c:0": BENCHMARK_IMPORT_ELEMENTS,
    }
    # The import is work the balance sees: the other 910B slots take more of the rest.
    assert work["a:0"] < min(work["a:1"], work["b:0"])
    for n in (1, 2, 3):
        planned, _ = plan_lanes(mine, SLOTS, by_family, n)
        for family in ("ascend910b", "ascend310b"):
            assert len({planned[c.id] for c in bench if c.family == family}) == 1


def test_lanes_even_out_a_slot_that_carries_more_than_its_share():
    """One slot of family B with many cheap cases: whole slots cannot make two even lanes, so
    cases of family A move to the other lane's A slots until the lanes' work is even."""
    slots = [
        SlotInfo("a:0", "a", "ascend910b", "Ascend910B1", 0),
        SlotInfo("a:1", "a", "ascend910b", "Ascend910B1", 1),
        SlotInfo("b:0", "b", "ascend910b", "Ascend910B1", 0),
        SlotInfo("c:0", "c", "ascend310b", "Ascend310B1", 0),
    ]
    by_family = {"ascend910b": ["a:0", "a:1", "b:0"], "ascend310b": ["c:0"]}
    mine = cases(60) + [Case("ascend310b", "float32", (2, 3 + i), (-1,)) for i in range(60)]
    costs = {c.id: case_cost(c) + WORKER_CASE_ELEMENTS for c in mine}

    def lane_loads(assignment, slot_lane):
        return Counter({lane: 0 for lane in set(slot_lane.values())}) + Counter(
            {
                lane: sum(costs[c.id] for c in mine if slot_lane[assignment[c.id]] == lane)
                for lane in set(slot_lane.values())
            }
        )

    whole = assign_slots(mine, by_family)
    slot_lane = lanes(slots, 2, slot_loads(mine, whole))
    before = lane_loads(whole, slot_lane)
    assignment, same_lanes = plan_lanes(mine, slots, by_family, 2)
    after = lane_loads(assignment, same_lanes)
    assert same_lanes == slot_lane  # the lanes keep their slots; cases move
    assert max(before.values()) - min(before.values()) > 10 * max(costs.values())
    assert max(after.values()) - min(after.values()) <= max(costs.values())
    family = {s.id: s.family for s in slots}
    assert all(family[assignment[c.id]] == c.family for c in mine)  # never to another family
    # Every worker computes the same plan from the same cases, in any order.
    assert plan_lanes(list(reversed(mine)), slots, by_family, 2) == (assignment, same_lanes)
    # One lane: nothing to even out.
    assert plan_lanes(mine, slots, by_family, 1)[0] == whole


def test_every_case_runs_once_on_its_family_and_reaches_its_item():
    dispatcher = FakeDispatcher(SLOTS, delay=0.05)
    big, small = cases(12), cases(4, "ascend310b")
    slot_lane = {s.id: "lane0" for s in SLOTS}
    spread = ["a:0", "a:1", "b:0"]
    work = {"lane0": [(c, spread[i % 3]) for i, c in enumerate(big)]}
    work["lane0"] += [(c, "c:0") for c in small]
    pipeline = Pipeline(dispatching(dispatcher), work, slot_lane)
    records = [pipeline.result(c, p) for c, p in work["lane0"]]
    assert [r["case_id"] for r in records] == [c.id for c, _ in work["lane0"]]
    assert sorted(cid for cid, _ in dispatcher.ran) == sorted(c.id for c, _ in work["lane0"])
    by_slot = {r["case_id"]: r["slot"] for r in records}
    assert [by_slot[c.id] for c in big] == [spread[i % 3] for i in range(12)]  # as preferred
    assert {by_slot[c.id] for c in small} == {"c:0"}
    assert dispatcher.most_at_once == 4  # every slot at once, not one after the other
    assert pipeline.close() == []


class LettingGo(FakeDispatcher):
    """Records the slots let go (the dispatcher closes their agents, and so their device locks);
    the cases of ``held_family`` wait until the test lets them run."""

    def __init__(self, slots, held_family=None):
        super().__init__(slots, delay=0.0)
        self.held_family = held_family
        self.run_held = threading.Event()
        self.let_go_order: list[str] = []
        self.let_go_of: dict[str, threading.Event] = {s.id: threading.Event() for s in slots}

    def run(self, case, preferred=None):
        if case.family == self.held_family:
            assert self.run_held.wait(60), "the test never let the held cases run"
        return super().run(case, preferred)

    def let_go(self, slot_id):
        with self._lock:
            self.let_go_order.append(slot_id)
        self.let_go_of[slot_id].set()


def test_a_slot_with_nothing_of_its_family_left_lets_go_of_its_device():
    """The 310B slot's cases are done while the 910B ones still run: its device is let go then
    (for another run waiting for it), not at the worker's end."""
    dispatcher = LettingGo(SLOTS, held_family="ascend910b")
    big, small = cases(12), cases(2, family="ascend310b")
    work = {"lane0": [(c, "c:0") for c in small] + [(c, "a:0") for c in big]}
    pipeline = Pipeline(dispatching(dispatcher), work, {s.id: "lane0" for s in SLOTS})
    for c, p in work["lane0"][:2]:
        assert pipeline.result(c, p)["outcome"] == "passed"
    assert dispatcher.let_go_of["c:0"].wait(60), "the 310B slot was not let go"
    assert dispatcher.let_go_order == ["c:0"]  # the 910B slots still have cases to run
    dispatcher.run_held.set()
    for c, p in work["lane0"][2:]:
        assert pipeline.result(c, p)["outcome"] == "passed"
    assert pipeline.close() == []
    # Each slot at most once (one that had not seen the end yet when the pipeline closed leaves
    # its agent to the worker's end).
    order = dispatcher.let_go_order
    assert order[0] == "c:0" and len(set(order)) == len(order)


def test_a_closing_pipeline_lets_the_worker_close_its_agents():
    """-x stopped the session: the threads end without letting go one by one (the dispatcher
    closes every agent at the worker's end)."""
    dispatcher = LettingGo(SLOTS)
    work = {"lane0": [(c, "a:0") for c in cases(6)]}
    pipeline = Pipeline(dispatching(dispatcher), work, {s.id: "lane0" for s in SLOTS})
    with pipeline._cond:
        pipeline._start("lane0")
        pipeline._closing = True
    pipeline.close()
    assert dispatcher.let_go_order == []


def test_a_window_caps_the_slots_running_at_once():
    dispatcher = FakeDispatcher(SLOTS)
    work = {"lane0": [(c, SLOTS[i % 4].id) for i, c in enumerate(cases(9))]}
    # No case counts as stuck however slow the machine (a stuck case leaves the window).
    pipeline = Pipeline(
        dispatching(dispatcher), work, {s.id: "lane0" for s in SLOTS}, window=2, stuck_after=3600.0
    )
    for c, p in work["lane0"]:
        pipeline.result(c, p)
    assert dispatcher.most_at_once == 2


def test_a_slot_that_gave_back_its_place_queues_behind_the_slots_waiting_for_one():
    """A window smaller than the lane: the slot that just finished a case does not take the
    place it freed while others wait for one (it would win the lock every time and keep the
    window, while the items wait for a case on a slot that never gets a turn). The slots take
    turns, so the run keeps close to item order."""
    three = [SlotInfo(f"a:{i}", "a", "ascend910b", "Ascend910B1", i) for i in range(3)]
    started = threading.Event()

    class Gated(FakeDispatcher):
        def run(self, case, preferred=None):
            # The first case waits until the other two slots wait for the window.
            if not started.is_set():
                deadline = time.monotonic() + 60
                while pipeline._room_waiting["lane0"] < 2 and time.monotonic() < deadline:
                    time.sleep(0.001)
                started.set()
            return super().run(case, preferred)

    dispatcher = Gated(three, delay=0.0)
    work = {"lane0": [(c, three[i % 3].id) for i, c in enumerate(cases(18))]}
    # No case counts as stuck however slow the machine: the window stays at one.
    pipeline = Pipeline(
        dispatching(dispatcher), work, {s.id: "lane0" for s in three}, window=1, stuck_after=3600.0
    )
    for c, p in work["lane0"]:
        assert pipeline.result(c, p)["outcome"] == "passed"
    assert pipeline.close() == []
    assert dispatcher.most_at_once == 1
    ran: Counter[str | None] = Counter()
    for _, slot in dispatcher.ran:
        ran[slot] += 1
        lead = max(ran[s.id] for s in three) - min(ran[s.id] for s in three)
        assert lead <= 2, f"one slot kept the window: {dispatcher.ran}"


def test_an_error_reaches_the_item_of_its_case_only():
    mixed = cases(8)
    dispatcher = FakeDispatcher(SLOTS, fail=[mixed[5].id])
    work = {"lane0": [(c, "a:0") for c in mixed]}
    pipeline = Pipeline(dispatching(dispatcher), work, {s.id: "lane0" for s in SLOTS})
    for c, p in work["lane0"]:
        if c.id in dispatcher.fail:
            with pytest.raises(RuntimeError, match="agent lost running"):
                pipeline.result(c, p)
        else:
            assert pipeline.result(c, p)["outcome"] == "passed"


def test_cases_outside_the_lanes_run_in_the_items_thread():
    dispatcher = FakeDispatcher(SLOTS)
    pipeline = Pipeline(dispatching(dispatcher), {}, {s.id: "lane0" for s in SLOTS})
    (case,) = cases(1)
    assert pipeline.result(case, "no-slot-ascend910b")["slot"] == "no-slot-ascend910b"
    assert pipeline.result(case, None)["slot"] is None


def test_what_ran_ahead_of_items_that_never_came_is_dropped():
    dispatcher = FakeDispatcher(SLOTS, delay=0.0)
    work = {"lane0": [(c, "a:0") for c in cases(6)]}
    pipeline = Pipeline(dispatching(dispatcher), work, {s.id: "lane0" for s in SLOTS})
    first = work["lane0"][0]
    pipeline.result(*first)  # then the session stops (-x)
    deadline = time.monotonic() + 5
    while len(dispatcher.ran) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    dropped = pipeline.close()
    assert dropped == sorted(c.id for c, _ in work["lane0"][1:])


class HeldDispatcher(FakeDispatcher):
    """One case does not answer until the test releases it: once every other case completed
    (or after 60 s, which only a deadlock reaches). The others answer at once, but only after
    the held case began, so that it is in flight while they run."""

    def __init__(self, slots, held: str, others: list[str]):
        super().__init__(slots, delay=0.0)
        self.held, self.others = held, sorted(others)
        self.held_began = threading.Event()
        self.done: list[str] = []
        self.released_early = False

    def run(self, case, preferred=None):
        if case.id != self.held:
            assert self.held_began.wait(60.0), "the held case never began"
            record = super().run(case, preferred)
            with self._lock:
                self.done.append(case.id)
            return record
        with self._lock:
            self.ran.append((case.id, preferred))
        self.held_began.set()
        deadline = time.monotonic() + 60.0  # catches a deadlock only
        while time.monotonic() < deadline:
            with self._lock:
                if sorted(self.done) == self.others:
                    break
            time.sleep(0.01)
        else:
            self.released_early = True
        return {"case_id": case.id, "outcome": "failed", "slot": preferred}


def test_a_case_that_does_not_answer_holds_up_only_itself():
    """The held case's slot has cases queued behind it, and the window has room for it and one
    more: the other slot of its family takes those cases, and the other family's cases still
    run, while the held case stays in flight."""
    family_a, family_c = cases(7), cases(3, "ascend310b")
    held = family_a[0]
    slots = [SLOTS[0], SLOTS[1], SLOTS[3]]  # a:0 and a:1 of 910B, c:0 of 310B
    work = {"lane0": [(c, "a:0") for c in family_a[:5]] + [(c, "a:1") for c in family_a[5:]]}
    work["lane0"] += [(c, "c:0") for c in family_c]
    others = [c.id for c, _ in work["lane0"] if c.id != held.id]
    dispatcher = HeldDispatcher(slots, held.id, others)
    pipeline = Pipeline(
        dispatching(dispatcher), work, {s.id: "lane0" for s in slots}, window=2, stuck_after=0.05
    )
    records = [pipeline.result(c, p) for c, p in work["lane0"]]
    assert not dispatcher.released_early, f"only {dispatcher.done} completed"
    assert [r["case_id"] for r in records] == [c.id for c, _ in work["lane0"]]
    assert sorted(cid for cid, _ in dispatcher.ran) == sorted(c.id for c, _ in work["lane0"])
    slot_of = {r["case_id"]: r["slot"] for r in records}
    # The cases queued behind the held one on a:0 ran on a:1, never on the other family's slot.
    assert slot_of[held.id] == "a:0"
    assert {slot_of[c.id] for c in family_a[1:5]} == {"a:1"}
    assert {slot_of[c.id] for c in family_c} == {"c:0"}
    assert pipeline.close() == []


def test_a_stuck_case_leaves_its_place_in_the_window():
    """A window of one: the held case, stuck, does not keep the lane's other cases waiting."""
    family_a = cases(4)
    held = family_a[0]
    slots = [SLOTS[0], SLOTS[1]]
    work = {"lane0": [(held, "a:0")] + [(c, "a:1") for c in family_a[1:]]}
    dispatcher = HeldDispatcher(slots, held.id, [c.id for c in family_a[1:]])
    pipeline = Pipeline(
        dispatching(dispatcher), work, {s.id: "lane0" for s in slots}, window=1, stuck_after=0.05
    )
    records = [pipeline.result(c, p) for c, p in work["lane0"]]
    assert not dispatcher.released_early, f"only {dispatcher.done} completed"
    assert [r["outcome"] for r in records] == ["failed"] + ["passed"] * 3
    assert pipeline.close() == []


def test_benchmark_ratio_cases_prefer_a_slot_whose_host_has_pytorch():
    bench = [
        Case("ascend910b", "float32", (8, 129 + i), (-1,), standard="benchmark-ratio")
        for i in range(3)
    ]
    mine = [*cases(6), *bench]
    by_family = {"ascend910b": ["a:0", "a:1", "b:0"]}
    assignment = assign_slots(mine, by_family, torchless={"a:0", "a:1"})
    assert {assignment[c.id] for c in bench} == {"b:0"}
    # The plan's slots say which hosts have it; without any, the cases keep a slot (the
    # dispatcher then says why they cannot run).
    slots = [SlotInfo(s.id, s.host, s.family, s.soc, s.device, torch=s.host == "b") for s in SLOTS]
    preferred, _ = plan_lanes(mine, slots, by_family, 2)
    assert {preferred[c.id] for c in bench} == {"b:0"}
    assert {
        assign_slots(bench, by_family, torchless={"a:0", "a:1", "b:0"})[c.id] for c in bench
    } == {"a:0"}
