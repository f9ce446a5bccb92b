"""One outcome per case: a suite check that fails after the record was written (the tiling
check) amends the record, so the store, the summary and the exit code say what JUnit says."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from farm.run import plugin
from farm.run.runner import collect_records
from suites import matrix
from suites.tiling import TilingMismatch


class Writer:
    def __init__(self):
        self.written: list[dict] = []

    def write(self, record):
        self.written.append(record)


def report_after(item, failed: bool, message: str = ""):
    """Drive the plugin's makereport wrapper for the call phase of `item`."""
    crash = SimpleNamespace(message=message)
    report = SimpleNamespace(when="call", failed=failed, longrepr=SimpleNamespace(reprcrash=crash))
    wrapper = plugin.pytest_runtest_makereport(item, None)
    next(wrapper)
    with pytest.raises(StopIteration):
        wrapper.send(SimpleNamespace(get_result=lambda: report))


def item_with(record, writer):
    item = SimpleNamespace(stash=pytest.Stash())
    item.stash[plugin._RECORD] = (record, writer)
    return item


def test_a_check_failing_after_a_passed_record_amends_it():
    writer = Writer()
    record = {"case_id": "c", "outcome": "passed", "category": None, "message": "PASS"}
    message = f"{TilingMismatch.__module__}.TilingMismatch: [tiling] planned differently: key 768"
    report_after(item_with(record, writer), failed=True, message=message)
    (amended,) = writer.written
    assert (amended["outcome"], amended["category"]) == ("failed", "tiling")
    assert "[tiling] planned differently" in amended["message"]
    assert record["outcome"] == "passed"  # the first record is kept as it was written


@pytest.mark.parametrize("outcome, failed", [("passed", False), ("failed", True)])
def test_nothing_is_amended_when_the_record_already_says_it(outcome, failed):
    writer = Writer()
    record = {"case_id": "c", "outcome": outcome, "category": None, "message": ""}
    report_after(item_with(record, writer), failed=failed, message="AssertionError: x")
    assert writer.written == []


def test_the_last_record_of_a_case_counts(tmp_path):
    case = matrix.expand("smoke")[0]
    records = tmp_path / "records"
    records.mkdir()
    first = {"case_id": case.id, "outcome": "passed"}
    amended = {"case_id": case.id, "outcome": "failed", "category": "tiling"}
    import json

    (records / "gw0.jsonl").write_text(json.dumps(first) + "\n" + json.dumps(amended) + "\n")
    got, _ = collect_records(tmp_path, [case])
    assert got[0]["outcome"] == "failed" and got[0]["category"] == "tiling"
