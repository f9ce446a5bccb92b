"""A pool shared by runs, and agents that hang or crash, on the SSH lab (real sshd, real agents).

The agents run a fake executor (tests/pool/fake_executor.py, shipped in a test bundle) that
hangs, crashes or corrupts itself when a case's origin says so; the dispatcher, the transports,
the device locks and the reaping are the farm's own. Every test checks what is left on the hosts
with ``ps`` over the transport.

The lab: a2-01 and a2-02 (Ascend910B1, 2 devices each), a200-01 (Ascend310B1, 1 device).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from farm.agent.devicelock import lock_paths, read_holder
from farm.pool.deploy import BUNDLE_PREFIX, bundle_files, deploy, start_agent
from farm.pool.lab.core import Lab
from farm.pool.transport import open_transport
from farm.run.dispatch import Dispatcher
from farm.run.leases import RunState
from farm.run.requests import case_request
from farm.run.slots import SlotInfo
from farm.util.errors import DeviceBusy
from suites.case import Case
from tests.e2e.conftest import select
from tests.pool.conftest import said_pid

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.pool.fake_executor:run"
A2 = "ascend910b"
A200 = "ascend310b"
# A case's timeout: the fake executor answers in milliseconds; a new agent starts up before its
# first case (warm_up, under the handshake's timeout: STARTUP is only for channels that cannot);
# the device lock is free or shared unless a test makes it busy.
TIMEOUT, STARTUP, LOCK_WAIT = 2.0, 3.0, 1.0
HUNG = TIMEOUT + LOCK_WAIT  # a hung case's timeout on a fresh agent: its own, and the lock's


def fake_bundle(out: Path) -> tuple[Path, str]:
    """The agent bundle plus the fake executor, so that lab agents can import it."""
    files = dict(bundle_files(REPO))
    for rel in ("tests/__init__.py", "tests/pool/__init__.py", "tests/pool/fake_executor.py"):
        files[rel] = REPO / rel
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, src in sorted(files.items()):
            data = src.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 946684800, 0o644
            tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0) as gz:
        gz.write(raw.getvalue())
    data = packed.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    path = out / f"{BUNDLE_PREFIX}-fake-{sha[:12]}.tar.gz"
    path.write_bytes(data)
    return path, sha


@pytest.fixture(scope="module")
def pool(lab, tmp_path_factory):
    """The lab's inventory with the fake bundle deployed; every agent killed afterwards."""
    inventory = lab.inventory()
    bundle, sha = fake_bundle(tmp_path_factory.mktemp("fake-bundle"))
    for host in inventory.hosts:
        with open_transport(host) as t:
            deploy(t, host, [bundle])
    yield inventory, sha
    for host in inventory.hosts:
        lab.reset_host(host.name)


@pytest.fixture
def no_agents_left(lab, pool):
    """After the test, no agent of the lab is left (the test's own checks come first)."""
    yield
    inventory, _ = pool
    for host in inventory.hosts:
        from farm.pool.lab.core import kill_agents

        left = kill_agents(Path(host.workdir))
        assert left == [], f"agents on {host.name} survived SIGKILL: {left}"


def ps(transport) -> list[dict]:
    """The host's processes, as ``ps`` over the transport says: pid, pgid, stat, args (in a
    UTF-8 locale: in the session's C locale ps shows the lab root's "ü" as "??")."""
    rc, out, err = transport.run_argv(
        ["env", "LC_ALL=C.UTF-8", "ps", "-eo", "pid=,pgid=,stat=,args="]
    )
    assert rc == 0, err
    rows = []
    for line in out.splitlines():
        pid, pgid, stat, args = line.split(None, 3)
        rows.append({"pid": int(pid), "pgid": int(pgid), "stat": stat, "args": args})
    return [r for r in rows if not r["stat"].startswith("Z")]


def agents_on(transport, workdir: str) -> list[dict]:
    return [r for r in ps(transport) if "farm.agent" in r["args"] and workdir in r["args"]]


