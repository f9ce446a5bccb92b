"""TTK: CSV case files, kernel and ACLNN modes."""

from __future__ import annotations

from suites.importers import ttk

from . import SAMPLES, accounted, convert, departure, outcomes, parse

KERNEL = "logsoftmaxgrad_ttk.csv"
ACLNN = "logsoftmaxgrad_ttk_aclnn.csv"


def _entry(name, dtype, shape, axes, dy, y, **extra) -> dict:
    entry = {"name": name, "dtype": dtype, "shape": shape}
    if "family" in extra:
        entry["family"] = extra.pop("family")
    entry.update(axes=axes, api="axes")
    entry.update({k: extra.pop(k) for k in ("y_dtype",) if k in extra})
    for tensor, bounds in (("dy", dy), ("y", y)):
        if bounds[0] == bounds[1]:
            entry.update({f"{tensor}_dist": "fill", f"{tensor}_fill": bounds[0]})
        else:
            entry.update({f"{tensor}_dist": "range", f"{tensor}_range": bounds})
    if "tolerance" in extra:
        entry["tolerance"] = extra.pop("tolerance")
    entry["expect"] = "accept"
    entry.update(extra)
    return entry


def test_kernel_mode_sample_becomes_these_entries():
    result = parse("ttk", KERNEL)
    tol = {"rtol": 0.001, "atol": 1e-08, "max_fail_fraction": 0.001}
    default = [-2.0, 2.0]  # TTK's range when none is given
    assert result.entries == [
        _entry("LSG_fp32_001", "float32", [32, 512], [1], [-5.0, 5.0], [-20.0, 0.0],
               tolerance={"rtol": 0.0001, "atol": 1e-05, "max_fail_fraction": 0.001}),
        _entry("LSG_fp16_002", "float16", [7, 3, 129], [-1], [-10.0, 10.0], [-10.0, 10.0],
               tolerance=tol),
        _entry("LSG_bf16_310b_003", "bfloat16", [16, 300], [1], [-1.0, 1.0], [-7.0, 0.0],
               family=["ascend310b"]),
        _entry("LSG_bf16_004", "bfloat16", [16, 300], [1], [-1.0, 1.0], [-7.0, 0.0],
               family=["ascend910b"], tolerance=dict(tol, rtol=0.004)),
        _entry("LSG_axes_005", "float32", [3, 4], [0], default, default,
               note="attribute 'axes' read as log_softmax_grad's axis"),
        _entry("LSG_fill_006", "float32", [2, 9], [-1], [1.0, 1.0], [-0.5, -0.5]),
        _entry("LSG_mismatch_007", "float32", [4, 8], [-1], default, default,
               y_dtype="float16"),
        _entry("LSG_guaranteed_010", "float16", [6, 100], [-1], [-1.0, 1.0], [-5.0, 0.0],
               note="dy values [0] that TTK mixes in are not expressible: left out"),
        # LSG_fp32_001 again, only network_name differs (ignored): the same farm case
        _entry("LSG_fp32_012_rerun", "float32", [32, 512], [1], [-5.0, 5.0], [-20.0, 0.0],
               tolerance={"rtol": 0.0001, "atol": 1e-05, "max_fail_fraction": 0.001}),
    ]  # fmt: skip
    assert result.skipped == [
        ("LSG_disabled_008", "disabled in the source (is_enabled False)"),
        (
            "LSG_nz_009",
            "grad format FRACTAL_NZ is a private layout the farm has no form for (it passes ND "
            "tensors)",
        ),
        (
            "LSG_a3_011",
            "soc_series Ascend910_93: no SoC of the farm's families (ascend910b, ascend310b)",
        ),
    ]
    accounted(result)


