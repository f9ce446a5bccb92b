"""suites/workspace.py: the workspace the aclnn layer asks for, computed from its design (the
generated entry's system workspace, a 512-aligned buffer for each view it copies, the copies' own)
and checked exactly on the emulated runtime's records, from below on CANN's, never on another
backend's."""

from __future__ import annotations

import pytest

from farm.run.session import judged
from golden.layouts import View
from suites.matrix_space import make_case
from suites.tiling import TilingMismatch, check_tiling, expected_tiling
from suites.workspace import (
    WorkspaceMismatch,
    check_workspace,
    copy_buffers,
    expected_aclnn_workspace,
    system_workspace,
)

MIB = 1 << 20
# 3 x 5 float32: 60 bytes a tensor, 512 once aligned.
SHAPE = (3, 5)


def case(**layouts):
    return make_case("ascend910b", "float32", SHAPE, (-1,), "t", **layouts)


def acl_record(c, workspace: int, *, emulated: bool = True, reached: int | None = None) -> dict:
    run = {"entry": "aclnnLogSoftmaxBackward", "emulated": emulated, "runtime": "x"}
    if reached is not None:
        run["workspace_reached"] = reached
    return {"soc": "Ascend910B1", "workspace": workspace, "device_run": run, "tiling": None}


def test_the_generated_entry_asks_for_the_system_workspace_of_its_family():
    assert system_workspace("Ascend910B1") == 16 * MIB
    assert system_workspace("Ascend310B4") == 2 * MIB
    assert expected_aclnn_workspace(case(), "Ascend910B1") == 16 * MIB  # nothing copied


def test_each_copied_view_and_the_inputs_gather_cost_512_aligned_bytes():
    both = case(dy_layout="strided", y_layout="strided")
    assert expected_aclnn_workspace(both, "Ascend910B1") == 16 * MIB + 2 * 512 + 512
    # out's copy back reads its contiguous buffer: no gather of its own.
    out = case(out_layout="strided")
    assert expected_aclnn_workspace(out, "Ascend910B1") == 16 * MIB + 512
    # A view at an offset with C-order strides is passed as it is; an empty one is never copied.
    dense = case(dy_layout=View((5, 1), 20, 3))
    assert expected_aclnn_workspace(dense, "Ascend910B1") == 16 * MIB
    empty = make_case("ascend910b", "float32", (0, 5), (-1,), "t", dy_layout="strided")
    assert expected_aclnn_workspace(empty, "Ascend910B1") == 16 * MIB
    # 2 MiB is a whole number of 512-byte blocks; 200 float16 elements are 400 bytes.
    mid = make_case("ascend310b", "float16", (2, 100), (-1,), "t", y_layout="strided")
    assert expected_aclnn_workspace(mid, "Ascend310B1") == 2 * MIB + 512 + 512


@pytest.mark.parametrize("delta", [-1, 1, 512])
def test_a_byte_more_or_less_on_the_emulated_runtime_is_a_workspace_failure(delta):
    c = case(dy_layout="strided", y_layout="strided", out_layout="strided")
    want = expected_aclnn_workspace(c, "Ascend910B1")
    check_workspace(c, acl_record(c, want, reached=want))
    said = rf"asked for {want + delta} bytes, the design {want}"
    with pytest.raises(WorkspaceMismatch, match=said):
        check_workspace(c, acl_record(c, want + delta))


def test_a_workspace_the_call_never_reaches_the_end_of_is_a_workspace_failure():
    c = case(out_layout="strided")
    want = expected_aclnn_workspace(c, "Ascend910B1")
    # out's buffer is the last region: its 60 bytes reach into the last aligned block.
    check_workspace(c, acl_record(c, want, reached=want - 512 + 60))
    with pytest.raises(WorkspaceMismatch, match="reached only the first"):
        check_workspace(c, acl_record(c, want, reached=want - 512))


def test_on_cann_only_the_layer_s_own_buffers_are_a_bound():
    c = case(dy_layout="strided", y_layout="strided")
    assert copy_buffers(c) == 1024
    # CANN's system workspace and Contiguous are CANN's: any workspace that holds the buffers.
    for asked in (1024, 16 * MIB + 5000, 64 * MIB):
        check_workspace(c, acl_record(c, asked, emulated=False))
    with pytest.raises(WorkspaceMismatch, match="less than the 1024 bytes"):
        check_workspace(c, acl_record(c, 1023, emulated=False))


def test_records_of_other_backends_and_rejections_are_not_judged():
    c = case(dy_layout="strided")
    check_workspace(c, {"soc": "Ascend910B1", "workspace": 7, "tiling": None})  # native, torch
    rejected = make_case("ascend910b", "float64", SHAPE, (-1,), "t")
    assert not rejected.accepted
    check_workspace(rejected, acl_record(rejected, 0))


def test_the_tiling_check_then_the_workspace_check_each_with_its_category():
    c = case(y_layout="strided")
    tiling = expected_tiling(c, "Ascend910B1", contiguous=False)
    record = {
        **acl_record(c, 5),
        "tiling": {**tiling, "workspace_bytes": 64},
        "outcome": "passed",
        "message": "ok",
    }
    with pytest.raises(WorkspaceMismatch):
        check_tiling(c, record)
    amended = judged(c, record)  # type: ignore[arg-type]
    assert (amended["outcome"], amended["category"]) == ("failed", "workspace")
    assert (
        "[workspace] aclnnLogSoftmaxBackwardGetWorkspaceSize asked for 5 bytes"
        in amended["message"]
    )
    # A wrong tiling is said first, as before.
    wrong_tiling = {**record, "tiling": {**tiling, "workspace_bytes": 0}}
    with pytest.raises(TilingMismatch):
        check_tiling(c, wrong_tiling)
    assert judged(c, wrong_tiling)["category"] == "tiling"  # type: ignore[arg-type]
