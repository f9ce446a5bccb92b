"""The farm's xdist scheduler (farm/run/scheduling.py), driven through xdist's published
``Scheduling`` protocol the way xdist's DSession calls it: workers join and send their
collections, report finished items, are lost mid-run, and a crash hook asks for an item again."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import cast

import pytest
from xdist.scheduler.protocol import Scheduling

from farm.run.scheduling import SlotScheduling, expected_workers


class FakeConfig:
    """What the scheduler reads of pytest's config: the --tx specs, and the hook it reports a
    collection difference to."""

    def __init__(self, tx=("2*popen",)):
        self.tx = list(tx)
        self.collect_reports: list = []
        self.hook = SimpleNamespace(pytest_collectreport=self._collectreport)

    def getvalue(self, name):
        return {"tx": self.tx}[name]

    def _collectreport(self, report):
        self.collect_reports.append(report)


def config_of(fake: FakeConfig) -> pytest.Config:
    """The fake as the pytest config the scheduler takes (it reads only the above of it)."""
    return cast(pytest.Config, fake)


class FakeWorker:
    """A worker as the controller sees it (xdist's WorkerController): the indices it was sent,
    in order, that it runs one after the other; a shutdown lets it finish them."""

    def __init__(self, name: str):
        self.gateway = SimpleNamespace(id=name)
        self.queue: list[int] = []  # sent, not run yet
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices):
        self.queue += indices
        self.sent += indices

    def shutdown(self):
        self.shutting_down = True

    def __repr__(self):
        return self.gateway.id


def lane_of(nodeid: str) -> str:
    """The lane a test node id of these tests names: ``t.py::test[laneK-i]``."""
    return nodeid.rpartition("[")[2].split("-")[0]


def by_lane(nodeids: list[str], workers: int) -> dict[str, str]:
    return {n: lane_of(n) for n in nodeids if "[" in n}


def items(**lanes: int) -> list[str]:
    """Node ids, lane by lane: items(lane0=3) -> t.py::test[lane0-0] .. [lane0-2]."""
    return [f"t.py::test[{lane}-{i}]" for lane, count in lanes.items() for i in range(count)]


class Session:
    """xdist's DSession, reduced to the calls it makes on its scheduler."""

    def __init__(self, collection: list[str], workers: int = 2):
        self.collection = collection
        self.sched = SlotScheduling(config_of(FakeConfig(tx=[f"{workers}*popen"])), None, by_lane)
        self.workers: list[FakeWorker] = []
        self.ran: dict[str, list[str]] = {}  # worker -> node ids it finished, in order
        self.shut_all = False
        for _ in range(workers):
            self.join()

    def join(self, collection: list[str] | None = None) -> FakeWorker:
        """A worker starts (workerready), collects (collectionfinish): schedule when complete."""
        worker = FakeWorker(f"gw{len(self.workers)}")
        self.workers.append(worker)
        self.sched.add_node(worker)
        self.sched.add_node_collection(worker, collection or self.collection)
        if self.sched.collection_is_completed:
            self.sched.schedule()
        return worker

    def step(self, worker: FakeWorker) -> str:
        """The worker finishes its next item (runtest_protocol_complete)."""
        index = worker.queue.pop(0)
        nodeid = self.sched.registered_collections[worker][index]
        self.ran.setdefault(worker.gateway.id, []).append(nodeid)
        self.sched.mark_test_complete(worker, index, 0.01)
        if self.sched.tests_finished and not self.shut_all:  # DSession.triggershutdown
            self.shut_all = True
            for node in self.sched.nodes:
                node.shutdown()
        return nodeid

    def lose(self, worker: FakeWorker) -> str | None:
        """The worker dies (errordown): what it had left goes elsewhere."""
        worker.queue.clear()
        return self.sched.remove_node(worker)

    def run(self) -> None:
        """Every live worker runs what it has, in turns, until none has anything; each then
        finishes (workerfinished) with nothing left."""
        live = [w for w in self.workers if w in self.sched.nodes]
        while any(w.queue for w in live):
            for worker in live:
                if worker.queue:
                    self.step(worker)
        for worker in live:
            assert worker.shutting_down, f"{worker} was never told to shut down"
            assert self.sched.remove_node(worker) is None

    def lanes_of(self, worker: FakeWorker) -> set[str]:
        return {lane_of(n) for n in self.ran.get(worker.gateway.id, [])}

    def finished(self) -> list[str]:
        return sorted(n for done in self.ran.values() for n in done)


# -- the protocol ----------------------------------------------------------------------------


def _protocol_members() -> dict[str, object]:
    return {
        name: member
        for name, member in vars(Scheduling).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }


def test_the_protocol_lists_what_the_dsession_calls():
    assert set(_protocol_members()) >= {
        "nodes",
        "collection_is_completed",
        "tests_finished",
        "has_pending",
        "add_node",
        "add_node_collection",
        "mark_test_complete",
        "mark_test_pending",
        "remove_pending_tests_from_node",
        "remove_node",
        "schedule",
    }


@pytest.mark.parametrize("name", sorted(_protocol_members()))
def test_the_scheduler_has_each_member_of_xdists_protocol(name):
    """Structurally a Scheduling: each property a property, each method callable with the
    protocol's parameters (names, order, defaults)."""
    wanted = _protocol_members()[name]
    ours = inspect.getattr_static(SlotScheduling, name, None)
    assert ours is not None, f"SlotScheduling has no {name}"
    if isinstance(wanted, property):
        assert isinstance(ours, property), f"{name} is a property in xdist's protocol"
        return
    assert callable(ours) and not isinstance(ours, property)
    assert callable(wanted)  # not a property: a method
    theirs = inspect.signature(wanted).parameters
    mine = inspect.signature(ours).parameters
    assert [(p.name, p.kind, p.default) for p in theirs.values()] == [
        (p.name, p.kind, p.default) for p in mine.values()
    ]


def test_the_workers_it_waits_for_are_the_tx_specs():
    assert expected_workers(config_of(FakeConfig(tx=["3*popen"]))) == 3
    assert expected_workers(config_of(FakeConfig(tx=["popen", "popen"]))) == 2  # what -n 2 gives
    assert expected_workers(config_of(FakeConfig(tx=["2*popen", "ssh=host"]))) == 3
    with pytest.raises(pytest.UsageError, match="-n N"):
        expected_workers(config_of(FakeConfig(tx=[])))


# -- a whole run -----------------------------------------------------------------------------


def test_each_lane_goes_whole_to_one_worker_and_every_item_runs_once():
    session = Session(items(lane0=9, lane1=7))
    sched = session.sched
    assert sched.has_pending and not sched.tests_finished
    session.run()
    gw0, gw1 = session.workers
    assert session.lanes_of(gw0) == {"lane0"}  # the biggest lane to the first worker
    assert session.lanes_of(gw1) == {"lane1"}
    assert session.finished() == sorted(session.collection)
    assert not sched.has_pending and sched.nodes == []


def test_a_worker_gets_its_next_unit_when_two_or_fewer_items_are_left():
    # Items outside any lane (no case) are units of their own, after the lanes (smaller).
    session = Session(items(lane0=4) + ["t.py::solo_a", "t.py::solo_b", "t.py::solo_c"], 1)
    (worker,) = session.workers
    sched = session.sched
    index = sched.registered_collections[worker].index
    # The lane, then a second unit at once: four items left is more than two, so not yet.
    assert worker.sent == [index(n) for n in items(lane0=4)]
    session.step(worker)  # three left: still more than two
    assert len(worker.sent) == 4
    session.step(worker)  # two left: one more unit
    assert worker.sent[4:] == [index("t.py::solo_a")]
    session.run()
    assert session.finished() == sorted(session.collection)


def test_tests_are_finished_once_each_worker_is_down_to_the_item_it_runs():
    session = Session(items(lane0=3, lane1=3))
    gw0, gw1 = session.workers
    sched = session.sched
    session.step(gw0)
    session.step(gw0)
    assert not sched.tests_finished  # gw1 has three left
    session.step(gw1)
    assert not sched.tests_finished
    session.step(gw1)
    assert sched.tests_finished and sched.has_pending  # one each, running


def test_workers_beyond_the_lanes_are_shut_down_at_once():
    session = Session(items(lane0=3, lane1=5), workers=3)
    gw0, gw1, gw2 = session.workers
    assert gw2.shutting_down and gw2.sent == [] and gw2 not in session.sched.nodes
    session.run()
    assert session.lanes_of(gw0) == {"lane1"} and session.lanes_of(gw1) == {"lane0"}


def test_no_work_for_workers_that_collected_differently():
    collection = items(lane0=2, lane1=2)
    config = FakeConfig(tx=["2*popen"])
    sched = SlotScheduling(config_of(config), None, by_lane)
    gw0, gw1 = FakeWorker("gw0"), FakeWorker("gw1")
    for worker, collected in ((gw0, collection), (gw1, collection[:-1])):
        sched.add_node(worker)
        sched.add_node_collection(worker, collected)
    sched.schedule()
    assert gw0.sent == [] and gw1.sent == []
    assert sched.config is config_of(config)
    (report,) = config.collect_reports
    assert report.failed and report.nodeid == "gw1"


# -- a worker lost mid-run -------------------------------------------------------------------


def test_a_lost_worker_s_unfinished_lane_goes_whole_to_another_worker():
    session = Session(items(lane0=8, lane1=6, lane2=3))
    gw0, gw1 = session.workers
    done = [session.step(gw0) for _ in range(3)]
    crashed = session.lose(gw0)
    assert crashed == items(lane0=8)[3]  # the first item it had not finished
    assert gw0 not in session.sched.nodes
    # gw1 still has six items of its own: the queue (lane2, then what gw0 left of lane0) waits
    # until it is down to two.
    assert session.sched.has_pending and not session.sched.tests_finished
    session.run()
    assert session.lanes_of(gw1) == {"lane0", "lane1", "lane2"}
    given = [session.sched.registered_collections[gw1][i] for i in gw1.sent]
    assert [lane_of(n) for n in given] == ["lane1"] * 6 + ["lane2"] * 3 + ["lane0"] * 5
    assert given[-5:] == items(lane0=8)[3:]  # what was left, the crashed item first
    assert session.finished() == sorted(session.collection)
    assert set(done).isdisjoint(session.ran["gw1"])


def test_a_lost_worker_s_lane_goes_to_its_replacement_when_every_worker_has_a_lane():
    """The farm's usual shape (as many lanes as workers): the workers are told to shut down as
    soon as the lanes are dealt, so a lost worker's lane waits for the worker xdist starts in
    its place, and goes to it whole."""
    session = Session(items(lane0=5, lane1=5))
    gw0, gw1 = session.workers
    assert gw0.shutting_down and gw1.shutting_down
    session.step(gw0)
    session.step(gw0)
    assert session.lose(gw0) == items(lane0=5)[2]
    session.run()  # gw1 runs its lane and finishes
    assert session.sched.has_pending and not session.sched.tests_finished
    replacement = session.join()
    sent = [session.sched.registered_collections[replacement][i] for i in replacement.sent]
    assert sent == items(lane0=5)[2:]
    session.run()
    assert session.finished() == sorted(session.collection)
    assert not session.sched.has_pending


def test_a_lost_worker_s_lane_waits_for_the_replacement_when_the_others_wind_down():
    session = Session(items(lane0=3, lane1=3))
    gw0, gw1 = session.workers
    while gw1.queue:  # gw1 finishes its lane: it is told to shut down, nothing is queued
        session.step(gw1)
    assert gw1.shutting_down
    session.step(gw0)
    assert session.lose(gw0) == items(lane0=3)[1]
    assert gw1.sent == [session.sched.registered_collections[gw1].index(n) for n in items(lane1=3)]
    assert session.sched.remove_node(gw1) is None  # it finished, with nothing left
    replacement = session.join()  # xdist starts one in place of the lost worker
    assert [session.sched.registered_collections[replacement][i] for i in replacement.sent] == (
        items(lane0=3)[1:]
    )
    session.run()
    assert session.finished() == sorted(session.collection)


def test_a_replacement_that_collected_differently_gets_no_work():
    session = Session(items(lane0=3, lane1=3))
    gw0, _ = session.workers
    session.lose(gw0)
    stranger = session.join(collection=items(lane0=3))
    assert stranger.sent == [] and stranger not in session.sched.registered_collections


def test_a_worker_that_finished_with_nothing_left_gives_nothing_back():
    session = Session(items(lane0=2, lane1=2))
    session.run()  # each removed with None (asserted there)
    assert not session.sched.has_pending


# -- mark_test_pending -----------------------------------------------------------------------


def test_an_item_asked_for_again_runs_on_the_worker_with_its_lane():
    session = Session(items(lane0=5, lane1=5, lane2=5))
    gw0, gw1 = session.workers
    first = session.step(gw0)
    assert not gw0.shutting_down  # lane2 is still queued
    session.sched.mark_test_pending(first)
    assert gw0.queue[-1] == session.sched.registered_collections[gw0].index(first)
    session.run()
    assert session.ran["gw0"].count(first) == 2 and first not in session.ran["gw1"]
    assert sorted(set(session.finished())) == sorted(session.collection)


def test_an_item_still_to_run_is_not_sent_twice():
    session = Session(items(lane0=5, lane1=5, lane2=5))
    gw0, _ = session.workers
    sent = list(gw0.sent)
    session.sched.mark_test_pending(items(lane0=5)[4])
    assert gw0.sent == sent


def test_the_item_a_lost_worker_crashed_on_runs_once_more_when_asked_again():
    """xdist's pytest_handlecrashitem hook may ask for the crashed item again: it is queued
    with its lane already, and runs once, not twice."""
    session = Session(items(lane0=4, lane1=4))
    gw0, _ = session.workers
    session.step(gw0)
    crashed = session.lose(gw0)
    assert crashed == items(lane0=4)[1]
    session.sched.mark_test_pending(crashed)
    replacement = session.join()
    session.run()
    assert session.ran[replacement.gateway.id] == items(lane0=4)[1:]
    assert session.finished() == sorted(session.collection)


def test_an_item_of_a_worker_winding_down_is_queued_for_the_next_worker():
    session = Session(items(lane0=3, lane1=3))
    gw0, gw1 = session.workers
    first = session.step(gw0)
    sent = list(gw0.sent)
    session.sched.mark_test_pending(first)  # gw0 is shutting down: it takes no more
    assert gw0.sent == sent
    session.run()
    assert session.sched.has_pending and not session.sched.tests_finished
    late = session.join()
    assert [session.sched.registered_collections[late][i] for i in late.sent] == [first]
    session.run()
    assert session.ran[late.gateway.id] == [first]


def test_an_item_of_a_finished_worker_is_queued_for_the_next_worker():
    session = Session(items(lane0=3, lane1=3))
    session.run()  # both workers finish and leave
    again = items(lane1=3)[0]
    session.sched.mark_test_pending(again)
    late = session.join()
    assert [session.sched.registered_collections[late][i] for i in late.sent] == [again]


def test_an_item_outside_any_lane_asked_for_again_runs_again():
    session = Session(items(lane0=3, lane1=3) + ["t.py::solo"])
    session.run()
    session.sched.mark_test_pending("t.py::solo")
    late = session.join()
    session.run()
    assert session.ran[late.gateway.id] == ["t.py::solo"]


def test_an_item_not_collected_cannot_be_asked_for():
    session = Session(items(lane0=2, lane1=2))
    with pytest.raises(ValueError, match=r"t\.py::nope: not an item"):
        session.sched.mark_test_pending("t.py::nope")


# -- remove_pending_tests_from_node ----------------------------------------------------------


def test_items_a_worker_gives_back_go_to_the_next_worker_with_room_with_their_lane():
    session = Session(items(lane0=8, lane1=6, lane2=3))
    gw0, gw1 = session.workers
    collection = session.sched.registered_collections[gw0]
    back = gw0.queue[-5:]
    del gw0.queue[-5:]  # the worker took them off its queue (xdist's "unscheduled")
    session.sched.remove_pending_tests_from_node(gw0, back)
    returned = [collection[i] for i in back]
    assert session.sched.has_pending
    while len(gw1.sent) < 6 + 3 + 5:  # gw1 alone has room: lane2 first, then the five
        session.step(gw1)
    given = [collection[i] for i in gw1.sent]
    assert given[-5:] == returned
    session.run()
    assert not set(returned) & set(session.ran["gw0"])
    assert session.finished() == sorted(session.collection)


def test_items_given_back_may_return_to_the_same_worker_with_their_lane():
    session = Session(items(lane0=8, lane1=6, lane2=3))
    gw0, gw1 = session.workers
    collection = session.sched.registered_collections[gw0]
    back = gw0.queue[-5:]
    del gw0.queue[-5:]
    session.sched.remove_pending_tests_from_node(gw0, back)
    while len(gw0.sent) < 8 + 3 + 5:  # gw0 alone runs: it takes lane2, then its five back
        session.step(gw0)
    assert [collection[i] for i in gw0.sent[-5:]] == [collection[i] for i in back]
    session.run()
    assert session.finished() == sorted(session.collection)


def test_an_item_a_lost_worker_had_finished_runs_again_with_its_queued_lane():
    session = Session(items(lane0=4, lane1=4))
    gw0, _ = session.workers
    finished = session.step(gw0)
    session.lose(gw0)
    session.sched.mark_test_pending(finished)
    replacement = session.join()
    session.run()
    assert session.ran[replacement.gateway.id] == items(lane0=4)  # the finished one again


# -- under xdist's own DSession --------------------------------------------------------------

LANE_CONFTEST = """
import pytest
from farm.run.scheduling import SlotScheduling

def by_lane(nodeids, workers):
    return {n: n.rpartition("[")[2].split("-")[0] for n in nodeids if "[" in n}

@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    return SlotScheduling(config, log, by_lane)
"""

RERUN_HOOK = """
def pytest_handlecrashitem(crashitem, report, sched):
    sched.mark_test_pending(crashitem)
    report.outcome = "rerun"
"""

LANE_TESTS = """
import os
from pathlib import Path
import pytest

@pytest.mark.parametrize("item", [f"lane{k}-{i}" for k in range(2) for i in range(6)])
def test_item(item):
    log = Path(os.environ["LANE_LOG"])
    with open(log, "a") as fh:
        fh.write(f"{os.environ['PYTEST_XDIST_WORKER']} {item}\\n")
    crashed = log.with_name("crashed")
    if item == "lane0-2" and not crashed.exists():
        crashed.touch()
        os._exit(1)  # the worker dies mid-lane, as a worker killed by the OOM killer
"""


# What this session (itself maybe an xdist worker) would pass on to the pytest it starts.
OUTER_SESSION_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT")


@pytest.mark.parametrize("rerun_hook", [False, True], ids=["crash-reported", "crash-rerun"])
def test_a_worker_lost_mid_lane_under_xdist_hands_the_rest_of_the_lane_to_its_replacement(
    tmp_path, rerun_hook
):
    """A real ``pytest -n 2``: the worker running lane0 dies on its third item; xdist starts
    another, which gets the rest of lane0 (the crashed item first), and nothing is run twice but
    the crashed item. With a pytest_handlecrashitem hook that asks for the crashed item again
    (mark_test_pending), it still runs once more, not twice."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(LANE_CONFTEST + (RERUN_HOOK if rerun_hook else ""))
    (tmp_path / "test_lanes.py").write_text(LANE_TESTS)
    log = tmp_path / "ran.log"
    env = {k: v for k, v in os.environ.items() if k not in OUTER_SESSION_ENV}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "-p",
            "no:farm",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=tmp_path,
        env={**env, "LANE_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    ran = [line.split() for line in log.read_text().splitlines()]
    by_worker: dict[str, list[str]] = {}
    for worker, item in ran:
        by_worker.setdefault(worker, []).append(item)
    lane0 = [f"lane0-{i}" for i in range(6)]
    # Which of gw0 and gw1 gets lane0 is whichever asks first: the machine's speed decides.
    crashed = next((w for w in ("gw0", "gw1") if by_worker.get(w, [""])[0] == "lane0-0"), None)
    assert crashed is not None, f"no first worker began lane0: {by_worker}\n{out}"
    survivor = "gw1" if crashed == "gw0" else "gw0"
    assert by_worker.pop(crashed) == lane0[:3], out
    assert by_worker.pop(survivor) == [f"lane1-{i}" for i in range(6)], out
    ((replacement, rest),) = by_worker.items()  # the worker xdist started in its place
    assert replacement not in ("gw0", "gw1") and rest == lane0[2:], out
    if rerun_hook:
        assert proc.returncode == 0 and "12 passed, 1 rerun" in out, out
    else:
        assert proc.returncode == 1 and "1 failed, 12 passed" in out, out
