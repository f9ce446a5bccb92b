"""The dispatcher's rules, with scripted agents: busy devices, hangs, timeouts, crashes.

Every fake agent is a channel whose behaviour the test scripts per host and case; the real
agents and transports are exercised by tests/e2e/test_shared_pool.py on the SSH lab."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable

import pytest

from farm.run import leases
from farm.run.attempts import Progress
from farm.run.canary import canary_cases
from farm.run.case_channel import run_owner
from farm.run.dispatch import Dispatcher, case_timeout
from farm.run.leases import RunState
from farm.run.slots import SlotInfo
from farm.util.errors import AgentError, AgentTimeout, ConnectionLost, DeviceBusy, HostLacks
from golden.inputs import sha256_of
from suites.case import Case

FAMILY = "ascend910b"
SLOTS = [
    SlotInfo(f"{host}:{dev}", host, FAMILY, "Ascend910B1", dev)
    for host in ("h1", "h2")
    for dev in (0, 1)
]
HOLDER = {"run": "other-run", "pids": [4242], "since_iso": "2030-01-01T00:00:00+00:00"}


def case(n: int = 8) -> Case:
    return Case(FAMILY, "float32", (4, n), (-1,))


class World:
    """Scripts the agents: ``behave(slot, case_id, channel) -> "pass" | "broken" | "busy" |
    "timeout" | "crash"``. Records every call and every channel opened. A case that passes
    comes back with the digest of the inputs its seed makes, as a real agent's does (the
    dispatcher's canary checks it)."""

    def __init__(self, behave: Callable[[SlotInfo, str, FakeChannel], str]):
        self.behave = behave
        self.calls: list[tuple[str, str, int]] = []  # (slot, case id, channel number)
        self.channels: list[FakeChannel] = []
        self.unkillable: set[str] = set()  # slots whose stuck agents survive
        self.lock_waits: dict[str, dict] = {}  # slot -> the agent waited for its device
        self.warm: set[str] = set()  # slots whose new channels reach an agent already running
        self.events: list[tuple[str, str, float]] = []  # a starting agent's calls (starting_world)

    def open(self, slot: SlotInfo) -> FakeChannel:
        channel = FakeChannel(self, slot, len(self.channels))
        self.channels.append(channel)
        return channel


class FakeChannel:
    def __init__(self, world: World, slot: SlotInfo, number: int):
        self.world, self.slot, self.number = world, slot, number
        self.closed = False
        self.cases: list[str] = []
        self.reaped: bool | None = None
        self.reap_detail = ""
        self.locks: list[dict] = []
        self.timeouts: list[float] = []
        self.last_device_lock: dict | None = None
        self.warm = slot.id in world.warm

    def run_case(self, case, backend, device, timeout, *, lock=None):
        assert not self.closed
        self.locks.append(dict(lock or {}))
        self.timeouts.append(timeout)
        self.world.calls.append((self.slot.id, case["id"], self.number))
        action = self.world.behave(self.slot, case["id"], self)
        if action == "busy":
            raise DeviceBusy(
                f"agent on host {self.slot.host}: device {device} of m is busy: held by run "
                "other-run (agent pid 4242)",
                host=self.slot.host,
                device=device,
                holder=dict(HOLDER),
            )
        if action == "timeout":
            killed = self.slot.id not in self.world.unkillable
            self.reaped = killed
            self.reap_detail = (
                "the agent (pid 77) was killed (TERM)"
                if killed
                else f"the agent (pid 77) on host {self.slot.host} could not be killed: stuck"
            )
            raise AgentTimeout(
                f"host {self.slot.host}: no reply to run-case #2 within {timeout:g}s",
                host=self.slot.host,
            )
        if action == "lacks":
            raise HostLacks(f"agent on host {self.slot.host}: PyTorch cannot be imported")
        if action == "crash":
            exc = ConnectionLost(
                f"host {self.slot.host}: agent connection closed; agent killed by signal 11",
                host=self.slot.host,
            )
            exc.stderr_tail = "Fatal Python error: Segmentation fault\n\nCurrent thread ..."
            raise exc
        self.cases.append(case["id"])
        self.last_device_lock = self.world.lock_waits.pop(self.slot.id, None)
        if action == "broken":
            return {"case_id": case["id"], "outcome": "broken", "message": "no backend"}
        return {
            "case_id": case["id"],
            "outcome": "passed",
            "category": None,
            "message": "within the bound",
            "host": "machine",
            "timings": {},
            "inputs_sha256": inputs_digest(case),
        }

    def close(self):
        self.closed = True

    def reap_again(self):
        self.reaped = self.slot.id not in self.world.unkillable
        return self.reaped


def inputs_digest(case) -> str:
    from farm.agent.execute import make_call_inputs

    return sha256_of(*(t for t in make_call_inputs(case) if t is not None))