def test_kernel_mode_cases():
    conversion = convert("ttk", KERNEL)
    assert [(n, i[:4], r) for n, i, r in outcomes(conversion)] == [
        ("LSG_fp32_001", "910b", "ok"),
        ("LSG_fp32_001", "310b", "ok"),
        ("LSG_fp16_002", "910b", "ok"),
        ("LSG_fp16_002", "310b", "ok"),
        ("LSG_bf16_310b_003", "310b", "bf16_unsupported_on_soc"),
        ("LSG_bf16_004", "910b", "ok"),
        ("LSG_axes_005", "910b", "ok"),
        ("LSG_axes_005", "310b", "ok"),
        ("LSG_fill_006", "910b", "ok"),
        ("LSG_fill_006", "310b", "ok"),
        ("LSG_mismatch_007", "910b", "dtype_mismatch"),
        ("LSG_mismatch_007", "310b", "dtype_mismatch"),
        ("LSG_guaranteed_010", "910b", "ok"),
        ("LSG_guaranteed_010", "310b", "ok"),
    ]
    bf16 = conversion.cases[4]
    assert bf16.note == departure(
        "acceptance", "ascend310b", "rejects it (bf16_unsupported_on_soc)"
    )
    assert conversion.cases[0].id == (
        "910b_f32_32x512_ax1_y.range.-20to0_dy.range.-5to5_tol.r0.0001.a1e-05.f0.001"
    )
    # the rerun row is kept once per family; both rows are in the kept case's origin
    assert [m[0] for m in conversion.merged] == ["LSG_fp32_012_rerun"] * 2
    assert conversion.cases[0].origin == (
        "logsoftmaxgrad_ttk.csv:LSG_fp32_001; logsoftmaxgrad_ttk.csv:LSG_fp32_012_rerun"
    )
    # What TTK could not say (an axes key read as axis) is a note, never a departure.
    from suites.case import DEPARTS

    named = zip(conversion.case_names, conversion.cases, strict=True)
    departing = [n for n, c in named if DEPARTS in c.note]
    assert departing == ["LSG_bf16_310b_003", "LSG_mismatch_007", "LSG_mismatch_007"]
    assert conversion.cases[6].note and DEPARTS not in conversion.cases[6].note


def test_a_renamed_required_column_is_one_line_naming_it():
    import pytest

    from suites.importers import Unreadable

    with pytest.raises(Unreadable) as caught:
        parse("ttk", "logsoftmaxgrad_ttk_renamed.csv")
    assert str(caught.value) == (
        "no 'input_shapes' column in the header ('input_shape' is there: renamed? name it "
        "'input_shapes'): TTK's kernel mode needs it for every case"
    )
    aclnn = (SAMPLES / ACLNN).read_text().replace("tensor_dtypes", "tensor_dtype", 1)
    with pytest.raises(Unreadable, match="^no 'tensor_dtypes' column .*'tensor_dtype' is there"):
        ttk.parse(aclnn, "x.csv")
    # a column that is simply absent, with nothing near it: named, without a guess
    dropped = (SAMPLES / KERNEL).read_text().replace(",output_dtypes,", ",remark2,", 1)
    with pytest.raises(Unreadable, match=r"^no 'output_dtypes' column in the header: TTK"):
        ttk.parse(dropped, "x.csv")


def test_aclnn_mode_sample_strides_offsets_and_null_tensors():
    result = parse("ttk", ACLNN)
    accounted(result)
    assert result.entries == [
        {
            "name": "aclnn_transposed_001",
            "dtype": "float32",
            "shape": [4, 6],
            "axes": [-1],
            "api": "dim",
            "dy_dist": "range",
            "dy_range": [-2.0, 2.0],
            "y_dist": "range",
            "y_range": [-9.0, 0.0],
            "dy_layout": {"strides": [1, 4], "storage": 24, "offset": 0},
            "y_layout": {"strides": [1, 4], "storage": 24, "offset": 0},
            "tolerance": {"rtol": 0.0001, "atol": 1e-06, "max_fail_fraction": 0.0001},
            "expect": "accept",
        },
        {
            "name": "aclnn_null_output_002",
            "dtype": "float16",
            "shape": [4, 6],
            "axes": [1],
            "api": "dim",
            "missing": "y",
            "dy_dist": "range",
            "dy_range": [-2.0, 2.0],
            "expect": "accept",
        },
        {
            "name": "aclnn_offset_003",
            "dtype": "float16",
            "shape": [4, 6],
            "axes": [0],
            "api": "dim",
            "dy_dist": "range",
            "dy_range": [-2.0, 2.0],
            "y_dist": "range",
            "y_range": [-2.0, 2.0],
            "dy_layout": {"strides": [6, 1], "storage": 27, "offset": 3},
            "expect": "accept",
        },
    ]
    assert result.skipped == [
        ("aclnn_add_004", "api_name 'aclnnAdd' is not aclnnLogSoftmaxBackward")
    ]
    conversion = result.convert(ACLNN)
    assert [i for _, i, _ in outcomes(conversion)][:2] == [
        "910b_f32_4x6_d-1_y.range.-9to0_dy.range.-2to2_dy.st1.4.sz24_y.st1.4.sz24"
        "_tol.r0.0001.a1e-06.f0.0001",
        "310b_f32_4x6_d-1_y.range.-9to0_dy.range.-2to2_dy.st1.4.sz24_y.st1.4.sz24"
        "_tol.r0.0001.a1e-06.f0.0001",
    ]
    assert conversion.cases[2].note == departure(
        "acceptance", "ascend910b", "rejects it (null_tensor)"
    )


HEADER = "testcase_name,op_name,input_shapes,input_dtypes,output_shapes,output_dtypes,soc_series\n"


