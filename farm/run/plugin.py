"""The farm as a pytest plugin: `pytest suites/ -n N [--farm-inventory FILE]`.

The controller (the process without xdist's `workerinput`) prepares the pool once: health checks,
quarantine, deploy. It writes a plan file that every worker reads, so all of them see the same
healthy slots and compute the same case-to-slot assignment (the farm's xdist scheduler,
:func:`_make_slot_scheduling`, keeps each slot's cases on one worker). Each case item then runs
through the worker's Dispatcher and asserts the verdict; its record goes to the run's records
directory and to Allure.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from farm.agent.outcome import CATEGORIES
from farm.agent.record import ResultRecord
from farm.run import fault_injection, options
from farm.run import plan as plan_mod
from farm.run.dispatch import Dispatcher
from farm.run.leases import RunState
from farm.run.pipeline import Pipeline, plan_lanes
from farm.run.records_file import RecordWriter, records_path
from farm.run.scheduling import SlotScheduling
from farm.util import heap, interrupts, run_dir
from farm.util.errors import RunDirUnwritable
from farm.util.paths import REPO_ROOT

if TYPE_CHECKING:
    from suites.case import Case

PLAN = pytest.StashKey[plan_mod.Plan]()
SUITES_DIR = REPO_ROOT / "suites"


class InfrastructureBroken(Exception):
    """Raised for a case the pool could not run: Allure shows it as broken, not failed."""


def pytest_addoption(parser):
    options.add_to_pytest(parser.getgroup("farm", "LogSoftmaxGrad test farm"))


def _active(config) -> bool:
    if config.getoption("farm_plan") or config.getoption("farm_inventory"):
        return True
    for arg in config.args:
        path = Path(str(arg).split("::")[0]).resolve()
        if path == SUITES_DIR or SUITES_DIR in path.parents:
            return True
    return False


# A suite module's cases: `pytestmark = pytest.mark.farm_cases(accepted=True)` takes the calls
# the contract accepts, accepted=False those it rejects (whole calls both); layers=True the cases
# that check one layer of the operator on its own (suites/matrix_layers.py); a module without it
# takes every case.
CASES_MARKER = "farm_cases"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{CASES_MARKER}(accepted, layers): the run's cases this suite module takes (accepted="
        "True: the calls the contract accepts; False: those it rejects; layers=True: the cases of "
        "one layer of the operator on its own)",
    )
    if not _active(config):
        return
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        plan = plan_mod.Plan.load(Path(worker["farm_plan"]))
    elif config.getoption("farm_plan"):
        plan = plan_mod.Plan.load(Path(config.getoption("farm_plan")))
    else:
        from farm.run.prepare import prepare_pool
        from farm.util import announce
        from farm.util.errors import FarmError

        try:
            selection = _selection(config)
            cases = selection.cases()  # a bad case file stops here, before any host
            # Without a package, prepare_pool builds the real one as `farm run` does; its build
            # says when it starts and ends (pytest's own output starts after this).
            with announce.saying(announce.to_stderr):
                plan = prepare_pool(
                    inventory_path=config.getoption("farm_inventory"),
                    selection=selection,
                    backend=config.getoption("farm_backend"),
                    run_dir=config.getoption("farm_run_dir"),
                    target=config.getoption("farm_target"),
                    case_timeout=config.getoption("farm_case_timeout"),
                    require_healthy=True,
                )
        except FarmError as exc:
            # A bad inventory, SoC, key or tier, or no healthy host: one line, not a traceback.
            raise pytest.UsageError(f"farm: {exc}") from None
        (plan.run_dir / plan_mod.UNSTORED_MARK).write_text(plan_mod.UNSTORED_TEXT)
        keep_cases(plan, cases)
        config.stash[_CASES] = cases
    config.stash[PLAN] = plan
    fault_injection.install()
    if worker is None:
        config.pluginmanager.register(_XdistHooks(plan), "farm-xdist")
    else:
        _wind_down_on_signals()


def _wind_down_on_signals() -> None:
    """A worker winds down on SIGTERM or SIGHUP (its terminal closed) as on Ctrl-C (a signal to
    the whole process group: the case running finishes its record or has none, the session
    ends, allure-pytest closes) instead of dying half-way through writing. Only the first signal
    counts: a group signal reaches a worker twice (from the terminal or supervisor, and passed
    on by the orchestrator, farm/run/runner.py interruptible), and a second KeyboardInterrupt
    would break the wind-down half-way."""

    tty = interrupts.terminal()

    def stop(signum, frame):
        for s in interrupts.STOPS:
            signal.signal(s, signal.SIG_IGN)
        if signum == signal.SIGHUP:  # the terminal closed: stderr's writes would fail now
            interrupts.off_the_terminal(tty)
        raise KeyboardInterrupt

    try:
        interrupts.catch(stop)
    except ValueError:  # not the main thread: the defaults stay
        pass


RUN_DIR_FAULT = "farm_run_dir_fault"  # the key of the first runs-directory fault a process hit
_FAULT = pytest.StashKey[str]()


def stop_for_run_dir(session, message: str) -> None:
    """A write to the runs directory was refused: this process runs no more cases (every one
    would be lost), and the orchestrator learns why (a worker's workeroutput; the session's
    stash without xdist) to say it in one line."""
    config = session.config
    output = getattr(config, "workeroutput", None)
    if output is not None:
        output.setdefault(RUN_DIR_FAULT, message)
    config.stash.setdefault(_FAULT, message)
    session.shouldstop = message


def run_dir_fault(config) -> str | None:
    """The runs-directory fault this process hit, if any."""
    return config.stash.get(_FAULT, None)


_SESSION = pytest.StashKey[pytest.Session]()  # for the session fixtures (see farm_plan)


def pytest_sessionstart(session):
    """After every plugin's configure: allure-pytest's output made cheap for the run's scale,
    and the session's long-lived objects kept from the garbage collector (farm/util/heap.py)."""
    session.config.stash[_SESSION] = session
    if PLAN in session.config.stash:
        heap.keep_long_lived()
        from farm.run.allure import output as allure_output

        def refused(exc: OSError) -> None:
            if not run_dir.is_fault(exc):
                raise exc
            stop_for_run_dir(session, str(run_dir.unwritable(exc)))

        allure_output.install(session.config, on_refused=refused)


