"""The device lock on a host: one run at a time per device, shared by one run's agents, released
when the holder dies; and the agent's run-case answering "busy" with the holder."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import threading
import time
from typing import Any

import pytest

from farm.agent import devicelock, protocol
from farm.agent.devicelock import DEFAULT_LOCK_WAIT, DeviceLocks, lock_paths, read_holder
from farm.agent.identity import Declared
from farm.agent.server import AgentServer
from farm.util.errors import DeviceBusy, InfraError

CTX = multiprocessing.get_context("fork")


def _hold(workdir: str, device: int, run, owner, ready, stop) -> None:
    locks = DeviceLocks(workdir, run=run)
    locks.acquire(device, owner=owner, wait=0)
    ready.set()
    stop.wait(30)


def holder_process(workdir, device=0, run="run-A", owner="owner-A"):
    ready, stop = CTX.Event(), CTX.Event()
    proc = CTX.Process(target=_hold, args=(str(workdir), device, run, owner, ready, stop))
    proc.start()
    assert ready.wait(10), "the holder never took the lock"
    return proc, stop


def test_another_run_waits_then_is_told_who_holds_the_device(tmp_path):
    proc, stop = holder_process(tmp_path)
    try:
        start = time.monotonic()
        with pytest.raises(DeviceBusy) as info:
            DeviceLocks(tmp_path, run="run-B").acquire(0, owner="owner-B", wait=0.6)
        waited = time.monotonic() - start
        assert 0.5 <= waited < DEFAULT_LOCK_WAIT - 1, waited  # its own wait, not the default
        exc = info.value
        assert isinstance(exc, InfraError) and exc.device == 0
        assert exc.holder["run"] == "run-A" and exc.holder["pids"] == [proc.pid]
        msg = str(exc)
        assert msg.startswith("device 0 of ") and "is busy: held by run run-A" in msg
        assert f"agent pid {proc.pid}" in msg and "since 20" in msg and "waited 1 s" in msg
        # Nor may an agent outside any run (a health check) take it.
        with pytest.raises(DeviceBusy):
            DeviceLocks(tmp_path).acquire(0, wait=0)
        # Another device of the host is free.
        assert DeviceLocks(tmp_path).acquire(1, wait=0)["pids"] == [os.getpid()]
    finally:
        stop.set()
        proc.join(10)


def test_the_lock_is_free_once_its_holder_is_killed(tmp_path):
    proc, _ = holder_process(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)  # no cleanup runs: the kernel drops the flock
    proc.join(10)
    locks = DeviceLocks(tmp_path, run="run-B")
    record = locks.acquire(0, owner="owner-B", wait=2)
    assert (record["run"], record["pids"]) == ("run-B", [os.getpid()])
    assert read_holder(tmp_path, 0)["owner"] == "owner-B"


def test_a_waiting_agent_gets_the_device_when_the_holder_exits(tmp_path):
    proc, stop = holder_process(tmp_path)
    threading.Timer(0.3, stop.set).start()
    locks = DeviceLocks(tmp_path, run="run-B")
    record = locks.acquire(0, owner="owner-B", wait=10)
    assert record["run"] == "run-B"
    proc.join(10)
    # Whom it waited for, and how long: the agent says so in its reply.
    assert locks.last_wait is not None and locks.last_wait["holder"]["run"] == "run-A"
    assert 0.2 <= locks.last_wait["waited_s"] < 5


def test_agents_of_one_run_share_a_device(tmp_path):
    """Workers of one run serialize a slot with their own leases; a case that moves to a sibling
    worker's slot must not find its own run busy."""
    proc, stop = holder_process(tmp_path, owner="run-A@orchestrator")
    try:
        record = DeviceLocks(tmp_path, run="run-A").acquire(0, owner="run-A@orchestrator", wait=0)
        assert record["pids"] == [proc.pid, os.getpid()]
        assert read_holder(tmp_path, 0)["pids"] == [proc.pid, os.getpid()]
    finally:
        stop.set()
        proc.join(10)


def test_an_agent_without_owner_holds_the_device_alone(tmp_path):
    """A health check's canary (no run): exclusive, even against a run that asks to share."""
    proc, stop = holder_process(tmp_path, run=None, owner=None)
    try:
        with pytest.raises(DeviceBusy, match="held by an agent outside any run"):
            DeviceLocks(tmp_path).acquire(0, owner=None, wait=0)
        with pytest.raises(DeviceBusy):
            DeviceLocks(tmp_path).acquire(0, owner="some-run", wait=0)
    finally:
        stop.set()
        proc.join(10)


def test_a_lock_is_kept_for_the_agents_lifetime(tmp_path):
    locks = DeviceLocks(tmp_path, run="r")
    first = locks.acquire(0, owner="o", wait=0)
    assert locks.acquire(0, owner="o", wait=0) is first  # held: no new attempt
    lock, info, gate = lock_paths(tmp_path, 0)
    assert lock.exists() and info.exists() and gate.exists()
    assert lock.parent == tmp_path / "locks"
    locks.release_all()
    assert DeviceLocks(tmp_path).acquire(0, wait=0)["run"] is None


# -- the agent: run-case takes the lock, "busy" is an error reply -------------------------------


