"""ATK: JSON case descriptions."""

from __future__ import annotations

import json

from suites.importers import atk

from . import SAMPLES, accounted, convert, departure, outcomes, parse

SAMPLE = "logsoftmaxgrad_atk.json"


def _entry(i, dtype, shape, dim, dy, y, expect, **extra) -> dict:
    entry = {"name": f"LogSoftmaxBackward#{i}", "dtype": dtype, "shape": shape, "axes": [dim],
             "api": "dim"}  # fmt: skip
    entry.update({k: extra.pop(k) for k in ("y_dtype", "out_dtype", "missing") if k in extra})
    for name, bounds in (("dy", dy), ("y", y)):
        if bounds is None:
            continue
        if bounds[0] == bounds[1]:
            entry.update({f"{name}_dist": "fill", f"{name}_fill": bounds[0]})
        else:
            entry.update({f"{name}_dist": "range", f"{name}_range": bounds})
    entry.update(extra)
    entry["expect"] = expect
    if "note" in entry:
        entry["note"] = entry.pop("note")
    return entry


def test_the_sample_becomes_these_entries():
    result = parse("atk", SAMPLE)
    single_bm = (
        "ATK accuracy standard single_bm has no farm form: judged by the farm's standards only"
    )
    assert result.entries == [
        _entry(0, "float32", [16, 128], -1, [-1.0, 1.0], [-8.0, 0.0], "accept",
               tolerance={"rtol": 0.0001, "atol": 0.0001, "max_fail_fraction": 0.001}),
        _entry(1, "float16", [2, 3, 1000], 1, [-2.0, 2.0], [-12.0, 0.0], "accept",
               note=single_bm),
        _entry(2, "bfloat16", [32, 4096], -1, [-1.0, 1.0], [-20.0, 0.0], "accept"),
        _entry(3, "float32", [5, 6], 1, [-1.0, 1.0], [-4.0, 0.0], "reject", y_dtype="float16"),
        _entry(4, "complex64", [4, 4], 0, None, None, "reject"),
        _entry(5, "float32", [3, 7], -1, [0.5, 0.5], [-3.0, -3.0], "accept",
               tolerance={"rtol": 0.0, "atol": 0.0, "max_fail_fraction": 0.0}),
        _entry(6, "bfloat16", [8, 256], -1, [-1.0, 1.0], [-6.0, 0.0], "accept",
               out_dtype="float32"),
        _entry(7, "float16", [64, 64], 0, [-1.0, 1.0], [-9.0, 0.0], "accept",
               note="output outlier_values [-65504] not mixed in (not expressible); backward: "
               "ATK also checks the API's own backward; not expressible"),
        _entry(9, "float32", [10, 5], -1, [-1.0, 1.0], None, "reject", missing="y"),
        # ATK's special-value inputs are the case file's special fills
        _entry(10, "float32", [4, 32], -1, ["inf", "inf"], [-3.0, 0.0], "accept"),
        _entry(11, "float16", [2, 16], -1, [-1.0, 1.0], ["-inf", "-inf"], "accept"),
        _entry(12, "float32", [3, 5], 1, ["nan", "nan"], [-2.0, 0.0], "accept",
               note="grad_output backward: ATK also checks the gradient that reaches this input "
               "through the API's backward; not expressible (the farm checks out only); input "
               "output field 'layout' not read"),
        _entry(13, "float32", [16, 128], -1, [-1.0, 1.0], [-8.0, 0.0], "accept",
               tolerance={"rtol": 0.0001, "atol": 0.0001, "max_fail_fraction": 0.001}),
    ]  # fmt: skip
    assert result.skipped == [
        (
            "Softmax#8",
            "api torch.nn.functional.softmax / Softmax is not LogSoftmaxGrad "
            "(aclnnLogSoftmaxBackward, torch._log_softmax_backward_data)",
        )
    ]
    accounted(result)


def test_the_cases_carry_the_contracts_verdict_and_departures():
    conversion = convert("atk", SAMPLE)
    reasons = [(n, c.split("_")[0], r) for n, c, r in outcomes(conversion)]
    assert reasons == [
        (f"LogSoftmaxBackward#{i}", fam, reason)
        for i, by_family in (
            (0, ("ok", "ok")),
            (1, ("ok", "ok")),
            (2, ("ok", "bf16_unsupported_on_soc")),
            (3, ("dtype_mismatch", "dtype_mismatch")),
            (4, ("dtype_unsupported", "dtype_unsupported")),
            (5, ("ok", "ok")),
            (6, ("dtype_mismatch", "dtype_mismatch")),
            (7, ("ok", "ok")),
            (9, ("null_tensor", "null_tensor")),
            (10, ("ok", "ok")),
            (11, ("ok", "ok")),
            (12, ("ok", "ok")),
        )
        for fam, reason in zip(("910b", "310b"), by_family, strict=True)
    ]
    notes = {
        (n, c.family): c.note for n, c in zip(conversion.case_names, conversion.cases, strict=True)
    }
    assert notes["LogSoftmaxBackward#2", "ascend310b"] == departure(
        "acceptance", "ascend310b", "rejects it (bf16_unsupported_on_soc)"
    )
    # torch's input_dtype makes out float32 beside bf16 inputs: ATK expects a pass
    assert notes["LogSoftmaxBackward#6", "ascend910b"] == departure(
        "acceptance", "ascend910b", "rejects it (dtype_mismatch)"
    )
    assert notes["LogSoftmaxBackward#3", "ascend910b"] == ""  # ATK expects the rejection too
    # #13 is #0 again (without the input_dtype that changes nothing): one farm case per family,
    # with both source cases in its origin
    assert conversion.merged == [
        ("LogSoftmaxBackward#13", family, "LogSoftmaxBackward#0")
        for family in ("ascend910b", "ascend310b")
    ]
    assert {c.origin for c in conversion.cases[:2]} == {
        "logsoftmaxgrad_atk.json:LogSoftmaxBackward#0; "
        "logsoftmaxgrad_atk.json:LogSoftmaxBackward#13"
    }
    fills = {c.id.split("_", 1)[1]: (c.y_fill, c.dy_fill) for c in conversion.cases[-6:]}
    assert [str(v) for v in fills.values()] == ["(None, inf)", "(-inf, None)", "(None, nan)"]