def wait_for_a_lock_waiter(workdir: str, device: int, other_than: int) -> None:
    """Until a process other than ``other_than`` has ``device``'s lock file open (it is trying
    the lock): an observable state, not a sleep that a slow machine could outlast."""
    lock = str(lock_paths(workdir, device)[0])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for fd_dir in Path("/proc").glob("[0-9]*/fd"):
            if fd_dir.parent.name == str(other_than):
                continue
            with contextlib.suppress(OSError):
                if any(os.readlink(fd) == lock for fd in fd_dir.iterdir()):
                    return
        time.sleep(0.05)
    pytest.fail(f"nobody but pid {other_than} ever tried the lock {lock}")


def wait_for_the_holder(workdir: str, device: int, pid: int) -> None:
    """Until agent ``pid`` holds ``device`` (it has taken a case for it)."""
    deadline = time.monotonic() + 120
    while pid not in read_holder(workdir, device).get("pids", []):
        if time.monotonic() > deadline:
            pytest.fail(f"agent {pid} never took device {device}")
        time.sleep(0.05)


def device_uses(workdir: str, device: int, since: float) -> list[dict]:
    """What the fake executor logged of its cases on ``device`` since ``since`` (agent pid,
    start, end)."""
    log = Path(workdir) / "fake-executor.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [u for u in map(json.loads, lines) if u["device"] == device and u["start"] >= since]


def assert_one_agent_at_a_time(uses: list[dict]) -> None:
    """No two agents ever used the device at once."""
    for a in uses:
        for b in uses:
            if a["pid"] != b["pid"]:
                assert a["end"] <= b["start"] or b["end"] <= a["start"], (a, b)


def in_groups(transport, pgids) -> list[dict]:
    return [r for r in ps(transport) if r["pgid"] in set(pgids)]


class Run:
    """One run's dispatcher over the lab (real agents, the fake executor)."""

    def __init__(self, inventory, sha, root: Path, slots, **kwargs):
        self.inventory, self.sha = inventory, sha
        self.transports: dict = {}
        self.opened: list = []
        self.said: list[str] = []
        self.state = RunState(root / "state.json")
        kwargs = {
            "base_timeout": TIMEOUT,
            "startup_allowance": STARTUP,
            "lock_wait": LOCK_WAIT,
            **kwargs,
        }
        self.dispatcher = Dispatcher(
            slots,
            self.open,
            self.state,
            root / "locks",
            "native",
            notify=self.said.append,
            **kwargs,
        )

    def open(self, slot):
        host = self.inventory.host(slot.host)
        t = self.transports.get(slot.host) or open_transport(host)
        self.transports[slot.host] = t
        channel = start_agent(t, self.sha, executor=FAKE)
        self.opened.append(channel)
        return channel

    def transport(self, name):
        return self.transports.get(name) or open_transport(self.inventory.host(name))

    def close(self):
        self.dispatcher.close()
        for t in self.transports.values():
            t.close()


def slots_of(inventory, family) -> list[SlotInfo]:
    return [
        SlotInfo(s.id, h.name, h.family, h.soc, s.device)
        for h in inventory.hosts
        if h.family == family
        for s in h.slots()
    ]


def case(family: str, n: int, origin: str = "") -> Case:
    return Case(family, "float32", (3, n), (-1,), origin=origin)


# -- one run at a time per device --------------------------------------------------------------