def fake(case, backend, device, identity):
    return {"verdict": "pass", "device": device}


def serve(workdir, lines, **kwargs) -> list[dict]:
    out = io.BytesIO()
    server = AgentServer(
        io.BytesIO(b"".join(lines)),
        out,
        workdir=str(workdir),
        executor=fake,
        declared=Declared("Ascend910B1", 2, "env"),
        log=io.StringIO(),
        **kwargs,
    )
    server.serve()
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_run_case_on_a_busy_device_is_answered_busy_and_the_agent_keeps_serving(tmp_path):
    proc, stop = holder_process(tmp_path, device=1)
    try:
        replies = serve(
            tmp_path,
            [
                protocol.hello_request(1),
                protocol.encode_request(
                    "run-case", 2, case={}, backend="b", device=1, run="run-B", lock_wait=0.2
                ),
                protocol.encode_request("run-case", 3, case={}, backend="b", device=0),
            ],
            run_id="run-B",
        )
    finally:
        stop.set()
        proc.join(10)
    hello, busy, ok = replies
    assert "device_lock" not in ok  # device 0 was free: no wait to report
    assert hello["pid"] == os.getpid() and hello["pgid"] == os.getpgrp()
    assert busy["ok"] is False and busy["error"]["kind"] == "busy"
    assert busy["error"]["device"] == 1 and busy["error"]["holder"]["run"] == "run-A"
    assert "held by run run-A" in busy["error"]["message"]
    assert ok["ok"] and ok["result"]["device"] == 0
    assert read_holder(tmp_path, 0)["run"] == "run-B"  # the agent's --run-id, named in the lock
    with pytest.raises(DeviceBusy, match="agent on x: device 1 of .* is busy") as info:
        protocol.raise_for_error(busy, where="agent on x")
    assert info.value.holder["pids"] == [proc.pid]


def test_run_case_lock_fields_are_validated():
    fields: dict[str, Any]  # each a wrong type or value on purpose
    for fields in ({"run": 3}, {"owner": []}, {"lock_wait": -1}, {"lock_wait": "5"}):
        line = protocol.encode_request("run-case", 1, case={}, backend="b", device=0, **fields)
        with pytest.raises(protocol.RequestError) as info:
            protocol.decode_request(line)
        assert info.value.kind == "bad-request"


# -- a waiting agent is woken by the release ------------------------------------------------------


def _watches(workdir, device: int = 0) -> list[threading.Thread]:
    lock = lock_paths(workdir, device)[0]
    return [t for t in threading.enumerate() if t.name == f"{devicelock.WATCH_THREAD}{lock}"]


def test_a_waiting_agent_is_woken_by_the_release_not_by_polling(tmp_path, monkeypatch):
    """Two attempts in all, the busy one and the one after the holder let go, and no sleep in
    between: the kernel wakes the waiter when the holder's descriptors close."""
    proc, stop = holder_process(tmp_path)
    locks = DeviceLocks(tmp_path, run="run-B")
    attempts: list[object] = []
    first_was_busy = threading.Event()
    attempt = locks._try

    def counted(*args):
        record = attempt(*args)
        attempts.append(record)
        if record is None:
            first_was_busy.set()
        return record

    def no_sleep(seconds):
        raise AssertionError(f"the waiting agent slept {seconds} s: it polls")

    monkeypatch.setattr(locks, "_try", counted)
    monkeypatch.setattr(devicelock.time, "sleep", no_sleep)
    got: dict = {}
    waiter = threading.Thread(
        target=lambda: got.update(locks.acquire(0, owner="owner-B", wait=120)), daemon=True
    )
    waiter.start()
    try:
        assert first_was_busy.wait(30), "the waiter never tried the device"
    finally:
        stop.set()  # the holder exits: its flock goes with it
        proc.join(10)
    waiter.join(60)
    assert not waiter.is_alive(), "the waiter was not woken by the release"
    assert got["run"] == "run-B" and got["pids"] == [os.getpid()]
    assert len(attempts) == 2 and attempts[0] is None  # busy, then taken: no attempts between
    assert locks.last_wait is not None and locks.last_wait["holder"]["run"] == "run-A"


def test_an_agent_asked_again_keeps_one_watch_per_device_and_it_never_keeps_the_lock(tmp_path):
    """Each run-case on a busy device waits its lock_wait and answers busy; the watch of the
    first one, still blocked, serves the next: one thread per device, however often asked. Once
    the holder goes, the left-over watch lets go of the lock at once: the device is free."""
    proc, stop = holder_process(tmp_path)
    locks = DeviceLocks(tmp_path, run="run-B")
    try:
        for _ in range(3):
            with pytest.raises(DeviceBusy, match="is busy: held by run run-A"):
                locks.acquire(0, owner="owner-B", wait=0.05)
        mine = _watches(tmp_path)
        assert len(mine) == 1
    finally:
        stop.set()
        proc.join(10)
    for thread in mine:
        thread.join(60)
        assert not thread.is_alive(), "the watch was not woken by the release"
    record = DeviceLocks(tmp_path, run="run-C").acquire(0, owner="owner-C", wait=0)
    assert record["run"] == "run-C"
