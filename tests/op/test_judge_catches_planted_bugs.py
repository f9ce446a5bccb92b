"""Each planted bug fails a case through the agent's own path (make the inputs, run the library,
judge with golden.judge), and the correct library passes the same case: the verdicts are sharp
enough for real defects, not only for the farm's own planted errors in numpy.

Both libraries: the twin with the bugs it plants in its own copy of the kernel, and the emulated
real kernel with every planted bug as an edit of the real sources. Not every one is a number to
judge: the emulated device stops a kernel-source error (a kernel fault, or the emulation's own
policy, e.g. for an output element left unwritten, as the real kernel's tail bug leaves one; the
twin's leaves it NaN: a precision failure), a host change that accepts a call the contract
rejects is an unexpected acceptance, and a host tiling that departs from the plan a tiling
mismatch. How many cases of each tier catch each bug: benchmarks/kill_strength.py."""

from __future__ import annotations

import pytest

from farm.pool import build
from suites.case import Case
from suites.matrix import CONSTANT_DY, TIES
from tests.op.conftest import acpu_planted, judged

# The category on the emulated real kernel where it differs from the twin's:
REAL_KERNEL_CATEGORY = {"tail": "emulation_policy"}
# bug -> a case that must catch it, and the category expected
CATCHES = {
    "tail": (Case("ascend910b", "float16", (3, 1000), (-1,)), "precision"),
    "seed_noreduce": (
        Case("ascend910b", "float32", (16, 1), (-1,), y_dist="arbitrary"),
        "precision",
    ),
    "trunc_narrow": (Case("ascend910b", "float16", (8, 1000), (-1,)), "precision"),
    "fp16_sum": (
        Case("ascend910b", "bfloat16", (2, 9000), (-1,), dy_dist="range", dy_range=(0.0, 1.0)),
        "precision",
    ),
    "drop_element": (Case("ascend910b", "float32", (4, 8192), (-1,)), "precision"),
    "strided_out_unwritten": (
        Case("ascend310b", "float16", (4, 37), (-1,), out_layout="strided"),
        "precision",
    ),
    # The emulated real kernel only.
    "ragged_datacopy": (Case("ascend910b", "float32", (3, 37), (-1,)), "kernel_fault"),
    "ub_overflow": (Case("ascend310b", "float32", (4, 37), (-1,)), "kernel_fault"),
    "queue_order": (Case("ascend910b", "float16", (4, 37), (-1,)), "kernel_fault"),
    "cores_overlap": (Case("ascend910b", "float32", (50, 37), (-1,)), "emulation_policy"),
    "short_view": (Case("ascend910b", "float32", (1, 3, 200), (1,)), "kernel_fault"),
    "round_half_away": (Case("ascend910b", "float16", (4, 400), (-1,), **TIES), "precision"),
    "mid_running_sum": (
        Case("ascend910b", "float32", (1, 5000, 2), (1,), **CONSTANT_DY),
        "precision",
    ),
    "mid_partial_group": (Case("ascend910b", "float32", (2, 130, 7), (1,)), "precision"),
    "bf16_cast_310b": (Case("ascend310b", "bfloat16", (4, 37), (-1,)), "unexpected_acceptance"),
    # Each of its halves alone: only the layer's own case sees it (suites/matrix_layers.py).
    "opdef_bf16_310b": (
        Case("ascend310b", "float32", (), (-1,), layer="registration"),
        "registration",
    ),
    "tiling_bf16_310b": (
        Case("ascend310b", "bfloat16", (3, 5), (-1,), layer="tiling"),
        "unexpected_acceptance",
    ),
    "host_half_blocks": (Case("ascend910b", "float16", (4, 37), (-1,)), "tiling_mismatch"),
    "axes_dedup": (
        Case("ascend910b", "float32", (3, 4, 5), (2, 2), api="axes"),
        "unexpected_acceptance",
    ),
    "axes_span": (
        Case("ascend310b", "float16", (2, 3, 4, 5), (1, 3), api="axes"),
        "unexpected_acceptance",
    ),
    "tail_mod": (Case("ascend310b", "float32", (2, 12696), (-1,)), "kernel_fault"),
    "d2_two_as_tail": (Case("ascend910b", "float32", (3, 50, 2), (1,)), "emulation_policy"),
    # The graph inference alone: no aclnn call runs it (suites/matrix_layers.py infer_nodes).
    "infer_reads_output": (
        Case(
            "ascend910b",
            "float16",
            (2, 3, 4),
            (-1,),
            y_dtype="float32",
            y_shape=(5, 6),
            layer="infer",
        ),
        "inference",
    ),  # fmt: skip
    "empty_out_unchecked": (
        Case("ascend310b", "float16", (0, 3), (-1,), y_shape=(0, 4)),
        "unexpected_acceptance",
    ),
}
DEVICE_STOPS = ("kernel_fault", "emulation_policy")