def test_two_agents_for_one_device_the_second_waits_then_reports_busy(pool, no_agents_left):
    inventory, sha = pool
    host = inventory.host("a200-01")  # one device
    since = time.time()
    with open_transport(host) as t:
        first = start_agent(t, sha, executor=FAKE)
        second = start_agent(t, sha, executor=FAKE)
        one = case_request(case(A200, 5))
        assert first.run_case(one, "native", 0, lock={"run": "run-A", "owner": "A"})
        start = time.monotonic()
        with pytest.raises(DeviceBusy) as info:
            second.run_case(
                case_request(case(A200, 6)),
                "native",
                0,
                lock={"run": "run-B"} | {"owner": "B", "lock_wait": 1.5},
            )
        waited = time.monotonic() - start
        assert 1.4 <= waited < 6, waited
        exc = info.value
        assert exc.host == "a200-01" and exc.holder["pids"] == [first.agent_pid]
        assert str(exc).startswith(f"agent on host a200-01 ({host.address}:{host.port}): ")
        assert "device 0 of " in str(exc) and "is busy: held by run run-A" in str(exc)
        assert f"agent pid {first.agent_pid}; since 20" in str(exc)
        # Two agent processes, one device holder: the second never ran a case on it.
        assert {a["pid"] for a in agents_on(t, host.workdir)} == {
            first.agent_pid,
            second.agent_pid,
        }
        assert {u["pid"] for u in device_uses(host.workdir, 0, since)} == {first.agent_pid}
        # The holder goes away: the waiting run gets the device.
        first.close()
        record = second.run_case(case_request(case(A200, 6)), "native", 0, lock={"run": "run-B"})
        assert record["outcome"] == "passed" and record["agent_pid"] == second.agent_pid
        second.close()
    assert_one_agent_at_a_time(device_uses(host.workdir, 0, since))


def test_a_second_run_waits_for_a_busy_pool_and_reports_its_cases_not_run(
    pool, tmp_path, no_agents_left
):
    """Two runs (two dispatchers with their own run directories) on the one-device host: the
    second waits, says so, reports its case as not run naming the first run, and charges
    nobody; once the first run is over, it runs."""
    inventory, sha = pool
    slots = slots_of(inventory, A200)
    since = time.time()
    first = Run(inventory, sha, tmp_path / "run-first", slots)
    second = Run(inventory, sha, tmp_path / "run-second", slots, busy_wait=3.0, lock_wait=1.0)
    try:
        assert first.dispatcher.run(case(A200, 7))["outcome"] == "passed"
        start = time.monotonic()
        record = second.dispatcher.run(case(A200, 8))
        assert 3.0 <= time.monotonic() - start < 60  # its busy wait, then no longer
        assert (record["outcome"], record["category"]) == ("broken", "not_run")
        msg = record["message"]
        assert msg.startswith("not run: the devices of family ascend310b it could use stayed")
        assert "held by another run (a200-01:0: run run-first, agent pid" in msg
        assert second.state.read() == {"infra_errors": {}, "quarantined": {}}
        assert second.said and "a200-01:0 is busy, another run holds it" in second.said[0]
        workdir = inventory.host("a200-01").workdir
        with open_transport(inventory.host("a200-01")) as t:
            agents = agents_on(t, workdir)
            assert len(agents) == 2  # the first run's agent holds; the second's only waited
        assert {u["pid"] for u in device_uses(workdir, 0, since)} == {first.opened[0].agent_pid}
        first.close()
        again = second.dispatcher.run(case(A200, 9))
        assert again["outcome"] == "passed" and again["host"] == "a200-01"
        assert_one_agent_at_a_time(device_uses(workdir, 0, since))
    finally:
        first.close()
        second.close()


# -- hung agents -------------------------------------------------------------------------------


@contextlib.contextmanager
def canary_wrong(inventory, name: str):
    """Host ``name`` answers the canary wrong (tests/pool/fake_executor.py CANARY_WRONG)."""
    from tests.pool.fake_executor import CANARY_WRONG

    marker = Path(inventory.host(name).workdir) / CANARY_WRONG
    marker.touch()
    try:
        yield
    finally:
        marker.unlink()


