"""TTK (CANN ops-test-kit): CSV case files, one case per row, as farm entries.

Field lists: ops-test-kit docs/Test_Case_Generation.md (columns per mode) and
docs/Precision_Comparison.md (what the precision columns mean). Cells are Python literals
(tuples, dicts, None, True); a column missing or a cell empty takes TTK's default.

Mode, from the header as TTK decides it: no api_name column is kernel mode (op_name
log_softmax_grad: inputs grad, x; output y; attribute axis, default [-1]); an api_name starting
with "aclnn" is ACLNN mode (aclnnLogSoftmaxBackward: tensors gradOutput, output, out; attribute
dim); any other api_name is E2E mode (a framework API), which is not read.

Read, both modes: testcase_name (absent: auto_testcase_name_<row>); is_enabled (False: not
imported, as TTK skips it); soc_series (('Ascend910B', '-Ascend310P'): the families named, or
all but the excluded); input_data_ranges (per input tensor, one range serving all; (lo, hi),
(None, None) is TTK's default [-2, 2], lo == hi a fill, values past the second are values TTK
mixes in, which the farm cannot); precision_tolerances ((rtol, ptol) of the output) with
absolute_precision (atol, default 1e-8): TTK's "close" test, |out - golden| <= atol + rtol *
|golden| on all but a ptol fraction, is the farm's case tolerance (Test_Case_Generation.md calls
the pair (rtol, atol); Precision_Comparison.md, which documents the test, (rtol, ptol): this
reading follows the latter). Kernel mode: input_shapes, input_dtypes, input_formats (one value
serves all), output_shapes, output_dtypes, output_formats, the *_ori_* columns (noted when they
differ), attributes, output_inplace_indexes (an output written over an input: not expressible),
manual_input_binaries / manual_golden_binaries (not read: noted). ACLNN mode: tensor_view_shapes,
tensor_dtypes, tensor_formats, tensor_view_strides, tensor_view_offsets, tensor_storage_shapes
(strided views), output_tensor_indexes (default: the last tensor), attributes,
manual_tensor_binaries. TTK expects every enabled case to run and match: expect accept.
Ignored: network_name, remark, priority, dump_file_prefix.
"""

from __future__ import annotations

import ast
import csv
import io
import math
from typing import Any

from suites import limits

from .common import (
    FAMILY_FORMS,
    Imported,
    ImportResult,
    NotExpressible,
    Tensor,
    Unreadable,
    check_format,
    family_of_soc,
    farm_dtype,
    integer,
    make_entry,
    missing_field,
    shape_of,
    storage_layout,
    tolerance,
    value_bounds,
)

OP_NAMES = ("log_softmax_grad", "logsoftmaxgrad")
API_NAME = "aclnnlogsoftmaxbackward"
DEFAULT_RANGE = (-2.0, 2.0)  # TTK's range for (None, None)
DEFAULT_ATOL = 1e-8
COMMON = {
    "testcase_name", "network_name", "input_data_ranges", "precision_tolerances",
    "absolute_precision", "is_enabled", "remark", "soc_series", "priority", "dump_file_prefix",
}  # fmt: skip
KERNEL = COMMON | {
    "op_name", "input_shapes", "input_dtypes", "input_formats", "output_shapes",
    "output_dtypes", "output_formats", "input_ori_shapes", "input_ori_formats",
    "output_ori_shapes", "output_ori_formats", "attributes", "output_inplace_indexes",
    "output_shape_unknown_indexes", "manual_input_binaries", "manual_golden_binaries",
}  # fmt: skip
ACLNN = COMMON | {
    "api_name", "tensor_view_shapes", "tensor_dtypes", "tensor_formats", "tensor_storage_shapes",
    "tensor_view_offsets", "tensor_view_strides", "output_tensor_indexes",
    "output_inplace_indexes", "attributes", "scalar_dtypes", "scalar_data_ranges",
    "manual_tensor_binaries", "manual_golden_binaries",
}  # fmt: skip

