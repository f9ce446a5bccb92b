"""An allocation that fails on an agent is the case's result (broken, out_of_memory), never an
exception: the server turns exceptions into executor errors, which are charged to the host."""

from __future__ import annotations

import pytest

from farm.agent import execute
from farm.agent.backends.native import NativeError
from farm.agent.identity import Identity
from farm.run.requests import case_request
from suites.case import Case

IDENTITY = Identity(
    host="node-7", soc="Ascend910B1", devices=1, source="test", emulated=True, python="3"
)
CASE = Case("ascend910b", "float32", (4, 8), (1,))


def failing_backend(exc: Exception):
    def run_call(*args, **kwargs):
        raise exc

    return lambda name: run_call


@pytest.mark.parametrize(
    "exc",
    [
        MemoryError("Unable to allocate 1.00 GiB for an array with shape (268435456,)"),
        NativeError(
            "lsg_run failed with status 561000 after planning succeeded: internal error: "
            "std::bad_alloc"
        ),
    ],
    ids=["numpy", "library"],
)
def test_a_failed_allocation_is_the_cases_outcome(monkeypatch, exc):
    monkeypatch.setattr(execute, "_backend", failing_backend(exc))
    record = execute.run_case(case_request(CASE), "native", 0, IDENTITY)
    assert (record["outcome"], record["category"]) == ("broken", "out_of_memory")
    assert record["case_id"] == CASE.id and record["host"] == "node-7"
    assert record["message"].startswith("the case needs more memory than its host has (")
    assert str(exc).split(":")[-1].strip() in record["message"]


def test_any_other_exception_is_still_the_hosts_to_explain(monkeypatch):
    monkeypatch.setattr(execute, "_backend", failing_backend(NativeError("library not found")))
    with pytest.raises(NativeError, match="library not found"):
        execute.run_case(case_request(CASE), "native", 0, IDENTITY)