def test_a_case_that_hangs_on_a_host_failing_its_canary_is_killed_there_and_passes_elsewhere(
    pool, tmp_path, no_agents_left
):
    """The timeout is the host's when the host then fails its canary too."""
    inventory, sha = pool
    run = Run(inventory, sha, tmp_path / "run", slots_of(inventory, A2))
    try:
        hung = case(A2, 10, origin="fake:hang@a2-01")
        with canary_wrong(inventory, "a2-01"):
            record = run.dispatcher.run(hung, "a2-01:0")
        assert (record["outcome"], record["host"], record["attempts"]) == ("passed", "a2-02", 2)
        assert record["message"] == "fake pass on a2-02"
        assert len(record["infra_errors"]) == 1
        error = record["infra_errors"][0]
        assert error.startswith("a2-01:0: host a2-01") and "no reply to run-case" in error
        assert "was killed (TERM)" in error and "its canary did not answer right" in error
        assert list(run.state.read()["infra_errors"]) == ["a2-01"]  # as before: the host's error
        stuck = run.opened[0]
        assert stuck.host.name == "a2-01" and stuck.reaped is True
        t = run.transport("a2-01")
        assert agents_on(t, inventory.host("a2-01").workdir) == []
        assert in_groups(t, [stuck.agent_pgid]) == []  # its `sleep` child too
        # The slot is used again by a fresh agent, which gets the device lock.
        again = run.dispatcher.run(case(A2, 11), "a2-01:0")
        assert (again["outcome"], again["slot"]) == ("passed", "a2-01:0")
        assert run.opened[-1].host.name == "a2-01" and run.opened[-1] is not stuck
    finally:
        run.close()


def test_a_case_that_hangs_where_the_host_answers_its_canary_is_a_hang_and_charges_nobody(
    pool, tmp_path, no_agents_left
):
    """One timeout, then the host answers its canary right: the case hangs, nowhere else tried."""
    inventory, sha = pool
    run = Run(inventory, sha, tmp_path / "run", slots_of(inventory, A2))
    try:
        record = run.dispatcher.run(case(A2, 12, origin="fake:hang"), "a2-01:0")
        assert (record["outcome"], record["category"], record["attempts"]) == ("failed", "hang", 1)
        msg = record["message"]
        assert msg.startswith(
            f"the case hangs: it timed out on a2-01 (a2-01:0, no reply within {HUNG:g} s)"
        )
        assert "and the host answered its canary (" in msg and "the stuck agent was killed" in msg
        assert record["hang"]["hosts"] == ["a2-01"]
        assert run.state.read() == {"infra_errors": {}, "quarantined": {}}
        # The stuck agent is gone with its group; the canary's agent stays for the slot.
        stuck, canary = run.opened
        t = run.transport("a2-01")
        assert in_groups(t, [stuck.agent_pgid]) == []
        left = agents_on(t, inventory.host("a2-01").workdir)
        assert {r["pgid"] for r in left} == {canary.agent_pgid}
        assert agents_on(run.transport("a2-02"), inventory.host("a2-02").workdir) == []
    finally:
        run.close()


def test_lab_down_stops_every_agent_even_one_whose_session_is_gone(sshd, tmp_path):
    """An orchestrator that dies mid-case leaves its agent hung, no longer under sshd; `farm
    lab down` still finds it (pid file, command line) and kills its group."""
    from farm.pool.lab.command import main

    lab = Lab(tmp_path / "lab")
    inventory = lab.up(1)
    host = inventory.hosts[0]
    bundle, sha = fake_bundle(tmp_path)
    try:
        with open_transport(host) as t:
            deploy(t, host, [bundle])
        t = open_transport(host)
        channel = start_agent(t, sha, executor=FAKE)
        channel._send_bytes(  # a hanging case, its reply never read
            b'{"op":"run-case","seq":9,"case":{"origin":"fake:hang"},"backend":"b","device":0}\n',
            5.0,
        )
        wait_for_the_holder(
            host.workdir, 0, said_pid(channel.agent_pid)
        )  # it read the case and hangs
        t.close()  # the connection goes; the agent, hung, does not
        time.sleep(0.5)
        assert lab.agents(host.name) == [channel.agent_pid]
        with open_transport(host) as probe:
            assert [a["pid"] for a in agents_on(probe, host.workdir)] == [channel.agent_pid]
        assert main(["down", "--root", str(lab.root)]) == 0
        assert lab.agents(host.name) == []
        from farm.util.proc import members as group_members

        assert group_members(said_pid(channel.agent_pgid)) == []  # the hung case's `sleep` too
    finally:
        lab.down()


# -- crashes -----------------------------------------------------------------------------------