CANARY = [c.id for c in canary_cases(FAMILY)]


@pytest.fixture
def make(tmp_path):
    def make(behave, **kwargs) -> tuple[Dispatcher, World, RunState, list[str]]:
        world = World(behave)
        state = RunState(tmp_path / "run-1" / "state.json")
        said: list[str] = []
        kwargs = {"base_timeout": 1.0, "startup_allowance": 0.0, "lock_wait": 0.0, **kwargs}
        dispatcher = Dispatcher(
            SLOTS,
            world.open,
            state,
            tmp_path / "run-1" / "locks",
            "native",
            notify=said.append,
            **kwargs,
        )
        return dispatcher, world, state, said

    return make


def no_charges(state: RunState) -> None:
    assert state.read() == {"infra_errors": {}, "quarantined": {}}


# -- the order slots are tried in --------------------------------------------------------------


def test_a_case_tries_its_preferred_slot_then_the_others_and_other_hosts_after_a_failure(make):
    """The order holds whatever order the pool lists its slots in, and follows quarantine and
    a reassigned pool (the dispatcher keeps the family's slots indexed)."""
    dispatcher, _, state, _ = make(lambda slot, cid, ch: "pass")
    hosts = ("h3", "h1", "h2")
    pool = [SlotInfo(f"{h}:{d}", h, FAMILY, "Ascend910B1", d) for h in hosts for d in (1, 0)]
    pool.append(SlotInfo("x1:0", "x1", "ascend310b", "Ascend310B1", 0))
    dispatcher.slots = {s.id: s for s in pool}

    def order(preferred, tried=()):
        return [s.id for s in dispatcher._candidates(FAMILY, preferred, list(tried))]

    assert order("h2:1") == ["h2:1", "h1:0", "h1:1", "h2:0", "h3:0", "h3:1"]
    assert order(None) == ["h1:0", "h1:1", "h2:0", "h2:1", "h3:0", "h3:1"]
    # tried on h2:1: the slots of other hosts first, the other slot of h2 after them
    assert order("h2:1", ["h2:1"]) == ["h1:0", "h1:1", "h3:0", "h3:1", "h2:0"]
    candidates = dispatcher._candidates(FAMILY, "h2:1", [])
    assert dispatcher._wanted(candidates, Progress()) == order("h2:1")
    state.quarantine("h1", "test")
    assert order("h1:0") == ["h2:0", "h2:1", "h3:0", "h3:1"]
    assert [s.id for s in dispatcher._candidates("ascend310b", "h1:0", [])] == ["x1:0"]


def test_a_benchmark_ratio_case_runs_only_where_pytorch_is_and_blames_no_host_without_it(make):
    """PyTorch is the benchmark-ratio standard's benchmark, an optional dependency of a host:
    such a case goes to a slot whose host has it, and where no healthy host of the family has
    it the case is broken at once, saying so, with no host charged or quarantined (it used to
    fail on every host and quarantine them all, with the cases of every other standard)."""
    dispatcher, world, state, _ = make(lambda slot, cid, ch: "pass")
    bench = Case(FAMILY, "float32", (4, 8), (-1,), standard="benchmark-ratio", level="L0")
    only_h2 = [
        SlotInfo(s.id, s.host, s.family, s.soc, s.device, torch=s.host == "h2") for s in SLOTS
    ]
    dispatcher.slots = {s.id: s for s in only_h2}
    record = dispatcher.run(bench, preferred="h1:0")
    assert record["outcome"] == "passed" and record["slot"].startswith("h2:")
    assert dispatcher.run(case(), preferred="h1:0")["slot"] == "h1:0"  # the others go anywhere
    dispatcher.slots = {
        s.id: SlotInfo(s.id, s.host, s.family, s.soc, s.device, torch=False) for s in SLOTS
    }
    calls = len(world.calls)
    record = dispatcher.run(bench, preferred="h1:0")
    assert record["outcome"] == "broken" and len(world.calls) == calls
    assert record["message"] == leases.without_torch(FAMILY)
    no_charges(state)


