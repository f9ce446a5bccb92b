"""The farm's xdist scheduler: every test item of one lane goes to one worker.

A lane is a set of slots one worker keeps busy (farm/run/pipeline.py); ``group`` maps each
collected node id to its lane (the plugin's ``_lane_groups``, which every worker computes alike
from the same items). The class is written against xdist's published ``Scheduling`` protocol
(xdist/scheduler/protocol.py, pytest-xdist >= 3.6.1), which xdist's DSession calls, and uses
none of its schedulers' private methods.

How work flows, the way xdist's own scope scheduling does it:

* a *unit* is one lane's items; the queue holds the units no worker has, biggest first (ties
  in collection order), and each worker gets one unit at the start, then one more whenever
  two or fewer of its items are left, until the queue is empty and the workers are told to
  shut down; workers beyond the number of units are shut down at once;
* a worker lost with items left gives back its units that have items left, in the order it got
  them: they go to the end of the queue, to the next worker with room (the crashed item
  included: it runs again there, after xdist reported the crash);
* ``mark_test_pending`` runs an item again on the worker that has its lane, or queues it with its
  lane when that worker is shutting down or gone; ``remove_pending_tests_from_node`` queues the
  items a worker gave back the same way.

Counting left-over items is O(1) per finished test and each worker's collection is indexed
once: xdist's scope scheduler recounts a worker's units at every finished test and finds each
item with list.index, quadratic for a lane of thousands of cases (benchmarks/RESULTS.md,
issue 13).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

# A worker with this many items or fewer left gets its next unit (xdist's scope heuristic).
REFILL_AT = 2

# node ids collected, number of workers -> node id -> its unit's key (its lane).
Grouping = Callable[[list[str], int], dict[str, str]]


class _Unit:
    """One lane's items (node id -> done), with the count of those not done."""

    def __init__(self, items: dict[str, bool]):
        self.items = items
        self.left = sum(1 for done in items.values() if not done)

    def done(self, nodeid: str) -> None:
        if not self.items[nodeid]:
            self.items[nodeid] = True
            self.left -= 1

    def reopen(self, nodeid: str) -> bool:
        """Make ``nodeid`` (done, or not in the unit) pending; False if it was pending."""
        if not self.items.get(nodeid, True):
            return False
        self.items[nodeid] = False
        self.left += 1
        return True

    def drop(self, nodeid: str) -> None:
        if not self.items.pop(nodeid):
            self.left -= 1

    def pending(self) -> list[str]:
        return [nodeid for nodeid, done in self.items.items() if not done]


def expected_workers(config: pytest.Config) -> int:
    """How many workers the session starts: its ``--tx`` specs, ``N*spec`` counting N (``-n N``
    is N specs)."""
    count = 0
    for spec in config.getvalue("tx") or ():
        times, star, _ = spec.partition("*")
        count += int(times) if star and times.isdigit() else 1
    if not count:
        raise pytest.UsageError("farm: no xdist workers to schedule on: pass -n N or --tx SPEC")
    return count


