"""The taxonomy of one case's outcome, from what was expected and what the operator did.

Product failures (precision, a wrong acceptance or rejection, a wrong status, a reason that
cannot be read, a crash) are final; only the orchestrator decides about infrastructure errors,
which never reach this function. A rejection passes only with the expected status and the
expected reason: one without a reason (None: the backend could not read one) fails as
reason_unreadable, never judged by its status alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from farm.agent.record import Outcome, ResultRecord
from golden import reasons

PASSED: Outcome = "passed"
FAILED: Outcome = "failed"
CATEGORIES = (
    "precision",
    "unexpected_acceptance",
    "unexpected_rejection",
    "wrong_status",
    "crash",
    "tiling",  # the tiling the operator planned differs from the design (suites/tiling.py)
    "tiling_mismatch",  # the host tiling function gave the kernel what the shared plan did not
    "workspace",  # the aclnn layer asked for another workspace than its design
    # (suites/workspace.py)
    "resource_leak",  # the operator's code left an aclTensor, aclIntArray or executor alive
    "check",  # passed its standards, then failed another check of the suite
    "hang",  # timed out, its host then answered its canary (or timed out on two hosts too):
    # the case's own fault (farm/run/dispatch.py)
    "out_of_bounds",
    "kernel_fault",
    "emulation_policy",  # the emulated device refused what CANN accepts (our caution, not CANN's)
    "reason_unreadable",  # a rejection whose reason could not be read: never judged by its
    # status alone (golden/reasons.py, the one line and table the operator writes from)
    "infrastructure",
    "not_run",  # every device of its family was held by another run (broken, never charged)
    "out_of_memory",  # the case needs more memory than the host has (broken, the case's fault)
    "registration",  # the OpDef registration departs from the contract's table (a layer case)
    "inference",  # the graph inference departs from the contract's (an infer layer case)
    "not_available",  # the backend cannot read or run that layer on this host (broken)
)
# The reasons a backend gives when the emulated device stopped the kernel (status 561000;
# farm/agent/backends/native.py): for breaking a rule of the hardware, or one of the emulation's
# own stricter rules (op/ascendc_cpu/README.md, "emulation policy").
KERNEL_FAULT = "kernel_fault"
EMULATION_POLICY = "emulation_policy"
# A phase two that failed with an inner status after phase one accepted the call (the acl
# backend, farm/agent/backends/acl_session.py): the operator's own failure, a crash.
LAUNCH_FAILED = "launch_failed"
DEVICE_STOPS = {
    KERNEL_FAULT: "the emulated device stopped the kernel",
    # The fault's own message ends with why: "(emulation policy: CANN accepts this; ...)".
    EMULATION_POLICY: "the emulated device refused the kernel by a rule of its own",
    LAUNCH_FAILED: "the operator's phase two failed after its phase one accepted the call",
}
STOP_CATEGORIES = {LAUNCH_FAILED: "crash"}  # the others are their own category
REASON_UNREADABLE = "reason_unreadable"

# What a library of the C ABI says when an allocation failed in it (its C++ std::bad_alloc,
# caught at the ABI and returned as an internal error: op/ascendc_cpu/abi, op/twin).
ALLOCATION_FAILURES = ("std::bad_alloc",)
OUT_OF_MEMORY = "out_of_memory"


def is_allocation_failure(exc: BaseException) -> bool:
    """Whether `exc` is an allocation that failed: numpy's MemoryError, or the library's."""
    return isinstance(exc, MemoryError) or any(w in str(exc) for w in ALLOCATION_FAILURES)


def out_of_memory(exc: BaseException) -> tuple[Outcome, str, str]:
    """The case's outcome when an allocation for it failed: broken (it never ran) and the case's,
    not the host's (the record names the host): a host that cannot hold a case is not faulty."""
    detail = " ".join(str(exc).split()) or exc.__class__.__name__
    return (
        "broken",
        OUT_OF_MEMORY,
        f"the case needs more memory than its host has ({detail}); make it smaller, or give "
        "its hosts a memory_budget in the inventory that refuses it before a run",
    )


RESOURCE_LEAK = "resource_leak"


def classify(expect: Mapping[str, Any], record: ResultRecord) -> tuple[Outcome, str | None, str]:
    """The case's outcome, category and message. What the acl backend found after the call (a
    wrong answer of the aclnn layer on an error path it tried, handles the operator left alive)
    fails a case that would pass, and is said after the first failure of one that fails."""
    outcome, category, said = _verdict(expect, record)
    wrong, leaked = record.get("error_paths") or "", record.get("leaked") or ""
    after = "; ".join(text for text in (wrong, leaked) if text)
    if not after:
        return outcome, category, said
    if outcome == PASSED:
        category = "wrong_status" if wrong else RESOURCE_LEAK
        return FAILED, category, f"{after} (the call itself: {said})"
    return outcome, category, f"{said}; then {after}"