def test_a_host_that_cannot_import_pytorch_is_passed_over_for_such_cases_and_not_charged(make):
    """A host with PyTorch installed but not importable (it says it has it): its
    benchmark-ratio cases go to the family's other hosts, its other cases run there as ever, and
    where no host is left the case says so, with the agent's words."""
    broken_torch = {"h1"}

    def behave(slot, cid, ch):
        return "lacks" if slot.host in broken_torch and "benchmark-ratio" in cid else "pass"

    dispatcher, world, state, _ = make(behave)
    bench = [
        Case(FAMILY, "float32", (4, 8 + i), (-1,), standard="benchmark-ratio", level="L0")
        for i in range(3)
    ]
    first = dispatcher.run(bench[0], preferred="h1:0")
    assert first["outcome"] == "passed" and first["slot"].startswith("h2:")
    assert [slot for slot, _, _ in world.calls] == ["h1:0", first["slot"]]
    assert dispatcher.run(bench[1], preferred="h1:0")["slot"].startswith("h2:")  # not asked again
    assert dispatcher.run(case(), preferred="h1:0")["slot"] == "h1:0"
    no_charges(state)
    broken_torch.add("h2")
    dispatcher, world, state, _ = make(behave)
    record = dispatcher.run(bench[2], preferred="h1:0")
    assert record["outcome"] == "broken"
    assert record["message"].startswith(leases.without_torch(FAMILY) + ": ")
    assert "h2:0: agent on host h2: PyTorch cannot be imported" in record["message"]
    assert len(world.calls) == 2  # one slot of each host asked
    # A later case of the family is not sent at all, and says why all the same.
    again = dispatcher.run(bench[1], preferred="h1:0")
    assert len(world.calls) == 2 and again["message"] == record["message"]
    no_charges(state)


def test_a_family_the_pool_has_no_host_of_is_said_with_the_fix(make):
    dispatcher, world, state, _ = make(lambda slot, cid, ch: "pass")
    record = dispatcher.run(Case("ascend310b", "float32", (4, 8), (-1,)))
    assert record["outcome"] == "broken" and not world.calls
    assert record["message"] == (
        "no healthy slot of family ascend310b: the pool has no host of this family; add one to "
        "the inventory, or select the cases of the families it has"
    )
    no_charges(state)


# -- busy devices -----------------------------------------------------------------------------


def test_every_request_carries_the_runs_lock_fields(make, tmp_path):
    dispatcher, world, _, _ = make(lambda slot, cid, ch: "pass")
    dispatcher.run(case(), "h1:0")
    run, owner = run_owner(tmp_path / "run-1" / "locks")
    assert run == "run-1" and owner.startswith("run-1@")
    assert world.channels[0].locks == [{"run": "run-1", "owner": owner, "lock_wait": 0.0}]
    # Another run directory is another owner, even with the same name elsewhere.
    assert run_owner(tmp_path / "x" / "run-1" / "locks")[1] != owner


def test_a_busy_slot_sends_the_case_to_a_free_one_and_charges_nobody(make):
    dispatcher, world, state, said = make(
        lambda slot, cid, ch: "busy" if slot.id == "h1:0" else "pass"
    )
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["slot"], record["attempts"]) == ("passed", "h1:1", 1)
    assert record["infra_errors"] == []
    assert "waited 0 s for devices another run held (h1:0: run other-run" in record["message"]
    assert [e["outcome"] for e in record["attempts_log"]] == ["busy", "passed"]
    assert said and "h1:0 is busy, another run holds it (run other-run, agent pid 4242" in said[0]
    no_charges(state)


def test_a_case_waits_for_busy_devices_then_runs(make, monkeypatch):
    import farm.run.dispatch as dispatch_mod

    calls = []

    def behave(slot, cid, ch):
        calls.append(slot.id)
        return "busy" if len(calls) <= 5 else "pass"

    monkeypatch.setattr(dispatch_mod, "BUSY_POLL", 0.0)  # no real pause between the rounds
    # It waits as long as it takes: no limit a slow machine could reach first.
    dispatcher, world, state, said = make(behave, busy_wait=float("inf"))
    record = dispatcher.run(case(), "h1:0")
    assert record["outcome"] == "passed" and record["notes"][0].startswith("waited ")
    assert set(calls[:4]) == {s.id for s in SLOTS}  # every slot of the family was asked
    assert len(said) == 1  # one line, not one per retry
    no_charges(state)


def test_a_wait_inside_the_agent_is_noted_too(make):
    """The device was busy when the case came, and freed within the agent's lock wait."""
    dispatcher, world, state, _ = make(lambda slot, cid, ch: "pass")
    world.lock_waits["h1:0"] = {"device": 0, "waited_s": 3.2, "holder": dict(HOLDER)}
    record = dispatcher.run(case(), "h1:0")
    assert record["outcome"] == "passed" and record["attempts"] == 1
    assert record["notes"] == [
        "waited 3 s for devices another run held (h1:0: run other-run, agent pid 4242, since "
        "2030-01-01T00:00:00+00:00)"
    ]
    no_charges(state)


