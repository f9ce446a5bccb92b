"""A run's JUnit and Allure results made to hold exactly the cases the store holds.

However a run stops (a signal to the orchestrator alone or to its process group, -x, a worker
that died, a runs directory that filled), the records are the truth: they are what the store
imports. pytest's JUnit is written by the controller from the reports that reached it before it
stopped listening, and allure-pytest's results by each worker from what it ran, so either can
hold a case with no record or miss one that has a record. Here JUnit keeps pytest's entry of
every stored case and gains an entry, from its record, for a stored case pytest never reported;
the Allure results lose the files of cases without a record and gain one, from its record, for a
stored case without one. What pytest and allure-pytest said stays, said as the record says it:
of pytest's entries of a case (more than one when an xdist worker went down while running it:
its crash report, then the case run again on a new worker) the one that agrees with the record
is kept, else the one the case's test wrote (it carries the record's outcome) with its failure
named as the record's (an infrastructure fault raised by the test is a failure to pytest, an
error here, as in Allure and the store); else the record's own entry replaces them.
"""

from __future__ import annotations

import json
import os
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path

from farm.agent.record import ResultRecord
from farm.run.plugin import case_id_of
from farm.run.result_files import RESULT_SUFFIX, read_file, result_files
from farm.util.run_dir import write_whole

# How a record's outcome reads in JUnit (None: a testcase without a failure element).
_JUNIT_ELEMENT = {"passed": None, "failed": "failure", "broken": "error"}
_STOPPED = "no result came back for this case before the run stopped; this entry is its record"
_DISAGREED = (
    "pytest's entry of this case was not its record's (its worker went down while running it); "
    "this entry is its record"
)


def junit_classname(nodeid: str) -> tuple[str, str]:
    """(classname, name) of a node id as pytest's junitxml writes them."""
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::")
    module = path[:-3] if path.endswith(".py") else path
    classname = ".".join([module.replace("/", "."), *parts[:-1]])
    return classname, parts[-1]


def junit(
    pytest_xml: Path | None,
    out: Path,
    records: Iterable[ResultRecord],
    nodeids: Mapping[str, str],
    suite_name: str | None = None,
) -> set[str]:
    """Write ``out``: pytest's JUnit (``pytest_xml``, may be missing or cut short) less the
    testcases of cases without a record, plus one from the record of each stored case pytest
    did not report. ``nodeids``: case id -> its node id; ``suite_name``: the name of its test suites
    (and of the whole), pytest's ("pytest") when None. Returns the case ids written."""
    by_id = {r["case_id"]: r for r in records}
    root = _parse(pytest_xml)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if not suites:
        suites = [ET.SubElement(root, "testsuite", name="pytest")]
    for named in [root, *suites] if suite_name else ():
        named.set("name", str(suite_name))
    entries: dict[str, list[tuple[ET.Element, ET.Element]]] = {}  # case id -> (suite, testcase)
    for suite in suites:
        for case in list(suite.findall("testcase")):
            entries.setdefault(case_id_of(case.get("name", "")) or "", []).append((suite, case))
    written: set[str] = set()
    for cid, found in entries.items():
        record = by_id.get(cid)
        keep = _entry_for(record, [case for _, case in found]) if record is not None else None
        for suite, case in found:
            if case is not keep:
                suite.remove(case)
        if keep is not None:
            written.add(cid)
    for cid, record in by_id.items():
        if cid not in written:
            why = _DISAGREED if cid in entries else _STOPPED
            suites[0].append(_junit_case(record, nodeids.get(cid), why))
            written.add(cid)
    for suite in suites:
        _recount(suite)
    write_whole(out, ET.tostring(root, encoding="utf-8", xml_declaration=True))
    return written


def _parse(path: Path | None) -> ET.Element:
    try:
        if path is not None and path.is_file():
            return ET.parse(path).getroot()
    except ET.ParseError:
        pass  # a file pytest was stopped writing: made anew from the records
    root = ET.Element("testsuites", name="pytest tests")
    ET.SubElement(root, "testsuite", name="pytest")
    return root


def _entry_for(record: ResultRecord, found: list[ET.Element]) -> ET.Element | None:
    """pytest's entry of a stored case, made to say what its record says (see the module): the
    test's own entry (it carries the record's outcome) first, then any that agrees."""
    outcome = str(record.get("outcome"))
    said = f"properties/property[@name='farm_outcome'][@value='{outcome}']"
    own = [c for c in found if c.find(said) is not None]
    for case in own:
        if _junit_outcome(case) == outcome:
            return case
    wanted = _JUNIT_ELEMENT.get(outcome)
    for case in own:
        element = case.find("failure")
        element = case.find("error") if element is None else element
        if element is not None and wanted:
            element.tag = wanted
            return case
    return next((c for c in found if _junit_outcome(c) == outcome), None)


