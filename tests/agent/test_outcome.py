"""The outcome taxonomy: every combination of expectation and operator behaviour."""

from farm.agent.outcome import classify
from farm.agent.record import HostChecks, ResultRecord, Verdict

REJECT = {"kind": "reject", "reason": "bf16_unsupported_on_soc", "status": 161002}
PRECISION = {"kind": "precision", "standard": "experimental", "level": None}


def record(
    status: int | None, reason: str | None, verdict: Verdict | None = None, message: str = "msg"
) -> ResultRecord:
    return {"status": status, "reason": reason, "verdict": verdict, "op_message": message}


def test_expected_rejection_passes():
    assert classify(REJECT, record(161002, "bf16_unsupported_on_soc"))[:2] == ("passed", None)


def test_acceptance_of_a_rejected_call_is_unexpected_acceptance():
    outcome, category, message = classify(REJECT, record(0, "ok"))
    assert (outcome, category) == ("failed", "unexpected_acceptance")
    assert (
        message == "accepted a call the contract rejects: expected bf16_unsupported_on_soc (161002)"
    )


def test_a_registration_refusal_the_tiling_function_made_fails_the_registration():
    """bf16 on Ascend310B is refused by the OpDef registration and by the tiling function: with
    bf16 declared for 310B (the planted opdef_bf16_310b) the tiling function still refused every
    whole call with the right words, and only the one registration case a family failed. The
    layer that refused is part of the verdict; a tiling layer case asks that layer alone."""
    checks: HostChecks = {
        "decided_by": "tiling",
        "host": "bf16_unsupported_on_soc",
        "host_status": 0,
    }
    by_tiling: ResultRecord = {**record(161002, "bf16_unsupported_on_soc"), "checks": checks}
    outcome, category, message = classify(REJECT, by_tiling)
    assert (outcome, category) == ("failed", "registration")
    assert message.startswith("rejected with bf16_unsupported_on_soc (161002) as expected, but by")
    assert classify(REJECT, {**by_tiling, "layer": "tiling"})[:2] == ("passed", None)
    registration: HostChecks = {**checks, "decided_by": "registration"}
    by_registration: ResultRecord = {**by_tiling, "checks": registration}
    assert classify(REJECT, by_registration)[:2] == ("passed", None)
    # A reason the registration does not decide may come from the tiling function.
    rank = {"kind": "reject", "reason": "rank_too_large", "status": 161002}
    assert classify(rank, {**by_tiling, "reason": "rank_too_large"})[:2] == ("passed", None)


def test_other_status_or_reason_is_wrong_status():
    assert classify(REJECT, record(161001, "null_tensor"))[1] == "wrong_status"
    assert classify(REJECT, record(161002, "dtype_mismatch"))[1] == "wrong_status"


def test_a_rejection_without_a_reason_fails_whatever_its_status():
    # No reason could be read (a line in other words, a device that gives none, torch_npu): never
    # judged by the status alone, even the expected one.
    said = "EZ1001: LogSoftmaxGrad: status 161002 (why 9): bf16 [aclnnLogSoftmaxBackward]"
    for status in (161002, 161001):
        outcome, category, message = classify(REJECT, record(status, None, None, said))
        assert (outcome, category) == ("failed", "reason_unreadable")
        assert message.startswith(
            f"rejected with status {status} and no reason that can be read, expected "
            "bf16_unsupported_on_soc (161002), bf16 on a SoC that cannot cast it: the operator "
            "said 'EZ1001: LogSoftmaxGrad: "
            "status 161002 (why 9): bf16 [aclnnLogSoftmaxBackward]'"
        )
        assert "LogSoftmaxGrad: status S (reason R name): message [api]" in message
        assert "op/tiling/reasons.def" in message
    # A device that said nothing at all: the same failure, saying so.
    message = classify(REJECT, record(161002, None, None, ""))[2]
    assert "cannot cast it: the operator said nothing; " in message


def test_a_phase_two_that_failed_after_an_acceptance_is_a_crash():
    said = "aclnnLogSoftmaxBackward: aclnnInplaceCopy (status 161002): workspace past its end"
    outcome, category, message = classify(PRECISION, record(561000, "launch_failed", None, said))
    assert (outcome, category) == ("failed", "crash")
    assert message == (
        "the operator's phase two failed after its phase one accepted the call (561000): " + said
    )
    # Phase one accepted a call the contract rejects: that comes first.
    outcome, category, _ = classify(REJECT, record(561000, "launch_failed", None, said))
    assert (outcome, category) == ("failed", "unexpected_acceptance")


def test_rejection_of_a_valid_call_is_unexpected_rejection():
    outcome, category, message = classify(PRECISION, record(161002, "shape_mismatch", None, "x"))
    assert (outcome, category) == ("failed", "unexpected_rejection")
    assert "shape_mismatch (161002): x" in message