def _selection(config):
    from suites import explore
    from suites.caseset import Selection

    files = tuple(config.getoption("farm_cases") or ())
    tier = config.getoption("farm_tier") or (None if files else "smoke")
    salt = config.getoption("farm_explore")
    if salt == "":
        salt = explore.nightly_salt()
    return Selection(tier=tier, files=files, explore=salt)


_CASES = pytest.StashKey[list]()  # the run's cases, resolved once per process
_KEPT = pytest.StashKey["KeptCases"]()


def keep_cases(plan: plan_mod.Plan, cases: list[Case]) -> None:
    """The cases the controller expanded for ``plan``: kept for its workers (Plan.save_cases)."""
    plan.save_cases(cases)


class KeptCases:
    """The cases `farm run` expanded (and kept with the plan), handed to its pytest session as a
    plugin, so that the session's own process does not read them back from the plan."""

    def __init__(self, plan: plan_mod.Plan, cases: list[Case]):
        self.run_id = plan.run_id
        self.cases = cases

    def pytest_configure(self, config):
        config.stash[_KEPT] = self


def plan_cases(config, plan: plan_mod.Plan) -> list[Case]:
    """The run's cases, resolved once per process (held in the config's stash): those
    `farm run` or this plugin's configure expanded, else read from the plan."""
    if _CASES not in config.stash:
        kept = config.stash.get(_KEPT, None)
        if kept is not None and kept.run_id == plan.run_id:
            config.stash[_CASES] = kept.cases
        else:
            config.stash[_CASES] = plan.cases()
    return config.stash[_CASES]


class _XdistHooks:
    def __init__(self, plan):
        self.plan = plan

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["farm_plan"] = str(self.plan.path)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config, log):
        if config.getvalue("dist") in ("load", "loadgroup"):
            return _make_slot_scheduling(config, log, self.plan)
        return None


def pytest_generate_tests(metafunc):
    if "case" not in metafunc.fixturenames or PLAN not in metafunc.config.stash:
        return
    if SUITES_DIR not in Path(metafunc.module.__file__).resolve().parents:
        return
    marker = metafunc.definition.get_closest_marker(CASES_MARKER)
    plan = metafunc.config.stash[PLAN]
    cases = [c for c in plan_cases(metafunc.config, plan) if _takes(marker, c)]
    metafunc.parametrize("case", cases, ids=[c.id for c in cases])


