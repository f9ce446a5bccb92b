"""msopst: the op system-test JSON case file."""

from __future__ import annotations

import json

from suites.importers import msopst

from . import SAMPLES, accounted, convert, departure, outcomes, parse

SAMPLE = "logsoftmaxgrad_msopst.json"
THRESHOLD_NOTE = (
    "error_threshold [0.001, 0.001] read as rtol = atol = 0.001, fail fraction 0.001 (msopst's "
    "own test: |out - golden| <= 0.001, else relative to the larger of |out| and |golden|)"
)
NZ = "grad format FRACTAL_NZ is a private layout the farm has no form for (it passes ND tensors)"


def _sub(k: int, dtype: str) -> dict:
    return {
        "name": f"Test_LogSoftmaxGrad_001_subcase_{k}",
        "dtype": dtype,
        "shape": [8, 1024],
        "axes": [-1],
        "api": "axes",
        "dy_dist": "range",
        "dy_range": [-1.0, 1.0],
        "y_dist": "range",
        "y_range": [-10.0, 0.0],
        "tolerance": {"rtol": 0.001, "atol": 0.001, "max_fail_fraction": 0.001},
        "expect": "accept",
        "note": THRESHOLD_NOTE,
    }


def _plain(name, dtype, shape, axes, dy, y, expect, **extra) -> dict:
    entry = {"name": name, "dtype": dtype, "shape": shape, "axes": axes, "api": "axes"}
    entry.update({k: v for k, v in extra.items() if k in ("y_dtype", "missing")})
    if dy is not None:
        entry.update(dy_dist="range", dy_range=dy)
    if y is not None:
        entry.update(y_dist="range", y_range=y)
    entry["expect"] = expect
    if "note" in extra:
        entry["note"] = extra["note"]
    return entry


def test_the_sample_becomes_these_entries():
    result = parse("msopst", SAMPLE)
    assert result.entries == [
        _sub(0, "float32"),
        _sub(1, "float16"),
        _plain("Test_LogSoftmaxGrad_002_bf16", "bfloat16", [4, 16, 32], [1, 2],
               [-2.0, 2.0], [-6.0, 0.0], "accept"),
        _plain("Test_LogSoftmaxGrad_003_dtype_mismatch", "float16", [16, 64], [-1],
               [-1.0, 1.0], [-5.0, 0.0], "reject", y_dtype="float32"),
        {
            "name": "Test_LogSoftmaxGrad_004_fill",
            "dtype": "float32",
            "shape": [3, 5],
            "axes": [-1],  # no axis attribute: the prototype's default
            "api": "axes",
            "dy_dist": "fill",
            "dy_fill": 1.0,
            "y_dist": "fill",
            "y_fill": -2.0,
            "expect": "accept",
            "note": "attribute keep_dims=False is not LogSoftmaxGrad's (axis): ignored",
        },
        _plain("Test_LogSoftmaxGrad_006_normal_subcase_0", "float32", [32, 32], [0],
               [-3.0, 3.0], [-8.0, 0.0], "accept",
               note="grad data_distribute normal has no farm form: drawn uniform in [-3, 3]"),
        _plain("Test_LogSoftmaxGrad_008_null_x", "float32", [6, 7], [-1], [-1.0, 1.0], None,
               "reject", missing="y"),
        _plain("Test_LogSoftmaxGrad_009_complex64", "complex64", [2, 8], [1], [-1.0, 1.0],
               [-1.0, 0.0], "reject"),
    ]  # fmt: skip


def test_what_it_cannot_express_is_listed_with_the_reason():
    result = parse("msopst", SAMPLE)
    assert result.skipped == [
        ("Test_LogSoftmaxGrad_005_nz", NZ),
        ("Test_LogSoftmaxGrad_006_normal_subcase_1", NZ),
        ("Test_Add_007", "op 'Add' is not LogSoftmaxGrad"),
    ]
    accounted(result)
    assert len(result.source_cases) == 9


