"""A suite's ``case`` argument reaches its test as the parameter itself, without the per-item
pseudo-fixture pytest would set up for it, and ``farm_run`` with its session closure as the
values made for the first test (farm/run/plugin.py pytest_runtest_setup); a fixture that asks
for any of them still gets it from pytest."""

from __future__ import annotations

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
from farm.run.plugin import pytest_runtest_setup  # the hook under test, alone (-p no:farm)
from suites.case import Case

SET_UP = []

@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    SET_UP.append((request.node.name, fixturedef.argname))
    yield

def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        cases = [Case("ascend910b", "float32", (2, 3), (-1,)),
                 Case("ascend310b", "float16", (4, 5), (0,))]
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])
    elif "other" in metafunc.fixturenames:
        metafunc.parametrize("other", ["x"])

@pytest.fixture
def shape(case):
    return case.shape

def pytest_sessionfinish(session):
    with open("set_up.txt", "w") as fh:
        fh.writelines(f"{name} {arg}\\n" for name, arg in SET_UP)
"""

TESTS = """
def test_plain(case, request):
    assert case is request.node.callspec.params["case"]

def test_with_a_fixture(case, shape, request):
    assert case is request.node.callspec.params["case"] and shape == case.shape

def test_another_parameter(other):
    assert other == "x"
"""


def test_a_case_is_handed_over_and_a_fixture_that_asks_for_it_still_gets_it(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:farm")
    result.assert_outcomes(passed=5)
    set_up = (pytester.path / "set_up.txt").read_text().split("\n")
    case_set_up = sorted(line.split("[")[0] for line in set_up if line.endswith(" case"))
    # Only where a fixture asks for it: the plain test never sets up its pseudo-fixture.
    assert case_set_up == ["test_with_a_fixture"] * 2
    # Not a Case: pytest's own way, unchanged.
    assert sum(line.endswith(" other") for line in set_up) == 1


SESSION_CONFTEST = """
import pytest
from _pytest.fixtures import FixtureRequest
from farm.run.plugin import _keep, pytest_runtest_setup  # the hook under test (-p no:farm)
from suites.case import Case

LOOKED_UP = []
_getfixturevalue = FixtureRequest.getfixturevalue

def getfixturevalue(self, argname):
    LOOKED_UP.append((self.node.name, argname))
    return _getfixturevalue(self, argname)

FixtureRequest.getfixturevalue = getfixturevalue

def pytest_generate_tests(metafunc):
    cases = [Case("ascend910b", "float32", (2, n), (-1,)) for n in (3, 4, 5)]
    metafunc.parametrize("case", cases, ids=[c.id for c in cases])

@pytest.fixture(scope="session")
def farm_plan(pytestconfig):
    return _keep(pytestconfig, "farm_plan", object())

@pytest.fixture(scope="session")
def farm_run(pytestconfig, farm_plan):
    return _keep(pytestconfig, "farm_run", lambda case: (case, farm_plan))

@pytest.fixture
def own(farm_plan):
    return farm_plan

def pytest_sessionfinish(session):
    with open("looked_up.txt", "w") as fh:
        fh.writelines(f"{name} {arg}\\n" for name, arg in LOOKED_UP)
"""

SESSION_TESTS = """
def test_run(case, farm_run):
    assert farm_run(case)[0] is case

def test_own_fixture(case, farm_run, own):
    assert own is farm_run(case)[1]
"""


def test_farm_run_and_its_closure_are_looked_up_once_a_session(pytester):
    pytester.makeconftest(SESSION_CONFTEST)
    pytester.makepyfile(test_suite=SESSION_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:farm")
    result.assert_outcomes(passed=6)
    lines = (pytester.path / "looked_up.txt").read_text().splitlines()
    looked_up = [tuple(line.split(" ")) for line in lines if not line.startswith(" ")]
    first = looked_up[0][0]
    assert first.startswith("test_run[")
    assert {"farm_run", "farm_plan", "pytestconfig"} <= {n for i, n in looked_up if i == first}
    # Every later test gets farm_run and its closure handed over; a test's own fixture that
    # asks for one of them (`own`) still gets it from pytest, the same object (the asserts).
    later = [(i, n) for i, n in looked_up if i != first]
    assert {n for _, n in later} == {"request", "own", "farm_plan"}
    assert {i for i, n in later if n == "farm_plan"} == {i for i, n in later if n == "own"}