def _junit_outcome(case: ET.Element) -> str:
    """A JUnit testcase's outcome in the records' words."""
    tags = {child.tag for child in case}
    return "failed" if "failure" in tags else "broken" if "error" in tags else "passed"


def _junit_case(record: ResultRecord, nodeid: str | None, why: str = _STOPPED) -> ET.Element:
    from farm.run.allure.categories import failure_message

    cid = record["case_id"]
    classname, name = junit_classname(nodeid) if nodeid else ("suites", f"case[{cid}]")
    case = ET.Element("testcase", classname=classname, name=name, time="0")
    props = ET.SubElement(case, "properties")
    for key in ("host", "outcome", "category"):
        ET.SubElement(props, "property", name=f"farm_{key}", value=str(record.get(key)))
    element = _JUNIT_ELEMENT.get(str(record.get("outcome")), "error")
    if element is not None:
        ET.SubElement(case, element, message=failure_message(record)).text = why
    return case


def _recount(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    for attr, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        suite.set(attr, str(sum(1 for c in cases if c.find(tag) is not None)))


def allure_case_id(result: Mapping) -> str:
    """The case of an allure-pytest result: its title is the case id once the case ran
    (allure_glue.annotate), else pytest's name, ``test_x[<case id>]``."""
    name = str(result.get("name", ""))
    return case_id_of(name) or name


def allure(
    results_dir: Path,
    records: Iterable[ResultRecord],
    nodeids: Mapping[str, str],
    cases: Mapping[str, object],
) -> set[str]:
    """Remove the Allure results of cases without a record and write one, from its record, for
    each stored case without one. ``cases``: case id -> the Case the suites parametrize with
    (its history id is made from it, as allure-pytest makes it). Returns the case ids present.
    An OSError of a write is raised after the removals are done."""
    by_id = {r["case_id"]: r for r in records}
    present: set[str] = set()
    for path in result_files(results_dir):
        cid = _result_case_id(path)
        if cid in by_id and cid not in present:
            present.add(cid)
        else:
            os.unlink(path)
    for cid, record in by_id.items():
        if cid not in present:
            result = allure_result(record, nodeids.get(cid), cases.get(cid))
            write_whole(
                results_dir / f"{result['uuid']}{RESULT_SUFFIX}", json.dumps(result).encode()
            )
            present.add(cid)
    return present


# The farm's results open with their name (farm/run/allure/output.py writes the fields in
# allure-pytest's order): taken from the first bytes, a run's results are scanned in a fraction
# of the time a whole parse of each takes. Others are parsed whole.
_LEADING_NAME = re.compile(rb'\A\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")')


def _result_case_id(path: str | os.PathLike) -> str:
    """The case of an Allure result file; "" for one that cannot be read (its worker was
    stopped writing it)."""
    try:
        raw = read_file(path)  # one read: a result is a few KiB
        leading = _LEADING_NAME.match(raw)
        if leading is not None:
            return allure_case_id({"name": json.loads(leading.group(1))})
        return allure_case_id(json.loads(raw))
    except (OSError, ValueError):
        return ""


def allure_result(record: ResultRecord, nodeid: str | None, case: object) -> dict:
    """An Allure result of a stored case that has none, with the identity an annotated case has
    (full name, history id, test-case id), so the case's history goes on."""
    from allure_commons.utils import md5, represent

    from farm.run.allure import glue as allure_glue
    from farm.run.allure.categories import failure_message
    from farm.run.allure.environment import ENVIRONMENT_LABEL, EPIC
    from farm.run.allure.identity import allure_test_case_id

    cid, family = record["case_id"], str(record.get("family", ""))
    classname, name = junit_classname(nodeid) if nodeid else ("suites", "case")
    function = name.split("[", 1)[0]
    full_name = f"{classname}#{function}"
    original_case = represent(case) if case is not None else represent(cid)
    status = str(record.get("outcome"))
    result: dict = {
        "uuid": str(uuid.uuid4()),
        "name": cid,
        "fullName": full_name,
        "historyId": md5(full_name, original_case, represent(family)),
        "testCaseId": allure_test_case_id(cid, family),
        "status": status if status in _JUNIT_ELEMENT else "broken",
        "description": _STOPPED,
        "parameters": [
            {"name": "case", "value": represent(cid), "mode": "hidden"},
            {"name": "family", "value": represent(family)},
        ],
        "labels": [
            {"name": "epic", "value": EPIC},
            *({"name": "feature", "value": f} for f in allure_glue.features(record)),
            {"name": "story", "value": allure_glue.story(record)},
            {"name": "severity", "value": allure_glue.severity(record)},
            {"name": ENVIRONMENT_LABEL, "value": family},
            {"name": "suite", "value": classname.rsplit(".", 1)[-1]},
        ],
    }
    if status != "passed":
        result["statusDetails"] = {"message": failure_message(record)}
    return result
