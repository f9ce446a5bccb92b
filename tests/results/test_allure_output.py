"""farm/run/allure/output.py: allure-pytest's files, written compactly, without the fixture
containers that say nothing, and with the same content otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from allure_commons import model2 as m  # its Test* classes are not tests: not imported bare
from allure_commons.logger import AllureFileLogger

from farm.run.allure import output as allure_output
from farm.util.paths import REPO_ROOT


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
from farm.run.allure import output as allure_output

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


def _pytest_with_allure(test_file: Path, *options: str, env: dict | None = None):
    """pytest on `test_file` in its own directory, in a process of its own, with allure-pytest
    writing to <that directory>/allure-results and no option of the outer run's."""
    work = test_file.parent
    environ = dict(os.environ, PYTHONPATH=str(REPO_ROOT), **(env or {}))
    environ.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", "-p", "no:xdist"]
        + ["-p", "no:randomly", f"--alluredir={work / 'allure-results'}", "--rootdir", str(work)]
        + [str(test_file)],
        cwd=work,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_installed_in_a_session_only_what_says_something_is_written(tmp_path):
    (tmp_path / "conftest.py").write_text(_CONFTEST)
    (tmp_path / "test_x.py").write_text(_TESTS)
    results = tmp_path / "allure-results"
    proc = _pytest_with_allure(tmp_path / "test_x.py", "-s")
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


_ANNOTATED = """
import json
import os

import pytest

from farm.run.allure.glue import annotate
from farm.run.allure.output import _running_result

RECORDS = json.load(open("records.json"))
DIRECT = []  # whether each test's annotations went straight to allure-pytest's result

if os.environ.get("FARM_TEST_SECOND_ALLURE_PLUGIN"):  # then allure.dynamic is the way
    import allure_commons

    class SecondPlugin:
        @allure_commons.hookimpl
        def add_label(self, label_type, labels):
            pass

    allure_commons.plugin_manager.register(SecondPlugin())


# As the suites do: a "case" argument, whose parameter annotate() then shows as the case id.
@pytest.mark.parametrize("case", range(len(RECORDS)))
def test_case(case):
    DIRECT.append(_running_result() is not None)
    annotate(RECORDS[case])


def teardown_module():
    with open("direct.json", "w") as fh:
        json.dump(DIRECT, fh)
"""


def _annotated_results(work: Path, records: list[dict], second_plugin: bool) -> dict:
    """Each result of a session annotating `records`, by title, without what differs between
    two sessions (ids, times, the attachments' file names, the thread and host labels); and
    whether each went straight."""
    work.mkdir()
    (work / "records.json").write_text(json.dumps(records))
    (work / "test_annotated.py").write_text(_ANNOTATED)
    extra_env = {"FARM_TEST_SECOND_ALLURE_PLUGIN": "1"} if second_plugin else {}
    proc = _pytest_with_allure(work / "test_annotated.py", env=extra_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {}
    for f in (work / "allure-results").glob("*-result.json"):
        r = json.loads(f.read_text())
        for key in ("uuid", "start", "stop"):
            r.pop(key)
        r["labels"] = [lab for lab in r["labels"] if lab["name"] not in ("thread", "host")]
        for attachment in r.get("attachments", []):
            attachment.pop("source")
        results[r["name"]] = r
    return {"results": results, "direct": json.loads((work / "direct.json").read_text())}


def test_annotations_written_straight_are_what_allure_dynamic_writes(tmp_path):
    from suites.case import DEPARTS

    from .conftest import failed, record, rejected_ok

    records = [
        record("prec-f32-tail"),
        record("prec-f32-tail-310", family="ascend310b", host="emu-310-0", soc="Ascend310B1"),
        failed("prec-f16-mid", dtype="float16", metrics={"mere": 4e-3, "mare": 3.1e-2}),
        rejected_ok("rej-dtype"),
        record("departs", note=f"{DEPARTS}: tolerance 1e-3", hostname="atlas-7.lab"),
    ]
    straight = _annotated_results(tmp_path / "straight", records, second_plugin=False)
    dynamic = _annotated_results(tmp_path / "dynamic", records, second_plugin=True)
    assert straight["direct"] == [True] * len(records)
    assert dynamic["direct"] == [False] * len(records)
    assert sorted(straight["results"]) == sorted(r["case_id"] for r in records)
    assert straight["results"] == dynamic["results"]
    departs = straight["results"]["departs"]
    assert {"name": "tag", "value": "departs from its source"} in departs["labels"]
    shown = {p["name"]: p for p in departs["parameters"]}
    # The suites' "case" argument: its value shown as the case id, still part of the history id.
    assert shown["case"]["value"] == "'departs'" and "excluded" not in shown["case"]
    assert shown["hostname"]["excluded"] is True
