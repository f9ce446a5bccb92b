"""Calls the contract accepts: the result is judged against the float64 golden under the case's
precision standard, and the tiling the operator planned is checked against the design."""

import pytest

from suites.tiling import check_tiling

pytestmark = pytest.mark.farm_cases(accepted=True)  # the farm plugin's cases of this module


def test_precision(case, farm_run, check_record):
    record = farm_run(case)
    check_record(record)
    check_tiling(case, record)
