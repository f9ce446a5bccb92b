"""Calls the contract rejects: the operator must refuse them with the right status and reason,
before any kernel runs (bf16 on the Ascend310B family among them)."""

from farm.run.plugin import check_record


def FARM_SELECT(case):  # noqa: N802  (read by the farm plugin)
    return not case.accepted


def test_rejection(case, farm_run):
    check_record(farm_run(case))
