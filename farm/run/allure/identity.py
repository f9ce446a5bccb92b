"""Who a case is in Allure: its test-case id, one per case.

allure-pytest gives every result the test-case id of its pytest function (the md5 of
"suites.test_precision#test_precision"): every precision case one id, every rejection case
another. Allure 3 builds a result's Environments tab from the results that share its test-case
id (one per environment), and its history key from that id and the non-excluded parameters: a
failed case's Environments tab then showed other cases, passing.

`allure_test_case_id` is derived from the case id instead, less its family prefix ("910b_",
"310b_"): the same case on the other SoC family keeps its id, so the Environments tab holds that
case on each family and nothing else; the family, a non-excluded parameter, still keeps the two
histories apart. It does not change between runs.
"""

from __future__ import annotations

import hashlib

from golden.soc import FAMILY_SHORT

# What the ids are the md5 of, after the operator: never the same string as a pytest full name.
_PREFIX = "LogSoftmaxGrad case "


def case_key(case_id: str, family: str) -> str:
    """The case id without its family's prefix: what the case is on any family."""
    short = FAMILY_SHORT.get(str(family))
    prefix = f"{short}_" if short else ""
    case_id = str(case_id)
    return case_id[len(prefix) :] if prefix and case_id.startswith(prefix) else case_id


def allure_test_case_id(case_id: str, family: str) -> str:
    """The Allure test-case id of a case: the same on every family and in every run."""
    return hashlib.md5((_PREFIX + case_key(case_id, family)).encode("utf-8")).hexdigest()