def test_devices_busy_past_the_limit_make_the_case_not_run(make):
    dispatcher, world, state, said = make(lambda slot, cid, ch: "busy", busy_wait=0.5)
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["category"], record["not_run"]) == (
        "broken",
        "not_run",
        "busy",
    )
    msg = record["message"]
    assert msg.startswith("not run: the devices of family ascend910b it could use stayed busy")
    for slot in SLOTS:
        assert f"{slot.id}: run other-run, agent pid 4242, since 2030-01-01" in msg
    assert "held by another run" in msg and "no host is at fault" in msg
    assert set(record["busy"]) == {s.id for s in SLOTS} and record["attempts"] == 0
    no_charges(state)  # not an infrastructure error, nobody quarantined
    # The family has waited its limit: the next case asks each slot once and stops.
    calls_before = len(world.calls)
    again = dispatcher.run(case(16), "h2:0")
    assert again["category"] == "not_run" and len(world.calls) - calls_before == len(SLOTS)


def test_a_worker_sends_its_cases_to_free_slots_not_to_a_device_another_run_holds(make):
    """Learned once: the next case that prefers the held slot goes straight to a free one (the
    free slots come first, the held one after them only once it is due to be asked again)."""
    dispatcher, world, state, _ = make(
        lambda slot, cid, ch: "busy" if slot.id == "h1:0" else "pass"
    )
    first = dispatcher.run(case(), "h1:0")
    assert [c[0] for c in world.calls] == ["h1:0", "h1:1"] and first["slot"] == "h1:1"
    world.calls.clear()
    for n in (16, 24, 32):
        record = dispatcher.run(case(n), "h1:0")
        assert record["outcome"] == "passed" and record["attempts"] == 1
        assert "attempts_log" not in record and "notes" not in record  # nothing waited
    assert "h1:0" not in {c[0] for c in world.calls}
    no_charges(state)


def test_a_held_slot_is_asked_again_without_a_lock_wait_and_used_once_let_go(
    make, monkeypatch, tmp_path
):
    """The free slots are all leased (this run's other cases run there), and the held slot is
    due to be asked again: it is, with no lock wait, since the case has other slots to go to;
    the other run has let go, so the case runs there and the slot is no longer held."""
    import farm.run.dispatch as dispatch_mod

    monkeypatch.setattr(dispatch_mod, "BUSY_POLL", 0.0)  # due to be asked at once
    other_run = {"holds": True}

    def behave(slot, cid, ch):
        return "busy" if slot.id == "h1:0" and other_run["holds"] else "pass"

    dispatcher, world, state, _ = make(behave, lock_wait=5.0)
    assert dispatcher.run(case(), "h1:0")["slot"] == "h1:1"
    other_run["holds"] = False
    lock_dir = tmp_path / "run-1" / "locks"
    leased = []
    for sid in ("h1:1", "h2:0", "h2:1"):
        fh = open(leases._lock_path(lock_dir, sid), "a+")
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another worker's case runs there
        leased.append(fh)
    try:
        record = dispatcher.run(case(16), "h2:0")
    finally:
        for fh in leased:
            fh.close()
    assert record["slot"] == "h1:0" and record["outcome"] == "passed"
    waits = [lock["lock_wait"] for ch in world.channels for lock in ch.locks]
    h1_0 = next(ch for ch in world.channels if ch.slot.id == "h1:0")
    assert [lock["lock_wait"] for lock in h1_0.locks] == [5.0, 0.0]  # first asked, then probed
    assert waits.count(0.0) == 1
    world.calls.clear()
    assert dispatcher.run(case(24), "h1:0")["slot"] == "h1:0"  # no longer held
    assert [c[0] for c in world.calls] == ["h1:0"]
    no_charges(state)


def test_a_slot_let_go_closes_its_agent_and_a_later_case_starts_a_new_one(
    make, monkeypatch, tmp_path
):
    """The pipeline lets go of a slot it has nothing left for: the agent goes, and with it the
    device lock another run may wait for. One in use (leased) is left to the worker's end."""
    import farm.run.dispatch as dispatch_mod

    dispatcher, world, state, _ = make(lambda slot, cid, ch: "pass")
    dispatcher.run(case(), "h1:0")
    dispatcher.run(case(16), "h2:0")
    dispatcher.let_go("h1:0")
    dispatcher.let_go("h1:1")  # never opened: nothing to do
    assert [ch.closed for ch in world.channels] == [True, False]
    monkeypatch.setattr(dispatch_mod, "LET_GO_WAIT", 0.0)
    lease = open(leases._lock_path(tmp_path / "run-1" / "locks", "h2:0"), "a+")
    fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a case of another thread runs there
    try:
        dispatcher.let_go("h2:0")
    finally:
        lease.close()
    assert [ch.closed for ch in world.channels] == [True, False]
    assert dispatcher.run(case(24), "h1:0")["slot"] == "h1:0"
    assert len(world.channels) == 3 and world.channels[2].slot.id == "h1:0"
    no_charges(state)


