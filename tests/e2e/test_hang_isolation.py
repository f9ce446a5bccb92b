"""A case that hangs on the embedded pool holds up only its own slot.

The embedded pool's five slots are served by one shared agent (the limit of one, as a worker of
a 2-core machine has: farm/run/prepare.py local_agent_limit), started from the deployed bundle
by farm/pool/deploy.py start_shared_agent; the farm's dispatcher runs the smoke tier on them, a
thread per slot as a worker's pipeline does. The agents run the fake executor
(tests/pool/fake_executor.py, in the fake bundle of tests/e2e/test_shared_pool.py): every case
passes at once, but for one case that hangs wherever it runs. Before, the other slots' cases
queued behind the hang on their shared agent until its timeout killed it.

The verdict is an order of events, not a duration: every other case ended (the agent's own log)
and came back (the dispatcher's record) before the hang's timeout fired. The hang's timeout is
the test's own clock, far beyond what the other cases need. Its host then answers its canary
right (the fake executor answers canary cases as a real agent does): the case is a hang after
that one timeout, never sent to another host, and no host is charged.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from farm.pool.deploy import deploy, start_shared_agent
from farm.pool.inventory import default_inventory
from farm.pool.transport.local import LocalTransport
from farm.pool.transport.shared import AgentShare
from farm.run.dispatch import Dispatcher
from farm.run.leases import RunState
from farm.run.slots import SlotInfo
from farm.util.errors import AgentTimeout
from farm.util.proc import members as group_members
from suites.case import Case
from tests.e2e.conftest import SMOKE
from tests.e2e.test_shared_pool import FAKE, fake_bundle

HANG = "fake:hang"
HANG_TIMEOUT = 30.0  # the hang's one attempt: the other 289 fake cases need a second or two
RETRY_TIMEOUT = 2.0  # a second attempt at the hang, which must not come
PATIENT = 120.0  # every case meant to answer: no timeout near


class HangClock:
    """The dispatcher's channel with the test's timeouts, noting when the hang's timeouts fire
    and when every other case came back (time.time(), the fake executor's clock)."""

    def __init__(self, channel, events: dict[str, list[float]]) -> None:
        self.channel, self.events = channel, events

    def run_case(self, case, backend, device, timeout, *, lock=None):
        if case.get("origin") != HANG:
            reply = self.channel.run_case(case, backend, device, PATIENT, lock=lock)
            kind = "canary" if case.get("origin") == "canary" else "answered"
            self.events.setdefault(kind, []).append(time.time())
            return reply
        first = "hang_sent" not in self.events
        self.events.setdefault("hang_sent", []).append(time.time())
        try:
            timeout = HANG_TIMEOUT if first else RETRY_TIMEOUT
            return self.channel.run_case(case, backend, device, timeout, lock=lock)
        except AgentTimeout:
            self.events.setdefault("hang_fired", []).append(time.time())
            raise

    def __getattr__(self, name):
        return getattr(self.channel, name)


@pytest.fixture
def pool(tmp_path):
    """The embedded pool's hosts in tmp_path, the fake bundle deployed on each."""
    inventory = default_inventory(tmp_path / "hosts")
    bundle, sha = fake_bundle(tmp_path)
    for host in inventory.hosts:
        with LocalTransport(host) as t:
            deploy(t, host, [bundle])
    return inventory, sha


def test_a_hanging_case_holds_up_only_its_own_slot(pool, tmp_path):
    inventory, sha = pool
    hosts = inventory.hosts
    share = AgentShare(
        {"pool": hosts}, lambda group, members: start_shared_agent(members, sha, executor=FAKE), 1
    )
    slots = [
        SlotInfo(s.id, s.host.name, s.family, s.host.soc, s.device)
        for h in hosts
        for s in h.slots()
    ]
    events: dict[str, list[float]] = {}
    dispatcher = Dispatcher(
        slots,
        lambda slot: HangClock(share.open(slot.host, slot.id), events),
        RunState(tmp_path / "run" / "state.json"),
        tmp_path / "run" / "locks",
        "native",
        base_timeout=RETRY_TIMEOUT,
        run_id="run-1",
        lock_wait=0.0,
        startup_allowance=0.0,
        notify=lambda line: None,
    )
    hang = Case("ascend910b", "float32", (4, 8), (-1,), origin=HANG)
    hung_slot = slots[0].id  # emu-a2-01:0: the hang alone; the smoke tier on the other four
    queues: dict[str, list[Case]] = {s.id: [] for s in slots[1:]}
    for case in SMOKE:
        mine = [s.id for s in slots[1:] if s.family == case.family]
        queues[min(mine, key=lambda sid: len(queues[sid]))].append(case)
    records: dict[str, dict] = {}

    def drive(slot_id: str, cases: list[Case]) -> None:
        for case in cases:
            records[case.id] = dict(dispatcher.run(case, slot_id))

    try:
        hanging = threading.Thread(target=drive, args=(hung_slot, [hang]))
        hanging.start()
        deadline = time.monotonic() + 60.0  # only a test that never sends the hang waits this
        while "hang_sent" not in events:
            assert time.monotonic() < deadline and hanging.is_alive(), records
            time.sleep(0.01)
        threads = [threading.Thread(target=drive, args=item) for item in queues.items()]
        for t in threads:
            t.start()
        for t in [*threads, hanging]:
            t.join(timeout=HANG_TIMEOUT + 4 * PATIENT)
        assert not any(t.is_alive() for t in [*threads, hanging])
    finally:
        dispatcher.close()
        share.close()

    hung = records.pop(hang.id)
    assert (hung["outcome"], hung["category"]) == ("failed", "hang"), hung
    assert hung["hang"]["hosts"] == ["emu-a2-01"] and hung["attempts"] == 1, hung
    assert "and the host answered its canary (" in hung["message"], hung
    assert len(events["hang_sent"]) == 1
    assert RunState(tmp_path / "run" / "state.json").read()["infra_errors"] == {}
    assert len(records) == len(SMOKE)
    for record in records.values():
        assert (record["outcome"], record["attempts"], record["infra_errors"]) == (
            "passed",
            1,
            [],
        ), record
    # The order of events: every other case ended on an agent (its log) and came back to the
    # dispatcher before the hang's first timeout fired (sent + HANG_TIMEOUT).
    fired = events["hang_fired"][0]
    assert fired - events["hang_sent"][0] >= HANG_TIMEOUT
    log = [json.loads(x) for x in Path(hosts[0].workdir, "fake-executor.log").open()]
    ends = [x["end"] for x in log if x["case"] in records]
    assert len(ends) == len(SMOKE) and max(ends) < fired
    assert len(events["answered"]) == len(SMOKE) and max(events["answered"]) < fired
    assert len(events["canary"]) == 2 and min(events["canary"]) > fired  # asked after the timeout
    # One agent beyond the limit while the hang held the first; none left afterwards.
    assert share.started == 2 and share.peak == 2
    pids = {x["pid"] for x in log}
    assert all(group_members(pid) == [] for pid in pids)