def test_rows_of_other_modes_bad_cells_and_soc_exclusion():
    text = HEADER + (
        'a,log_softmax_grad,"((2, 3), (2, 3))","(\'fp16\',)","((2, 3),)","(\'fp16\',)",'
        "\"('-Ascend310B1',)\"\n"
        'b,log_softmax_grad,"((2, 3))","(\'fp16\',)","((2, 3),)","(\'fp16\',)",\n'
        'c,log_softmax_grad,"((2, 3), (2, 3))","(\'int8\',)","((2, 3),)","(\'int8\',)",\n'
        'd,log_softmax_grad,"((2, 3), (2, 3))","(\'fp16\',)","((2, 3),)","(\'fp16\',)",,extra\n'
        "\n"
        ',log_softmax_grad,"((2, 3), (2, 3))","(\'fp16\',)","((2, 3),)","(\'fp16\',)",\n'
    )
    result = ttk.parse(text, "inline")
    accounted(result)
    assert [(e["name"], e.get("family")) for e in result.entries] == [
        ("a", ["ascend910b"]),
        ("auto_testcase_name_5", None),
    ]
    reasons = dict(result.skipped)
    assert reasons["b"] == "input_shapes names 1 tensors; log_softmax_grad takes 2 (grad, x)"
    assert reasons["c"].startswith("grad dtype int8 has no farm form")
    assert reasons["d"] == "1 cell(s) beyond the header: ['extra']"
    e2e = 'testcase_name,api_name,tensor_view_shapes\nt,torch.add,"((2,),)"\n'
    (skip,) = ttk.parse(e2e, "inline").skipped
    assert skip[1].startswith("TTK E2E mode (api torch.add): not read")


def test_original_shapes_and_formats_per_tensor():
    header = (
        "testcase_name,op_name,input_shapes,input_dtypes,output_shapes,output_dtypes,"
        "input_ori_shapes,input_ori_formats,output_ori_shapes,output_ori_formats\n"
    )
    same = (
        's,log_softmax_grad,"((2, 8), (2, 8))","(\'fp16\', \'fp16\')","((2, 8))","(\'fp16\',)",'
        '"((2, 8), (2, 8))","(\'ND\', \'ND\')","((2, 8))","(\'ND\',)"\n'
    )
    other = same.replace("s,", "o,", 1).replace("\"('ND', 'ND')\"", "\"('NCHW', 'ND')\"")
    other = other.replace('"((2, 8), (2, 8))","(\'NCHW', '"((16,), (2, 8))","(\'NCHW')
    result = ttk.parse(header + same + other, "inline")
    accounted(result)
    first, second = result.entries
    assert "note" not in first
    assert second["note"] == (
        "input_ori_shapes ((16,), (2, 8)) ignored (the farm passes the shapes); "
        "input_ori_formats ('NCHW', 'ND') ignored"
    )


def test_a_single_number_where_a_tuple_goes_is_read_or_refused_not_a_crash():
    header = (
        "testcase_name,op_name,input_shapes,output_shapes,input_dtypes,output_dtypes,soc_series,"
        "input_ori_formats"
    )
    row = 'one,log_softmax_grad,"((2, 3), (2, 3))","((2, 3),)","(\'float32\',)",float32,5,1.5'
    result = ttk.parse(f"{header}\n{row}\n", "x.csv")
    assert result.skipped == [
        ("one", "soc_series 5: no SoC of the farm's families (ascend910b, ascend310b)")
    ]
    aclnn = (
        "testcase_name,api_name,tensor_view_shapes,tensor_dtypes,output_tensor_indexes,attributes"
    )
    row = 'two,aclnnLogSoftmaxBackward,"((2, 3), (2, 3), (2, 3))","(\'float32\',)",2.5,{}'
    result = ttk.parse(f"{aclnn}\n{row}\n", "x.csv")
    assert result.skipped == [("two", "output_tensor_indexes 2.5 does not name one tensor")]


def test_a_column_named_twice_is_one_line_naming_it():
    """csv.DictReader keeps the last of two columns of one name: a second input_shapes column
    (a spreadsheet's copied column) imported its shapes instead, without a word."""
    import pytest

    from suites.importers import Unreadable

    header, *rows = (SAMPLES / KERNEL).read_text().splitlines()
    text = "\n".join([header + ",input_shapes,", *(row + ',"((2, 3), (2, 3))",' for row in rows)])
    with pytest.raises(Unreadable) as caught:
        ttk.parse(text, "twice.csv")
    width = len(header.split(","))
    assert str(caught.value) == (
        f"the header names a column twice: 'input_shapes' (columns 4, {width + 1}); only the "
        "last would count: keep one"
    )