class FakeClock:
    """The dispatcher's clock (its module's ``time``): the agents' waits and the dispatcher's
    pauses advance it; the pauses are recorded."""

    def __init__(self):
        self.now = 1000.0
        self.pauses: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def test_a_case_whose_agents_waited_for_the_devices_is_asked_again_at_once(make, monkeypatch):
    """Every device of the family is held: each request waits its lock wait in the agent (woken
    the moment the holder lets go) before it answers busy, and the next round goes at once; only
    agents that answer busy at once (no lock wait) are asked again after a pause."""
    import farm.run.dispatch as dispatch_mod

    clock = FakeClock()
    monkeypatch.setattr(dispatch_mod, "time", clock)
    asked = []

    def behave(slot, cid, ch):
        asked.append(slot.id)
        if len(asked) > 12:
            return "pass"
        clock.now += ch.locks[-1]["lock_wait"]  # the agent waited its lock wait, in vain
        return "busy"

    dispatcher, world, state, _ = make(behave, lock_wait=2.0, busy_wait=float("inf"))
    assert dispatcher.run(case(), "h1:0")["outcome"] == "passed"
    assert len(asked) == 13 and clock.pauses == []  # three rounds of four, no pause between

    asked.clear()
    clock.pauses.clear()
    answering_at_once, _, _, _ = make(behave, lock_wait=0.0, busy_wait=float("inf"))
    assert answering_at_once.run(case(16), "h1:0")["outcome"] == "passed"
    assert clock.pauses and all(p == pytest.approx(dispatch_mod.BUSY_POLL) for p in clock.pauses)
    no_charges(state)


# -- timeouts and hangs -----------------------------------------------------------------------


def test_a_new_channel_to_a_running_agent_gets_no_startup_allowance(make):
    """A channel that says its agent is warm (a shared agent that has run cases) has its first
    case timed as the case alone: a case that hangs there would otherwise keep its slot waiting
    the start-up allowance and the lock wait longer. A new agent's first case gets both."""
    dispatcher, world, _, _ = make(
        lambda slot, cid, ch: "pass", startup_allowance=30.0, lock_wait=5.0
    )
    world.warm.add("h1:1")
    first, second, third = case(8), case(16), case(24)
    dispatcher.run(first, "h1:0")
    dispatcher.run(second, "h1:1")
    dispatcher.run(third, "h1:0")
    cold, warm = world.channels
    assert cold.timeouts == [case_timeout(first, 1.0) + 35.0, case_timeout(third, 1.0)]
    assert warm.timeouts == [case_timeout(second, 1.0)]


class StartingChannel(FakeChannel):
    """A fake agent that starts up on request (warm_up): the world's ``events`` say in which
    order the start-up and the case came, and with which timeouts. ``shared``: once up, it says
    warm (a shared agent never waits for a device); ``slow``: its start-up times out."""

    shared = False
    slow: set[str] = set()

    def warm_up(self, timeout):
        self.world.events.append(("warm_up", self.slot.id, timeout))
        if self.slot.id in self.slow:
            exc = AgentTimeout(f"host {self.slot.host}: no reply to identify #2 within 9s")
            exc.start_up = True  # type: ignore[attr-defined]  # as farm/pool/transport/base.py marks it
            raise exc
        self.warm = self.shared

    def run_case(self, case, backend, device, timeout, *, lock=None):
        self.world.events.append(("run_case", self.slot.id, timeout))
        return super().run_case(case, backend, device, timeout, lock=lock)


def starting_world(make, channel, **kwargs):
    dispatcher, world, state, said = make(
        lambda slot, cid, ch: "pass", startup_allowance=30.0, lock_wait=5.0, **kwargs
    )
    world.events = []

    def open_starting(slot):
        opened = channel(world, slot, len(world.channels))
        world.channels.append(opened)
        return opened

    dispatcher.open_channel = open_starting
    return dispatcher, world, state, said


def test_a_new_agent_starts_up_before_its_case_which_gets_exactly_its_timeout(make):
    """A channel that can start its agent up (warm_up) does so under the handshake's timeout
    before the case is sent: the case's timeout starts after it, with no start-up allowance; a
    shared agent's (warm once up) is the case's timeout alone, another agent's leaves room for
    the device lock it takes on its first case."""

    class Shared(StartingChannel):
        shared = True

    first, second = case(8), case(16)
    dispatcher, world, _, _ = starting_world(make, Shared, handshake_timeout=9.0)
    dispatcher.run(first, "h1:0")
    dispatcher.run(second, "h1:0")
    assert world.events == [
        ("warm_up", "h1:0", 9.0),
        ("run_case", "h1:0", case_timeout(first, 1.0)),
        ("run_case", "h1:0", case_timeout(second, 1.0)),
    ]
    dispatcher, world, _, _ = starting_world(make, StartingChannel, handshake_timeout=9.0)
    dispatcher.run(first, "h1:0")
    assert world.events == [
        ("warm_up", "h1:0", 9.0),
        ("run_case", "h1:0", case_timeout(first, 1.0) + 5.0),
    ]


