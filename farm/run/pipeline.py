"""Many slots per orchestrator process: slots are grouped into lanes, one lane per pytest worker,
and a worker runs its lane's cases on all the lane's slots at once.

pytest runs a worker's test items one after the other. With one item per slot in flight, a pool
of 512 slots would need 512 workers (~40 MB each, most of them waiting for a reply). Instead:

* ``plan_lanes`` splits the healthy slots into n lanes of about equal estimated work (the agents'
  and the worker's), moving cases between lanes within their family where whole slots cannot be
  split evenly; the farm's xdist scheduler sends a whole lane to one worker (a lane is a scope);
* the worker's :class:`Pipeline` starts, on the first item of a lane, one thread per slot of the
  lane. Each thread runs the cases that prefer its slot (farm/run/leases.py assign_slots, which
  balances their cost) in item order through the worker's Dispatcher (its retries, leases, busy
  and hang rules unchanged), so every slot stays busy while the test items, in order, only wait
  for a result already on its way;
* a case that has been in flight for STUCK_AFTER seconds (it may hang until its timeout) stops
  counting against the window, and the cases queued behind it on its slot are taken by the
  lane's idle slots of its family (:class:`Pipeline`);
* a slot thread with nothing of its family left to run lets go of its slot's agent
  (``Dispatcher.let_go``), and with it of the device's lock: another run waiting for the device
  is woken then, not when this worker ends.

A result is handed to its item once (the plugin then writes the record): cases run ahead of an
item that never comes (-x stopped the session, a crash moved the lane) are dropped when the
pipeline closes, never written. A case whose family has no slot in the lane (a family without a
healthy slot, or a lane moved here after a worker died) runs in the item's own thread.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from farm.agent.record import ResultRecord
from farm.pool.transport.shared import STALLED_AFTER
from farm.run.dispatch import Dispatcher
from farm.run.leases import assign_slots, balance_lanes, case_costs, slot_loads
from farm.run.slots import SlotInfo
from suites.case import Case

LANE_PREFIX = "lane"
# Seconds in flight after which a case counts as stuck, not computing: the shared agents' own
# threshold for moving the other slots off an agent held up by one case.
STUCK_AFTER = STALLED_AFTER


def lanes(
    slots: Iterable[SlotInfo | dict], n: int, loads: Mapping[str, int] | None = None
) -> dict[str, str]:
    """slot id -> lane name, n lanes at most, balancing the lanes' loads (``loads``: slot id ->
    the estimated cost of its cases, farm/run/leases.py slot_loads; 1 each when not given).

    A lane's slots share its worker, and on this machine its agent: on the embedded pool the
    one Ascend310B slot carries a third of a nightly run, so dealing slots round-robin would give
    one lane twice the other's work. Greedy, heaviest slot first onto the lightest lane (the
    lowest-numbered on a tie), with slots of equal load taken family by family: equal loads deal
    every family over the lanes. Deterministic: every worker computes it."""
    listed = []
    for slot in slots:
        sid, family = (
            (slot["id"], slot["family"]) if isinstance(slot, dict) else (slot.id, slot.family)
        )
        listed.append((family, sid))
    weight = {sid: (loads.get(sid, 0) if loads is not None else 1) for _, sid in listed}
    order = sorted(listed, key=lambda fs: (-weight[fs[1]], fs[0], fs[1]))
    n = max(1, n)
    total = [0] * n
    out: dict[str, str] = {}
    for _, sid in order:
        lane = min(range(n), key=lambda i: (total[i], i))
        total[lane] += weight[sid]
        out[sid] = f"{LANE_PREFIX}{lane}"
    return out


def plan_lanes(
    cases: list[Case], slots: list[SlotInfo], slots_by_family: dict, n: int
) -> tuple[dict[str, str], dict[str, str]]:
    """(case id -> preferred slot, slot id -> lane) of a selection of cases on n lanes: what the
    controller's scheduler and every worker compute alike. Each case's slot balances the
    estimated work within its family; the lanes take whole slots (:func:`lanes`); then cases
    move between lanes within their family until the lanes' work is even
    (farm/run/leases.py balance_lanes)."""
    costs = case_costs(cases)
    torchless = {s.id for s in slots if not s.torch}
    assignment = assign_slots(cases, slots_by_family, costs, torchless)
    slot_lane = lanes(slots, n, slot_loads(cases, assignment, costs))
    return balance_lanes(cases, assignment, slot_lane, slots_by_family, costs), slot_lane


class Pipeline:
    """Cases of a worker's lanes, run ahead on every slot of those lanes.

    ``work``: lane -> the (case, preferred slot) of its items, in item order. ``slot_lane``: slot
    id -> lane (from :func:`lanes`). ``window``: at most this many cases of a lane compute at
    once (None: no cap; local pools cap it at the cores, see farm/run/plugin.py).

    **A stuck case holds up only itself.** A case in flight for ``stuck_after`` seconds (a
    smoke case answers in well under a second: this one may hang until its timeout) is waiting,
    not computing: it no longer takes a place of the window, and the cases queued behind it on
    its slot are taken, earliest item first, by the lane's other slots of its family as they
    become idle (each still one case at a time, leased by the dispatcher as ever)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        work: dict[str, list[tuple[Case, str]]],
        slot_lane: dict[str, str],
        window: int | None = None,
        run: Callable[[Case, str | None], ResultRecord] | None = None,
        stuck_after: float = STUCK_AFTER,
    ):
        self.dispatcher = dispatcher
        self.work = work
        self.slot_lane = slot_lane
        self.window = window
        self.stuck_after = stuck_after
        self._run = run or dispatcher.run
        self._cond_lock = threading.Lock()
        self._cond = threading.Condition(self._cond_lock)  # where the items wait for results
        # lane -> where its slots wait for a place in the window (one woken per answer, who
        # hands it on if it does not take it; the herd of a lane's slots woken at every answer
        # cost a 256-slot pool half its orchestrator's CPU again).
        self._room: dict[str, threading.Condition] = {}
        self._room_waiting: dict[str, int] = {}  # lane -> its slots waiting in _room
        # (lane, family) -> where the lane's slots with nothing of their own left wait (on the
        # same lock): woken by no answer, only by a sibling's case getting stuck (their timeout)
        # and the family's last queued case being taken.
        self._idle: dict[tuple[str, str], threading.Condition] = {}
        self._queues: dict[str, collections.deque[Case]] = {}  # slot id -> its cases
        # lane -> {slot id: when its case in flight began (monotonic)}
        self._lane_in_flight: dict[str, dict[str, float]] = {}
        self._left: dict[tuple[str, str], int] = {}  # (lane, family) -> its cases still queued
        self._results: dict[str, tuple[ResultRecord | None, BaseException | None]] = {}
        self._pending: set[str] = set()
        self._order: dict[str, int] = {}  # case id -> its item's place in its lane
        self._started: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._closing = False

    # -- the item side --------------------------------------------------------------------

    def result(self, case: Case, preferred: str | None) -> ResultRecord:
        """The record of ``case``: prefetched by the lane's threads, else run here."""
        lane = self.slot_lane.get(preferred or "")
        with self._cond:
            if lane is not None and lane not in self._started:
                self._start(lane)
            if case.id not in self._pending and case.id not in self._results:
                prefetched = False
            else:
                prefetched = True
                while case.id not in self._results:
                    self._cond.wait()
        if not prefetched:
            return self._run(case, preferred)
        with self._cond:
            record, error = self._results.pop(case.id)
        if error is not None:
            raise error
        assert record is not None
        return record

    # -- the slot side --------------------------------------------------------------------

    def _start(self, lane: str) -> None:
        """Queue the lane's cases by slot and start a thread per slot (caller holds _cond)."""
        self._started.add(lane)
        slots = [s for s in self.dispatcher.slots.values() if self.slot_lane.get(s.id) == lane]
        for place, (case, preferred) in enumerate(self.work.get(lane, [])):
            if preferred in self.dispatcher.slots and case.id not in self._pending:
                self._queues.setdefault(preferred, collections.deque()).append(case)
                self._pending.add(case.id)
                self._order[case.id] = place
                family = self.dispatcher.slots[preferred].family
                self._left[(lane, family)] = self._left.get((lane, family), 0) + 1
                self._idle.setdefault((lane, family), threading.Condition(self._cond_lock))
        self._lane_in_flight[lane] = {}
        self._room[lane] = threading.Condition(self._cond_lock)
        self._room_waiting[lane] = 0
        # Every slot of a family with queued cases gets a thread, an empty queue included: it
        # takes what a stuck sibling cannot run.
        for slot in sorted(slots, key=lambda s: s.id):
            if not self._left.get((lane, slot.family)):
                continue
            thread = threading.Thread(
                target=self._drive, args=(slot, lane), name=f"farm-slot-{slot.id}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _next(
        self, slot: SlotInfo, lane: str, now: float, after_a_case: bool = False
    ) -> tuple[Case | None, threading.Condition, float | None]:
        """(the case ``slot`` runs next, or None for none yet; then where to wait and until
        when, None: until notified) (caller holds _cond). Only the lane's cases in flight are
        looked at, never all its slots: a lane may have hundreds.

        ``after_a_case``: the slot has just given back its place in the window. When others
        wait for one, it queues behind them instead of taking that place again: a slot that
        wins the lock every time would keep the window for itself while the item the session
        waits for sits on a slot that never gets a turn (one lane of 5 slots, a window of 2-4:
        the nightly's first record came at 50-77 s instead of 5 s)."""
        if after_a_case and self.window is not None and self._room_waiting[lane]:
            computing = self._computing(lane, now)
            return None, self._room[lane], (min(computing) if computing else now) + self.stuck_after
        in_flight = self._lane_in_flight[lane]
        own = self._queues.get(slot.id)
        behind: list[collections.deque[Case]] = []
        if not own:
            # The earliest item queued behind a sibling stuck on a case, or when to look again.
            soonest = now + self.stuck_after  # a case begun after this look is stuck by then
            for sid, began in in_flight.items():
                queue = self._queues.get(sid)
                if queue and self.dispatcher.slots[sid].family == slot.family:
                    if now - began >= self.stuck_after:
                        behind.append(queue)
                    else:
                        soonest = min(soonest, began + self.stuck_after)
            if not behind:
                return None, self._idle[(lane, slot.family)], soonest
        computing = self._computing(lane, now)
        if self.window is not None and len(computing) >= self.window:
            return None, self._room[lane], min(computing) + self.stuck_after
        queue = own or min(behind, key=lambda q: self._order[q[0].id])
        self._left[(lane, slot.family)] -= 1
        if not self._left[(lane, slot.family)]:
            self._idle[(lane, slot.family)].notify_all()  # nothing left to take: they end
        return queue.popleft(), self._cond, None

    def _computing(self, lane: str, now: float) -> list[float]:
        """When the lane's cases in flight that are not stuck began (caller holds _cond)."""
        return [b for b in self._lane_in_flight[lane].values() if now - b < self.stuck_after]

    def _hand_on(self, lane: str) -> None:
        """A place in the window this slot does not take goes to another (caller holds _cond)."""
        if self.window is not None and len(self._computing(lane, time.monotonic())) < self.window:
            self._room[lane].notify()

    def _drive(self, slot: SlotInfo, lane: str) -> None:
        in_flight = self._lane_in_flight[lane]
        room = self._room[lane]
        after_a_case = False
        while True:
            with self._cond:
                case = None
                while not (self._closing or not self._left.get((lane, slot.family))):
                    now = time.monotonic()
                    case, where, until = self._next(slot, lane, now, after_a_case)
                    after_a_case = False
                    if case is not None:
                        break
                    if where is not room:
                        self._hand_on(lane)
                        where.wait(None if until is None else max(0.0, until - now))
                        continue
                    self._room_waiting[lane] += 1
                    try:
                        room.wait(None if until is None else max(0.0, until - now))
                    finally:
                        self._room_waiting[lane] -= 1
                if case is None:  # nothing of its family left to run, its own or a sibling's
                    self._hand_on(lane)
                    closing = self._closing
                else:
                    in_flight[slot.id] = time.monotonic()
                    self._hand_on(lane)
            if case is None:
                let_go = getattr(self.dispatcher, "let_go", None)
                if not closing and let_go is not None:
                    let_go(slot.id)  # its device is free for another run now
                return
            record: ResultRecord | None = None
            error: BaseException | None = None
            try:
                record = self._run(case, slot.id)
            except BaseException as exc:  # handed to the item, which reports it
                error = exc
            with self._cond:
                in_flight.pop(slot.id, None)
                self._pending.discard(case.id)
                self._results[case.id] = (record, error)
                self._cond.notify_all()
                room.notify()
                after_a_case = True

    def close(self, timeout: float = 5.0) -> list[str]:
        """Stop taking cases; returns the ids run ahead that no item took (they are dropped)."""
        with self._cond:
            self._closing = True
            for queue in self._queues.values():
                for case in queue:
                    self._pending.discard(case.id)
                queue.clear()
            self._left.clear()
            self._cond.notify_all()
            for waiting in [*self._idle.values(), *self._room.values()]:
                waiting.notify_all()
        for thread in self._threads:
            thread.join(timeout)
        with self._cond:
            return sorted(self._results)

    def stats(self) -> dict[str, Any]:
        with self._cond:
            return {
                "lanes": sorted(self._started),
                "threads": len(self._threads),
                "waiting": len(self._results),
                "queued": sum(len(q) for q in self._queues.values()),
            }
