"""Calls the contract accepts: the result is judged against the float64 golden under the case's
precision standard, and the tiling the operator planned is checked against the design."""

from farm.run.plugin import check_record
from suites.tiling import check_tiling


def FARM_SELECT(case):  # noqa: N802  (read by the farm plugin)
    return case.accepted


def test_precision(case, farm_run):
    record = farm_run(case)
    check_record(record)
    check_tiling(case, record)