def test_an_agent_slow_to_start_is_its_hosts_error_never_a_hang(make):
    """Start-up timed out on both hosts of the family: no hang (the case never ran); each is an
    infrastructure error of its host, and the case passes where an agent started."""

    class Slow(StartingChannel):
        slow = {"h1:0", "h2:0"}

    dispatcher, world, state, _ = starting_world(make, Slow)
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["slot"], record["attempts"]) == ("passed", "h1:1", 3)
    assert record.get("category") != "hang"
    assert [e[:2] for e in world.events] == [
        ("warm_up", "h1:0"),
        ("warm_up", "h2:0"),
        ("warm_up", "h1:1"),
        ("run_case", "h1:1"),
    ]
    assert set(state.read()["infra_errors"]) == {"h1", "h2"}


def test_a_start_up_that_times_out_inside_the_request_is_no_hang_either(make):
    """A shared channel whose case met a new agent starts it up inside run_case; its start-up
    timeout is marked so: an infrastructure error of the host, not the case timing out."""

    def behave(slot, cid, channel):
        if slot.host == "h1":
            exc = AgentTimeout(f"host {slot.host}: no reply to identify #2 within 30s")
            exc.start_up = True  # type: ignore[attr-defined]  # as farm/pool/transport/base.py marks it
            raise exc
        return "pass"

    dispatcher, _, state, _ = make(behave)
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["host"]) == ("passed", "h2")
    assert [e["outcome"] for e in record["attempts_log"]] == ["infrastructure", "passed"]
    assert set(state.read()["infra_errors"]) == {"h1"}


def test_a_timeout_its_host_answers_the_canary_right_after_is_a_hang(make):
    """One timeout is enough when the host then runs its canary right: the case hangs, after
    one attempt, and the host is not charged. The canary runs on the same device through a fresh
    channel, as the run's own (its lock fields), and that channel serves the slot's next case."""
    hanging = case()
    dispatcher, world, state, said = make(
        lambda slot, cid, ch: "timeout" if cid == hanging.id else "pass"
    )
    record = dispatcher.run(hanging, "h1:0")
    assert (record["outcome"], record["category"], record["attempts"]) == ("failed", "hang", 1)
    msg = record["message"]
    assert msg.startswith("the case hangs: it timed out on h1 (h1:0, no reply within 1 s)")
    assert f"the host answered its canary ({', '.join(CANARY)}) right after" in msg
    timeout = case_timeout(hanging, 1.0)
    assert record["hang"] == {"hosts": ["h1"], "timeouts": [timeout], "canary": ", ".join(CANARY)}
    assert record["infra_errors"] == [] and record["slot"] == "h1:0"
    assert world.calls == [("h1:0", hanging.id, 0)] + [("h1:0", cid, 1) for cid in CANARY]
    stuck, fresh = world.channels
    assert stuck.closed and not fresh.closed and fresh.locks == stuck.locks * 2
    no_charges(state)
    dispatcher.run(case(16), "h1:0")
    assert world.calls[-1][2] == 1 and len(world.channels) == 2


def test_a_canary_that_fails_after_a_timeout_charges_the_host_and_the_case_moves(make):
    hanging = case()

    def behave(slot, cid, ch):
        if cid == hanging.id and slot.host == "h1":
            return "timeout"
        return "broken" if cid in CANARY and slot.host == "h1" else "pass"

    dispatcher, world, state, said = make(behave)
    record = dispatcher.run(hanging, "h1:0")
    assert (record["outcome"], record["host"], record["attempts"]) == ("passed", "h2", 2)
    assert "its canary did not answer right" in record["infra_errors"][0]
    assert any(line.startswith("h1:0: its canary after the timeout: canary ") for line in said)
    assert list(state.read()["infra_errors"]) == ["h1"]
    assert world.channels[1].closed  # the canary's agent is not kept for the slot


def test_a_canary_that_times_out_too_charges_the_host(make):
    hanging = case()
    dispatcher, world, state, said = make(
        lambda slot, cid, ch: "timeout" if slot.host == "h1" else "pass"
    )
    record = dispatcher.run(hanging, "h1:0")
    assert (record["outcome"], record["host"]) == ("passed", "h2")
    assert [c[:2] for c in world.calls] == [
        ("h1:0", hanging.id),
        ("h1:0", CANARY[0]),
        ("h2:0", hanging.id),
    ]
    assert any("its canary after the timeout: AgentTimeout" in line for line in said)
    assert list(state.read()["infra_errors"]) == ["h1"]
    assert world.channels[1].closed  # the stuck canary's agent was dropped (reaped) too


