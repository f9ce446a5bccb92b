"""Agents shared by emulated hosts of this machine (farm/pool/transport/shared.py AgentShare):
several slots, of one host or of several, on one agent process that serves each host as its own
agent would (identity, device locks), one request at a time, a broken agent costs only the case
that broke it, and a case that does not answer holds up only its own slot."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from farm.agent.devicelock import read_holder
from farm.pool.deploy import deploy
from farm.pool.health.checks import BAD, GOOD, check_local_hosts
from farm.pool.inventory import HostSpec, default_inventory
from farm.pool.transport.local import LocalTransport
from farm.pool.transport.shared import AgentShare, share_key, shared_agent_hosts, shared_host
from farm.run.dispatch import Dispatcher
from farm.run.leases import RunState
from farm.run.plan import Plan
from farm.run.prepare import local_agent_limit, local_share, parallel_hosts
from farm.run.slots import SlotInfo
from farm.util.errors import AgentTimeout, ConfigError, ConnectionLost, DeviceBusy, ProtocolError
from farm.util.proc import members as group_members
from suites.case import Case
from tests.pool.conftest import FAKE, REPO, fake_request, said_pid

FAMILY = "ascend910b"


def emulated(tmp_path: Path, name: str, soc: str = "Ascend910B1", devices: int = 2) -> HostSpec:
    return HostSpec(
        name=name,
        soc=soc,
        devices=devices,
        transport="local",
        python=sys.executable,
        workdir=str(tmp_path / name),
        env=(("LSG_EMULATED_DEVICES", str(devices)), ("LSG_EMULATED_SOC", soc)),
    )


def start_fake(executor: str = FAKE):
    """Start a shared agent with the fake executor, from this checkout (deploy.start_shared_agent
    does the same from a deployed bundle, which has no tests/ to import the fake from)."""

    def start(group: str, hosts: Sequence[HostSpec]):
        first = hosts[0]
        os.makedirs(first.workdir, exist_ok=True)
        path = Path(first.workdir) / f".hosts-{time.monotonic_ns()}.json"
        path.write_text(json.dumps({"hosts": shared_agent_hosts(hosts, {})}))
        argv = [sys.executable, "-m", "farm.agent", "--executor", executor]
        argv += ["--workdir", first.workdir, "--hosts-file", str(path)]
        try:
            return LocalTransport(shared_host(hosts)).open_channel(argv, cwd=str(REPO))
        finally:
            path.unlink()

    return start


@pytest.fixture
def two_hosts(tmp_path):
    a = emulated(tmp_path, "emu-a")
    b = emulated(tmp_path, "emu-b", soc="Ascend910B2", devices=1)
    return a, b


# A case that is meant to finish gets all the time a loaded machine may need (a new agent's start
# included); only a case that never answers is held to a short timeout, so no verdict here
# depends on the machine's speed.
PATIENT = 120.0


class HangsOnlyTimeOut:
    """The test's clock for a dispatcher: the dispatcher's short timeout holds only for the case
    that hangs (it never answers, so it times out at any speed); every other case gets PATIENT."""

    def __init__(self, channel, hanging_origin: str) -> None:
        self.channel, self.hanging_origin = channel, hanging_origin

    def run_case(self, case, backend, device, timeout, *, lock=None):
        if case.get("origin") != self.hanging_origin:
            timeout = PATIENT
        return self.channel.run_case(case, backend, device, timeout, lock=lock)

    def __getattr__(self, name):
        return getattr(self.channel, name)


def wait_until_busy(agent, timeout: float = 60.0) -> None:
    """Until a request is on the wire to ``agent`` (the time it was sent is set just before it
    is written, under the agent's lock). ``timeout`` only catches a test that never sends."""
    deadline = time.monotonic() + timeout
    while agent.sent_at is None:
        assert time.monotonic() < deadline, "the first request never reached the agent"
        time.sleep(0.01)


def test_hosts_that_may_share_an_agent(tmp_path):
    a = emulated(tmp_path, "a")
    b = emulated(tmp_path, "b", soc="Ascend310B1", devices=1)
    assert share_key(a) == share_key(b)  # the declarations differ; the agent keeps them apart
    other = HostSpec(**{**a.__dict__, "env": a.env + (("LD_LIBRARY_PATH", "/x"),)})
    assert share_key(other) != share_key(a)


def test_one_agent_serves_each_host_as_its_own_would(two_hosts):
    a, b = two_hosts
    share = AgentShare({"g": [a, b]}, start_fake(), limit=1)
    try:
        slots = [share.open("emu-a", "emu-a:0"), share.open("emu-a", "emu-a:1")]
        slots.append(share.open("emu-b", "emu-b:0"))
        assert share.started == 1 and len({s.agent_pid for s in slots}) == 1
        assert not slots[0].warm  # a new agent: its first case needs room for the start
        pid = said_pid(slots[0].agent_pid)
        # Each host's own declaration, not the inventory's and not another host's.
        assert slots[0].identify(PATIENT)["soc"] == "Ascend910B1"
        assert (slots[2].identify(PATIENT)["soc"], slots[2].identify(PATIENT)["devices"]) == (
            "Ascend910B2",
            1,
        )
        lock = {"run": "run-1", "owner": "o-1"}
        for slot, device in zip(slots, (0, 1, 0), strict=True):
            result = slot.run_case(fake_request(id=slot.key), "native", device, PATIENT, lock=lock)
            assert (result["case_id"], result["device"]) == (slot.key, device)
        # Every device it ran a case on is locked, in its own host's work directory.
        for host, device in ((a, 0), (a, 1), (b, 0)):
            holder = read_holder(host.workdir, device)
            assert holder["pids"] == [pid] and holder["run"] == "run-1", (host.name, holder)
        # A device the host does not have is refused for that host only; the agent goes on.
        with pytest.raises(ProtocolError, match="device 1 does not exist"):
            slots[2].run_case({"id": "x"}, "native", 1, PATIENT)
        assert slots[0].run_case({"id": "again"}, "native", 0, PATIENT)["case_id"] == "again"
        assert share.open("emu-b", "emu-b:0 again").warm  # a new channel to a running agent
    finally:
        share.close()
    assert group_members(pid) == []


def test_requests_to_a_shared_agent_are_serialized(two_hosts):
    a, b = two_hosts
    # Waiting behind a slow case for PATIENT before moving: both cases go to the one agent.
    share = AgentShare({"g": [a, b]}, start_fake(), limit=1, stalled_after=PATIENT)
    done: list[str] = []

    def run(slot, name, device):
        # The test is about the order, not the clock of a loaded machine: no timeout is near.
        slot.run_case({"id": name, "sleep": 0.4}, "native", device, timeout=PATIENT)
        done.append(name)

    try:
        slots = [share.open("emu-a", "emu-a:0"), share.open("emu-b", "emu-b:0")]
        threads = [
            threading.Thread(target=run, args=(slots[0], "one", 0)),
            threading.Thread(target=run, args=(slots[1], "two", 0)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Both waited for their turn, none timed out: the wait is not part of a case's timeout.
        assert sorted(done) == ["one", "two"] and share.started == 1
        # The agent's own log: one case ended before the other began, never both at once.
        log = Path(a.workdir, "fake-executor.log").read_text().splitlines()
        uses = sorted((json.loads(x)["start"], json.loads(x)["end"]) for x in log)
        assert len(uses) == 2 and uses[0][1] <= uses[1][0]
    finally:
        share.close()


def test_a_case_that_does_not_answer_holds_up_only_its_own_slot(tmp_path):
    """Six slots of three hosts share one agent (limit 1). One slot's case does not answer until
    the test releases it; the other five slots' cases all answer meanwhile, on one more agent
    started beyond the limit while the first is held up, each case alone on its agent. Once
    released, the held case answers on its own agent, and the share is back to its limit.

    No clock decides the verdict: the hold is released only after the others answered (a
    deadlock, the wrong behaviour, would hold them until then; the minute only ends such a
    test), and no case is near its timeout."""
    hosts = [emulated(tmp_path, f"emu-{i}") for i in range(3)]
    share = AgentShare({"g": hosts}, start_fake(), limit=1, stalled_after=0.2)
    release = tmp_path / "release"
    lock = {"run": "run-1", "owner": "o-1"}
    answered: dict[str, dict] = {}

    def run(view, case):
        device = int(view.key.rsplit(":", 1)[1])
        answered[case["id"]] = view.run_case(case, "native", device, PATIENT, lock=lock)

    try:
        views = [share.open(h.name, f"{h.name}:{d}") for h in hosts for d in (0, 1)]
        held, others = views[0], views[1:]
        assert share.started == 1 and len({v.agent_pid for v in views}) == 1
        held_pid = said_pid(held.agent_pid)
        holding = threading.Thread(target=run, args=(held, {"id": "held", "hold": str(release)}))
        holding.start()
        wait_until_busy(held.agent)
        threads = [threading.Thread(target=run, args=(v, {"id": v.key})) for v in others]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60.0
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        answered_while_held = set(answered)
        release.touch()
        holding.join(timeout=PATIENT)
        for t in threads:
            t.join(timeout=PATIENT)
        assert answered_while_held == {v.key for v in others}
        assert answered["held"]["case_id"] == "held" and held.usable
        assert {v.agent_pid for v in others} != {held_pid}  # they moved
        assert share.started == 2 and share.peak == 2  # one beyond the limit, for the while
        log = [json.loads(x) for x in Path(hosts[0].workdir, "fake-executor.log").open()]
        for pid in {x["pid"] for x in log}:  # one case at a time on each agent
            uses = sorted((x["start"], x["end"]) for x in log if x["pid"] == pid)
            assert all(a[1] <= b[0] for a, b in zip(uses, uses[1:], strict=False)), uses
        # The stall is over: the next requests bring the share back to its limit.
        for view in views:
            assert view.run_case({"id": f"after-{view.key}"}, "native", 0, PATIENT, lock=lock)
        assert len(share.agents) == 1 and len({v.agent_pid for v in views}) == 1
        assert group_members(held_pid) == []  # the held-up agent, surplus, closed
    finally:
        release.touch()
        share.close()


def test_after_a_stall_the_agent_started_for_it_goes_and_the_held_one_stays(tmp_path):
    """The agent that was held up has answered many cases (its imports, torch among them, are
    paid); the one started for the stall has answered one. When the stall ends the share is
    back to its limit by closing the new one: both slots then run on the agent they began on.
    (Closing the held one made every stall's new agent pay the start-up again.)"""
    host = emulated(tmp_path, "emu-0")
    share = AgentShare({"g": [host]}, start_fake(), limit=1, stalled_after=0.2)
    release = tmp_path / "release"
    lock = {"run": "run-1", "owner": "o-1"}
    try:
        held, moving = share.open(host.name, "emu-0:0"), share.open(host.name, "emu-0:1")
        for i in range(3):
            held.run_case({"id": f"warm-{i}"}, "native", 0, PATIENT, lock=lock)
        old_pid = said_pid(held.agent_pid)
        holding = threading.Thread(
            target=held.run_case,
            args=({"id": "held", "hold": str(release)}, "native", 0, PATIENT),
            kwargs={"lock": lock},
        )
        holding.start()
        wait_until_busy(held.agent)
        assert moving.run_case({"id": "moved"}, "native", 1, PATIENT, lock=lock)["case_id"]
        new_pid = said_pid(moving.agent_pid)
        assert new_pid != old_pid and share.started == 2  # it moved while the other was held
        release.touch()
        holding.join(timeout=PATIENT)
        assert not holding.is_alive()
        assert moving.run_case({"id": "after"}, "native", 1, PATIENT, lock=lock)["case_id"]
        assert (held.agent_pid, moving.agent_pid) == (old_pid, old_pid)
        assert share.started == 2 and len(share.agents) == 1
        assert group_members(new_pid) == []  # the agent started for the stall, closed
    finally:
        release.touch()
        share.close()


def test_a_timeout_kills_the_agent_and_the_other_slots_case_is_not_lost(two_hosts):
    """Slot one's case hangs; slot two's case waits behind it on the same agent. The timeout
    kills the agent (verified); slot one's channel reports it; slot two's case, which never
    reached the agent, runs on a new agent without an error."""
    a, b = two_hosts
    share = AgentShare({"g": [a, b]}, start_fake(), limit=1)
    try:
        hung, other = share.open("emu-a", "emu-a:0"), share.open("emu-b", "emu-b:0")
        first_pid = said_pid(hung.agent_pid)
        errors: list[BaseException] = []

        def hang():
            try:
                hung.run_case(fake_request(id="h", child=True, sleep=60), "native", 0, timeout=1.0)
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=hang)
        t.start()
        wait_until_busy(hung.agent)
        result = other.run_case({"id": "o"}, "native", 0, timeout=PATIENT)
        t.join()
        assert result["case_id"] == "o" and other.usable
        assert other.agent_pid != first_pid and share.started == 2
        [exc] = errors
        assert isinstance(exc, AgentTimeout) and exc.host == "emu-a"
        assert str(exc).startswith("host emu-a (local, shared agent): no reply to run-case")
        assert not hung.usable
        with pytest.raises(ConnectionLost, match="unusable"):
            hung.run_case({"id": "again"}, "native", 0)
        hung.close()
        assert hung.reaped is True, hung.reap_detail
        assert hung.reap_detail == f"the agent (pid {first_pid}) was killed (TERM)"
        assert group_members(first_pid) == []  # the agent and its sleeping child
        assert hung.reap_again() is True
    finally:
        share.close()


def test_a_crash_reruns_on_a_fresh_agent_of_its_own(two_hosts):
    """A crash breaks the agent for every slot; the crashed slot's next channel runs its first
    case on a fresh agent (not the one the others moved to), which then joins the group."""
    a, b = two_hosts
    share = AgentShare({"g": [a, b]}, start_fake(), limit=1)
    try:
        crashed, other = share.open("emu-a", "emu-a:0"), share.open("emu-b", "emu-b:0")
        with pytest.raises(ConnectionLost) as info:
            crashed.run_case(fake_request(id="c", segv=True), "native", 0, timeout=PATIENT)
        assert "Fatal Python error: Segmentation fault" in info.value.stderr_tail
        assert info.value.host == "emu-a"
        assert other.run_case({"id": "o"}, "native", 0, PATIENT)["case_id"] == "o"  # on a new agent
        crashed.close()
        assert crashed.reaped is True
        rerun = share.open("emu-a", "emu-a:0")
        record = rerun.run_case({"id": "c2"}, "native", 0, timeout=PATIENT)
        assert record["case_id"] == "c2" and rerun.agent_pid != other.agent_pid
        assert share.started == 3  # the first, the others' replacement, the rerun's own
        assert len(share.agents) == 1  # the rerun's agent closed: the group had its one
        assert rerun.run_case({"id": "next"}, "native", 0, PATIENT)["case_id"] == "next"
        assert rerun.agent_pid == other.agent_pid
    finally:
        share.close()


def test_the_share_keeps_at_most_its_limit_of_agents(tmp_path):
    hosts = [emulated(tmp_path, f"emu-{i}", devices=2) for i in range(4)]
    share = AgentShare({"g": hosts}, start_fake(), limit=2)
    try:
        views = [share.open(h.name, f"{h.name}:{d}") for h in hosts for d in (0, 1)]
        pids = [said_pid(v.agent_pid) for v in views]
        assert len(set(pids)) == 2 and share.started == 2 and share.peak == 2
        assert sorted(pids.count(p) for p in set(pids)) == [4, 4]  # spread evenly
        for view in views:
            view.close()
        assert share.agents == []  # the last channel of an agent closes it
        assert all(group_members(p) == [] for p in set(pids))
    finally:
        share.close()


# -- with the dispatcher -----------------------------------------------------------------------


def test_a_hang_on_a_shared_agent_charges_nobody_and_loses_no_other_case(tmp_path):
    """Two hosts of one family share one agent. A case that hangs times out on emu-a, which
    then answers its canary right (a hang: the case's failure, after one timeout, no host
    charged); a case queued behind it on the same agent passes on its first attempt, with no
    infrastructure error of any host. (emu-b has a slot for each: were the hang retried, it
    would never wait for the fine case's lease, whose time no test sets.)"""
    a, b = emulated(tmp_path, "emu-a", devices=1), emulated(tmp_path, "emu-b", devices=2)
    share = AgentShare({"g": [a, b]}, start_fake(), limit=1)
    slots = [SlotInfo(f"{h.name}:{d}", h.name, FAMILY, h.soc, d) for h in (a, b) for d in (0, 1)]
    slots = [s for s in slots if s.id != "emu-a:1"]
    state = RunState(tmp_path / "run" / "state.json")
    dispatcher = Dispatcher(
        slots,
        lambda slot: HangsOnlyTimeOut(share.open(slot.host, slot.id), "fake:hang"),
        state,
        tmp_path / "run" / "locks",
        "native",
        base_timeout=1.5,
        run_id="run-1",
        lock_wait=0.0,
        startup_allowance=0.0,
        notify=lambda line: None,
    )
    hang = Case(FAMILY, "float32", (4, 8), (-1,), origin="fake:hang")
    fine = Case(FAMILY, "float32", (4, 16), (-1,), origin="fake:pass")
    records = {}

    def run(case, preferred):
        records[case.id] = dispatcher.run(case, preferred)

    try:
        first = share.open("emu-a", "warm-up")  # the agent, started before the cases race
        t = threading.Thread(target=run, args=(hang, "emu-a:0"))
        t.start()
        wait_until_busy(first.agent)
        first.close()
        run(fine, "emu-b:1")
        t.join()
    finally:
        dispatcher.close()
        share.close()
    ok, hung = records[fine.id], records[hang.id]
    assert (ok["outcome"], ok["attempts"], ok["infra_errors"]) == ("passed", 1, []), ok
    assert (hung["outcome"], hung["category"]) == ("failed", "hang"), hung
    assert [x["host"] for x in hung["attempts_log"]] == ["emu-a"] and hung["attempts"] == 1
    assert hung["hang"]["hosts"] == ["emu-a"] and "answered its canary" in hung["message"]
    assert state.read()["infra_errors"] == {} and state.quarantined() == {}
    assert share.started >= 2 and share.agents == []


def test_a_busy_device_is_answered_at_once_and_holds_up_no_other_slot(two_hosts):
    """Another run's agent holds emu-a's device 0: the shared agent answers busy without
    waiting (the dispatcher waits, not the agent), its other slots go on, and the same channel
    gets the device once it is free."""
    a, b = two_hosts
    other_run = LocalTransport(a)
    holder = other_run.open_channel(
        [sys.executable, "-m", "farm.agent", "--executor", FAKE, "--workdir", a.workdir],
        cwd=str(REPO),
    )
    holder.run_case({"id": "theirs"}, "native", 0, PATIENT, lock={"run": "run-A", "owner": "A"})
    share = AgentShare({"g": [a, b]}, start_fake(), limit=1)
    try:
        busy, free = share.open("emu-a", "emu-a:0"), share.open("emu-b", "emu-b:0")
        # An agent that waited the lock wait would time the request out (PATIENT) first: busy is
        # answered at once, whatever the machine's speed.
        lock = {"run": "run-B", "owner": "B", "lock_wait": 10 * PATIENT}
        with pytest.raises(DeviceBusy) as info:
            busy.run_case({"id": "mine"}, "native", 0, PATIENT, lock=lock)
        assert info.value.host == "emu-a" and info.value.holder["pids"] == [holder.agent_pid]
        assert (
            busy.usable and free.run_case({"id": "f"}, "native", 0, PATIENT, lock=lock)["case_id"]
        )
        holder.close()
        assert busy.run_case({"id": "mine"}, "native", 0, PATIENT, lock=lock)["case_id"] == "mine"
    finally:
        share.close()
        other_run.close()


# -- the embedded pool, health checks, bounds --------------------------------------------------


@pytest.fixture
def embedded(tmp_path, agent_bundle):
    """The embedded pool's hosts in tmp_path, the agent bundle deployed on each."""
    bundle, sha = agent_bundle
    inventory = default_inventory(tmp_path / "hosts")
    for host in inventory.hosts:
        with LocalTransport(host) as t:
            deploy(t, host, [bundle])
    return inventory, sha


def test_the_embedded_pool_runs_no_more_agents_than_the_limit(embedded):
    inventory, sha = embedded
    # a run's plan, of which local_share reads only the hosts
    plan = cast(Plan, SimpleNamespace(hosts={h.name: {"bundle_sha": sha} for h in inventory.hosts}))
    share = local_share(plan, inventory, limit=2)
    assert share is not None
    try:
        slots = [share.open(s.host.name, s.id) for h in inventory.hosts for s in h.slots()]
        assert len(slots) == 5 and share.started == 2
        assert len({s.agent_pid for s in slots}) == 2
        for slot in slots:  # each slot's host answers for itself, its bundle where deployed
            ident = slot.identify(PATIENT)
            assert (ident["soc"], ident["devices"]) == (slot.host.soc, slot.host.devices)
            assert ident["bundle"] == sha
    finally:
        share.close()


def test_the_limit_is_the_cores_shared_by_the_workers(monkeypatch):
    monkeypatch.delenv("FARM_LOCAL_AGENTS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert local_agent_limit(workers=1) == 8
    assert local_agent_limit(workers=2) == 4
    assert local_agent_limit(workers=16) == 1  # at least one per worker
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    assert local_agent_limit() == 2
    monkeypatch.setenv("FARM_LOCAL_AGENTS", "12")
    assert local_agent_limit() == 3
    monkeypatch.setenv("FARM_LOCAL_AGENTS", "lots")
    with pytest.raises(ConfigError, match="FARM_LOCAL_AGENTS='lots' is not a whole number"):
        local_agent_limit()


def test_hosts_are_prepared_in_parallel_with_a_bound(monkeypatch):
    monkeypatch.delenv("FARM_PARALLEL_HOSTS", raising=False)
    assert [parallel_hosts(n) for n in (0, 1, 5, 32, 64, 512)] == [1, 1, 5, 32, 32, 32]
    monkeypatch.setenv("FARM_PARALLEL_HOSTS", "4")
    assert [parallel_hosts(n) for n in (1, 5, 64)] == [1, 4, 4]
    monkeypatch.setenv("FARM_PARALLEL_HOSTS", "0")
    with pytest.raises(ConfigError, match="must be at least 1"):
        parallel_hosts(3)


def test_local_hosts_are_checked_through_one_agent_each_on_its_own(embedded):
    """A host that declares another SoC is bad, alone; a canary that breaks the agent (a hang
    here) makes its host bad, and the next host's check starts a new agent and passes."""
    inventory, sha = embedded
    a2_01, a2_02, b310 = inventory.hosts
    liar = dataclasses.replace(a2_02, soc="Ascend910B4")

    def canary(channel, identity, device):
        # emu-a2-01's canary never answers (it times out at any speed); the others' have time.
        hangs = channel.host.name == "emu-a2-01"
        channel.run_case({"sleep": 3600 if hangs else 0}, "native", 0, 0.5 if hangs else PATIENT)
        return None

    results = check_local_hosts(
        [a2_01, liar, b310], sha, canary, executor="farm.agent.stand_ins:echo_executor"
    )
    assert {n: h.state for n, h in results.items()} == {
        "emu-a2-01": BAD,
        "emu-a2-02": BAD,
        "emu-310b-01": GOOD,
    }
    assert "canary failed on host emu-a2-01: AgentTimeout" in results["emu-a2-01"].reasons[0]
    assert results["emu-a2-02"].reasons[0].startswith("SoC mismatch: host emu-a2-02 declares")
    identity = results["emu-310b-01"].identity
    assert identity is not None and identity["soc"] == "Ascend310B1"


def test_local_hosts_after_the_first_link_its_unpacked_files(tmp_path, agent_bundle):
    """Deploying one archive to several local hosts unpacks it once: the others' version
    directories hard-link its files (each still verified, marked and renamed into place); a
    source directory that lost a file is not linked from."""
    bundle, sha = agent_bundle
    first, second, third = (emulated(tmp_path, f"emu-{i}") for i in range(3))
    for host in (first, second):
        with LocalTransport(host) as t:
            assert deploy(t, host, [bundle]).files[0].action == "uploaded"
    ours = Path(first.workdir, "versions", sha, "farm", "agent", "server.py")
    theirs = Path(second.workdir, "versions", sha, "farm", "agent", "server.py")
    assert ours.read_bytes() == theirs.read_bytes() and ours.stat().st_ino == theirs.stat().st_ino
    assert Path(second.workdir, "versions", sha, ".lsg-unpacked").read_text().strip() == sha
    ours.unlink()
    theirs.unlink()  # every source directory this process knows is incomplete now
    with LocalTransport(third) as t:
        deploy(t, third, [bundle])
    again = Path(third.workdir, "versions", sha, "farm", "agent", "server.py")
    assert again.is_file() and again.stat().st_nlink == 1  # unpacked, not linked
