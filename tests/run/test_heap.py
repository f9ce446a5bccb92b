"""The garbage collector in a farm run's session (farm/util/heap.py): the items made with it off
and frozen, what survives a full collection frozen, and everything back under it (or kept
frozen, in a worker) when the session ends."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace
from typing import cast

import pytest

from farm.run.plan import Plan
from farm.util import heap


class Node:  # a tracked object, like a test item
    me: Node  # a cycle's reference to itself, where a test makes one (annotated only)


def _walked(obj) -> bool:
    """Whether the collector's generations hold ``obj`` (frozen objects are in none)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture(autouse=True)
def _collector_as_it_was():
    was_on = gc.isenabled()
    yield
    heap.release()
    if was_on:
        gc.enable()
    else:
        gc.disable()


def test_items_are_made_with_the_collector_off_then_frozen():
    gc.enable()
    with heap.collecting():
        assert not gc.isenabled()
        item = Node()
        assert _walked(item)
    assert gc.isenabled()
    assert not _walked(item)
    heap.release()
    assert _walked(item)


def test_a_pause_turns_the_collector_off_and_back_on_and_freezes_nothing():
    gc.enable()
    with heap.paused():
        assert not gc.isenabled()
        made = Node()
    assert gc.isenabled()
    assert _walked(made)


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with heap.collecting():
        pass
    assert not gc.isenabled()


def test_what_survives_a_full_collection_is_frozen_until_released():
    early = Node()
    heap.keep_long_lived()
    gc.collect(1)  # a younger generation's collection freezes nothing
    assert _walked(early)
    gc.collect()
    assert not _walked(early)
    later = Node()
    assert _walked(later)
    heap.release()
    assert _walked(early)
    gc.collect()  # released: no longer frozen after a full collection
    assert _walked(early) and _walked(later)


def test_a_worker_keeps_everything_frozen_when_its_session_ends():
    heap.keep_long_lived()
    heap.settle()
    item = Node()
    gc.collect()
    assert _walked(item)  # no more freezing after a full collection
    assert gc.get_freeze_count() > 0


def test_a_cycle_that_became_garbage_frozen_waits_for_release():
    heap.keep_long_lived()
    cycle = Node()
    cycle.me = cycle
    gc.collect()
    gone = weakref.ref(cycle)
    del cycle
    gc.collect()
    assert gone() is not None  # frozen: reference counting alone cannot free a cycle
    heap.release()
    gc.collect()
    assert gone() is None


def _session(farm: bool):
    from farm.run import plugin

    stash = pytest.Stash()
    if farm:
        stash[plugin.PLAN] = cast(Plan, SimpleNamespace())  # a farm run's: only its presence counts
    return SimpleNamespace(config=SimpleNamespace(stash=stash))


def test_a_farm_runs_session_keeps_its_objects_frozen_until_it_ends(monkeypatch):
    from farm.run import plugin
    from farm.run.allure import output as allure_output

    monkeypatch.setattr(allure_output, "install", lambda *args, **kwargs: True)
    gc.enable()
    for farm in (False, True):
        session = _session(farm)
        plugin.pytest_sessionstart(session)
        assert (heap._freeze_survivors in gc.callbacks) is farm
        collection = plugin.pytest_collection(session)
        next(collection)
        assert gc.isenabled() is not farm
        with pytest.raises(StopIteration):
            next(collection)
        assert gc.isenabled()
        assert (gc.get_freeze_count() > 0) is farm
        plugin.pytest_sessionfinish(session)  # the controller's: released
        assert heap._freeze_survivors not in gc.callbacks
        assert gc.get_freeze_count() == 0
