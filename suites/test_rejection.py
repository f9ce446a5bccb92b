"""Calls the contract rejects: the operator must refuse them with the right status and reason,
before any kernel runs (bf16 on the Ascend310B family among them)."""

import pytest

pytestmark = pytest.mark.farm_cases(accepted=False)  # the farm plugin's cases of this module


def test_rejection(case, farm_run, check_record):
    check_record(farm_run(case))
