"""A suite's ``case`` argument reaches its test as the parameter itself, without the per-item
pseudo-fixture pytest would set up for it (farm/run/plugin.py pytest_runtest_setup); a fixture
that asks for ``case`` still gets it from pytest."""

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
