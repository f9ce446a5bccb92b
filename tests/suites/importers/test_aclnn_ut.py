"""aclnn unit tests in C++: each TEST_F is a source case."""

from __future__ import annotations

from suites.importers import aclnn_ut

from . import accounted, convert, departure, outcomes, parse

SAMPLE = "test_aclnn_log_softmax_backward.cpp"
FIXTURE = "l2_log_softmax_backward_test."
NO_SOC = (
    "sets no SoC: the UT runs on Ascend910B, the op_api stub's default; imported on ascend910b only"
)


def test_the_sample_becomes_these_entries():
    result = parse("aclnn-ut", SAMPLE)
    accounted(result)
    by_name = {e["name"].removeprefix(FIXTURE): e for e in result.entries}
    assert list(by_name) == [
        "case_001_float32",
        "case_002_float16_variables",
        "case_003_bfloat16_by_soc",
        "case_004_bfloat16_ascend310b",
        "case_005_nullptr_gradInput",
        "case_006_complex64",
        "case_007_not_contiguous",
        "case_008_constant_grad",
        "case_009_value_list",
        "case_011_nullptr_gradOutput",
        "case_012_precision_three_arguments",
        "case_013_constant_grad_again",
    ]
    # Precision(relative, percentage): rtol, the fraction allowed past it, and the helper's
    # default absolute tolerance 1e-8; no SoC set: the stub's Ascend910B alone
    assert by_name["case_001_float32"] == {
        "name": FIXTURE + "case_001_float32",
        "dtype": "float32",
        "shape": [2, 3, 4],
        "family": "ascend910b",
        "axes": [-1],
        "api": "dim",
        "dy_dist": "range",
        "dy_range": [-1.0, 1.0],
        "y_dist": "range",
        "y_range": [-10.0, 0.0],
        "tolerance": {"rtol": 0.0001, "atol": 1e-8, "max_fail_fraction": 0.0001},
        "expect": "accept",
        "note": NO_SOC,
    }
    assert by_name["case_012_precision_three_arguments"] == {
        "name": FIXTURE + "case_012_precision_three_arguments",
        "dtype": "float32",
        "shape": [6, 10],
        "family": "ascend910b",
        "axes": [-1],
        "api": "dim",
        "dy_dist": "range",
        "dy_range": [-2.0, 2.0],  # no ValueRange: the helper's default range
        "y_dist": "range",
        "y_range": [-5.0, 0.0],
        "tolerance": {"rtol": 0.001, "atol": 0.0001, "max_fail_fraction": 0.0005},
        "expect": "accept",
        "note": NO_SOC,
    }
    # variables resolved; the commented-out TestPrecision() does not count
    assert by_name["case_002_float16_variables"] == {
        "name": FIXTURE + "case_002_float16_variables",
        "dtype": "float16",
        "shape": [8, 33],
        "family": "ascend910b",
        "axes": [0],
        "api": "dim",
        "dy_dist": "range",
        "dy_range": [-2.0, 2.0],
        "y_dist": "range",
        "y_range": [-6.0, 0.0],
        "expect": "accept",
        "note": "Precision(0.001, 0.001, 1e-08) is set but ut.TestPrecision() is not called: "
        "no tolerance imported; " + NO_SOC,
    }
    # the SoC branches on a test that sets no SoC: the branch the stub's Ascend910B takes
    soc_branches = by_name["case_003_bfloat16_by_soc"]
    assert (soc_branches["family"], soc_branches["expect"]) == ("ascend910b", "accept")
    assert by_name["case_004_bfloat16_ascend310b"]["family"] == "ascend310b"
    assert by_name["case_005_nullptr_gradInput"] == {
        "name": FIXTURE + "case_005_nullptr_gradInput",
        "dtype": "float32",
        "shape": [10, 5],
        "family": "ascend910b",
        "axes": [-1],
        "api": "dim",
        "missing": "out",
        "dy_dist": "range",
        "dy_range": [-2.0, 2.0],
        "y_dist": "range",
        "y_range": [-2.0, 2.0],
        "expect": "reject:null_tensor",
        "note": NO_SOC,
    }
    assert by_name["case_006_complex64"]["expect"] == "reject"
    strided = by_name["case_007_not_contiguous"]
    view = {"strides": [1, 5], "storage": 20, "offset": 0}
    assert (strided["dy_layout"], strided["y_layout"]) == (view, view)
    assert "out_layout" not in strided
    assert (
        by_name["case_008_constant_grad"]["dy_dist"],
        by_name["case_008_constant_grad"]["dy_fill"],
    ) == ("fill", 0.5)
    assert by_name["case_009_value_list"]["dy_range"] == [1.0, 6.0]
    assert by_name["case_009_value_list"]["note"] == (
        "gradOutput Value list not expressible: drawn uniform in its range [1, 6]; " + NO_SOC
    )
    assert result.skipped == [
        (
            FIXTURE + "case_010_dtype_loop",
            "the test loops (for / while): its calls cannot be read; by hand",
        ),
        (
            "l2_log_softmax_backward_950_test.case_101_float32",
            "runs on ASCEND950, not a SoC of the farm's families (ascend910b, ascend310b)",
        ),
    ]