# The columns without which no case of a mode has its tensors (or, in ACLNN mode, its dim): a
# header without one is a renamed column, not cases to list one by one.
REQUIRED = {
    "kernel": ("input_shapes", "input_dtypes", "output_shapes", "output_dtypes"),
    "aclnn": ("tensor_view_shapes", "tensor_dtypes", "attributes"),
}


def parse(text: str, source: str) -> ImportResult:
    reader = csv.DictReader(io.StringIO(text))
    most = limits.CASES.value()
    try:
        header = list(reader.fieldnames or [])
        rows = []
        for row in reader:  # counted as read: the rest of a file past the limit is not
            rows.append(row)
            if len(rows) > most:
                limits.CASES.check(len(rows), source, at_least=True)
    except csv.Error as exc:
        raise Unreadable(f"not CSV ({exc}): give a TTK case CSV") from None
    twice = [name for name in dict.fromkeys(header) if name and header.count(name) > 1]
    if twice:  # csv.DictReader keeps the last such column's cell silently
        shown = "; ".join(
            f"{name!r} (columns {', '.join(str(i + 1) for i, h in enumerate(header) if h == name)})"
            for name in twice
        )
        raise Unreadable(
            f"the header names a column twice: {shown}; only the last would count: keep one"
        )
    if "api_name" not in header and "op_name" not in header:
        raise Unreadable(
            "not a TTK case CSV: the header has neither op_name (kernel mode) nor api_name "
            "(ACLNN mode); the first row must name the columns"
        )
    mode = "kernel"
    if "api_name" in header:
        first = next((r["api_name"] for r in rows if (r.get("api_name") or "").strip()), "")
        mode = "aclnn" if first.strip().lower().startswith("aclnn") else "e2e"
    for column in REQUIRED.get(mode, ()):
        if column not in header:
            raise Unreadable(
                missing_field(column, header, "column in the header", KERNEL | ACLNN)
                + f": TTK's {mode} mode needs it for every case"
            )
    result = ImportResult("ttk")
    for index, row in enumerate(rows, start=1):
        if not any(v.strip() for v in row.values() if isinstance(v, str)) and None not in row:
            continue  # an empty line is no case
        name = result.add_case(_cell(row, "testcase_name") or f"auto_testcase_name_{index}")
        try:
            entry = _row(name, row, mode)
        except NotExpressible as exc:
            result.skipped.append((name, str(exc)))
            continue
        result.imported.append(Imported(name, entry))
    return result


def _cell(row: dict[str, Any], column: str) -> str | None:
    value = row.get(column)
    if value is None or not str(value).strip():
        return None
    return str(value).strip()


def _literal(row: dict[str, Any], column: str, default: Any = None) -> Any:
    text = _cell(row, column)
    if text is None:
        return default
    try:
        return ast.literal_eval(text)
    # Python's parser stops nesting (200 brackets: SyntaxError; some thousands of operators:
    # MemoryError, its stack) at once, at a bounded depth.
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        shown = text if len(text) <= 80 else f"{text[:77]}..."
        raise NotExpressible(f"{column} {shown!r} is not a Python literal") from None


def _row(name: str, row: dict[str, Any], mode: str) -> dict[str, Any]:
    if mode == "e2e":
        raise NotExpressible(
            f"TTK E2E mode (api {_cell(row, 'api_name')}): not read; the farm calls "
            "aclnnLogSoftmaxBackward or the operator package"
        )
    extra = row.get(None)  # type: ignore[call-overload]
    if extra:
        raise NotExpressible(f"{len(extra)} cell(s) beyond the header: {extra}")
    notes: list[str] = []
    known = KERNEL if mode == "kernel" else ACLNN
    notes += [f"column {c!r} not read" for c in row if c not in known and _cell(row, c)]
    enabled = _literal(row, "is_enabled", True)
    if enabled is False or str(enabled).lower() == "false":
        raise NotExpressible("disabled in the source (is_enabled False)")
    if _literal(row, "output_inplace_indexes", ()):
        raise NotExpressible(
            "output_inplace_indexes: an output written over an input is not expressible"
        )
    family = _families(_literal(row, "soc_series"), notes)
    if mode == "kernel":
        tensors, axes, api = _kernel(row, notes)
    else:
        tensors, axes, api = _aclnn(row, notes)
    _ranges(row, [tensors["dy"], tensors["y"]], notes)
    tol = _tolerance(row)
    for column in ("manual_input_binaries", "manual_tensor_binaries"):
        if _literal(row, column, ()):
            notes.append(f"{column} not read: the farm draws its own inputs")
    if _literal(row, "manual_golden_binaries", ()):
        notes.append("manual_golden_binaries not read: the farm computes its own golden")
    return make_entry(name, tensors, axes, api, notes, "accept", family, tol)


