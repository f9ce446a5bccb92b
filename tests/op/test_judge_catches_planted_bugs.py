"""Each planted bug fails a case through the agent's own path (make the inputs, run the library,
judge with golden.judge), and the correct library passes the same case: the verdicts are sharp
enough for real defects, not only for the farm's own planted errors in numpy.

Both libraries: the twin with the bugs it plants in its own copy of the kernel, and the emulated
real kernel with every planted bug as an edit of the real sources. The kernel-source errors
(ragged_datacopy, ub_overflow, bf16_cast_310b, queue_order, cores_overlap) are not numbers to
judge: the emulated device stops the kernel, and the case fails as a kernel fault. So does the
real kernel's tail bug: the device requires every output element to be written once, and the
tail's dropped remainder never is (the twin's tail bug leaves it NaN: a precision failure)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from farm import build
from farm.agent.backends import native
from farm.agent.execute import run_case
from golden import soc
from suites.case import Case
from tests.op.conftest import acpu_planted

# bug -> a case that must catch it (and category expected)
# The category on the emulated real kernel where it differs from the twin's:
REAL_KERNEL_CATEGORY = {"tail": "kernel_fault"}
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
    # The emulated real kernel only: the device stops it.
    "ragged_datacopy": (Case("ascend910b", "float32", (3, 37), (-1,)), "kernel_fault"),
    "ub_overflow": (Case("ascend310b", "float32", (4, 37), (-1,)), "kernel_fault"),
    "bf16_cast_310b": (Case("ascend310b", "bfloat16", (4, 37), (-1,)), "kernel_fault"),
    "queue_order": (Case("ascend910b", "float16", (4, 37), (-1,)), "kernel_fault"),
    "cores_overlap": (Case("ascend910b", "float32", (50, 37), (-1,)), "kernel_fault"),
}

pytestmark = pytest.mark.build  # builds planted variants of the operator


@dataclass(frozen=True)
class Host:
    soc: str
    host: str = "test"


def judged(case: Case, library, monkeypatch) -> dict:
    monkeypatch.setenv(native.ENV_LIB, str(library))
    return run_case(case.to_dict(), "native", 0, Host(soc.representative_soc(case.family).name))


@pytest.mark.parametrize("bug", [bug for bug in build.TWIN_PLANT_BUGS if bug])
def test_the_judge_fails_each_planted_bug_and_passes_the_correct_twin(bug, twin_lib, monkeypatch):
    case, category = CATCHES[bug]
    good = judged(case, twin_lib, monkeypatch)
    assert good["outcome"] == "passed", good["message"]
    bad = judged(case, build.build_twin(build.default_build_dir(bug), plant_bug=bug), monkeypatch)
    assert (bad["outcome"], bad["category"]) == ("failed", category), bad["message"]


@pytest.mark.parametrize("bug", [bug for bug in build.PLANT_BUGS if bug])
def test_the_judge_fails_each_planted_bug_of_the_real_kernel(bug, acpu_lib, monkeypatch):
    case, category = CATCHES[bug]
    category = REAL_KERNEL_CATEGORY.get(bug, category)
    good = judged(case, acpu_lib, monkeypatch)
    if case.accepted:
        assert good["outcome"] == "passed", good["message"]
    else:  # bf16 on Ascend310B: rejected before any kernel runs, as the contract says
        assert (good["outcome"], good["reason"]) == ("passed", "bf16_unsupported_on_soc")
    bad = judged(case, acpu_planted(bug), monkeypatch)
    assert (bad["outcome"], bad["category"]) == ("failed", category), bad["message"]
    if category == "kernel_fault":
        assert (bad["status"], bad["reason"]) == (561000, "kernel_fault")
        assert bad["message"].startswith("the emulated device stopped the kernel")


def test_every_planted_bug_has_a_case_that_catches_it():
    assert set(CATCHES) == set(build.PLANT_BUGS) - {""}
    faults = {bug for bug, (_, category) in CATCHES.items() if category == "kernel_fault"}
    assert faults == set(build.KERNEL_FAULT_BUGS)
    assert set(REAL_KERNEL_CATEGORY) <= set(build.TWIN_PLANT_BUGS)