def test_the_cases_carry_the_contracts_verdict_and_departures():
    conversion = convert("msopst", SAMPLE)
    assert conversion.skipped == [] and conversion.merged == []
    tol = "_tol.r0.001.a0.001.f0.001"
    rng = "_y.range.-10to0_dy.range.-1to1"
    expected = [
        ("001_subcase_0", f"f32_8x1024_ax-1{rng}{tol}", "ok", "ok"),
        ("001_subcase_1", f"f16_8x1024_ax-1{rng}{tol}", "ok", "ok"),
        ("002_bf16", "bf16_4x16x32_ax1.2_y.range.-6to0_dy.range.-2to2", "ok",
         "bf16_unsupported_on_soc"),
        ("003_dtype_mismatch", "f16_16x64_ax-1_y.range.-5to0_dy.range.-1to1_ydt.f32",
         "dtype_mismatch", "dtype_mismatch"),
        ("004_fill", "f32_3x5_ax-1_y.fill.-2_dy.fill.1", "ok", "ok"),
        ("006_normal_subcase_0", "f32_32x32_ax0_y.range.-8to0_dy.range.-3to3", "ok", "ok"),
        ("008_null_x", "f32_6x7_ax-1_y.uniform_dy.range.-1to1_no.y", "null_tensor",
         "null_tensor"),
        ("009_complex64", "c64_2x8_ax1_y.range.-1to0_dy.range.-1to1", "dtype_unsupported",
         "dtype_unsupported"),
    ]  # fmt: skip
    assert [(n.removeprefix("Test_LogSoftmaxGrad_"), i, r) for n, i, r in outcomes(conversion)] == [
        (name, f"{family}_{rest}", reason)
        for name, rest, on_910b, on_310b in expected
        for family, reason in (("910b", on_910b), ("310b", on_310b))
    ]
    notes = {
        (n, c.family): c.note for n, c in zip(conversion.case_names, conversion.cases, strict=True)
    }
    bf16 = "Test_LogSoftmaxGrad_002_bf16"
    assert notes[bf16, "ascend910b"] == ""
    assert notes[bf16, "ascend310b"] == departure(
        "acceptance", "ascend310b", "rejects it (bf16_unsupported_on_soc)"
    )
    tolerances = [c.tolerance for c in conversion.cases if c.tolerance]
    assert len(tolerances) == 4
    assert all(
        t.to_json() == {"rtol": 0.001, "atol": 0.001, "max_fail_fraction": 0.001}
        for t in tolerances
    )


def _case(**fields) -> dict:
    case = {
        "case_name": "Test_X",
        "op": "LogSoftmaxGrad",
        "input_desc": [
            {"name": "grad", "format": "ND", "type": "float32", "shape": [2, 3],
             "value_range": [[-1, 1]]},
            {"name": "x", "format": "ND", "type": "float32", "shape": [2, 3],
             "value_range": [[-5, 0]]},
        ],
        "output_desc": [{"name": "y", "format": "ND", "type": "float32", "shape": [2, 3]}],
    }  # fmt: skip
    case.update(fields)
    return case


def _run(*cases: dict):
    result = msopst.parse(json.dumps(list(cases)), "inline")
    accounted(result)
    return result


def test_lists_in_a_desc_are_crossed_format_fastest_and_paired_by_position():
    case = _case()
    for desc in case["input_desc"] + case["output_desc"]:
        desc["type"] = ["float32", "float16"]
        desc["shape"] = [[2, 3], [4]]
    result = _run(case)
    got = [(e["name"], e["dtype"], e["shape"]) for e in result.entries]
    assert got == [
        ("Test_X_subcase_0", "float32", [2, 3]),
        ("Test_X_subcase_1", "float32", [4]),
        ("Test_X_subcase_2", "float16", [2, 3]),
        ("Test_X_subcase_3", "float16", [4]),
    ]
    assert all(i.source_case == "Test_X" for i in result.imported)