def test_precision_verdict_decides_accepted_calls():
    good: Verdict = {"passed": True, "reason": "PASS experimental"}
    bad: Verdict = {"passed": False, "reason": "FAIL experimental: MARE 1 >= 10T"}
    assert classify(PRECISION, record(0, "ok", good)) == ("passed", None, "PASS experimental")
    assert classify(PRECISION, record(0, "ok", bad)) == ("failed", "precision", bad["reason"])
    assert classify(PRECISION, record(0, "ok", None))[1] == "crash"


def test_a_write_outside_the_output_view_fails_even_with_right_numbers():
    good: Verdict = {"passed": True, "reason": "PASS error-bound"}
    clean = record(0, "ok", good)
    clean["out_guard_ok"] = True
    assert classify(PRECISION, clean)[0] == "passed"
    dirty = record(0, "ok", good)
    dirty["out_guard_ok"] = False
    outcome, category, message = classify(PRECISION, dirty)
    assert (outcome, category) == ("failed", "out_of_bounds") and "outside the output" in message


def test_a_kernel_fault_is_its_own_category():
    # The emulated device stopped the kernel (native backend, status 561000): not a rejection.
    fault = record(561000, "kernel_fault", None, "DataCopy: length not a multiple of 32 bytes")
    outcome, category, message = classify(PRECISION, fault)
    assert (outcome, category) == ("failed", "kernel_fault")
    assert message == (
        "the emulated device stopped the kernel (561000): "
        "DataCopy: length not a multiple of 32 bytes"
    )


def test_an_emulation_policy_fault_is_its_own_category():
    why = "Add: src0 and dst partially overlap, core 0 (emulation policy: CANN accepts this; ...)"
    outcome, category, message = classify(PRECISION, record(561000, "emulation_policy", None, why))
    assert (outcome, category) == ("failed", "emulation_policy")
    assert message == f"the emulated device refused the kernel by a rule of its own (561000): {why}"


def test_a_device_stop_after_accepting_a_call_the_contract_rejects_is_an_acceptance():
    # The kernel ran, so phase one accepted the call: that is the first thing that went wrong.
    for reason in ("kernel_fault", "emulation_policy"):
        outcome, category, message = classify(REJECT, record(561000, reason, None, "Cast: bf16"))
        assert (outcome, category) == ("failed", "unexpected_acceptance")
        assert message.startswith("accepted a call the contract rejects: expected ")
        assert message.endswith("(561000): Cast: bf16")


def test_a_tiling_mismatch_comes_first_whatever_the_numbers():
    good: Verdict = {"passed": True, "reason": "PASS error-bound"}
    mismatch = record(0, "ok", good)
    mismatch["checks"] = {"tiling_mismatch": "blockElems 1 (planned 2)"}
    outcome, category, message = classify(PRECISION, mismatch)
    assert (outcome, category) == ("failed", "tiling_mismatch")
    assert message.endswith("blockElems 1 (planned 2)")
    agreeing = record(0, "ok", good)
    agreeing["checks"] = {"tiling_mismatch": ""}
    assert classify(PRECISION, agreeing)[0] == "passed"


def _passing() -> ResultRecord:
    return record(0, "ok", {"passed": True, "reason": "PASS error-bound"})


def test_handles_the_operator_left_alive_fail_a_passing_case_as_a_resource_leak():
    leaked = "the operator left 1 executor of aclnnInplaceCopy (made by code of x.so) alive"
    outcome, category, message = classify(PRECISION, {**_passing(), "leaked": leaked})
    assert (outcome, category) == ("failed", "resource_leak")
    assert message == f"{leaked} (the call itself: PASS error-bound)"


def test_a_wrong_answer_on_an_error_path_fails_a_passing_case_as_a_wrong_status():
    wrong = "a phase two given a workspace one byte short: phase two accepted 511 bytes"
    outcome, category, message = classify(
        PRECISION, {**_passing(), "error_paths": wrong, "leaked": "left 1 aclTensor alive"}
    )
    assert (outcome, category) == ("failed", "wrong_status")
    assert message.startswith(f"{wrong}; left 1 aclTensor alive (the call itself: ")


def test_a_failing_case_keeps_its_category_and_says_the_leak_after():
    said = "aclnnLogSoftmaxBackward: aclnnInplaceCopy (status 161002): workspace past its end"
    failed = record(561000, "launch_failed", None, said)
    failed["leaked"] = "left 1 executor alive"
    outcome, category, message = classify(PRECISION, failed)
    assert (outcome, category) == ("failed", "crash")
    assert message.endswith(f"{said}; then left 1 executor alive")
    # A rejection that leaks: judged as a rejection first (it passes), then the leak fails it.
    rejected = record(161002, "bf16_unsupported_on_soc")
    rejected["leaked"] = "left 1 aclTensor alive"
    assert classify(REJECT, rejected)[:2] == ("failed", "resource_leak")