def _families(value: Any, notes: list[str]) -> list[str] | None:
    if value in (None, (), []):
        return None
    names = list(value) if isinstance(value, (list, tuple, set)) else [value]  # 5: one name
    include = [str(n) for n in names if not str(n).startswith("-")]
    exclude = [str(n)[1:] for n in names if str(n).startswith("-")]
    if include:
        chosen = [f for f in (family_of_soc(n) for n in include) if f]
        others = [n for n in include if family_of_soc(n) is None]
        if not chosen:
            raise NotExpressible(
                f"soc_series {', '.join(include)}: no SoC of the farm's families "
                f"({', '.join(FAMILY_FORMS)})"
            )
        if others:
            notes.append(f"soc_series {', '.join(others)} not farm families: left out")
    else:
        chosen = list(FAMILY_FORMS)
    dropped = {family_of_soc(n) for n in exclude}
    chosen = [f for f in dict.fromkeys(chosen) if f not in dropped]
    if not chosen:
        raise NotExpressible(f"soc_series {value}: every farm family is excluded")
    return chosen


def _shapes(value: Any, what: str) -> list[tuple[int, ...] | None]:
    """A shape-tuple cell as one shape per tensor: ((2, 3), (2, 3)); ((2, 3)) is Python's
    (2, 3), one shape; None is a null tensor; deeper nesting is a TensorList."""
    if value is None or value == ():
        return []
    if isinstance(value, int):
        return [(value,)]
    if not isinstance(value, (tuple, list)):
        raise NotExpressible(f"{what} {value!r} is not a tuple of shapes")
    if all(isinstance(d, int) and not isinstance(d, bool) for d in value):
        return [shape_of(value, what)]
    out: list[tuple[int, ...] | None] = []
    for item in value:
        if item is None:
            out.append(None)
        elif isinstance(item, int):
            out.append((item,))
        elif isinstance(item, (tuple, list)) and all(isinstance(d, int) for d in item):
            out.append(shape_of(item, what))
        else:
            raise NotExpressible(f"{what} {value!r} has a TensorList (not expressible)")
    return out


def _per(value: Any, n: int, what: str, default: Any = None) -> list[Any]:
    """One value per tensor: TTK's broadcast ('ND',) -> every tensor."""
    if value is None or value == ():
        return [default] * n
    items = list(value) if isinstance(value, (list, tuple)) else [value]  # 5: one value
    if len(items) == 1:
        return items * n
    if len(items) != n:
        raise NotExpressible(f"{what} {value!r} gives {len(items)} values for {n} tensors")
    return items


def _tensors(
    labels: list[str], shapes: list[Any], dtypes: list[Any], formats: list[Any], notes: list[str]
) -> list[Tensor]:
    out = []
    for label, shape, dtype, fmt in zip(labels, shapes, dtypes, formats, strict=True):
        if shape is None or dtype is None:
            out.append(Tensor(missing=True))
            continue
        check_format(fmt or "ND", label, notes)
        out.append(Tensor(farm_dtype(dtype, f"{label} dtype"), shape))
    return out


