"""ATK (Ascend test kit, MindStudio-ATK): JSON case descriptions, as farm entries.

ATK's own documentation of its case JSON is not public beyond its README; this is a faithful
reading of the case JSON that ATK generates and consumes, as public projects that drive ATK
write it (gitcode.com/Ascend/ATK README; the case generators and checkers of public ATK users):
a JSON list of cases, or {"cases": [...]}, each

    {"id": 0, "name": "torch._log_softmax_backward_data", "aclnn_name": "LogSoftmaxBackward",
     "api": "pytorch", "api_type": ..., "expected_error_msg": null, "backward": false,
     "standard": {"acc": ..., "perf": ...}, "outputs": null,
     "inputs": [{"name": "grad_output", "type": "tensor", "required": true, "dtype": "fp32",
                 "shape": [2, 3], "range_values": [-1, 1], "outlier_values": null}, ...,
                {"name": "dim", "type": "attr", "dtype": "int", "range_values": -1}]}

Read: the API (name or aclnn_name: aclnnLogSoftmaxBackward, torch._log_softmax_backward_data);
tensors by name (grad_output / gradOutput -> dy, output -> y, out / grad_input -> out), else by
position; a tensor whose dtype or shape is null is a null tensor; range_values [lo, hi] (lo ==
hi, or one value: a fill; ["inf"], ["-inf"], ["nan"]: that special fill); per input, backward
(its gradient checked too: noted), align_32B (noted), other keys (noted); attributes dim (a
value, or [value]) and input_dtype (torch's output dtype: out's dtype); expected_error_msg
(set: the source expects a rejection; null: a pass); standard.acc: "equal" is a zero tolerance,
{"<name>": {"rtol", "atol", "ptol"}} a tolerance, any other standard (default, single_bm,
mixed_tolerance_bm, cv_fused_double_benchmark and its ratios) has no farm form. ATK names no SoC
in a case: every family. Ignored (how ATK runs): id, default_seed, version, api, api_type and
the other *_api_type, *_name keys, outputs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from suites import casefile, limits

from .common import (
    Imported,
    ImportResult,
    NotExpressible,
    Tensor,
    Unreadable,
    farm_dtype,
    given_twice,
    integer,
    load_json,
    make_entry,
    missing_field,
    number,
    shape_of,
    special_value,
    tolerance,
    value_bounds,
)

API_NAMES = ("logsoftmaxbackward", "logsoftmaxbackwarddata", "logsoftmaxgrad")
ROLES = {
    "gradoutput": "dy", "grad": "dy", "dy": "dy", "gradout": "dy",
    "output": "y", "y": "y", "x": "y",
    "out": "out", "gradinput": "out", "z": "out",
}  # fmt: skip
RUN_KEYS = {
    "id", "default_seed", "version", "api", "api_type", "name", "aclnn_name", "triton_name",
    "kernel_name", "fusion_mode", "outputs", "inputs", "standard", "expected_error_msg",
    "backward",
}  # fmt: skip
# The keys of an input (a tensor or an attribute) that say what ATK calls it with.
INPUT_KEYS = {
    "name", "type", "required", "dtype", "shape", "range_values", "outlier_values", "backward",
    "align_32B",
}  # fmt: skip


def parse(text: str, source: str) -> ImportResult:
    data = load_json(text, source, 'an ATK case file (a JSON list of cases, or {"cases": [...]})')
    if isinstance(data, dict) and casefile.TWICE in data:
        raise Unreadable(casefile.keys_twice(data)[0].replace("field", "top-level key", 1))
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        data = data["cases"]
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        raise Unreadable(
            "not an ATK case file: expected a JSON list of cases (objects with name, inputs), "
            'or {"cases": [...]}'
        )
    limits.CASES.check(len(data), source)
    if data and not any("inputs" in case for case in data):
        keys = dict.fromkeys(k for case in data for k in case)
        raise Unreadable(
            missing_field("inputs", keys, "key in any case", RUN_KEYS)
            + ": an ATK case lists its tensors and attributes in inputs"
        )
    result = ImportResult("atk")
    for index, case in enumerate(data):
        api = case.get("aclnn_name") or case.get("name") or "case"
        name = result.add_case(f"{api}#{case.get('id', index)}")
        try:
            given_twice(case)
            result.imported.append(Imported(name, _entry(name, case)))
        except NotExpressible as exc:
            result.skipped.append((name, str(exc)))
    return result


def _norm(name: Any) -> str:
    text = str(name or "").lower()
    text = re.sub(r"^(torch\.ops\.aten\.|torch_npu\.|torch\.|aclnn)", "", text)
    return re.sub(r"[^a-z0-9]", "", text)


def _entry(name: str, case: dict[str, Any]) -> dict[str, Any]:
    apis = [case.get("name"), case.get("aclnn_name")]
    if not any(_norm(a).removeprefix("aclnn") in API_NAMES for a in apis if a):
        shown = " / ".join(str(a) for a in apis if a) or "none"
        raise NotExpressible(
            f"api {shown} is not LogSoftmaxGrad (aclnnLogSoftmaxBackward, "
            "torch._log_softmax_backward_data)"
        )
    notes = [
        f"field {k!r} not read"
        for k in case
        if k not in RUN_KEYS and not k.endswith(("_api_type", "_name"))
    ]
    tensors, attrs = _inputs(case, notes)
    if "dim" not in attrs or attrs["dim"] in (None, "default"):
        raise NotExpressible("no dim attribute (LogSoftmaxBackward needs one)")
    dim = integer(_unwrap(attrs.pop("dim")), "attribute dim")
    input_dtype = attrs.pop("input_dtype", None)
    if input_dtype not in (None, "default") and not tensors["out"].missing:
        tensors["out"].dtype = farm_dtype(_unwrap(input_dtype), "attribute input_dtype")
    notes += [f"attribute {k}={v!r} not read" for k, v in attrs.items()]
    if case.get("backward"):
        notes.append("backward: ATK also checks the API's own backward; not expressible")
    message = case.get("expected_error_msg")
    expect = "reject" if message else "accept"
    tol = _standard(case.get("standard"), notes)
    return make_entry(name, tensors, [dim], "dim", notes, expect, tol=tol)


def _unwrap(value: Any) -> Any:
    """ATK writes an attribute's value as v or [v]."""
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    return value


