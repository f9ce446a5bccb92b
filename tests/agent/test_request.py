"""The case request has one typed definition (farm/agent/request.py): every key a case sends is
declared there, and every field of a case is sent."""

from __future__ import annotations

from dataclasses import fields

from farm.agent.request import CaseRequest, Expectation
from suites import matrix
from suites.case import Case


def test_every_key_of_a_case_request_is_declared():
    declared = set(CaseRequest.__annotations__)
    cases = matrix.expand("smoke")
    sent = set().union(*(c.to_dict().keys() for c in cases))
    assert sent <= declared, f"sent but not declared in CaseRequest: {sorted(sent - declared)}"
    expect = set().union(*(c.to_dict()["expect"].keys() for c in cases))
    assert expect <= set(Expectation.__annotations__), sorted(expect)


def test_every_field_of_a_case_travels_and_comes_back():
    declared = set(CaseRequest.__annotations__)
    assert {f.name for f in fields(Case)} <= declared
    case = next(c for c in matrix.expand("smoke") if c.layout == "strided")
    assert Case.from_dict(dict(case.to_dict())) == case