def test_a_case_that_hangs_on_two_hosts_is_the_cases_failure(make):
    """When the host does not answer its canary either, the timeout is the host's, until the
    case times out on a second host too: then it is the case that hangs."""
    dispatcher, world, state, said = make(lambda slot, cid, ch: "timeout")
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["category"]) == ("failed", "hang")
    msg = record["message"]
    assert msg.startswith("the case hangs: it timed out on 2 hosts, h1 (h1:0, no reply within")
    assert "and h2 (h2:0, no reply within" in msg and "the stuck agents were killed" in msg
    assert record["hang"]["hosts"] == ["h1", "h2"] and record["infra_errors"] == []
    assert [e["outcome"] for e in record["attempts_log"]] == ["timeout", "timeout"]
    assert all(ch.closed for ch in world.channels)  # dropped: the next case gets fresh agents
    no_charges(state)  # no host charged, nobody quarantined


def test_a_timeout_on_one_host_and_a_pass_on_another_charges_the_first(make):
    dispatcher, world, state, _ = make(
        lambda slot, cid, ch: "timeout" if slot.host == "h1" else "pass"
    )
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["host"], record["attempts"]) == ("passed", "h2", 2)
    assert len(record["infra_errors"]) == 1 and "no reply" in record["infra_errors"][0]
    assert "the agent (pid 77) was killed (TERM)" in record["infra_errors"][0]
    assert list(state.read()["infra_errors"]) == ["h1"]
    # The slot is used again, with a fresh agent (the stuck one was killed).
    world.behave = lambda slot, cid, ch: "pass"
    again = dispatcher.run(case(16), "h1:0")
    assert again["slot"] == "h1:0" and world.calls[-1][2] == len(world.channels) - 1


def test_a_slot_whose_stuck_agent_survives_is_not_used_again(make, monkeypatch):
    import farm.run.slot_table as slot_table_mod

    # Not checked again within the test, however slow the machine (the test's own clock).
    monkeypatch.setattr(slot_table_mod, "DEAD_RECHECK", float("inf"))
    dispatcher, world, state, said = make(
        lambda slot, cid, ch: "timeout" if slot.id == "h1:0" else "pass"
    )
    world.unkillable.add("h1:0")
    record = dispatcher.run(case(), "h1:0")
    assert record["outcome"] == "passed" and record["slot"] != "h1:0"
    assert any("could not be killed" in line and "h1:0" in line for line in said)
    # Both count against the host: the case's timeout, and the agent it could not kill.
    errors = state.read()["infra_errors"]["h1"]
    assert len(errors) == 2 and any("could not be killed" in e for e in errors), errors
    later = dispatcher.run(case(16), "h1:0")
    assert later["slot"] != "h1:0" and "h1:0" not in [c[0] for c in world.calls[-1:]]


def test_a_set_aside_slot_is_checked_again_and_used_once_its_agent_is_gone(make, monkeypatch):
    import farm.run.slot_table as slot_table_mod

    monkeypatch.setattr(slot_table_mod, "DEAD_RECHECK", float("inf"))
    dispatcher, world, state, said = make(
        lambda slot, cid, ch: "timeout" if slot.id == "h1:0" and not ch.cases else "pass"
    )
    world.unkillable.add("h1:0")
    dispatcher.run(case(), "h1:0")
    monkeypatch.setattr(slot_table_mod, "DEAD_RECHECK", 0.0)
    assert dispatcher.run(case(16), "h1:0")["slot"] != "h1:0"  # checked again: still there
    world.unkillable.discard("h1:0")
    world.behave = lambda slot, cid, ch: "pass"
    assert dispatcher.run(case(24), "h1:0")["slot"] == "h1:0"
    assert said[-1] == "h1:0: its stuck agent is gone now; the slot is used again"


def test_timeouts_on_the_only_host_stay_infrastructure_errors(make):
    dispatcher, world, state, _ = make(lambda slot, cid, ch: "timeout")
    one_host = [s for s in SLOTS if s.host == "h1"]
    dispatcher.slots = {s.id: s for s in one_host}
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["category"]) == ("broken", "infrastructure")
    assert record["message"].startswith("gave up after 3 attempts")
    assert len(state.read()["infra_errors"]["h1"]) == 3


# -- crashes ----------------------------------------------------------------------------------


def test_a_crash_left_by_an_earlier_case_is_not_charged_to_the_case(make):
    """'corrupt' passes but leaves its agent broken; the next case crashes there, and passes
    on a fresh agent: it passes, with a note naming the crash and the case before it."""
    corrupt, victim = case(8), case(16)
    dispatcher, world, state, said = make(
        lambda slot, cid, ch: "crash" if corrupt.id in ch.cases else "pass"
    )
    assert dispatcher.run(corrupt, "h1:0")["outcome"] == "passed"
    record = dispatcher.run(victim, "h1:0")
    assert (record["outcome"], record["slot"], record["attempts"]) == ("passed", "h1:0", 2)
    note = record["notes"][0]
    assert note.startswith("the agent crashed running this case on h1:0: Fatal Python error")
    assert f"(after case {corrupt.id} on that agent)" in note
    assert "rerun on a fresh agent on h1:0, it passed" in note and note in record["message"]
    assert [e["outcome"] for e in record["attempts_log"]] == ["crash", "passed"]
    assert record["attempts_log"][0]["previous_case"] == corrupt.id
    assert [c[2] for c in world.calls] == [0, 0, 1]  # the rerun ran on a new agent
    assert any("rerunning it once on a fresh agent" in line for line in said)
    no_charges(state)


