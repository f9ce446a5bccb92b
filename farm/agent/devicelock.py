"""The device lock: a device serves one run at a time, whichever orchestrator started the run.

Two clones of the farm running against one pool used to put two agents on one device at once. The
lock lives on the host, next to the device, so that every orchestrator meets it:

    <workdir>/locks/device-<n>.lock    flock'ed by the agents that use device n
    <workdir>/locks/device-<n>.json    who holds it: run, owner, agent pids, since (for messages)
    <workdir>/locks/device-<n>.gate    a short critical section around taking the lock

**Where it is taken: on the agent's first ``run-case`` for the device**, not at hello, in a new op
or from an argv option. The device is in every run-case request, so every path that runs a case
on a device takes the lock without having to remember to (the dispatcher, the health check's
canary, ``farm repro``, the benchmarks), whoever started the agent and with whatever argv; an
agent that only answers hello/identify (a health check of a busy host) never blocks a device;
"busy" is an ordinary error reply to the request that wanted the device, so the channel stays
usable and the same agent simply tries again on its next run-case; and the number and order of
replies on the wire do not change (the fault tests count them). The agent then **holds the lock
for its lifetime**: the kernel drops a flock when its holder's descriptors close, i.e. when the
agent exits, is killed or crashes. Nothing has to clean up after a dead holder.

**Who may share it.** A run-case request may carry ``run`` (the run's id, for messages) and
``owner`` (a token for "this run", the same in every worker of one run). The first agent takes
``LOCK_EX | LOCK_NB``; an agent with an owner then holds the lock shared (``LOCK_SH``), and another
agent may join it only with the *same* owner: the workers of one run already serialize their use
of a slot with the run's own leases (farm/run/leases.py), and a case that moves to a sibling
worker's slot (a host lost mid-run) must not find its own run "busy". An agent of another owner,
or of none (a health check), needs the lock free: it waits for it up to ``lock_wait`` seconds
(from the request, else the agent's ``--lock-wait``) and otherwise answers ``busy`` naming the
holder (run, agent pids, since when). All acquisitions go through the gate (an exclusive flock
held for microseconds), which makes the exclusive-then-shared conversion safe.

**A waiting agent is woken by the release, not by polling.** While it waits, a thread of the agent
blocks in ``flock(LOCK_EX)`` on a descriptor of its own (:class:`_ReleaseWatch`): the kernel grants
it the moment the holders' descriptors close, the thread lets go at once and wakes the waiting
acquire, which takes the lock through the gate as any other attempt. The watch never holds the
lock for more than those microseconds; if another agent takes the device first, the acquire
simply watches again, until ``lock_wait`` runs out.

Standard library only: this module ships to hosts with the agent. Whether a holder's pid is alive
is farm/agent/hostops.py's ``alive`` (a zombie holds no lock: its descriptors are closed).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from farm.util.errors import DeviceBusy
from farm.util.proc import alive

DEFAULT_LOCK_WAIT = 10.0  # seconds an agent waits for a busy device when the request does not say
LOCK_DIR = "locks"
WATCH_THREAD = "farm-lock-watch:"  # the name of a watch's thread, then its lock file


def lock_paths(workdir: str | os.PathLike[str], device: int) -> tuple[Path, Path, Path]:
    """(lock, holder record, gate) of device ``device`` under ``workdir``."""
    d = Path(workdir) / LOCK_DIR
    return d / f"device-{device}.lock", d / f"device-{device}.json", d / f"device-{device}.gate"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


def read_holder(workdir: str | os.PathLike[str], device: int) -> dict[str, Any]:
    """The holder record of a device ({} if there is none or it is unreadable)."""
    _, info, _ = lock_paths(workdir, device)
    try:
        data = json.loads(info.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def describe_holder(holder: dict[str, Any], now: float | None = None) -> str:
    """'run R (agent pid 12, 34; since 2024-...Z, 8 s ago)', from a holder record."""
    now = time.time() if now is None else now
    run = holder.get("run") or "(a run that did not say its id)"
    pids = ", ".join(str(p) for p in holder.get("pids") or []) or "?"
    since = holder.get("since")
    when = ""
    if isinstance(since, (int, float)):
        when = f"; since {_iso(since)}, {max(0.0, now - since):.0f} s ago"
    owner = holder.get("owner")
    who = f"run {run}" if owner or holder.get("run") else "an agent outside any run"
    return f"{who} (agent pid {pids}{when})"


class DeviceLocks:
    """The device locks one agent holds (each until it exits)."""

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        run: str | None = None,
        default_wait: float = DEFAULT_LOCK_WAIT,
    ) -> None:
        self.workdir = Path(workdir)
        self.run = run
        self.default_wait = default_wait
        self.held: dict[int, dict[str, Any]] = {}  # device -> holder record when taken
        # The last acquire that had to wait: {"device", "waited_s", "holder": whom it waited for}.
        self.last_wait: dict[str, Any] | None = None
        self._fds: dict[int, int] = {}
        self._watches: dict[int, _ReleaseWatch] = {}  # device -> what wakes a wait for it

    def acquire(
        self,
        device: int,
        *,
        run: str | None = None,
        owner: str | None = None,
        wait: float | None = None,
    ) -> dict[str, Any]:
        """Take (or keep) the lock of ``device``; return its holder record. Raises
        :class:`DeviceBusy` when another run (another owner) holds it for ``wait`` seconds."""
        self.last_wait = None
        if device in self.held:
            return self.held[device]
        run = run or self.run
        wait = self.default_wait if wait is None else max(0.0, float(wait))
        lock, info, gate = lock_paths(self.workdir, device)
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        deadline = start + wait
        waited_for: dict[str, Any] | None = None
        try:
            while True:
                with _gate(gate):
                    record = self._try(fd, device, info, run, owner)
                if record is not None:
                    self._fds[device] = fd
                    self.held[device] = record
                    if waited_for is not None:
                        self.last_wait = {
                            "device": device,
                            "waited_s": round(time.monotonic() - start, 3),
                            "holder": waited_for,
                        }
                    return record
                if waited_for is None:
                    waited_for = read_holder(self.workdir, device)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                watch = self._watches.get(device)
                if watch is None:
                    watch = self._watches[device] = _ReleaseWatch(lock)
                watch.wait(remaining)  # until the holders let go, or the wait runs out
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        holder = read_holder(self.workdir, device)
        holder["pids"] = [p for p in holder.get("pids") or [] if alive(int(p))]
        raise DeviceBusy(
            f"device {device} of {socket.gethostname()} is busy: held by "
            f"{describe_holder(holder)}; waited {time.monotonic() - start:.0f} s",
            device=device,
            holder=holder,
        )

    def _try(
        self, fd: int, device: int, info: Path, run: str | None, owner: str | None
    ) -> dict[str, Any] | None:
        """One attempt, under the gate: the holder record if taken, None if busy."""
        me = os.getpid()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:  # nobody holds it
            now = time.time()
            record = {
                "device": device,
                "run": run,
                "owner": owner,
                "pids": [me],
                "since": now,
                "since_iso": _iso(now),
                "host": socket.gethostname(),
            }
            _write_json(info, record)
            if owner:  # shareable by the same run's other agents
                fcntl.flock(fd, fcntl.LOCK_SH)
            return record
        if not owner:
            return None
        holder = read_holder(self.workdir, device)
        if holder.get("owner") != owner:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # held exclusively after all
            return None
        holder["pids"] = [p for p in holder.get("pids") or [] if alive(int(p))] + [me]
        _write_json(info, holder)
        return holder

    def release_all(self) -> None:
        """Drop every lock now (the agent's exit does the same)."""
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()
        self.held.clear()


class _ReleaseWatch:
    """Says when a device's lock is let go: a daemon thread blocks in ``flock(LOCK_EX)`` on its
    own descriptor of the lock file, which the kernel grants once every holder's descriptor is
    closed (the holder released it, exited or died), and lets go of it at once.

    It only tells the waiting acquire "free now": the acquire then tries through the gate, as
    any attempt does (taking the lock here, outside the gate, would race the gate's
    exclusive-then-shared conversion). A thread still blocked when its acquire gave up is kept
    for the device's next wait, so an agent asked again and again for a busy device has one such
    thread per device at most."""

    def __init__(self, lock: Path) -> None:
        self.lock = lock
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None
        self._freed = threading.Event()

    def wait(self, timeout: float) -> bool:
        """True once the lock has been free since the watch began (possibly during an earlier
        wait that gave up), False after ``timeout`` seconds without."""
        with self._mutex:
            if self._thread is None or not (self._thread.is_alive() or self._freed.is_set()):
                self._freed = threading.Event()
                self._thread = threading.Thread(
                    target=self._block,
                    args=(self._freed,),
                    name=f"{WATCH_THREAD}{self.lock}",
                    daemon=True,
                )
                self._thread.start()
            freed = self._freed
        if not freed.wait(timeout):
            return False
        with self._mutex:
            if self._freed is freed:
                self._thread = None  # spent: the next wait starts a new watch
        return True

    def _block(self, freed: threading.Event) -> None:
        try:
            fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return  # nothing to watch with: the acquire waits out its time and answers busy
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            return
        finally:
            os.close(fd)  # lets go of the lock, if it was granted
        freed.set()


@contextlib.contextmanager
def _gate(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True) + "\n")
    os.replace(tmp, path)


__all__ = [
    "DEFAULT_LOCK_WAIT",
    "DeviceLocks",
    "describe_holder",
    "lock_paths",
    "read_holder",
]
