"""msopst: the Ascend operator system-test (ST) JSON case file, as farm entries.

The file is a JSON list of cases (the msOpST "算子测试用例定义文件", CANN / MindStudio docs,
atlasopdev_16_0032 "生成测试用例定义文件", table 1). Fields read:

- case_name; op (LogSoftmaxGrad: inputs grad, x; output y; attribute axis, list of ints,
  default [-1]); expect ("success" | "failed", default success);
- input_desc[] / output_desc[]: name, format, type, shape (one shape, or a list of shapes),
  ori_format, ori_shape, typical_shape (the shape tested when shape has -1), shape_range,
  is_const, data_distribute, value_range ([lo, hi] or a list of them), value;
  format "RESERVED" with type "UNDEFINED" is an absent (null) input;
- attr[]: name, type, value;
- error_threshold [threshold1, threshold2], read only with calc_expect_func_file (without an
  expected-data function msopst compares nothing).

Lists inside a desc mean several sub-cases: msopst crosses each desc's format, shape, type,
value_range and data_distribute (format varying fastest) and pairs the descs by position; a
desc with one variant serves every sub-case. Sub-cases are named "<case_name>_subcase_<i>" as
msopst names them. Ignored (how msopst runs, not what it calls): st_mode,
calc_expect_func_file (the farm computes its own golden), fuzz_case_num.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

from suites import limits

from .common import (
    Imported,
    ImportResult,
    NotExpressible,
    Tensor,
    Unreadable,
    check_format,
    farm_dtype,
    given_twice,
    integer,
    load_json,
    make_entry,
    missing_field,
    number,
    shape_of,
    tolerance,
    value_bounds,
)

OP_NAMES = ("logsoftmaxgrad", "log_softmax_grad")
INPUT_ROLES = {"grad": "dy", "dy": "dy", "grad_output": "dy", "x": "y", "y": "y", "output": "y"}
CASE_KEYS = {
    "case_name", "op", "input_desc", "output_desc", "attr", "expect", "error_threshold",
    "calc_expect_func_file", "st_mode", "run_torch_api", "fuzz_impl", "fuzz_case_num",
}  # fmt: skip
DESC_KEYS = {
    "name", "format", "ori_format", "type", "shape", "ori_shape", "typical_shape",
    "shape_range", "is_const", "data_distribute", "value_range", "value", "param_type",
}  # fmt: skip
DEFAULT_RANGE = [0.1, 1.0]  # msopst's value_range when a desc gives none
DISTRIBUTIONS = (
    "uniform", "normal", "beta", "laplace", "triangular", "relu", "sigmoid", "softmax", "tanh",
)  # fmt: skip


def parse(text: str, source: str) -> ImportResult:
    data = load_json(
        text,
        source,
        "an msopst case file (a JSON list of cases with case_name, op, input_desc, output_desc)",
    )
    if isinstance(data, dict) and "case_name" in data:
        data = [data]
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        raise Unreadable(
            "not an msopst case file: expected a JSON list of cases (objects with case_name, "
            "op, input_desc, output_desc)"
        )
    limits.CASES.check(len(data), source)
    keys = dict.fromkeys(k for case in data for k in case)
    for required in ("input_desc", "output_desc"):
        if data and required not in keys:
            raise Unreadable(
                missing_field(required, keys, "key in any case", CASE_KEYS)
                + ": an msopst case describes its tensors in input_desc and output_desc"
            )
    result = ImportResult("msopst")
    for index, case in enumerate(data):
        name = result.add_case(str(case.get("case_name") or f"case {index}"))
        try:
            given_twice(case)
            _case(result, name, case)
        except NotExpressible as exc:
            result.skipped.append((name, str(exc)))
        # Sub-cases multiply (a desc's lists are crossed): counted as they are made.
        made = len(result.imported) + len(result.skipped)
        if made > limits.CASES.value():
            limits.CASES.check(made, source, at_least=True)
    return result


def _case(result: ImportResult, name: str, case: dict[str, Any]) -> None:
    notes = [f"field {key!r} not read" for key in case if key not in CASE_KEYS]
    _fuzz_check(case)
    op = str(case.get("op", ""))
    if op.lower() not in OP_NAMES:
        raise NotExpressible(f"op {op!r} is not LogSoftmaxGrad")
    if case.get("run_torch_api"):
        notes.append(f"run_torch_api {case['run_torch_api']}: the farm calls the operator itself")
    for required in ("input_desc", "output_desc"):
        if required not in case:
            raise NotExpressible(missing_field(required, case, "key in this case", CASE_KEYS))
    inputs = case.get("input_desc")
    outputs = case.get("output_desc")
    if not isinstance(inputs, list) or len(inputs) != 2:
        raise NotExpressible(
            f"input_desc has {_count(inputs)} descs; LogSoftmaxGrad takes 2 (grad, x)"
        )
    if not isinstance(outputs, list) or len(outputs) != 1:
        raise NotExpressible(f"output_desc has {_count(outputs)} descs; LogSoftmaxGrad has 1 (y)")
    roles = _roles(inputs)
    axes, attr_notes = _axes(case.get("attr"))
    notes += attr_notes
    expect = _expect(case.get("expect", "success"), notes)
    tol = _tolerance(case, notes)
    variants = {role: _variants(desc, True) for role, desc in zip(roles, inputs, strict=True)}
    variants["out"] = _variants(outputs[0], False)
    counts = {role: len(v) for role, v in variants.items()}
    total = max(counts.values())
    if any(n not in (1, total) for n in counts.values()):
        raise NotExpressible(
            "the descs give different numbers of variants ("
            + ", ".join(f"{role} {n}" for role, n in counts.items())
            + "): msopst pairs them by position and refuses this too"
        )
    for k in range(total):
        sub = f"{name}_subcase_{k}" if total > 1 else name
        result.parent[sub] = name
        try:
            sub_notes = list(notes)
            tensors = {
                role: _tensor(role, v[k if len(v) > 1 else 0], sub_notes)
                for role, v in variants.items()
            }
            entry = make_entry(sub, tensors, axes, "axes", sub_notes, expect, tol=tol)
        except NotExpressible as exc:
            result.skipped.append((sub, str(exc)))
            continue
        result.imported.append(Imported(name, entry))


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def _fuzz_check(case: dict[str, Any]) -> None:
    if case.get("fuzz_impl"):
        raise NotExpressible(
            f"generated by the fuzz script {case['fuzz_impl']}: the farm cannot run it (import "
            "the cases it generates)"
        )

    def has_fuzz(value: Any) -> bool:
        if isinstance(value, str):
            return value == "fuzz"
        if isinstance(value, list):
            return any(map(has_fuzz, value))
        if isinstance(value, dict):
            return any(map(has_fuzz, value.values()))
        return False

    if has_fuzz(case):
        raise NotExpressible("a value is 'fuzz' (drawn by a fuzz script the farm cannot run)")


def _roles(inputs: list[Any]) -> list[str]:
    """dy and y of the two inputs: by their names (grad, x) when both are known, else by
    position."""
    named = [INPUT_ROLES.get(str(d.get("name", "")).lower()) if isinstance(d, dict) else None
             for d in inputs]  # fmt: skip
    if sorted(r for r in named if r) == ["dy", "y"]:
        return [r for r in named if r]
    return ["dy", "y"]


def _axes(attrs: Any) -> tuple[list[int], list[str]]:
    notes: list[str] = []
    axes: list[int] = [-1]  # the prototype's default
    if attrs is None:
        return axes, notes
    if not isinstance(attrs, list):
        raise NotExpressible(f"attr {attrs!r} is not a list of attributes")
    for attr in attrs:
        if not isinstance(attr, dict) or "name" not in attr:
            raise NotExpressible(f"attr {attr!r} has no name")
        key, value = str(attr["name"]), attr.get("value")
        if key.lower() in ("axis", "axes", "dim"):
            if key != "axis":
                notes.append(f"attribute {key!r} read as LogSoftmaxGrad's axis")
            values = value if isinstance(value, list) else [value]
            axes = [integer(v, f"attribute {key}") for v in values]
        else:
            notes.append(f"attribute {key}={value!r} is not LogSoftmaxGrad's (axis): ignored")
    return axes, notes


def _expect(value: Any, notes: list[str]) -> str | None:
    text = str(value).strip().lower()
    if text == "success":
        return "accept"
    if text == "failed":
        return "reject"
    notes.append(f"expect {value!r} not read (msopst's are 'success' and 'failed')")
    return None


def _tolerance(case: dict[str, Any], notes: list[str]) -> dict[str, float] | None:
    threshold = case.get("error_threshold")
    if threshold is None:
        return None
    if isinstance(threshold, str):
        try:
            threshold = json.loads(threshold)
        except json.JSONDecodeError:
            pass
    if not (isinstance(threshold, list) and len(threshold) == 2):
        notes.append(f"error_threshold {threshold!r} not read (use [threshold1, threshold2])")
        return None
    if not case.get("calc_expect_func_file"):
        notes.append(
            f"error_threshold {threshold} without calc_expect_func_file (msopst compares "
            "nothing): no tolerance imported"
        )
        return None
    t1, t2 = threshold
    tol = tolerance(t1, t1, t2, "error_threshold")
    notes.append(
        f"error_threshold [{t1}, {t2}] read as rtol = atol = {t1}, fail fraction {t2} "
        f"(msopst's own test: |out - golden| <= {t1}, else relative to the larger of |out| "
        "and |golden|)"
    )
    return tol


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _shapes(value: Any) -> list[Any]:
    """One shape ([2, 3]) or several ([[2, 3], [4]]) as a list of shapes."""
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return value
    return [value]


def _ranges(value: Any) -> list[Any]:
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return value
    return [value]


def _variants(desc: Any, is_input: bool) -> list[dict[str, Any]]:
    """The desc's variants in msopst's order: the cross product of its lists, format fastest,
    then shape, type, value_range, data_distribute."""
    if not isinstance(desc, dict):
        raise NotExpressible(f"desc {desc!r} is not an object")
    lists: dict[str, list[Any]] = {
        "format": _listed(desc.get("format", "ND")),
        "shape": _shapes(desc.get("shape")),
        "type": _listed(desc.get("type")),
    }
    if is_input:
        lists["value_range"] = _ranges(desc.get("value_range", [DEFAULT_RANGE]))
        lists["data_distribute"] = _listed(desc.get("data_distribute", "uniform"))
    keys = list(lists)
    # The cross product is counted before it is made: five lists of a hundred are 10^10.
    count, most = math.prod(len(v) for v in lists.values()), limits.CASES.value()
    if count > most:
        raise NotExpressible(
            f"its lists cross into {count:,} variants, more than the {most:,} cases a file may "
            f"hold (set {limits.CASES.env} to raise it)"
        )
    out = []
    for combo in itertools.product(*(lists[k] for k in reversed(keys))):
        variant = dict(desc)
        variant.update(zip(reversed(keys), combo, strict=True))
        out.append(variant)
    return out


def _tensor(role: str, variant: dict[str, Any], notes: list[str]) -> Tensor:
    label = {"dy": "grad", "y": "x", "out": "y"}[role]
    unknown = [k for k in variant if k not in DESC_KEYS]
    notes += [f"{label}: field {k!r} not read" for k in unknown]
    fmt, dtype = str(variant["format"]), str(variant["type"])
    if fmt.upper() == "RESERVED" or dtype.upper() == "UNDEFINED":
        return Tensor(missing=True)
    check_format(fmt, label, notes)
    if variant.get("ori_format") not in (None, fmt):
        notes.append(f"{label} ori_format {variant['ori_format']} ignored")
    shape_value = variant["shape"]
    if isinstance(shape_value, list) and any(d == -1 for d in shape_value):
        typical = variant.get("typical_shape")
        if typical is None:
            raise NotExpressible(
                f"{label} shape {shape_value} is dynamic and there is no typical_shape"
            )
        notes.append(f"{label} dynamic shape {shape_value}: its typical_shape {typical} tested")
        shape_value = typical
    shape = shape_of(shape_value, f"{label} shape")
    if variant.get("ori_shape") not in (None, shape_value, list(shape)):
        notes.append(f"{label} ori_shape {variant['ori_shape']} ignored")
    if variant.get("is_const"):
        notes.append(f"{label} is_const: the farm passes it as a tensor, not a constant")
    tensor = Tensor(farm_dtype(dtype, f"{label} type"), shape)
    if role != "out":
        tensor.values = _values(label, variant, notes)
    return tensor


def _values(label: str, variant: dict[str, Any], notes: list[str]) -> tuple[float, float]:
    value = variant.get("value")
    if isinstance(value, list):
        flat = list(_flatten(value))
        numbers = [number(v, f"{label} value") for v in flat]
        if not numbers:
            raise NotExpressible(f"{label} value is an empty list")
        lo, hi = min(numbers), max(numbers)
        if lo != hi:
            notes.append(
                f"{label} value list not expressible: drawn uniform in its range [{lo:g}, {hi:g}]"
            )
        return value_bounds(lo, hi, f"{label} value")
    if isinstance(value, str):
        notes.append(f"{label} values from {value} not read: drawn from value_range")
    bounds = variant["value_range"]
    if not (isinstance(bounds, list) and len(bounds) == 2):
        raise NotExpressible(f"{label} value_range {bounds!r} is not [min, max]")
    lo, hi = value_bounds(bounds[0], bounds[1], f"{label} value_range")
    dist = str(variant["data_distribute"])
    if dist != "uniform" and lo != hi:
        known = "" if dist in DISTRIBUTIONS else " (not an msopst distribution)"
        notes.append(
            f"{label} data_distribute {dist}{known} has no farm form: drawn uniform in "
            f"[{lo:g}, {hi:g}]"
        )
    return lo, hi


def _flatten(value: Any):
    for v in value:
        if isinstance(v, list):
            yield from _flatten(v)
        else:
            yield v
