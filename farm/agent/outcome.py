"""The taxonomy of one case's outcome, from what was expected and what the operator did.

Product failures (precision, a wrong acceptance or rejection, a wrong status, a crash) are final;
only the orchestrator decides about infrastructure errors, which never reach this function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from farm.agent.record import Outcome, ResultRecord

PASSED: Outcome = "passed"
FAILED: Outcome = "failed"
CATEGORIES = (
    "precision",
    "unexpected_acceptance",
    "unexpected_rejection",
    "wrong_status",
    "crash",
    "tiling",  # the tiling the operator planned differs from the design (suites/tiling.py)
    "check",  # passed its standards, then failed another check of the suite
    "hang",  # timed out on two different hosts: the case's own fault (farm/run/dispatch.py)
    "out_of_bounds",
    "kernel_fault",
    "infrastructure",
    "not_run",  # every device of its family was held by another run (broken, never charged)
)
# The reason a backend gives when the emulated device stopped the kernel for breaking a rule of
# the hardware (status 561000; farm/agent/backends/native.py).
KERNEL_FAULT = "kernel_fault"


def classify(expect: Mapping[str, Any], record: ResultRecord) -> tuple[Outcome, str | None, str]:
    status, reason = record["status"], record["reason"]
    if status != 0 and reason == KERNEL_FAULT:
        # Whatever was expected: the kernel ran and broke a rule of the (emulated) hardware.
        return (
            FAILED,
            "kernel_fault",
            f"the emulated device stopped the kernel ({status}): {record['op_message']}",
        )
    if expect["kind"] == "reject":
        want = f"{expect['reason']} ({expect['status']})"
        if status == 0:
            return (
                FAILED,
                "unexpected_acceptance",
                f"accepted a call the contract rejects: expected {want}",
            )
        if status != expect["status"] or (reason is not None and reason != expect["reason"]):
            return (
                FAILED,
                "wrong_status",
                f"rejected with {reason} ({status}), expected {want}: {record['op_message']}",
            )
        return PASSED, None, f"rejected as expected: {reason} ({status})"
    if status != 0:
        return (
            FAILED,
            "unexpected_rejection",
            f"rejected a valid call with {reason} ({status}): {record['op_message']}",
        )
    if record.get("out_guard_ok") is False:
        return (
            FAILED,
            "out_of_bounds",
            "wrote outside the output view: the storage around out was changed",
        )
    verdict = record["verdict"]
    if verdict is None:
        return FAILED, "crash", "the operator returned success but no output"
    if not verdict["passed"]:
        return FAILED, "precision", verdict["reason"]
    return PASSED, None, verdict["reason"]