def test_a_case_that_crashes_twice_is_the_cases_crash(make):
    dispatcher, world, state, _ = make(lambda slot, cid, ch: "crash")
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["category"]) == ("failed", "crash")
    msg = record["message"]
    assert msg.startswith("the agent died running this case on h1:0: Fatal Python error")
    assert "(the agent's first case); rerun on a fresh agent, it died again on h1:0" in msg
    assert [e["outcome"] for e in record["attempts_log"]] == ["crash", "crash"]
    assert len(world.channels) == 2
    no_charges(state)


def test_a_slot_let_go_under_a_full_runs_directory_is_left_to_the_worker_end(
    make, monkeypatch, tmp_path
):
    """The runs directory fills mid-run and a slot runs out of work: its lock file cannot be
    opened, so let_go leaves the agent for the worker's end instead of raising in the slot's
    thread (the run is stopping on that fault already). Any other error still raises."""
    import builtins
    import errno

    dispatcher, world, state, _ = make(lambda slot, cid, ch: "pass")
    dispatcher.run(case(), "h1:0")
    real_open = builtins.open
    refusal = [errno.ENOSPC]

    def refusing_open(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            raise OSError(refusal[0], os.strerror(refusal[0]), str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)
    dispatcher.let_go("h1:0")
    assert [ch.closed for ch in world.channels] == [False]
    refusal[0] = errno.EIO
    with pytest.raises(OSError):
        dispatcher.let_go("h1:0")
    monkeypatch.setattr(builtins, "open", real_open)
    dispatcher.let_go("h1:0")
    assert [ch.closed for ch in world.channels] == [True]
    no_charges(state)


# -- a fault of the farm ----------------------------------------------------------------------


def _answered(slot: SlotInfo, what: str = "planted") -> AgentError:
    """The error an agent answers when the farm's own code fails on it: it names the host, its
    address and port, and the deploy path the agent runs from."""
    n = slot.host[-1]
    return AgentError(
        f"agent on host {slot.host} (10.0.0.{n}:220{n}): executor: RuntimeError: {what} | File "
        f'"/home/farm{n}/.lsg-farm/{slot.host}/versions/ab12/agent/farm/agent/execute.py", '
        "line 332, in _judge",
        host=slot.host,
    )


def test_an_error_every_host_answers_alike_is_the_farms_and_charges_nobody(make):
    """The same failure on every host up to what is each host's own (name, address, port,
    deploy path): the case is broken with it, said once; no host is charged or quarantined."""

    def behave(slot, cid, ch):
        raise _answered(slot)

    dispatcher, world, state, _ = make(behave)
    for n in (8, 16, 24):  # three cases: under the old rule, three errors on each host
        record = dispatcher.run(case(n), "h1:0")
        assert (record["outcome"], record["category"]) == ("broken", "infrastructure")
        assert record["message"] == (
            "the same infrastructure error on every host the case was tried on (h1, h2): agent "
            "on host <host> (<address>): executor: RuntimeError: planted | File "
            "\"<path>/execute.py\", line 332, in _judge; this is the farm's or the package's "
            "fault, not the hosts' (none is charged): fix it, then rerun"
        )
        assert len(record["infra_errors"]) == 3  # each attempt is still in the record
    no_charges(state)


def test_errors_the_hosts_answer_differently_are_each_hosts(make):
    def behave(slot, cid, ch):
        raise _answered(slot, "disk full" if slot.host == "h1" else "no memory")

    dispatcher, world, state, _ = make(behave)
    record = dispatcher.run(case(), "h1:0")
    assert record["message"].startswith("gave up after 3 attempts")
    charged = state.read()["infra_errors"]
    assert sorted(charged) == ["h1", "h2"] and sum(map(len, charged.values())) == 3


def test_an_answered_error_on_one_host_then_a_pass_charges_that_host(make):
    def behave(slot, cid, ch):
        if slot.host == "h1":
            raise _answered(slot)
        return "pass"

    dispatcher, world, state, _ = make(behave)
    record = dispatcher.run(case(), "h1:0")
    assert (record["outcome"], record["host"]) == ("passed", "h2")
    assert list(state.read()["infra_errors"]) == ["h1"]