def test_a_crash_left_by_an_earlier_case_passes_on_a_fresh_agent(pool, tmp_path, no_agents_left):
    inventory, sha = pool
    run = Run(inventory, sha, tmp_path / "run", slots_of(inventory, A200))
    try:
        corrupt = case(A200, 13, origin="fake:corrupt")
        victim = case(A200, 14, origin="fake:segv-if-corrupted")
        assert run.dispatcher.run(corrupt)["outcome"] == "passed"
        record = run.dispatcher.run(victim)
        assert (record["outcome"], record["attempts"]) == ("passed", 2)
        note = record["notes"][0]
        assert note.startswith("the agent crashed running this case on a200-01:0: Fatal Python")
        assert f"(after case {corrupt.id} on that agent)" in note
        assert "rerun on a fresh agent on a200-01:0, it passed" in note
        assert record["message"].startswith("fake pass on a200-01 [the agent crashed")
        assert [e["outcome"] for e in record["attempts_log"]] == ["crash", "passed"]
        # agent_pid: the fake executor's own field, beyond a ResultRecord's
        assert len(run.opened) == 2 and dict(record)["agent_pid"] == run.opened[1].agent_pid
        assert run.state.read() == {"infra_errors": {}, "quarantined": {}}
    finally:
        run.close()


def test_a_case_that_crashes_twice_is_its_crash(pool, tmp_path, no_agents_left):
    inventory, sha = pool
    run = Run(inventory, sha, tmp_path / "run", slots_of(inventory, A200))
    try:
        record = run.dispatcher.run(case(A200, 15, origin="fake:segv"))
        assert (record["outcome"], record["category"]) == ("failed", "crash")
        msg = record["message"]
        assert msg.startswith("the agent died running this case on a200-01:0: Fatal Python error")
        assert "(the agent's first case); rerun on a fresh agent, it died again on a200-01:0" in msg
        assert [e["outcome"] for e in record["attempts_log"]] == ["crash", "crash"]
        assert run.state.read() == {"infra_errors": {}, "quarantined": {}}
    finally:
        run.close()


# -- a whole `farm run` against a device another run holds ---------------------------------------


def test_a_farm_run_waits_for_the_device_another_run_holds(
    farm, lab, lab_inventory, pool, no_agents_left
):
    """Another clone's run holds a200-01's only device. `farm run` on that family: its health
    check does not call the busy host bad, its worker waits (and says so in the record) and,
    once the device is free, runs every case; nobody is quarantined, the run exits 0."""
    inventory, sha = pool
    host = inventory.host("a200-01")
    cases = select("310b and f32")
    with open_transport(host) as t:
        holder = start_agent(t, sha, executor=FAKE)
        holder.run_case(
            case_request(case(A200, 17)), "native", 0, lock={"run": "other-clone-run", "owner": "x"}
        )
        proc = farm.start_tier("--jobs", "1", "--inventory", lab_inventory, k="310b and f32")
        # The run's plan exists (health checks done), then its worker's agent starts and waits.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            plans = list(farm.runs.glob("*/plan.json"))
            if plans and len(agents_on(t, host.workdir)) >= 2:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        else:
            pytest.fail("the run's worker never started an agent on a200-01")
        # The worker's agent is trying the device's lock (it has the lock file open): whether it
        # still waits or was told busy and the dispatcher waits, the record must say so.
        wait_for_a_lock_waiter(host.workdir, 0, other_than=said_pid(holder.agent_pid))
        holder.close()
        result = farm.finish(proc)
    assert result.code == 0, result.text
    records = result.assert_one_result_per_case(cases)
    assert result.summary["outcomes"] == {"passed": len(cases)}
    waited = [r for r in records.values() if r.get("notes")]
    assert len(waited) == 1, [r.get("notes") for r in records.values()]
    note = waited[0]["notes"][0]
    assert note.startswith("waited ") and "a200-01:0: run other-clone-run, agent pid" in note
    assert all(r["infra_errors"] == [] for r in records.values())
    assert result.quarantine() == {} and not result.summary.get("unhealthy_hosts")