pytestmark = pytest.mark.build  # builds planted variants of the operator


@pytest.mark.parametrize("bug", [bug for bug in build.TWIN_PLANT_BUGS if bug])
def test_the_judge_fails_each_planted_bug_and_passes_the_correct_twin(bug, twin_lib, monkeypatch):
    case, category = CATCHES[bug]
    good = judged(case, twin_lib, monkeypatch)
    assert good["outcome"] == "passed", good["message"]
    bad = judged(case, build.build_twin(build.default_build_dir(bug), plant_bug=bug), monkeypatch)
    assert (bad["outcome"], bad["category"]) == ("failed", category), bad["message"]


# The aclnn layer's bugs run only where the layer does, through the acl backend (the native
# backend calls the library's C ABI): tests/e2e/test_reason_planted.py.
NATIVE_BUGS = [bug for bug in build.PLANT_BUGS if bug and bug not in build.ACLNN_BUGS]


@pytest.mark.parametrize("bug", NATIVE_BUGS)
def test_the_judge_fails_each_planted_bug_of_the_real_kernel(bug, acpu_lib, monkeypatch):
    case, category = CATCHES[bug]
    category = REAL_KERNEL_CATEGORY.get(bug, category)
    good = judged(case, acpu_lib, monkeypatch)
    assert good["outcome"] == "passed", good["message"]
    bad = judged(case, acpu_planted(bug), monkeypatch)
    assert (bad["outcome"], bad["category"]) == ("failed", category), bad["message"]
    if category in DEVICE_STOPS:
        assert (bad["status"], bad["reason"]) == (561000, category)
        assert bad["message"].startswith("the emulated device ")


def test_every_planted_bug_has_a_case_that_catches_it():
    assert set(CATCHES) == set(NATIVE_BUGS)
    stopped = {bug for bug, (_, category) in CATCHES.items() if category in DEVICE_STOPS}
    assert set(build.KERNEL_FAULT_BUGS) <= stopped
    assert set(REAL_KERNEL_CATEGORY) <= set(build.TWIN_PLANT_BUGS)


@pytest.mark.parametrize("bug", ["trunc_narrow", "drop_element"])
def test_a_planted_precision_failures_plot_data_hold_every_element_over_its_bound(
    bug, twin_lib, monkeypatch
):
    """issue 58: the plot of a case the error bound failed shows that criterion for every
    element, the failures above 1 (golden/ratio_hist.py); the correct twin's, none above 1."""
    from farm.run.allure.attachments import plot_data
    from golden import ratio_hist

    case, _ = CATCHES[bug]
    for library, fails in (
        (twin_lib, False),
        (build.build_twin(build.default_build_dir(bug), plant_bug=bug), True),
    ):
        rec = judged(case, library, monkeypatch)
        data = plot_data(rec)
        hist = data["metrics"]["bound_hist"]
        m = rec["metrics"]
        assert m is not None and sum(hist["counts"]) + hist["zeros"] == m["bound_n"]
        over = ratio_hist.above_one(hist)
        if fails:
            assert data["criterion"]["standard"] == "error-bound", rec["message"]
            assert over == m["bound_violations"] > len(m["bound_worst"]), rec["message"]
        else:
            assert over == 0 and "criterion" not in data