class SlotScheduling:
    """xdist scheduling by lane: all the items of one lane go to one worker, which keeps every
    slot of the lane busy (farm/run/pipeline.py). (xdist's own loadgroup relies on rewriting node
    ids, which pytest 9 no longer allows, so the farm groups here instead.)"""

    def __init__(self, config: pytest.Config, log: Any, group: Grouping):
        self.config = config
        self.log = log.slotsched if log is not None else (lambda *args: None)
        self.numnodes = expected_workers(config)
        self._group = group
        self.collection: list[str] | None = None
        self._collected: set[str] = set()  # the collection's node ids, for look-ups
        self._scopes: dict[str, str] = {}  # node id -> unit key, set at the first schedule
        self.registered_collections: dict[WorkerController, list[str]] = {}
        self._index: dict[WorkerController, dict[str, int]] = {}  # node -> node id -> index
        self._queue: OrderedDict[str, _Unit] = OrderedDict()  # units no worker has
        self._assigned: dict[WorkerController, dict[str, _Unit]] = {}  # node -> its units

    # -- what the DSession reads --------------------------------------------------------------

    @property
    def nodes(self) -> list[WorkerController]:
        """The workers taking part (added, not removed, not shut down as surplus)."""
        return list(self._assigned)

    @property
    def collection_is_completed(self) -> bool:
        """Every worker the session started has sent its collection."""
        return len(self.registered_collections) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        """Nothing queued and every worker down to the item it is running, if any (xdist then
        shuts the workers down, which lets them finish it)."""
        if not self.collection_is_completed or self._queue:
            return False
        return all(self._left(node) <= 1 for node in self._assigned)

    @property
    def has_pending(self) -> bool:
        """Some item is queued or sent to a worker and not finished."""
        return bool(self._queue) or any(self._left(node) for node in self._assigned)

    # -- workers coming and going -------------------------------------------------------------

    def add_node(self, node: WorkerController) -> None:
        assert node not in self._assigned, f"{node}: added twice"
        self._assigned[node] = {}

    def add_node_collection(self, node: WorkerController, collection: Sequence[str]) -> None:
        """A worker's collection. A worker that joins later (replacing a lost one) must have
        collected the same items, else it gets no work (the difference goes to xdist's log)."""
        assert node in self._assigned, f"{node}: a collection before add_node"
        if self.collection_is_completed and self.collection is not None:
            if list(collection) != self.collection:
                from xdist.report import report_collection_diff

                first = next(iter(self.registered_collections))
                self.log(
                    report_collection_diff(
                        self.collection, list(collection), first.gateway.id, node.gateway.id
                    )
                )
                return
        self.registered_collections[node] = list(collection)

    def remove_node(self, node: WorkerController) -> str | None:
        """A worker finished or was lost. Lost with items left: its units with items left go back
        to the queue for the other workers, and the first item it had not finished is returned
        (the crashed one, for xdist to report); otherwise None."""
        units = self._assigned.pop(node)
        self._index.pop(node, None)
        left = [(key, unit) for key, unit in units.items() if unit.left]
        if not left:
            return None
        crashed = left[0][1].pending()[0]
        for key, unit in left:
            self._enqueue(key, unit)
        for other in self.nodes:
            self._refill(other)
        return crashed

    # -- items -------------------------------------------------------------------------------

    def schedule(self) -> None:
        """The first call (every collection in) splits the collection into lane units and deals
        them out; a later one (a worker joined) tops every worker up."""
        assert self.collection_is_completed, "schedule() before every collection came in"
        if self.collection is not None:
            for node in self.nodes:
                self._refill(node)
            return
        if not self._same_collections():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        self._collected = set(self.collection)
        self._scopes = self._group(self.collection, len(self.nodes))
        units: dict[str, dict[str, bool]] = {}
        for nodeid in self.collection:
            units.setdefault(self._scope(nodeid), {})[nodeid] = False
        for key, items in sorted(units.items(), key=lambda unit: -len(unit[1])):
            self._queue[key] = _Unit(items)

        surplus = len(self._assigned) - len(self._queue)
        for _ in range(max(0, surplus)):
            idle, _units = self._assigned.popitem()
            self.log(f"Shutting down unused node {idle}")
            idle.shutdown()
        for node in self.nodes:
            self._send_unit(node)
        for node in self.nodes:  # a second unit where the first is small (xdist #277)
            self._refill(node)
        if not self._queue:
            for node in self.nodes:
                node.shutdown()

    def mark_test_complete(
        self, node: WorkerController, item_index: int, duration: float = 0
    ) -> None:
        nodeid = self.registered_collections[node][item_index]
        self._assigned[node][self._scope(nodeid)].done(nodeid)
        self._refill(node)

    def mark_test_pending(self, item: str) -> None:
        """Run ``item`` again (a ``pytest_handlecrashitem`` hook asks for it): on the worker that
        has its lane while that one takes work, else queued with its lane. An item still to run
        stays as it is (the item a lost worker crashed on is queued again already)."""
        if item not in self._collected:
            raise ValueError(f"{item}: not an item of this session's collection; cannot rerun it")
        key = self._scope(item)
        queued = self._queue.get(key)
        if queued is not None and item in queued.items:
            queued.reopen(item)
            return
        for node, units in self._assigned.items():
            unit = units.get(key)
            if unit is None or item not in unit.items:
                continue
            if not unit.items[item]:
                return
            if not node.shutting_down and node in self.registered_collections:
                unit.reopen(item)
                self._send(node, [item])
                return
        self._enqueue(key, _Unit({item: False}))
        for node in self.nodes:
            self._refill(node)

    def remove_pending_tests_from_node(
        self, node: WorkerController, indices: Sequence[int]
    ) -> None:
        """The worker gave back these items unrun (xdist's answer to a steal, which this
        scheduler never sends): they are queued with their lane for the next worker with
        room."""
        collection = self.registered_collections[node]
        back: dict[str, dict[str, bool]] = {}
        for index in indices:
            nodeid = collection[index]
            key = self._scope(nodeid)
            self._assigned[node][key].drop(nodeid)
            back.setdefault(key, {})[nodeid] = False
        for key, items in back.items():
            self._enqueue(key, _Unit(items))
        for other in self.nodes:
            self._refill(other)

    # -- inside ------------------------------------------------------------------------------

    def _scope(self, nodeid: str) -> str:
        return self._scopes.get(nodeid, nodeid)

    def _left(self, node: WorkerController) -> int:
        return sum(unit.left for unit in self._assigned[node].values())

    def _enqueue(self, key: str, unit: _Unit) -> None:
        """Queue a unit; one of the same lane already queued takes its items."""
        queued = self._queue.get(key)
        if queued is None:
            self._queue[key] = unit
            return
        for nodeid in unit.pending():
            queued.reopen(nodeid)

    def _refill(self, node: WorkerController) -> None:
        """One more unit for a worker down to REFILL_AT items; shut it down when none is left."""
        if node.shutting_down or node not in self.registered_collections:
            return
        if not self._queue:
            node.shutdown()
            return
        self.log("Number of units waiting for node:", len(self._queue))
        if self._left(node) <= REFILL_AT:
            self._send_unit(node)

    def _send_unit(self, node: WorkerController) -> None:
        key, unit = self._queue.popitem(last=False)
        held = self._assigned[node].get(key)
        if held is None:
            self._assigned[node][key] = unit
            todo = unit.pending()
        else:  # the lane comes back to this worker (mark_test_pending, a give-back)
            todo = [nodeid for nodeid in unit.pending() if held.reopen(nodeid)]
        self._send(node, todo)

    def _send(self, node: WorkerController, nodeids: list[str]) -> None:
        index = self._index.get(node)
        if index is None:  # once per worker: list.index per item is quadratic
            index = {}
            for i, nodeid in enumerate(self.registered_collections[node]):
                index.setdefault(nodeid, i)  # the first of a repeated id, as list.index
            self._index[node] = index
        node.send_runtest_some([index[nodeid] for nodeid in nodeids])

    def _same_collections(self) -> bool:
        """Whether every worker collected the same items; each difference is reported as a
        failed collection (as xdist's own schedulers do)."""
        from xdist.report import report_collection_diff

        (first, items), *others = self.registered_collections.items()
        same = True
        for node, collection in others:
            diff = report_collection_diff(items, collection, first.gateway.id, node.gateway.id)
            if not diff:
                continue
            same = False
            self.log(diff)
            report = pytest.CollectReport(node.gateway.id, "failed", longrepr=diff, result=[])
            self.config.hook.pytest_collectreport(report=report)
        return same
