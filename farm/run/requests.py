"""A case as the agent's request: suites/case.py Case.to_dict, typed as farm/agent/request.py
CaseRequest. Here, above both, because the suites sit below the agent and do not name its types
(tests/agent/test_request.py checks that every key a case sends is declared there)."""

from __future__ import annotations

from typing import cast

from farm.agent.request import CaseRequest, Expectation
from suites.case import Case


def case_request(case: Case) -> CaseRequest:
    """The request that runs ``case`` on an agent (and the case's description in its record)."""
    return cast(CaseRequest, case.to_dict())


def expectation(case: Case) -> Expectation:
    """What the contract says of ``case``'s call, as the request's ``expect``."""
    return cast(Expectation, case.expectation())