def _verdict(expect: Mapping[str, Any], record: ResultRecord) -> tuple[Outcome, str | None, str]:
    status, reason = record["status"], record["reason"]
    checks = record.get("checks") or {}
    want = f"{expect['reason']} ({expect['status']})" if expect["kind"] == "reject" else ""
    stop = DEVICE_STOPS.get(reason or "") if status != 0 else None
    if checks.get("tiling_mismatch"):
        return (
            FAILED,
            "tiling_mismatch",
            f"the host tiling function disagrees with the shared plan: {checks['tiling_mismatch']}",
        )
    if stop and expect["kind"] == "reject":
        # Phase one accepted the call (the kernel ran): that is the first thing that went wrong.
        return (
            FAILED,
            "unexpected_acceptance",
            f"accepted a call the contract rejects: expected {want}{_said(checks)}; then "
            f"{stop} ({status}): {record['op_message']}",
        )
    if stop:
        category = STOP_CATEGORIES.get(str(reason), str(reason))
        return FAILED, category, f"{stop} ({status}): {record['op_message']}"
    if expect["kind"] == "reject":
        if status == 0:
            return (
                FAILED,
                "unexpected_acceptance",
                f"accepted a call the contract rejects: expected {want}{_said(checks)}",
            )
        if reason is None:
            meant = reasons.BY_NAME.get(str(expect["reason"]))
            said = _unreadable(status, want, meant, record["op_message"])
            return FAILED, REASON_UNREADABLE, said
        if status != expect["status"] or reason != expect["reason"]:
            return (
                FAILED,
                "wrong_status",
                f"rejected with {reason} ({status}), expected {want}{_said(checks)}: "
                f"{record['op_message']}",
            )
        if (
            checks.get("decided_by") == "tiling"
            and reason in REGISTRATION_REASONS
            and not record.get("layer")
        ):
            # The OpDef registration let through a dtype the contract refuses on this SoC and
            # the tiling function caught it: the call's words are right, the registration is not
            # (on CANN it decides which kernels are compiled). A tiling layer case asks the
            # tiling function alone, the registration out of the way, and is not this.
            return (
                FAILED,
                "registration",
                f"rejected with {reason} ({status}) as expected, but by the tiling function: the "
                "OpDef registration declares what the contract refuses here, so CANN would compile "
                f"kernels for it (op/ascendc/op_host's OpDef must not declare it): "
                f"{record['op_message']}",
            )
        return PASSED, None, f"rejected as expected: {reason} ({status}){_said(checks)}"
    if status != 0:
        return (
            FAILED,
            "unexpected_rejection",
            f"rejected a valid call with {reason} ({status}){_said(checks)}: "
            f"{record['op_message']}",
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
    return PASSED, None, verdict["reason"] + _said(checks)


def _unreadable(status: Any, want: str, meant: reasons.Reason | None, said: str) -> str:
    """A rejection without a reason to judge it by: what came back, and where the fix is."""
    shown = " ".join(str(said or "").split())
    shown = repr(f"{shown[:300]}..." if len(shown) > 300 else shown) if shown else "nothing"
    words = f", {meant.words}" if meant else ""
    return (
        f"rejected with status {status} and no reason that can be read, expected {want}{words}: "
        f"the operator said {shown}; a rejection is judged by its status and its reason, so the "
        f"operator's last line must be {reasons.LINE_FORMAT!r} with an id, name and status of "
        "op/tiling/reasons.def (the aclnn layer writes it with lsg::reason_line)"
    )


def _said(checks: Mapping[str, Any]) -> str:
    """Which layer of the operator's host code said what (farm/agent/record.py HostChecks): the
    layer that refused the call, and where they say more than the verdict, the shared checks
    (lsg::validate, the twin's) disagreeing, or the OpDef registration letting through a dtype
    that the tiling function then refused. "" from a backend that cannot say."""
    if not checks:
        return ""
    host, layer = checks.get("host"), checks.get("decided_by") or ""
    notes = [f"refused by {LAYER_WORDS[layer]}"] if layer in LAYER_WORDS else []
    if "shared" not in checks:
        return f" ({'; '.join(notes)})" if notes else ""
    if layer == "tiling" and host in REGISTRATION_REASONS:
        notes.append(f"the OpDef registration accepted it, the tiling function said {host}")
    if checks["shared"] != host:
        said = (
            "every layer of the host code accepted it" if host == "ok" else f"{layer} said {host}"
        )
        shared = "accept it" if checks["shared"] == "ok" else f"say {checks['shared']}"
        notes.append(f"{said}; the shared checks {shared}")
    return f" ({'; '.join(notes)})" if notes else ""


# The layers a record names (HostChecks.decided_by), as a message says them.
LAYER_WORDS = {
    "front": "the aclnn layer",
    "registration": "the OpDef registration",
    "tiling": "the tiling function",
}
# The contract's reasons that the OpDef registration decides (the dtypes per SoC).
REGISTRATION_REASONS = ("dtype_unsupported", "dtype_mismatch", "bf16_unsupported_on_soc")