def _kernel(row: dict[str, Any], notes: list[str]) -> tuple[dict[str, Tensor], list[int], str]:
    op = _cell(row, "op_name") or ""
    if op.lower() not in OP_NAMES:
        raise NotExpressible(f"op_name {op!r} is not log_softmax_grad")
    ins = _shapes(_literal(row, "input_shapes"), "input_shapes")
    outs = _shapes(_literal(row, "output_shapes"), "output_shapes")
    if len(ins) != 2:
        raise NotExpressible(
            f"input_shapes names {len(ins)} tensors; log_softmax_grad takes 2 (grad, x)"
        )
    if len(outs) != 1:
        raise NotExpressible(f"output_shapes names {len(outs)} tensors; log_softmax_grad has 1")
    dtypes = _per(_literal(row, "input_dtypes"), 2, "input_dtypes")
    formats = _per(_literal(row, "input_formats"), 2, "input_formats", "ND")
    out_dtype = _per(_literal(row, "output_dtypes"), 1, "output_dtypes")
    out_format = _per(_literal(row, "output_formats"), 1, "output_formats", "ND")
    dy, y = _tensors(["grad", "x"], ins, dtypes, formats, notes)
    (out,) = _tensors(["y"], outs, out_dtype, out_format, notes)
    for column, same_as in (("input_ori_shapes", ins), ("output_ori_shapes", outs)):
        ori = _literal(row, column)
        if ori is not None and _shapes(ori, column) != same_as:
            notes.append(f"{column} {ori} ignored (the farm passes the shapes)")
    for column in ("input_ori_formats", "output_ori_formats"):
        ori = _literal(row, column)
        values = list(ori) if isinstance(ori, (list, tuple)) else [] if ori is None else [ori]
        if any(str(f).upper() != "ND" for f in values):
            notes.append(f"{column} {ori} ignored")
    if _literal(row, "output_shape_unknown_indexes", ()):
        notes.append("output_shape_unknown_indexes ignored (y's shape is grad's)")
    attrs = _literal(row, "attributes", {})
    if not isinstance(attrs, dict):
        raise NotExpressible(f"attributes {attrs!r} is not a dict")
    axes = [-1]  # the prototype's default
    for key, value in attrs.items():
        if str(key).lower() in ("axis", "axes", "dim"):
            if key != "axis":
                notes.append(f"attribute {key!r} read as log_softmax_grad's axis")
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            axes = [integer(v, f"attribute {key}") for v in values]
        else:
            notes.append(f"attribute {key}={value!r} is not log_softmax_grad's (axis): ignored")
    return {"dy": dy, "y": y, "out": out}, axes, "axes"


def _aclnn(row: dict[str, Any], notes: list[str]) -> tuple[dict[str, Tensor], list[int], str]:
    api = _cell(row, "api_name") or ""
    if api.lower() != API_NAME:
        raise NotExpressible(f"api_name {api!r} is not aclnnLogSoftmaxBackward")
    shapes = _shapes(_literal(row, "tensor_view_shapes"), "tensor_view_shapes")
    n = len(shapes)
    if n not in (2, 3):
        raise NotExpressible(
            f"tensor_view_shapes names {n} tensors; aclnnLogSoftmaxBackward takes gradOutput, "
            "output and out"
        )
    dtypes = _per(_literal(row, "tensor_dtypes"), n, "tensor_dtypes")
    formats = _per(_literal(row, "tensor_formats"), n, "tensor_formats", "ND")
    labels = ["gradOutput", "output", "out"][:n]
    made = _tensors(labels, shapes, dtypes, formats, notes)
    strides = _literal(row, "tensor_view_strides", ())
    offsets = _literal(row, "tensor_view_offsets", ())
    storages = _literal(row, "tensor_storage_shapes", ())
    for i, tensor in enumerate(made):
        view = _view(i, tensor, strides, offsets, storages)
        if view is not None:
            tensor.layout = view
    outputs = _literal(row, "output_tensor_indexes")
    out_index = n - 1
    if outputs not in (None, ()):
        indexes = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if len(indexes) != 1 or not isinstance(indexes[0], int) or not 0 <= indexes[0] < n:
            raise NotExpressible(f"output_tensor_indexes {outputs!r} does not name one tensor")
        out_index = indexes[0]
    order = [i for i in range(n) if i != out_index] + [out_index]
    if n == 2:  # no out tensor given: TTK makes it like gradOutput (or output)
        like = [made[i] for i in order if not made[i].missing] or [made[order[0]]]
        made.append(Tensor(like[0].dtype, like[0].shape, missing=like[0].missing))
        order = [order[0], 2, order[1]]
        notes.append("no out tensor: out taken as gradOutput's dtype and shape")
    tensors = {"dy": made[order[0]], "y": made[order[1]], "out": made[order[2]]}
    attrs = _literal(row, "attributes", {})
    if not isinstance(attrs, dict) or "dim" not in attrs:
        raise NotExpressible(f"attributes {attrs!r} has no dim")
    dim = integer(attrs["dim"], "attribute dim")
    notes += [f"attribute {k}={v!r} not read" for k, v in attrs.items() if k != "dim"]
    if _literal(row, "scalar_dtypes", ()):
        notes.append("scalar_dtypes not read (aclnnLogSoftmaxBackward takes no scalar)")
    return tensors, [dim], "dim"