def _takes(marker, case: Case) -> bool:
    """Whether a suite module with `marker` (CASES_MARKER, or None) takes `case`."""
    if marker is None:
        return True
    if marker.kwargs.get("layers"):
        return bool(case.layer)
    return not case.layer and marker.kwargs.get("accepted") in (None, case.accepted)


def pytest_collection_modifyitems(config, items):
    """A suite none of the run's cases belongs to (no rejection case in a case file, say) is
    parametrized with no case: pytest would show a skipped placeholder. It is not a case: it is
    deselected, so JUnit and Allure hold exactly the run's cases."""
    if PLAN not in config.stash:
        return
    empty = [i for i in items if hasattr(i, "callspec") and "case" in i.callspec.params]
    empty = [i for i in empty if not _has_case(i)]
    if empty:
        items[:] = [i for i in items if i not in empty]
        config.hook.pytest_deselected(items=empty)


def pytest_collection_finish(session):
    """Each case's preferred slot, from the final selection (after -k, -m, --lf deselect).

    The assignment depends only on the selected cases and the plan, so every xdist worker and
    the controller's :class:`SlotScheduling` compute the same one."""
    config = session.config
    if PLAN not in config.stash:
        return
    items = [item for item in session.items if _has_case(item)]
    plan = config.stash[PLAN]
    assignment, config.stash[_SLOT_LANE] = plan_lanes(
        [item.callspec.params["case"] for item in items],
        plan.slot_infos(),
        plan.slots_by_family(),
        workers_of(config),
    )
    for item in items:
        case = item.callspec.params["case"]
        item.stash[_PREFERRED] = assignment.get(case.id, f"no-slot-{case.family}")


_PREFERRED = pytest.StashKey[str]()
_SLOT_LANE = pytest.StashKey[dict]()  # slot id -> lane, from the same plan_lanes as _PREFERRED
_RECORD = pytest.StashKey[tuple]()  # the record written for an item, and its writer


def case_id_of(nodeid: str) -> str | None:
    """The case id of a suite item's node id (``...::test_x[<case id>]``), else None."""
    head, sep, rest = nodeid.rpartition("[")
    if not sep or "]" not in rest:
        return None
    return rest[: rest.rindex("]")]


def _lane_groups(config, plan: plan_mod.Plan, nodeids: list[str], workers: int) -> dict[str, str]:
    """node id -> the lane of the slot its case prefers (farm/run/pipeline.py), what the workers
    compute from the same items."""
    by_id = {c.id: c for c in plan_cases(config, plan)}
    cases = {n: by_id.get(case_id_of(n) or "") for n in nodeids}
    known = [c for c in cases.values() if c is not None]
    assignment, slot_lane = plan_lanes(known, plan.slot_infos(), plan.slots_by_family(), workers)
    return {
        n: slot_lane.get(assignment.get(c.id, ""), f"no-slot-{c.family}") if c is not None else n
        for n, c in cases.items()
    }


def _make_slot_scheduling(config, log, plan: plan_mod.Plan) -> SlotScheduling:
    """The controller's scheduler: each lane's items to one worker (farm/run/scheduling.py)."""
    return SlotScheduling(config, log, lambda nodeids, n: _lane_groups(config, plan, nodeids, n))


def _has_case(item) -> bool:
    from suites.case import Case

    return hasattr(item, "callspec") and isinstance(item.callspec.params.get("case"), Case)


# The farm's session fixtures take ``pytestconfig``, never ``request``: pytest (9.x) makes a new
# fixture definition of ``request`` (an inspect.signature included) for every fixture that asks
# for it, on every test item, though the fixture's value is cached for the session (7 a case
# with ``request`` here, 4 without: ~0.13 ms of the orchestrator's CPU a case).


@pytest.fixture(scope="session")
def farm_plan(pytestconfig) -> plan_mod.Plan:
    if PLAN not in pytestconfig.stash:
        pytest.fail("the farm plugin is not active: run pytest on suites/ or pass --farm-inventory")
    return _keep(pytestconfig, "farm_plan", pytestconfig.stash[PLAN])


