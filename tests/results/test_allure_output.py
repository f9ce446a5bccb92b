"""farm/results/allure_output.py: allure-pytest's files, written compactly, without the fixture
containers that say nothing, and with the same content otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from allure_commons import model2 as m  # its Test* classes are not tests: not imported bare
from allure_commons.logger import AllureFileLogger

from farm.paths import REPO_ROOT
from farm.results import allure_output


def _result() -> m.TestResult:
    return m.TestResult(
        uuid="u1",
        name="case ✓ ünïcode",
        status=m.Status.PASSED,
        labels=[m.Label(name="feature", value="precision")],
        parameters=[m.Parameter(name="dtype", value="float16")],
        start=1,
        stop=2,
    )


def _reference(tmp_path: Path, item) -> dict:
    """What allure-pytest's own logger writes for `item`."""
    ref = tmp_path / "reference"
    AllureFileLogger(ref)._report_item(item)
    (written,) = ref.iterdir()
    return json.loads(written.read_text(encoding="utf-8"))


def test_a_result_is_written_as_allure_pytest_writes_it(tmp_path):
    item = _result()
    path = allure_output.write_item(tmp_path, item)
    assert path is not None and path.name.endswith("-result.json")
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no .tmp left behind
    assert json.loads(path.read_text(encoding="utf-8")) == _reference(tmp_path, item)
    assert "\n" not in path.read_text(encoding="utf-8")  # compact


def test_a_container_is_written_only_when_a_fixture_failed_or_broke(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    passed = m.TestResultContainer(
        uuid="c1",
        children=["u1"],
        befores=[m.TestBeforeResult(name="farm_plan", status=m.Status.PASSED)],
        afters=[m.TestAfterResult(name="farm_plan::close", status=m.Status.PASSED)],
    )
    assert allure_output.write_item(out, passed) is None
    assert list(out.iterdir()) == []
    for broken_side in ("befores", "afters"):
        fixture = (m.TestBeforeResult if broken_side == "befores" else m.TestAfterResult)(
            name="farm_dispatcher", status=m.Status.BROKEN
        )
        container = m.TestResultContainer(uuid=f"c-{broken_side}", children=["u1", "u2"])
        getattr(container, broken_side).append(fixture)
        path = allure_output.write_item(out, container)
        assert path is not None and path.name.endswith("-container.json")
        assert json.loads(path.read_text()) == _reference(tmp_path / broken_side, container)
    failed = m.TestResultContainer(
        uuid="c3", befores=[m.TestBeforeResult(name="x", status=m.Status.FAILED)]
    )
    assert allure_output.write_item(out, failed) is not None


_CONFTEST = """
import pytest
from farm.results import allure_output

def pytest_sessionstart(session):
    session.config._farm_installed = allure_output.install(session.config)
    print("INSTALLED", session.config._farm_installed)

@pytest.fixture(scope="session")
def breaks_at_teardown():
    yield 1
    raise RuntimeError("session teardown broke")

@pytest.fixture(scope="session")
def fine_session():
    return 2

@pytest.fixture
def per_test():
    return 3
"""

_TESTS = """
import pytest

@pytest.mark.parametrize("n", range(5))
def test_many(n, per_test, fine_session, breaks_at_teardown):
    assert n >= 0
"""


def test_installed_in_a_session_only_what_says_something_is_written(tmp_path):
    (tmp_path / "conftest.py").write_text(_CONFTEST)
    (tmp_path / "test_x.py").write_text(_TESTS)
    results = tmp_path / "allure-results"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "-p", "no:xdist"]
        + ["-p", "no:randomly", f"--alluredir={results}", "--rootdir", str(tmp_path)]
        + [str(tmp_path / "test_x.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "INSTALLED True" in proc.stdout, proc.stdout + proc.stderr
    names = [p.name for p in results.iterdir()]
    result_files = [n for n in names if n.endswith("-result.json")]
    containers = [json.loads((results / n).read_text()) for n in names if "container" in n]
    assert len(result_files) == 5
    assert not [n for n in names if n.endswith(".tmp")]
    # Only the session fixture whose teardown broke has a container, and it names every case
    # once (the children kept in a set, not searched for in a list).
    assert len(containers) == 1, containers
    (container,) = containers
    assert [a["name"] for a in container["afters"]][0].startswith("breaks_at_teardown")
    assert container["afters"][0]["status"] == "broken"
    uuids = {json.loads((results / n).read_text())["uuid"] for n in result_files}
    assert sorted(container["children"]) == sorted(uuids)
