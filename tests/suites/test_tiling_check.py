"""suites/tiling.py's check of the workspace a tiling asks for: a contiguous copy of each view the
operator cannot address as it is, rounded up to the SoC's UB block."""

from __future__ import annotations

import pytest

from golden.layouts import View
from suites.matrix_space import make_case
from suites.tiling import TilingMismatch, check_tiling, expected_tiling, expected_workspace


def _record(case, workspace: int) -> dict:
    tiling = expected_tiling(case, "Ascend910B1", contiguous=case.layout == "contiguous")
    return {"soc": "Ascend910B1", "tiling": {**tiling, "workspace_bytes": workspace}}


def test_each_copied_view_costs_its_bytes_rounded_up_to_the_ub_block():
    # 3 x 5 float32: 60 bytes, 64 with the 32-byte UB block; dy and y are copied, out is not
    case = make_case(
        "ascend910b",
        "float32",
        (3, 5),
        (-1,),
        "t",
        dy_layout=View((0, 0), 1, 0),
        y_layout="strided",
    )
    assert expected_workspace(case, "Ascend910B1") == 2 * 64
    check_tiling(case, _record(case, 128))


@pytest.mark.parametrize("wrong", [0, 64, 120, 192])
def test_a_workspace_of_other_size_is_a_tiling_mismatch(wrong):
    case = make_case(
        "ascend910b", "float32", (3, 5), (-1,), "t", y_layout="strided", out_layout="strided"
    )
    with pytest.raises(TilingMismatch, match=f"workspace_bytes {wrong} \\(expected 128\\)"):
        check_tiling(case, _record(case, wrong))


def test_a_dense_view_needs_no_workspace():
    dense = View((5, 1), 20, 3)  # C-order strides at an offset: addressed as it is
    case = make_case("ascend910b", "float16", (3, 5), (-1,), "t", dy_layout=dense)
    assert expected_workspace(case, "Ascend910B1") == 0
    with pytest.raises(TilingMismatch, match="expected 0"):
        check_tiling(case, _record(case, 32))