def _inputs(case: dict[str, Any], notes: list[str]) -> tuple[dict[str, Tensor], dict[str, Any]]:
    if "inputs" not in case:
        raise NotExpressible(missing_field("inputs", case, "key in this case", RUN_KEYS))
    inputs = case["inputs"]
    if not isinstance(inputs, list):
        raise NotExpressible(f"inputs {_shown(inputs)} is not a list")
    found: list[tuple[str | None, Tensor]] = []
    attrs: dict[str, Any] = {}
    for item in inputs:
        if isinstance(item, list):  # a composite input: an attribute list or a tensor list
            kinds = {str(i.get("type")) for i in item if isinstance(i, dict)}
            if kinds & {"tensor", "tensors"}:
                raise NotExpressible("a tensor list input (LogSoftmaxGrad takes single tensors)")
            if item and isinstance(item[0], dict):
                attrs[str(item[0].get("name"))] = [_unwrap(i.get("range_values")) for i in item]
            continue
        if not isinstance(item, dict):
            raise NotExpressible(f"input {item!r} is not an object")
        kind = str(item.get("type", "tensor"))
        notes += [
            f"input {item.get('name')} field {k!r} not read" for k in item if k not in INPUT_KEYS
        ]
        if kind == "tensor":
            found.append((ROLES.get(_norm(item.get("name"))), _tensor(item, notes)))
        elif kind == "tensors":
            raise NotExpressible("a tensor list input (LogSoftmaxGrad takes single tensors)")
        else:
            attrs[str(item.get("name"))] = item.get("range_values")
    named = [role for role, _ in found if role is not None]
    if len(set(named)) == len(found):
        roles = named
    else:
        roles = ["dy", "y", "out"][: len(found)]
    if len(found) not in (2, 3):
        raise NotExpressible(
            f"{len(found)} tensors; LogSoftmaxBackward takes gradOutput and output (and out)"
        )
    tensors = dict(zip(roles, (t for _, t in found), strict=True))
    if "out" not in tensors:  # ATK makes the result itself: like gradOutput (or output)
        like = [t for t in tensors.values() if not t.missing] or [Tensor(missing=True)]
        tensors["out"] = Tensor(like[0].dtype, like[0].shape, missing=like[0].missing)
    if set(tensors) != {"dy", "y", "out"}:
        raise NotExpressible(f"tensors {sorted(tensors)} are not gradOutput, output (, out)")
    return tensors, attrs


