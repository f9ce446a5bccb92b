"""The emulated device's output policies (every output element written exactly once, by one
core: op/ascendc_cpu/src/device.cpp), and the switch that lifts them, LSG_EMU_OUTPUT_POLICY=off,
with which `farm mutate` asks whether a kill they made shows in the results too."""

from __future__ import annotations

import pytest

from farm.run.mutate_cases import OUTPUT_POLICY_OFF
from suites.case import Case
from tests.op.conftest import acpu_planted, judged

pytestmark = pytest.mark.build

# The planted cores_overlap: the big cores' rows overlap the small cores' (rows written twice, by
# two cores, and the last rows by none).
OVERLAP = Case("ascend910b", "float32", (50, 37), (-1,))


def test_two_cores_writing_one_element_is_refused_by_the_policy(monkeypatch):
    record = judged(OVERLAP, acpu_planted("cores_overlap"), monkeypatch)
    assert (record["outcome"], record["category"]) == ("failed", "emulation_policy")
    assert "two cores write one output element" in record["op_message"]


def test_without_the_output_policies_the_results_show_what_the_policy_stopped(monkeypatch):
    """As CANN's device runs it: the kernel completes, and the rows no core wrote keep out's
    NaN, which the judge fails through the results."""
    for name, value in OUTPUT_POLICY_OFF.items():
        monkeypatch.setenv(name, value)
    record = judged(OVERLAP, acpu_planted("cores_overlap"), monkeypatch)
    assert (record["outcome"], record["category"], record["status"]) == ("failed", "precision", 0)
    assert "NaN/inf positions differ from the golden at 37 of 1850" in record["message"]