def test_the_cases_carry_the_contracts_verdict_and_departures():
    conversion = convert("aclnn-ut", SAMPLE)
    got = [(n.removeprefix(FIXTURE)[:8], i[:4], r) for n, i, r in outcomes(conversion)]
    assert got == [
        ("case_001", "910b", "ok"),
        ("case_002", "910b", "ok"),
        ("case_003", "910b", "ok"),
        ("case_004", "310b", "bf16_unsupported_on_soc"),
        ("case_005", "910b", "null_tensor"),
        ("case_006", "910b", "dtype_unsupported"),
        ("case_007", "910b", "ok"),
        ("case_008", "910b", "ok"),  # case_013 makes the same farm case: kept once
        ("case_009", "910b", "ok"),
        ("case_011", "910b", "null_tensor"),
        ("case_012", "910b", "ok"),
    ]
    notes = [c.note for c in conversion.cases]
    assert notes[3] == departure("acceptance", "ascend310b", "rejects it (bf16_unsupported_on_soc)")
    assert notes[9] == NO_SOC + (
        "; the source expects status 161002 (ACLNN_ERR_PARAM_INVALID) on ascend910b; the "
        "contract (SPEC section 2) gives 161001 (null_tensor): judged by the contract"
    )
    assert conversion.cases[6].id == (
        "910b_f32_5x4_d0_y.range.-10to0_dy.range.-2to2_dy.st1.5.sz20_y.st1.5.sz20"
        "_tol.r0.0001.a1e-08.f0.0001"
    )
    # Both source cases of the merged farm case are in its origin (the written file, the report).
    sample = "test_aclnn_log_softmax_backward.cpp:" + FIXTURE
    assert conversion.cases[7].origin.endswith(
        f"{sample}case_008_constant_grad; {sample}case_013_constant_grad_again"
    )
    assert conversion.merged == [
        (FIXTURE + "case_013_constant_grad_again", "ascend910b", FIXTURE + "case_008_constant_grad")
    ]


def _ut(body: str, setup: str = "") -> str:
    return (
        "class F : public testing::Test {\nprotected:\n"
        f"    static void SetUpTestCase() {{ {setup} }}\n}};\n"
        f"TEST_F(F, t)\n{{\n{body}\n}}\n"
    )


def test_fixture_soc_null_casts_and_what_cannot_be_read():
    body = (
        "auto d = TensorDesc({4, 4}, ACL_FLOAT16, ACL_FORMAT_ND);\n"
        "auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(d, (aclTensor *)nullptr, -1), "
        "OUTPUT(d));\n"
        "// EXPECT_EQ(aclRet, ACLNN_SUCCESS);\n"
        "EXPECT_NE(ut.TestGetWorkspaceSize(&ws), ACLNN_SUCCESS);"
    )
    result = aclnn_ut.parse(
        _ut(body, "op::SetPlatformSocVersion(op::SocVersion::ASCEND910B);"), "x"
    )
    (entry,) = result.entries
    assert (entry["family"], entry["missing"], entry["expect"]) == ("ascend910b", "y", "reject")
    other = _ut(body.replace("aclnnLogSoftmaxBackward", "aclnnSoftmaxBackward"))
    assert aclnn_ut.parse(other, "x").skipped == [
        ("F.t", "calls aclnnSoftmaxBackward, not aclnnLogSoftmaxBackward")
    ]
    nf = _ut(body.replace("ACL_FORMAT_ND", "ACL_FORMAT_FRACTAL_NZ"))
    assert "private layout" in aclnn_ut.parse(nf, "x").skipped[0][1]
    unresolved = _ut(body.replace("{4, 4}", "MakeShape()"))
    assert "not a list the reader can resolve" in aclnn_ut.parse(unresolved, "x").skipped[0][1]


def test_a_file_without_tests_is_unreadable():
    import pytest

    from suites.importers import Unreadable

    with pytest.raises(Unreadable, match="no TEST_F or TEST"):
        aclnn_ut.parse("int main() { return 0; }", "x")


def test_soc_branches_without_braces_and_negated():
    call = (
        "auto d = TensorDesc({4, 4}, ACL_BF16, ACL_FORMAT_ND);\n"
        "auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(d, d, -1), OUTPUT(d));\n"
        "aclnnStatus aclRet = ut.TestGetWorkspaceSize(&ws);\n"
    )
    plain = call + (
        "if (GetCurrentPlatformInfo().GetSocVersion() == SocVersion::ASCEND910B)\n"
        "    EXPECT_EQ(aclRet, ACLNN_SUCCESS);\n"
        "else\n"
        "    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);\n"
    )
    negated = call + (
        "if (GetCurrentPlatformInfo().GetSocVersion() != SocVersion::ASCEND310B) {\n"
        "    EXPECT_EQ(aclRet, ACLNN_SUCCESS);\n"
        "} else { EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID); }\n"
    )
    for setup in ("", "SetPlatformSocVersion(SocVersion::ASCEND310B);"):
        for body in (plain, negated):
            (entry,) = aclnn_ut.parse(_ut(body, setup), "x").entries
            # no SoC set: the stub's Ascend910B; the SoC the fixture sets otherwise
            assert (entry["family"], entry["expect"]) == (
                ("ascend310b", "reject") if setup else ("ascend910b", "accept")
            )
            assert ("note" in entry) == (not setup)
