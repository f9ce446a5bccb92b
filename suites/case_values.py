"""What a case is made of, below the Case itself (suites/case.py): the names its fields take
(dtypes and their short ids, the APIs, tensors, standards), the text of its values in ids and
their JSON forms, the bounds' helpers of its checks, and the error of a malformed case.
"""

from __future__ import annotations

import math
import re
from typing import Any

from golden import layouts
from golden.standards import ERROR_BOUND, STANDARDS
from suites import limits

DTYPE_SHORT = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int32": "i32",
    "int64": "i64",
    # Descriptor-only (golden.dtypes.DESCRIPTOR_ONLY): rejection cases that pass the operator a
    # tensor descriptor without data, as an outside suite's complex cases do.
    "complex64": "c64",
    "complex128": "c128",
}
APIS = ("dim", "axes")  # the aclnn call (one dim) or the operator package's axis list
LAYOUTS = layouts.NAMES  # the short names; an explicit golden.layouts.View is also a layout
TENSORS = ("dy", "y", "out")
# The layer of the operator a case checks on its own (docs/judging.md "Each deciding layer"):
# "" the whole call through the backend; "registration" the OpDef registration of the case's
# family against the contract's table (golden/registration.py); "tiling" the host tiling function
# alone on the call, the registration out of the way; "infer" the graph inference (InferShape,
# InferDataType) on a node of the call's gradOutput and output (golden/inference.py).
LAYERS = ("", "registration", "tiling", "infer")
# The one canonical NaN: a fill of NaN is this object, so that equal cases compare and hash equal
# (float("nan") != float("nan"), and its hash is per object).
NAN = float("nan")
_NONFINITE_JSON = {"inf": math.inf, "-inf": -math.inf, "nan": NAN}
TUPLE_FIELDS = ("shape", "axes", "y_shape", "out_shape")
EXPLORE_TAG = re.compile(r"[A-Za-z0-9-]{1,40}\.\d+")
CASE_STANDARDS = (*STANDARDS, ERROR_BOUND)  # what golden.standards.judge_standard judges
# How every note that an outside source's expectation departs from the contract ends (casefile,
# the importers): the report tags those cases "departs from its source", not every note.
DEPARTS = "judged by the contract"


def shape_text(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "none"
    return "x".join(str(d) for d in shape) if shape else "scalar"


def number_text(x: float) -> str:
    """Short, stable text of a value for case ids: 1000, -1, 0.5, 1e38, -0, inf, -inf, nan."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x).replace("e+", "e")


def value_json(x: float | None) -> float | str | None:
    """A fill value as JSON carries it: a number, or "inf", "-inf", "nan"."""
    if x is None or math.isfinite(x):
        return x
    return number_text(x)


def fill_value(x: Any) -> Any:
    """A fill value from a number or its JSON string form; anything else is returned as is (and
    refused by validation). NaN becomes the canonical NAN."""
    if isinstance(x, str) and x in _NONFINITE_JSON:
        return _NONFINITE_JSON[x]
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        x = float(x)
        return NAN if math.isnan(x) else x
    return x


def is_range(bounds: Any) -> bool:
    return (
        isinstance(bounds, tuple)
        and len(bounds) == 2
        and all(isinstance(v, float) and math.isfinite(v) for v in bounds)
        and bounds[0] < bounds[1]
    )


def in_int64(value: Any) -> bool:
    return not isinstance(value, int) or -limits.MAX_INT64 - 1 <= value <= limits.MAX_INT64


def elements(shape: tuple[int, ...]) -> int:
    """The elements of a shape with its zero extents left out (what numpy sizes an array by,
    even an empty one)."""
    n = 1
    for d in shape:
        if isinstance(d, int) and d > 0:
            n *= d
    return n


def count(n: int) -> str:
    """A count as a message says it: 1,048,576, or about 10^24 past what anyone reads."""
    return f"{n:,}" if n < 10**15 else f"about 10^{len(str(n)) - 1}"


def cut(value: Any, chars: int = 60) -> str:
    """A value as a message quotes it, cut short: a bound's message never quotes it whole."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= chars else f"{text[: chars - 20]}...{text[-12:]}"


class MalformedCase(ValueError):
    """A case whose fields do not make a call; `problems` has one entry per bad field, each
    naming the field and the fix."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("malformed case: " + "; ".join(self.problems))
