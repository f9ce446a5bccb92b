"""Slots shared by pytest-xdist workers: exclusive leases, balanced assignment, run-wide state.

Workers are separate processes, so everything they share lives in files of the run directory:
a lock file per slot (fcntl, released by the kernel if a worker dies) and a small JSON state of
infrastructure errors and mid-run quarantines, updated under its own lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import heapq
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO

from farm.pool.health.checks import QUARANTINE_AFTER
from golden.soc import UnknownSocError, representative_soc

# What a case costs an agent, in the time of one element of a float32 precision case, for
# balancing (integers, so that every process sums the same loads exactly). Fitted on the
# embedded pool's nightly tier (benchmarks/RESULTS.md, issue 13): a precision case takes ~420 ns
# an element (fp16 ~1.2x, bf16 ~1.3x: through the torch benchmark) plus ~1.6 ms and ~75 us per
# vector core of its SoC (the emulation runs a block per core: ~1.7 ms on an Ascend310B, ~5.3 ms
# on an Ascend910B1); a rejection only makes its inputs, ~105 ns an element plus ~0.6 ms.
CASE_OVERHEAD_ELEMENTS = 3_800
CORE_OVERHEAD_ELEMENTS = 180
REJECTION_OVERHEAD_ELEMENTS = 1_400
REJECTION_ELEMENT_COST = (1, 4)  # (numerator, denominator)
DTYPE_ELEMENT_COST = {"bfloat16": (4, 3), "float16": (6, 5)}
# What a case costs the pytest worker whose lane runs its item, in the same unit: pytest's item
# protocol, xdist's messages, the record and the Allure annotations, ~4.5 ms whatever the case
# (the nightly's orchestrator CPU in its case phase over its cases). A lane is one worker, and on
# the embedded pool the workers and the agents share the cores: a lane's time is its agents'
# work plus its worker's.
WORKER_CASE_ELEMENTS = 10_700
# What an agent pays once, on its first benchmark-ratio case: PyTorch's import for the benchmark
# (golden/benchmark.py), ~2.8 s of CPU (torch 2.13, this machine), in the unit above. A host that
# kept every result its cases ask for (farm/agent/benchmark_cache.py) pays none; the plan cannot
# know which results a host kept, and counts it.
BENCHMARK_IMPORT_ELEMENTS = 6_700_000


@functools.cache
def _family_overhead(family: str) -> int:
    try:
        cores = representative_soc(family).vector_cores
    except UnknownSocError:
        cores = 0
    return CASE_OVERHEAD_ELEMENTS + CORE_OVERHEAD_ELEMENTS * cores


def case_cost(case) -> int:
    """The estimated cost of a case to its agent (see CASE_OVERHEAD_ELEMENTS)."""
    if not case.accepted:
        num, den = REJECTION_ELEMENT_COST
        return case.numel * num // den + REJECTION_OVERHEAD_ELEMENTS
    num, den = DTYPE_ELEMENT_COST.get(case.dtype, (1, 1))
    return case.numel * num // den + _family_overhead(case.family)


def needs_benchmark(case) -> bool:
    """Whether the agent judges ``case`` against PyTorch's kernel (the benchmark-ratio standard):
    the first such case costs its agent PyTorch's import (BENCHMARK_IMPORT_ELEMENTS)."""
    return bool(case.accepted) and case.standard == "benchmark-ratio"


def without_torch(family: str) -> str:
    """Why a benchmark-ratio case of ``family`` is not run: no healthy host of it has PyTorch.
    The case is the pool's to fix, not a host's fault (an optional dependency)."""
    return (
        f"no healthy host of family {family} has PyTorch, which the benchmark-ratio standard's "
        "benchmark needs: install it on one (pip install torch, the CPU build), or select the "
        "cases of the other standards"
    )


def case_costs(cases: Iterable) -> dict[str, int]:
    """case id -> :func:`case_cost`, computed once for the functions below."""
    return {case.id: case_cost(case) for case in cases}


def lane_costs(cases: list, costs: Mapping[str, int] | None = None) -> dict[str, int]:
    """case id -> what the case costs its lane: its agent's work (``costs``, else
    :func:`case_cost`) and its worker's (WORKER_CASE_ELEMENTS)."""
    costs = costs if costs is not None else case_costs(cases)
    return {case.id: costs[case.id] + WORKER_CASE_ELEMENTS for case in cases}


def slot_loads(
    cases: Iterable, assignment: dict[str, str], costs: Mapping[str, int] | None = None
) -> dict[str, int]:
    """slot id -> the summed cost of the cases that prefer it to their lane: the agent's and the
    worker's (``assignment``: case id -> slot)."""
    cases = list(cases)
    weight = lane_costs(cases, costs)
    loads = _imports(cases, assignment)
    for case in cases:
        slot = assignment.get(case.id)
        if slot is not None:
            loads[slot] += weight[case.id]
    return dict(loads)


