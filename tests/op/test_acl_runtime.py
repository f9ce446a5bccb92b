"""The emulated ACL runtime (op/acl_emu) is strict where a real runtime is strict or would silently
corrupt: each scenario of tests/op/acl_probe.py runs in a process of its own, through the genuine
declarations' prototypes, and must end in an error that names the API and the values."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("acl_probe.py")


def probe(
    acl_lib_dir: str, scenario: str, devices: int = 2
) -> tuple[dict, subprocess.CompletedProcess]:
    env = {**os.environ, "LSG_ACL_LIB_DIR": acl_lib_dir, "LSG_EMULATED_DEVICES": str(devices)}
    env.pop("LSG_NATIVE_LIB", None)
    done = subprocess.run(
        [sys.executable, str(PROBE), scenario], capture_output=True, text=True, env=env, timeout=120
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), done


def test_a_host_read_of_device_memory_faults_and_is_named(acl_lib_dir):
    seen, done = probe(acl_lib_dir, "host_reads_device_memory")
    assert seen == {"reached": "before the read"} and done.returncode != 0, done
    assert "host code read or wrote device memory at" in done.stderr
    assert "of a 64-byte aclrtMalloc buffer" in done.stderr
    assert "reached only through aclrtMemcpy or a kernel" in done.stderr


def test_a_wrong_device_id_is_refused_naming_the_devices(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "wrong_device_id")
    assert seen["status"] == 107001
    assert seen["message"].startswith("aclrtSetDevice(5): this host has 2 emulated device(s)")


def test_a_copy_kind_that_does_not_match_its_pointers_is_refused(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "copy_kind_swapped")
    assert seen["status"] == 107000
    assert "with ACL_MEMCPY_DEVICE_TO_HOST: dst" in seen["message"]
    assert "is device memory; the copy kind says host" in seen["message"]


def test_a_copy_back_before_the_stream_is_synchronised_is_refused(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "copy_back_before_sync")
    assert seen["status"] == 107000
    assert "aclrtMemcpy(" in seen["message"] and "still pending on stream" in seen["message"]
    assert "call aclrtSynchronizeStream first (a device would copy stale data)" in seen["message"]


def test_a_workspace_smaller_than_phase_one_asked_for_is_refused(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "workspace_smaller_than_asked")
    assert seen["status"] == 161002
    assert (
        f"aclnnLogSoftmaxBackward: workspace of {seen['asked'] - 1} bytes, phase one asked for "
        f"{seen['asked']}" in seen["message"]
    )


def test_a_tensor_whose_storage_is_smaller_than_its_view_is_refused(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "storage_smaller_than_view")
    assert seen["null"] is True
    assert seen["message"] == (
        "aclCreateTensor: view [4, 4] with strides [4, 1] from offset 0 reaches elements 0..15, "
        "but the storage [8] holds 8"
    )


def test_a_destroyed_tensor_cannot_be_used_or_destroyed_again(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "use_after_destroy")
    assert seen["destroy_again"] == 161002 and "was destroyed" in seen["destroy_message"]
    assert seen["status"] == 161002
    assert "gradOutput cannot be read" in seen["message"] and "was destroyed" in seen["message"]


def test_a_double_free_is_named(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "double_free")
    assert seen["status"] == 207002
    assert seen["message"].endswith("freed before (a 64 bytes buffer): a double free")


def test_buffers_still_allocated_at_finalize_are_an_error_naming_them(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "buffers_left_at_finalize")
    assert seen["status"] == 107000
    assert seen["message"].startswith("aclFinalize: 1 device buffer still allocated (4096 bytes at")
    assert "release them with aclrtFree" in seen["message"]


def test_event_time_is_known_only_once_the_stream_reached_both_events(acl_lib_dir):
    seen, _ = probe(acl_lib_dir, "elapsed_before_sync")
    assert (
        seen["status"] == 107000 and "has not completed; synchronize its stream" in seen["message"]
    )
    assert seen["after_sync"] == 0


def test_a_whole_call_computes_and_leaves_nothing_behind(acl_lib_dir):
    seen, done = probe(acl_lib_dir, "a_whole_call_leaves_nothing")
    assert seen.get("finalize") == 0, (seen, done.stderr)
    want = 0.25 - math.exp(-2.0) * 0.25 * 8
    assert all(abs(v - want) < 1e-6 for v in seen["out"]), seen["out"]


def test_a_strided_copy_asks_for_the_workspace_cann_s_contiguous_step_takes(acl_lib_dir):
    """ops-math aclnn_copy.cpp: a non-contiguous source is made contiguous in the executor's
    workspace first; a contiguous one needs none. Less than asked is refused, and the copy
    transposes through the workspace."""
    seen, done = probe(acl_lib_dir, "strided_copy_asks_for_workspace")
    assert (seen.get("strided"), seen.get("contiguous")) == (512, 0), (seen, done.stderr)
    assert seen["short"] == 161002
    assert seen["short_message"] == (
        "aclnnInplaceCopy: workspace of 16 bytes, phase one asked for 512"
    )
    assert seen["copied"] == [0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0]


def test_the_layer_s_refusal_arrives_through_nnopbase_s_channel_and_is_read_once(acl_lib_dir):
    """aclGetRecentErrMsg gets and clears; the operator's aclnn layer reports as CANN's own
    operators do (OP_LOGE's ReportErrorMessageInner: a parameter error under EZ1001)."""
    seen, done = probe(acl_lib_dir, "recent_error_gets_and_clears")
    assert seen.get("status") == 161002, (seen, done.stderr)
    assert seen["first"].startswith(
        "EZ1001: LogSoftmaxGrad: status 161002 (reason 4 shape_mismatch): out "
    )
    assert seen["first"].endswith("[aclnnLogSoftmaxBackward]")
    assert seen["second"] == ""
    assert "LogSoftmaxGrad" not in done.stderr  # nothing of it went to the log instead


def test_an_executor_lives_as_cann_s_do(acl_lib_dir):
    """Phase two releases an executor unless it was made repeatable; aclDestroyAclOpExecutor is
    for repeatable ones only (and once)."""
    seen, done = probe(acl_lib_dir, "executor_lifetime")
    assert seen.get("destroy_unrun") == 161002, (seen, done.stderr)
    assert "is not repeatable: phase two releases it" in seen["destroy_message"]
    assert seen["repeatable"] == 0 and seen["runs"] == [0, 0]
    assert (seen["destroy_repeatable"], seen["destroy_again"]) == (0, 161002)


def test_an_empty_out_of_the_wrong_shape_is_refused_and_a_right_one_runs(acl_lib_dir):
    """CANN's generated entry skips the tiling function for empty outputs unless the OpDef asks
    otherwise (indv_executor.cpp); the operator asks, so its checks see an empty out too."""
    seen, done = probe(acl_lib_dir, "empty_out_of_the_wrong_shape")
    assert seen.get("wrong") == 161002, (seen, done.stderr)
    assert (
        "out (gradInput) shape [0, 4] differs from gradOutput (dy) shape [0, 3]"
        in (seen["wrong_message"])
    )
    assert (seen["right"], seen["ran"], seen["synced"]) == (0, 0, 0)


def test_each_live_handle_names_the_library_whose_code_made_it(acl_lib_dir):
    """The backend tells the operator's leaks from its own by the maker of each handle: its
    tensors come from ctypes (libffi), the executor the layer holds from phase one to phase two
    from the op-api library (the layer asked the generated entry for it); phase two releases it.
    The workspace's reach is all of it: the kernel is handed the system workspace whole."""
    seen, done = probe(acl_lib_dir, "handles_name_their_maker")
    assert seen.get("ws"), (seen, done.stderr)
    op_api = os.path.realpath(seen["op_api"])
    made = {(h["kind"], h["api"], os.path.realpath(h["by"]) == op_api) for h in seen["held"]}
    assert made == {("tensor", "", False), ("executor", "aclnnLogSoftmaxGradCustom", True)}
    assert len({h["serial"] for h in seen["held"]}) == len(seen["held"]) == 4
    assert all("libffi" in h["by"] for h in seen["held"] if h["kind"] == "tensor")
    assert {h["kind"] for h in seen["ran"]} == {"tensor"} and seen["left"] == []
    assert seen["serial"] >= 4 and seen["reached"] == [seen["ws"]]


def test_a_fault_armed_for_a_phase_one_is_taken_once(acl_lib_dir):
    """What the backend's probes of the operator's error paths arm (lsg_emu_acl_inject): the
    next phase one of the api fails with ACLNN_ERR_INNER, or asks for 512 bytes more."""
    seen, done = probe(acl_lib_dir, "faults_armed_for_a_phase_one")
    assert seen.get("unknown") == -1, (seen, done.stderr)
    assert seen["armed_refuse"] == 0 and seen["refuse"][0] == 561000
    assert seen["refuse_message"].endswith("failed (a fault armed by lsg_emu_acl_inject)")
    assert seen["grow"] == [0, 512 + 512] and seen[""] == [0, 512]  # a strided (4, 3) float32
    assert seen["refuse_left"] == seen["grow_left"] == seen["_left"] == 0  # each taken once


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310B1"])
def test_the_aclnn_example_builds_against_the_genuine_headers_and_passes(acl_lib_dir, soc):
    """op/ascendc/examples/test_aclnn_log_softmax_grad.cpp, the seed's interface as the seed calls
    it, built by `farm build` against the downloaded headers, on the emulated runtime."""
    example = Path(acl_lib_dir).parent / "test_aclnn_log_softmax_grad"
    env = {**os.environ, "LSG_EMULATED_SOC": soc}
    done = subprocess.run([str(example)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("0 of 6 cases failed")
    assert done.stdout.count("PASS") == 6
