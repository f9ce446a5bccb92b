"""RunState: reads are lock-free and write nothing; writers' updates are seen by every reader."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import threading
from pathlib import Path

import pytest

from farm.run import leases
from farm.run.leases import LeaseTimeout, RunState, lease_any


def test_read_of_a_missing_state_is_empty_and_creates_nothing(tmp_path):
    state = RunState(tmp_path / "state.json")
    assert state.read() == {"infra_errors": {}, "quarantined": {}}
    assert state.quarantined() == {}
    assert not (tmp_path / "state.json").exists()


def test_read_writes_nothing(tmp_path):
    state = RunState(tmp_path / "state.json")
    state.quarantine("h1", "down")
    before = (tmp_path / "state.json").stat()
    for _ in range(5):
        assert state.quarantined() == {"h1": "down"}
    after = (tmp_path / "state.json").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_read_does_not_wait_for_a_writer_holding_the_lock(tmp_path):
    state = RunState(tmp_path / "state.json")
    state.record_infra_error("h1", "timeout")
    with open(state.path.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a writer in the middle of an update
        assert state.read()["infra_errors"] == {"h1": ["timeout"]}


def test_a_torn_or_foreign_file_reads_as_empty(tmp_path):
    path = tmp_path / "state.json"
    state = RunState(path)
    path.write_text('{"quarantined": {"h1"')
    assert state.quarantined() == {}
    path.write_text("[1, 2]")
    assert state.read() == {"infra_errors": {}, "quarantined": {}}


def test_read_returns_a_copy(tmp_path):
    state = RunState(tmp_path / "state.json")
    state.quarantine("h1", "down")
    state.quarantined()["h2"] = "not really"
    assert state.quarantined() == {"h1": "down"}


def test_a_reader_sees_every_change_another_process_writes(tmp_path):
    """read() parses the file again only when its bytes changed: a writer's update (another
    worker's RunState) is seen at once, and changing what read() returned changes nothing."""
    reader, writer = RunState(tmp_path / "state.json"), RunState(tmp_path / "state.json")
    writer.record_infra_error("h1", "timeout")
    first = reader.read()
    first["infra_errors"]["h1"].append("not really")
    assert reader.read()["infra_errors"] == {"h1": ["timeout"]}
    writer.quarantine("h2", "down")
    assert reader.quarantined() == {"h2": "down"}
    (tmp_path / "state.json").unlink()
    assert reader.read() == {"infra_errors": {}, "quarantined": {}}


def _errors(path: str, host: str, n: int) -> None:
    state = RunState(Path(path), quarantine_after=10_000)
    for i in range(n):
        state.record_infra_error(host, f"error {i}")


def test_concurrent_writers_lose_nothing_and_readers_see_whole_states(tmp_path):
    path = tmp_path / "state.json"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_errors, args=(str(path), f"h{i}", 40)) for i in range(3)]
    for p in procs:
        p.start()
    seen = 0
    while any(p.is_alive() for p in procs):
        if path.exists():  # never a torn file: what a lock-free reader opens always parses
            state = json.loads(path.read_text())
            seen = max(seen, sum(len(v) for v in state["infra_errors"].values()))
    for p in procs:
        p.join()
        assert p.exitcode == 0
    final = json.loads(path.read_text())
    assert {h: len(v) for h, v in final["infra_errors"].items()} == {"h0": 40, "h1": 40, "h2": 40}
    assert seen <= 120


# -- a thread waiting for a lease is woken by the release -------------------------------------


def hold(lock_dir: Path, slot_id: str):
    """The slot's lease as another worker process holds it: a flock on its lock file."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    fh = open(leases._lock_path(lock_dir, slot_id), "a+")
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fh


def waiting_for_leases(monkeypatch) -> tuple[threading.Event, list[list[Path]]]:
    """(set once a thread waits for a lease, the lock files of each wait): the waits counted."""
    started, waits = threading.Event(), []
    watches = leases._WATCHES
    wait = watches.wait

    def counted(paths, deadline):
        waits.append(list(paths))
        started.set()
        return wait(paths, deadline)

    def no_sleep(seconds):
        raise AssertionError(f"a lease waiter slept {seconds} s: it polls")

    monkeypatch.setattr(watches, "wait", counted)
    monkeypatch.setattr(leases.time, "sleep", no_sleep)
    return started, waits


def in_thread(lock_dir: Path, slot_ids: list[str]):
    """A thread that takes a lease of ``slot_ids`` and holds it until told: (thread, the slot
    it holds once it has one, set then, tell it to let go)."""
    got: list[str] = []
    has_it, let_go = threading.Event(), threading.Event()

    def take():
        with lease_any(lock_dir, slot_ids, timeout=120) as slot_id:
            got.append(slot_id)
            has_it.set()
            let_go.wait(60)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread, got, has_it, let_go


def test_a_lease_waiter_is_woken_by_the_release_and_holds_the_slot(tmp_path, monkeypatch):
    started, waits = waiting_for_leases(monkeypatch)
    held = hold(tmp_path, "h1:0")
    thread, got, has_it, let_go = in_thread(tmp_path, ["h1:0"])
    try:
        assert started.wait(30), "the thread never waited"
        held.close()  # the other worker lets go
        assert has_it.wait(60), "the waiter was not woken by the release"
        assert got == ["h1:0"]
        assert len(waits) == 1  # one wait, woken once: no rounds of asking again
        with pytest.raises(BlockingIOError):  # it holds the slot: nobody else can take it
            hold(tmp_path, "h1:0")
    finally:
        let_go.set()
        thread.join(60)


def test_a_waiter_on_several_slots_takes_the_one_let_go(tmp_path, monkeypatch):
    started, waits = waiting_for_leases(monkeypatch)
    first, second = hold(tmp_path, "h1:0"), hold(tmp_path, "h2:0")
    thread, got, has_it, let_go = in_thread(tmp_path, ["h1:0", "h2:0"])
    try:
        assert started.wait(30), "the thread never waited"
        second.close()
        assert has_it.wait(60), "the waiter was not woken by the release"
        assert got == ["h2:0"] and len(waits) == 1
    finally:
        let_go.set()
        thread.join(60)
        first.close()


def test_a_watch_outliving_its_waiter_lets_go_of_the_slot(tmp_path):
    """A wait that timed out leaves its watch blocked; when the holder lets go, the watch takes
    the lock only to find nobody waiting, and lets go at once: the slot is free."""
    held = hold(tmp_path, "h1:0")
    with pytest.raises(LeaseTimeout, match="slot h1:0 stayed busy for 0 s"):
        with lease_any(tmp_path, ["h1:0"], timeout=0.01):
            pass
    path = leases._lock_path(tmp_path, "h1:0")
    watches = [t for t in threading.enumerate() if t.name == f"{leases.WATCH_THREAD}{path}"]
    assert len(watches) == 1
    held.close()
    watches[0].join(60)
    assert not watches[0].is_alive(), "the watch was not woken by the release"
    with lease_any(tmp_path, ["h1:0"], timeout=0) as slot_id:
        assert slot_id == "h1:0"