def _view(i: int, tensor: Tensor, strides: Any, offsets: Any, storages: Any) -> dict | None:
    def at(values: Any) -> Any:
        if isinstance(values, (tuple, list)) and i < len(values):
            return values[i]
        return None

    stride, offset, storage = at(strides), at(offsets), at(storages)
    if tensor.missing or tensor.shape is None or (stride is None and not offset and not storage):
        return None
    shape = tensor.shape
    if stride is None:
        stride = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    stride = list(shape_of(stride, "tensor_view_strides"))
    if len(stride) != len(shape):
        raise NotExpressible(f"tensor_view_strides {stride} do not fit shape {list(shape)}")
    off = integer(offset or 0, "tensor_view_offsets")
    size = list(shape_of(storage, "tensor_storage_shapes")) if storage is not None else None
    return storage_layout(shape, stride, off, size)


def _ranges(row: dict[str, Any], inputs: list[Tensor], notes: list[str]) -> None:
    value = _literal(row, "input_data_ranges", ((None, None),))
    labels = ["dy", "y"]
    items = _per(value, 2, "input_data_ranges", (None, None))
    for label, tensor, item in zip(labels, inputs, items, strict=True):
        if tensor.missing:
            continue
        if item is None:
            item = (None, None)
        if not isinstance(item, (tuple, list)) or len(item) < 2:
            raise NotExpressible(f"input_data_ranges {item!r} of {label} is not (min, max)")
        lo, hi = item[0], item[1]
        if isinstance(lo, (tuple, list)):
            raise NotExpressible("input_data_ranges is nested (a TensorList): not expressible")
        if lo is None or hi is None:
            lo, hi = DEFAULT_RANGE[0] if lo is None else lo, DEFAULT_RANGE[1] if hi is None else hi
        tensor.values = value_bounds(lo, hi, f"input_data_ranges of {label}")
        if len(item) > 2:
            notes.append(
                f"{label} values {list(item[2:])} that TTK mixes in are not expressible: left out"
            )


def _tolerance(row: dict[str, Any]) -> dict[str, float] | None:
    pairs = _literal(row, "precision_tolerances")
    if pairs in (None, ()):
        return None
    pair = (
        pairs[0]
        if isinstance(pairs, (tuple, list)) and pairs and isinstance(pairs[0], (tuple, list))
        else pairs
    )
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
        raise NotExpressible(f"precision_tolerances {pairs!r} is not ((rtol, ptol),)")
    atol = _literal(row, "absolute_precision", DEFAULT_ATOL)
    while isinstance(atol, (tuple, list)) and atol:
        atol = atol[0]
    return tolerance(pair[0], atol, pair[1], "precision_tolerances")
