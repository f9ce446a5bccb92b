"""RunState: reads are lock-free and write nothing; writers' updates are seen by every reader."""

from __future__ import annotations

import fcntl
import json
import multiprocessing

from farm.run.leases import RunState


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


def _errors(path: str, host: str, n: int) -> None:
    state = RunState(path, quarantine_after=10_000)
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