@pytest.fixture(scope="session")
def farm_dispatcher(pytestconfig, farm_plan):
    from farm.run.prepare import _reload_pool, open_channel_factory

    left_out: dict[str, dict[str, str]] = {}
    if farm_plan.unhealthy:
        inventory = _reload_pool(farm_plan.inventory)
        for host, why in farm_plan.unhealthy.items():
            left_out.setdefault(inventory.host(host).family, {})[host] = why
    dispatcher = Dispatcher(
        left_out=left_out,
        slots=farm_plan.slot_infos(),
        open_channel=open_channel_factory(farm_plan),
        state=RunState(farm_plan.state_path, farm_plan.quarantine_after),
        lock_dir=farm_plan.run_dir / "locks",
        backend=farm_plan.backend,
        base_timeout=farm_plan.case_timeout,
        run_id=farm_plan.run_id,
    )
    yield _keep(pytestconfig, "farm_dispatcher", dispatcher)
    dispatcher.close()


def workers_of(config) -> int:
    """How many pytest workers run the session (1 without xdist): the number of lanes."""
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        return int(worker.get("workercount") or 1)
    return 1


@pytest.fixture(scope="session")
def farm_pipeline(pytestconfig, farm_plan, farm_dispatcher):
    """The worker's lanes, run ahead on all their slots (farm/run/pipeline.py)."""
    session = pytestconfig.stash[_SESSION]
    preferred = [
        (item.callspec.params["case"], item.stash.get(_PREFERRED, ""))
        for item in session.items
        if _has_case(item)
    ]
    slot_lane = pytestconfig.stash.get(_SLOT_LANE, {})
    work: dict[str, list] = {}
    for case, slot in preferred:
        lane = slot_lane.get(slot)
        if lane is not None:
            work.setdefault(lane, []).append((case, slot))
    pipeline = Pipeline(farm_dispatcher, work, slot_lane, window=farm_plan.window or None)
    yield _keep(pytestconfig, "farm_pipeline", pipeline)
    pipeline.close()


@pytest.fixture(scope="session")
def farm_records(pytestconfig, farm_plan):
    """This worker's records file: every case's record, appended as it comes back."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    writer = RecordWriter(records_path(farm_plan.run_dir, worker))
    yield _keep(pytestconfig, "farm_records", writer)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """A farm run's items are made with the garbage collector off, then frozen
    (farm/util/heap.py)."""
    if PLAN not in session.config.stash:
        yield
        return
    with heap.collecting():
        yield


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """The session's objects back under the garbage collector, except in a pytest-xdist worker,
    which exits with its session (and the controller waits for it before the run's tail
    begins): they stay frozen there (farm/util/heap.py settle)."""
    config = session.config
    if PLAN not in config.stash:
        return
    if getattr(config, "workerinput", None) is not None:
        heap.settle()
    else:
        heap.release()


# The values of the farm's session fixtures (farm_run and those it depends on), each stored by
# its fixture when pytest makes it: the same objects for every test of the session.
_SESSION_VALUES = pytest.StashKey[dict[str, object]]()


def _keep(config, name: str, value):
    config.stash.setdefault(_SESSION_VALUES, {"pytestconfig": config})[name] = value
    return value


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A suite test's ``case`` argument, and ``farm_run`` with the session fixtures it depends
    on, are handed to it as the values they are, before pytest fills the test's arguments (only
    those it lacks): the parameter's per-item pseudo-fixture (which only returns it), with
    allure-pytest's fixture record around it, and the per-item look-up of farm_run, ~0.8 ms a
    case of a worker's time; pytest's look-up of the five session fixtures in farm_run's closure
    (each adding a finalizer to its fixture's list) another ~0.13 ms (benchmarks/case_phases.py).
    A fixture of the test's own that asks for any of them
    still gets it from pytest, the same object. Should a future pytest fill arguments
    otherwise, this changes nothing but the speed."""
    funcargs = getattr(item, "funcargs", None)
    if not isinstance(funcargs, dict) or not _has_case(item):
        return
    funcargs.setdefault("case", item.callspec.params["case"])
    values = item.config.stash.get(_SESSION_VALUES, {})
    if "farm_run" in values:  # its closure is made: every value below is in `values`
        for name in item.fixturenames:
            if name in values:
                funcargs.setdefault(name, values[name])


# The test item whose body is running (the `farm_run` of a test acts for it).
_RUNNING = pytest.StashKey["pytest.Item | None"]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    item.config.stash[_RUNNING] = item
    try:
        return (yield)
    finally:
        item.config.stash[_RUNNING] = None