def _tensor(item: dict[str, Any], notes: list[str]) -> Tensor:
    label = str(item.get("name") or "tensor")
    if item.get("dtype") in (None, "none", "None") or item.get("shape") is None:
        return Tensor(missing=True)
    tensor = Tensor(farm_dtype(item["dtype"], f"{label} dtype"), shape_of(item["shape"], label))
    bounds = item.get("range_values")
    special = _special(bounds)
    if special is not None:  # ATK's special-value inputs: every element that value
        tensor.values = (special, special)
    elif isinstance(bounds, list) and any(special_value(b) is not None for b in bounds):
        raise NotExpressible(
            f"{label} range_values {_shown(bounds)}: a range with a special bound (the farm "
            "fills one special value, or draws between finite bounds)"
        )
    elif isinstance(bounds, list) and len(bounds) == 2:
        tensor.values = value_bounds(bounds[0], bounds[1], f"{label} range_values")
    elif (isinstance(bounds, list) and len(bounds) == 1) or isinstance(bounds, (int, float)):
        value = number(_unwrap(bounds), f"{label} range_values")
        tensor.values = value_bounds(value, value, f"{label} range_values")
    elif bounds is not None:
        notes.append(f"{label} range_values {bounds!r} not read: the farm draws its own")
    if item.get("outlier_values"):
        notes.append(
            f"{label} outlier_values {item['outlier_values']} not mixed in (not expressible)"
        )
    if item.get("backward"):
        notes.append(
            f"{label} backward: ATK also checks the gradient that reaches this input through "
            "the API's backward; not expressible (the farm checks out only)"
        )
    if item.get("align_32B"):
        notes.append(f"{label} align_32B {item['align_32B']!r} not read (the farm allocates)")
    return tensor


def _special(bounds: Any) -> float | None:
    """The special value of range_values "inf", ["inf"] or ["inf", "inf"] (or -inf, nan)."""
    values = bounds if isinstance(bounds, list) else [bounds]
    found = [special_value(v) for v in values]
    if not values or len(values) > 2 or found[0] is None:
        return None
    if len(found) == 2 and str(found[0]) != str(found[1]):
        return None  # ["-inf", "inf"]: a range the farm cannot draw from, refused below
    return found[0]


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _standard(standard: Any, notes: list[str]) -> dict[str, float] | None:
    if not isinstance(standard, dict) or standard.get("acc") in (None, "default"):
        return None
    acc = standard["acc"]
    if acc == "equal":
        return tolerance(0, 0, 0, "standard equal")
    if isinstance(acc, dict) and len(acc) == 1:
        ((label, params),) = acc.items()
        if isinstance(params, dict) and {"rtol", "atol"} <= set(params):
            extra = sorted(set(params) - {"rtol", "atol", "ptol"})
            if extra:
                notes.append(f"standard {label} parameters {', '.join(extra)} not read")
            return tolerance(
                params["rtol"], params["atol"], params.get("ptol", 0), f"standard {label}"
            )
        acc = label
    notes.append(
        f"ATK accuracy standard {acc if isinstance(acc, str) else json.dumps(acc)} has no farm "
        "form: judged by the farm's standards only"
    )
    return None