def test_a_renamed_inputs_key_is_named_in_one_line():
    import pytest

    from suites.importers import Unreadable

    cases = json.loads((SAMPLES / SAMPLE).read_text())
    renamed = [{("input" if k == "inputs" else k): v for k, v in c.items()} for c in cases]
    with pytest.raises(Unreadable) as caught:
        atk.parse(json.dumps(renamed), "renamed.json")
    assert str(caught.value) == (
        "no 'inputs' key in any case ('input' is there: renamed? name it 'inputs'): an ATK case "
        "lists its tensors and attributes in inputs"
    )
    # one case without it, among others that have it: that case, naming the key
    result = atk.parse(json.dumps([cases[0], renamed[1]]), "one.json")
    assert result.skipped == [
        (
            "LogSoftmaxBackward#1",
            "no 'inputs' key in this case ('input' is there: renamed? name it 'inputs')",
        )
    ]


def test_special_values_as_atk_writes_them():
    def case(range_values) -> str:
        tensor = {"type": "tensor", "dtype": "fp32", "shape": [2, 2]}
        return json.dumps([{"id": 0, "aclnn_name": "LogSoftmaxBackward", "inputs": [
            dict(tensor, name="grad_output", range_values=range_values),
            dict(tensor, name="output", range_values=[-1, 0]),
            {"name": "dim", "type": "attr", "range_values": -1},
        ]}])  # fmt: skip

    for written, fill in (("inf", "inf"), (["-INF"], "-inf"), (["nan", "nan"], "nan")):
        (entry,) = atk.parse(case(written), "x").entries
        assert (entry["dy_dist"], entry["dy_fill"]) == ("fill", fill)
    result = atk.parse(case(["-inf", "inf"]), "x")
    assert result.skipped == [
        (
            "LogSoftmaxBackward#0",
            'grad_output range_values ["-inf", "inf"]: a range with a special bound (the farm '
            "fills one special value, or draws between finite bounds)",
        )
    ]


def test_the_cases_wrapper_composite_attributes_and_tensor_lists():
    tensor = {"type": "tensor", "dtype": "fp16", "shape": [4, 4], "range_values": [-1, 1]}
    cases = {
        "cases": [
            {"id": "a", "name": "torch._log_softmax_backward_data",
             "inputs": [dict(tensor, name="grad_output"), dict(tensor, name="output"),
                        [{"name": "dim", "type": "attrs", "range_values": [1]}]]},
            {"id": "b", "aclnn_name": "aclnnLogSoftmaxBackward",
             "inputs": [[dict(tensor), dict(tensor)], {"name": "dim", "type": "attr",
                                                       "range_values": 0}]},
            {"id": "c", "aclnn_name": "LogSoftmaxBackward", "inputs": [dict(tensor)]},
        ]
    }  # fmt: skip
    result = atk.parse(json.dumps(cases), "inline")
    accounted(result)
    assert [e["axes"] for e in result.entries] == [[1]]
    assert [name for name, _ in result.skipped] == [
        "aclnnLogSoftmaxBackward#b",
        "LogSoftmaxBackward#c",
    ]
    assert "tensor list" in result.skipped[0][1]
    assert "1 tensors" in result.skipped[1][1]


def test_a_null_grad_output_leaves_out_like_output():
    case = {
        "id": 1,
        "aclnn_name": "LogSoftmaxBackward",
        "expected_error_msg": "gradOutput is None",
        "inputs": [
            {"name": "grad_output", "type": "tensor", "dtype": None, "shape": None},
            {"name": "output", "type": "tensor", "dtype": "fp32", "shape": [3, 3]},
            {"name": "dim", "type": "attr", "range_values": -1},
        ],
    }
    (entry,) = atk.parse(json.dumps([case]), "inline").entries
    assert entry == {
        "name": "LogSoftmaxBackward#1",
        "dtype": "float32",
        "shape": [3, 3],
        "axes": [-1],
        "api": "dim",
        "missing": "dy",
        "expect": "reject",
    }


def test_a_key_given_twice_is_named_and_nothing_read_past_it():
    """json keeps a key's last value silently: a copied line's value replaced the first one's."""
    import pytest

    from suites.importers import Unreadable

    cases = json.loads((SAMPLES / SAMPLE).read_text())
    text = json.dumps(cases)
    twice = text.replace('"inputs": [', '"id": 99, "inputs": [', 1)
    result = atk.parse(twice, "twice.json")
    accounted(result)
    once = atk.parse(text, "once.json")
    first = once.imported[0].source_case
    assert first == result.skipped[0][0].replace("#99", "#" + str(cases[0]["id"]))
    assert result.skipped == [
        (result.skipped[0][0], "field 'id' given twice (only the last would count; keep one)"),
        *once.skipped,
    ]
    assert len(result.imported) == len(once.imported) - 1
    wrapped = '{"cases": ' + text + ', "cases": []}'  # a second list: the first one dropped
    with pytest.raises(Unreadable, match=r"^top-level key 'cases' given twice \(only the last"):
        atk.parse(wrapped, "wrapped.json")