@pytest.fixture(scope="session")
def farm_run(pytestconfig, farm_pipeline, farm_records):
    """Run a case on the pool for the running test; returns its final record (already stored
    and annotated). Session-scoped: a function-scoped fixture costs every case its own set-up,
    finalizer and Allure fixture record, ~0.5 ms a case of the orchestrator's time."""
    config = pytestconfig

    def run(case: Case) -> ResultRecord:
        item = config.stash.get(_RUNNING, None)
        if item is None:
            raise RuntimeError("farm_run(case) is called from the body of a test, not elsewhere")
        record = farm_pipeline.result(case, item.stash.get(_PREFERRED, None))
        try:
            farm_records.write(record)
        except RunDirUnwritable as exc:  # the case has no record: it is not part of the run
            stop_for_run_dir(item.session, str(exc))
            raise
        item.stash[_RECORD] = (record, farm_records)
        item.user_properties.extend(
            [
                ("farm_host", record.get("host")),
                ("farm_outcome", record["outcome"]),
                ("farm_category", record.get("category")),
            ]
        )
        try:
            _annotate(record, config.stash[PLAN])
        except OSError as exc:  # an attachment refused: the record stands, no more cases run
            if not run_dir.is_fault(exc):
                raise
            stop_for_run_dir(item.session, str(run_dir.unwritable(exc)))
        return record

    return _keep(config, "farm_run", run)


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_makereport(item, call):
    """One outcome per case: a check that fails after the record was written (the tiling check
    of suites/test_precision.py) amends the record, so that the summary, the store and the exit
    code say what JUnit and Allure say. The amended record is appended; the last one counts.

    Then the failure's trace, which the case's page shows under its message (Allure's
    statusTrace, pytest's summary), becomes what a person needs: the verdict, the criterion that
    failed it and the repro line (farm/run/allure/status_trace.py); a farm bug keeps its
    traceback. trylast: inside allure-pytest's wrapper, which reads the report after this one."""
    outcome = yield
    report = outcome.get_result()
    written = item.stash.get(_RECORD, None)
    if report.when != "call" or not report.failed or written is None:
        return
    record, writer = written
    if record["outcome"] != "passed":
        _verdict_trace(item, call, report, record)
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    why = crash.message if crash is not None else str(report.longrepr).splitlines()[-1]
    tagged = re.match(r"(?:[\w.]+: )?\[(\w+)\]", why)
    tag = tagged.group(1) if tagged else ""
    amended = dict(record, outcome="failed", category=tag if tag in CATEGORIES else "check")
    amended["message"] = f"passed its standards, then failed a check of the suite: {why}"
    try:
        writer.write(amended)
    except RunDirUnwritable as exc:  # the case stays as first recorded; no more cases run
        stop_for_run_dir(item.session, str(exc))
    _verdict_trace(item, call, report, amended)


def _verdict_trace(item, call, report, record: Mapping[str, Any]) -> None:
    """The report's trace made the case's verdict, criterion and repro line, where what was
    raised is the case's verdict (status_trace.replaces), not a farm bug."""
    from farm.run.allure.repro_line import run_options
    from farm.run.allure.status_trace import replaces, status_trace

    excinfo = getattr(call, "excinfo", None)
    if excinfo is None or not replaces(excinfo.value, InfrastructureBroken):
        return
    report.longrepr = status_trace(record, run_options(item.config.stash[PLAN]))


def _annotate(record: ResultRecord, plan: plan_mod.Plan) -> None:
    try:
        from farm.run.allure import glue as allure_glue
        from farm.run.allure.repro_line import run_options
    except ImportError:  # allure-pytest missing: the run still counts, the report is poorer
        return
    allure_glue.annotate(record, run_options=run_options(plan))


@pytest.fixture(scope="session")
def check_record(pytestconfig):
    """The assertion every suite makes of a case's record (``assert_record``): a fixture, so
    that the suites import nothing from the farm (suites/ is below farm.run)."""
    return _keep(pytestconfig, "check_record", assert_record)


def assert_record(record: dict) -> None:
    """The assertion every suite makes: product failures fail, infrastructure is broken. The
    message starts with the category in brackets, which Allure's categories match."""
    from farm.run.allure.categories import failure_message

    if record["outcome"] == "broken":
        raise InfrastructureBroken(failure_message(record))
    if record["outcome"] != "passed":  # raised, not asserted: no "assert 'failed' == ..." added
        raise AssertionError(failure_message(record))