def test_descs_whose_variant_counts_differ_are_not_imported():
    case = _case()
    case["input_desc"][0]["type"] = ["float32", "float16"]
    case["input_desc"][1]["type"] = ["float32", "float16", "bfloat16"]
    result = _run(case)
    assert result.entries == []
    assert "different numbers of variants (dy 2, y 3, out 1)" in result.skipped[0][1]


def test_the_input_names_decide_which_is_grad():
    case = _case()
    case["input_desc"].reverse()  # x first, grad second
    case["input_desc"][0]["type"] = "float16"  # x
    entry = _run(case).entries[0]
    assert (entry["dtype"], entry["y_dtype"]) == ("float32", "float16")
    assert (entry["dy_range"], entry["y_range"]) == ([-1.0, 1.0], [-5.0, 0.0])


def test_a_threshold_without_an_expected_data_function_is_no_tolerance():
    entry = _run(_case(error_threshold=[0.01, 0.05])).entries[0]
    assert "tolerance" not in entry
    assert "without calc_expect_func_file" in entry["note"]


def test_fuzz_dynamic_shapes_and_value_lists():
    fuzz = _case(case_name="fuzzed", fuzz_impl="gen.py:fuzz", fuzz_case_num=10)
    dynamic = _case(case_name="dynamic")
    dynamic["input_desc"][0].update(shape=[-1, 3], typical_shape=[5, 3])
    dynamic["input_desc"][1].update(value=[[-1.0, -2.0, -3.0], [-1.0, -2.0, -3.0]])
    untyped = _case(case_name="no_typical")
    untyped["input_desc"][0]["shape"] = [-1, 3]
    result = _run(fuzz, dynamic, untyped)
    assert [name for name, _ in result.skipped] == ["fuzzed", "no_typical"]
    (entry,) = result.entries
    assert entry["shape"] == [5, 3] and entry["y_shape"] == [2, 3]
    assert entry["y_range"] == [-3.0, -1.0]
    assert "grad dynamic shape [-1, 3]: its typical_shape [5, 3] tested" in entry["note"]
    assert "x value list not expressible: drawn uniform in its range [-3, -1]" in entry["note"]


def test_unknown_fields_and_attributes_are_noted_not_dropped():
    case = _case(priority=3, attr=[{"name": "dim", "type": "int", "value": 0}])
    entry = _run(case).entries[0]
    assert entry["axes"] == [0]
    assert (
        entry["note"] == "field 'priority' not read; attribute 'dim' read as LogSoftmaxGrad's axis"
    )


def test_a_case_without_input_desc_names_the_key_among_cases_that_have_it():
    cases = json.loads((SAMPLES / "logsoftmaxgrad_msopst.json").read_text())
    renamed = {("inputs_desc" if k == "input_desc" else k): v for k, v in cases[0].items()}
    result = msopst.parse(json.dumps([renamed, cases[1]]), "x.json")
    assert result.skipped == [
        (
            cases[0]["case_name"],
            "no 'input_desc' key in this case ('inputs_desc' is there: renamed? name it "
            "'input_desc')",
        )
    ]
    assert [i.source_case for i in result.imported] == [cases[1]["case_name"]]


def test_a_key_given_twice_is_named_and_its_case_not_imported():
    """json keeps a key's last value silently: a copied `"shape"` line imported a case of the
    other shape, with no word (and here a rejection the source never meant)."""
    text = json.dumps([_case(case_name="Test_Twice"), _case(case_name="Test_Once")])
    text = text.replace('"shape": [2, 3]', '"shape": [2, 3], "shape": [4]', 1)
    text = text.replace('"op": "LogSoftmaxGrad"', '"op": "LogSoftmaxGrad", "op": "Softmax"', 1)
    result = msopst.parse(text, "twice.json")
    accounted(result)
    assert result.skipped == [
        (
            "Test_Twice",
            "field 'op' given twice (only the last would count; keep one); field 'input_desc': "
            "key 'shape' given twice (only the last would count; keep one)",
        )
    ]
    assert [i.source_case for i in result.imported] == ["Test_Once"]
