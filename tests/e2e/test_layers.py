"""Each deciding layer on its own (issue 59), end to end through `farm run`: bf16 declared for
ascend310b in the OpDef alone (opdef_bf16_310b), or let through by the tiling function's SoC check
alone (tiling_bf16_310b), still gets every whole call refused with the right words (the other
layer refuses it) and fails the smoke tier through its layer's own case, on the native and the acl
backend; so does a graph inference that reads the node's output (y) for gradOutput
(infer_reads_output), which no aclnn call runs; the correct operator passes them. (The whole calls
of opdef_bf16_310b fail too, as refused by the wrong layer: tests/agent/test_outcome.py.) Only the
layer cases of the smoke tier are run (-k), to keep the test's cost small; the whole tier's counts
are in benchmarks/RESULTS.md ("Issue 59: each deciding layer alone")."""

from __future__ import annotations

import pytest

from suites import matrix
from tests.e2e.conftest import Farm
from tests.op.conftest import need_acl_emulation

pytestmark = pytest.mark.build  # builds (or finds built) the planted variants and their op-api

K = "layer or registration"  # the smoke tier's layer cases (matrix_layers.py, matrix_kill.py): 43
INFER_NODES = (
    "910b_f32_scalar_ydt.f16_ysh.5x6",
    "910b_f16_7_ydt.bf16_ysh.2x3",
    "910b_bf16_2x3x4_ydt.f32_ysh.5x6",
    "910b_f32_2x1x3x1x2x1x2x2_ydt.f16_ysh.4",
    "310b_f16_scalar_ydt.bf16_ysh.5x6",
    "310b_bf16_7_ydt.f32_ysh.2x3",
    "310b_f32_2x3x4_ydt.f16_ysh.5x6",
    "310b_f16_2x1x3x1x2x1x2x2_ydt.bf16_ysh.4",
)
CAUGHT = {
    "opdef_bf16_310b": ({"310b_registration"}, "registration"),
    "tiling_bf16_310b": (
        {
            "310b_bf16_0x4_d-1_y.uniform_dy.normal_layer.tiling",
            "310b_bf16_3x5_d-1_y.uniform_dy.normal_layer.tiling",
        },
        "unexpected_acceptance",
    ),
    "infer_reads_output": ({f"{node}_layer.infer" for node in INFER_NODES}, "inference"),
}


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    return Farm(tmp_path_factory.mktemp("layers"))


@pytest.mark.parametrize("backend", ["native", "acl"])
def test_the_correct_operator_passes_every_layer_case(farm, backend):
    if backend == "acl":
        need_acl_emulation()
    result = farm.run_tier("--backend", backend, "--jobs", "1", k=K)
    assert result.code == 0, result.text[-3000:]
    layer_cases = [c for c in matrix.expand("smoke") if c.layer]
    assert result.summary["outcomes"] == {"passed": len(layer_cases)}, result.summary["outcomes"]


@pytest.mark.parametrize("backend", ["native", "acl"])
@pytest.mark.parametrize("bug", sorted(CAUGHT))
def test_one_layer_broken_alone_fails_the_smoke_tier(farm, bug, backend):
    if backend == "acl":
        need_acl_emulation()
    result = farm.run_tier("--plant-bug", bug, "--backend", backend, "--jobs", "1", k=K)
    assert result.code == 1, result.text[-3000:]
    cases, category = CAUGHT[bug]
    failures = result.summary["failures"]
    assert {f["case_id"] for f in failures} == cases, failures
    assert {f["category"] for f in failures} == {category}, failures
    for failure in failures:
        if category == "registration":  # names the SoC family, the dtype and each parameter
            assert "declares bfloat16 on ascend310b" in failure["message"], failure["message"]
            assert all(p in failure["message"] for p in ("grad_output", "output", "grad_input"))
        elif category == "inference":  # what was inferred and what gradOutput's is
            assert failure["message"].startswith(
                "the graph inference (InferShape, InferDataType) departs from the contract on a "
                "node of gradOutput "
            ), failure["message"]
            assert "InferShape gave out the shape" in failure["message"]
            assert "InferDataType gave out the dtype" in failure["message"]
        else:  # names the layer that decided, alone
            assert failure["message"].startswith(
                "the tiling function alone (the registration out of the way): accepted a call "
                "the contract rejects: expected bf16_unsupported_on_soc (161002)"
            ), failure["message"]