def _imports(cases: list, assignment: Mapping[str, str]) -> Counter[str]:
    """slot id -> PyTorch's import, for the slots that run a benchmark-ratio case."""
    return Counter(
        dict.fromkeys(
            {assignment[c.id] for c in cases if c.id in assignment and needs_benchmark(c)},
            BENCHMARK_IMPORT_ELEMENTS,
        )
    )


def balance_lanes(
    cases: Iterable,
    assignment: dict[str, str],
    slot_lane: dict[str, str],
    slots_by_family: dict[str, list[str]],
    costs: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The assignment with cases moved from the heaviest lane to the lightest, each onto the
    least-loaded slot of its family there, while a move narrows the gap.

    Lanes take whole slots, and a slot can carry more than an even share: the embedded pool's
    one Ascend310B slot has 45% of a nightly run's cases, so the worker whose lane holds it would
    run alone for the last seconds. Cases of a family with slots in both lanes even it out;
    benchmark-ratio cases stay on their one slot (:func:`assign_slots`). Deterministic (every
    worker computes the same one)."""
    cases = list(cases)
    out = dict(assignment)
    weight = lane_costs(cases, costs)
    members: dict[str, list] = {}
    slot_load = _imports(cases, out)
    load: Counter[str] = Counter()
    for slot, cost in slot_load.items():
        if slot in slot_lane:
            load[slot_lane[slot]] += cost
    for case in cases:
        lane = slot_lane.get(out.get(case.id, ""))
        if lane is not None:
            members.setdefault(lane, []).append(case)
            load[lane] += weight[case.id]
            slot_load[out[case.id]] += weight[case.id]
    names = sorted(set(slot_lane.values()))
    for _ in range(len(names) ** 2):
        heavy = max(names, key=lambda lane: (load[lane], lane))
        light = min(names, key=lambda lane: (load[lane], lane))
        targets = {
            family: [s for s in slots if slot_lane.get(s) == light]
            for family, slots in slots_by_family.items()
        }
        stay, moved = [], []
        for case in sorted(members.get(heavy, []), key=lambda c: (-weight[c.id], c.id)):
            cost = weight[case.id]
            there = targets.get(case.family)
            if not there or 2 * cost > load[heavy] - load[light] or needs_benchmark(case):
                stay.append(case)
                continue
            slot = min(there, key=lambda s: (slot_load[s], s))
            slot_load[out[case.id]] -= cost
            slot_load[slot] += cost
            load[heavy] -= cost
            load[light] += cost
            out[case.id] = slot
            moved.append(case)
        if not moved:
            break
        members[heavy] = stay
        members.setdefault(light, []).extend(moved)
    return out


def assign_slots(
    cases: Iterable,
    slots_by_family: dict[str, list[str]],
    costs: Mapping[str, int] | None = None,
    torchless: Collection[str] = (),
) -> dict[str, str]:
    """case id -> preferred slot id, balancing the estimated cost within each family.

    A family's benchmark-ratio cases all go to one slot with PyTorch (not one of
    ``torchless``), which carries PyTorch's import in its load: spread over the slots,
    every agent of the family would import PyTorch (2.8 s of CPU each, most of a smoke run's
    agents' work). The rest goes greedy longest-first onto the least-loaded slot.
    Deterministic, so every xdist worker computes the same assignment from the same plan.
    """
    cases = list(cases)
    costs = costs if costs is not None else case_costs(cases)
    out: dict[str, str] = {}
    by_family: dict[str, list] = {}
    for case in cases:
        by_family.setdefault(case.family, []).append(case)
    for family, members in by_family.items():
        slots = slots_by_family.get(family) or []
        if not slots:
            continue
        load = {slot: 0 for slot in slots}
        benchmarked: list = []
        rest: list = []
        for case in members:
            (benchmarked if needs_benchmark(case) else rest).append(case)
        if benchmarked:
            first = min((s for s in slots if s not in torchless), default=min(slots))
            load[first] = BENCHMARK_IMPORT_ELEMENTS + sum(costs[c.id] for c in benchmarked)
            out.update((c.id, first) for c in benchmarked)
        # The least-loaded slot, the lowest id on a tie, from a heap of (load, slot): the same
        # choice as a min over the slots, for families of hundreds of slots too.
        least = [(spent, slot) for slot, spent in load.items()]
        heapq.heapify(least)
        for _, case_id, cost in sorted((-costs[c.id], c.id, costs[c.id]) for c in rest):
            spent, slot = least[0]
            heapq.heapreplace(least, (spent + cost, slot))
            out[case_id] = slot
    return out


class LeaseTimeout(TimeoutError):
    pass


# Slot id -> threads of this process waiting for it (farm/run/pipeline.py runs a thread per slot).
_WAITERS: Counter[str] = Counter()
_WAITERS_LOCK = threading.Lock()
HANDOVER_S = 0.02  # far longer than a woken waiter needs to take the slot (microseconds)
# A wait watches at most this many of its slots (a thread each, see _Watches); the rest, of a
# family of hundreds of slots, are tried again every UNWATCHED_RETRY_S.
WATCHED_AT_MOST = 32
UNWATCHED_RETRY_S = 0.05
WATCH_THREAD = "farm-lease-watch:"  # the name of a watch's thread, then its lock file


class _Watches:
    """What wakes this process's threads waiting for slot leases: per lock file that some
    thread waits for, one daemon thread blocked in ``flock(LOCK_EX)`` on its own handle.

    The kernel grants that flock when the slot's holder lets go (releases it, exits or dies), in
    whatever process; the watch then hands the lock, held, to a thread still waiting for the slot
    (it becomes that thread's lease), or lets go of it at once when none is left. A slot is so
    never free with a waiter asleep, and a woken waiter does not race the holder's next lease
    for it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._wanted: Counter[Path] = Counter()  # lock file -> threads waiting for it
        self._watching: set[Path] = set()  # lock files with a watch blocked on them
        self._granted: dict[Path, IO[str]] = {}  # lock file -> a held handle for a waiter

    def wait(self, paths: list[Path], deadline: float) -> tuple[Path, IO[str]] | None:
        """One of ``paths``, held (the first granted), or None at ``deadline``, or after
        UNWATCHED_RETRY_S when some of them are not watched (the caller tries those again)."""
        watched = paths[:WATCHED_AT_MOST]
        with self._cond:
            self._wanted.update(watched)
            try:
                while True:
                    for path in watched:
                        fh = self._granted.pop(path, None)
                        if fh is not None:
                            return path, fh
                    for path in watched:
                        if path not in self._watching:
                            self._watching.add(path)
                            threading.Thread(
                                target=self._watch,
                                args=(path,),
                                name=f"{WATCH_THREAD}{path}",
                                daemon=True,
                            ).start()
                    remaining = deadline - time.monotonic()
                    if len(paths) > len(watched):
                        remaining = min(remaining, UNWATCHED_RETRY_S)
                    if remaining <= 0:
                        return None
                    self._cond.wait(remaining)
                    if len(paths) > len(watched) and not self._granted.keys() & set(watched):
                        return None  # time to try the unwatched ones again
            finally:
                self._wanted.subtract(watched)

    def _watch(self, path: Path) -> None:
        try:
            fh = open(path, "a+")
        except OSError:
            fh = None
        if fh is not None:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX)  # until the holder lets go
            except OSError:
                fh.close()
                fh = None
        with self._cond:
            self._watching.discard(path)
            if fh is not None and self._wanted[path] > 0 and path not in self._granted:
                self._granted[path] = fh
                self._cond.notify_all()
                return
        if fh is not None:
            fh.close()  # nobody here waits for the slot any more: let go of it


_WATCHES = _Watches()


def _forget_watches_in_child() -> None:
    """A forked child has none of its parent's watch threads: it starts its own."""
    global _WATCHES
    _WATCHES = _Watches()


os.register_at_fork(after_in_child=_forget_watches_in_child)


@contextlib.contextmanager
def lease(lock_dir: Path, slot_id: str, timeout: float) -> Iterator[None]:
    """Hold slot `slot_id` exclusively across worker processes."""
    with lease_any(lock_dir, [slot_id], timeout):
        yield


@contextlib.contextmanager
def lease_any(lock_dir: Path, slot_ids: list[str], timeout: float) -> Iterator[str]:
    """Hold one of `slot_ids` exclusively: the first free one in the given order, else the first
    to be let go within `timeout` (woken by the release, see _Watches). Yields the slot id held.

    Waiting on several slots at once matters when a host is lost mid-run: its workers' cases
    move to the family's other slots, and queueing them all on one of those (while another is
    free) starves them into lease timeouts."""
    if not slot_ids:
        raise ValueError("lease_any needs at least one slot")
    deadline = time.monotonic() + timeout
    # A lock file is opened (and its path made) only when its slot is tried: the first free slot
    # is usually the first one, and a family of hundreds of slots must not cost an open or a path
    # per slot per case (256 of them cost 2 ms a case).
    handles: dict[str, IO[str]] = {}
    by_path: dict[Path, str] = {}  # made when the first wait begins
    held = None
    waiting = False
    try:
        while held is None:
            for slot_id in slot_ids:
                fh = handles.get(slot_id)
                if fh is None:
                    fh = handles[slot_id] = _open_lock(lock_dir, slot_id)
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                held = (slot_id, fh)
                break
            else:
                if not waiting:
                    waiting = True
                    with _WAITERS_LOCK:
                        _WAITERS.update(slot_ids)
                    by_path = {_lock_path(lock_dir, s): s for s in slot_ids}
                granted = _WATCHES.wait(list(by_path), deadline)
                if granted is not None:
                    slot_id = by_path[granted[0]]
                    mine = handles.pop(slot_id, None)
                    if mine is not None:
                        mine.close()  # the watch's handle is the lease now
                    handles[slot_id] = granted[1]
                    held = (slot_id, granted[1])
                elif time.monotonic() >= deadline:
                    busy = ", ".join(slot_ids)
                    raise LeaseTimeout(
                        f"slot {busy} stayed busy for {timeout:.0f} s"
                        if len(slot_ids) == 1
                        else f"slots {busy} all stayed busy for {timeout:.0f} s"
                    )
        try:
            yield held[0]
        finally:
            fcntl.flock(held[1], fcntl.LOCK_UN)
            if _WAITERS[held[0]] > 0 and not waiting:
                # Another thread of this process waits for the slot (a retry moved here): let
                # it take the slot before this thread, which runs cases on it back to back,
                # takes it again (flock is not fair).
                time.sleep(HANDOVER_S)
    finally:
        if waiting:
            with _WAITERS_LOCK:
                _WAITERS.subtract(slot_ids)
        for fh in handles.values():
            fh.close()


def _lock_path(lock_dir: Path, slot_id: str) -> Path:
    return lock_dir / (slot_id.replace(":", "_").replace("/", "_") + ".lock")


def _open_lock(lock_dir: Path, slot_id: str) -> IO[str]:
    """The slot's lock file, opened (made, with its directory, the first time)."""
    path = _lock_path(lock_dir, slot_id)
    try:
        return open(path, "a+")
    except FileNotFoundError:
        lock_dir.mkdir(parents=True, exist_ok=True)
        return open(path, "a+")


def _copied(state: dict) -> dict:
    """A copy of a run state a caller may change without changing the cached one."""
    return {
        key: {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
        if isinstance(value, dict)
        else value
        for key, value in state.items()
    }


class RunState:
    """Infrastructure errors per host and hosts quarantined during this run."""

    def __init__(self, path: Path, quarantine_after: int = QUARANTINE_AFTER):
        self.path = Path(path)
        self.quarantine_after = quarantine_after
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._last: tuple[bytes, dict] | None = None  # read(): the file's bytes and their state

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict]:
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = json.loads(self.path.read_text()) if self.path.exists() else {}
            except json.JSONDecodeError:
                state = {}
            state.setdefault("infra_errors", {})
            state.setdefault("quarantined", {})
            yield state
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
            os.replace(tmp, self.path)

    def read(self) -> dict:
        """The current state, without taking the lock or writing anything.

        Every writer replaces the file atomically (a complete temp file, then ``os.replace``) under
        the lock, so a reader sees one complete version, the latest one when it opened the file.
        Dispatch reads this once per case: a locked read-modify-write here cost a rename per case
        and serialized every worker on the lock (benchmarks/RESULTS.md). The same bytes as
        last time are not parsed again (a copy of that state is returned)."""
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            raw = b""
        last = self._last
        if last is None or last[0] != raw:
            try:
                state = json.loads(raw) if raw else {}
            except ValueError:
                state = {}
            if not isinstance(state, dict):
                state = {}
            state.setdefault("infra_errors", {})
            state.setdefault("quarantined", {})
            last = self._last = (raw, state)
        return _copied(last[1])

    def quarantined(self) -> dict[str, str]:
        return self.read()["quarantined"]

    def record_infra_error(self, host: str, message: str) -> bool:
        """Count an infrastructure error; True when the host has just been quarantined."""
        with self._locked() as state:
            errors = state["infra_errors"].setdefault(host, [])
            errors.append(message)
            if host not in state["quarantined"] and len(errors) >= self.quarantine_after:
                state["quarantined"][host] = (
                    f"{len(errors)} infrastructure errors during the run; last: {message}"
                )
                return True
            return False

    def quarantine(self, host: str, reason: str) -> None:
        with self._locked() as state:
            state["quarantined"].setdefault(host, reason)
