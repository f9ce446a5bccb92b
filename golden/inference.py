"""The operator's graph inference judged against the contract: what GE's shape and dtype inference
of a LogSoftmaxGrad node must say (SPEC section 2: out has gradOutput's shape and dtype).

GE runs the inference functions the OpDef registers (InferShape, InferDataType) on every node of
a graph, before any check of the call: a node whose output (y) differs from gradOutput (dy) in
shape or dtype is still inferred, and refused only later. So the contract's inference reads dy
alone: out's shape is dy's, out's dtype is dy's, and both functions return GRAPH_SUCCESS.

What was inferred (farm/agent/backends/layers.py infer) has one form:

    {"shape_status": int, "shape": [int, ...], "dtype_status": int, "dtype": str}

the statuses ge::graphStatus codes, the dtype a contract name ("undefined" where none was set).
This module is written from the contract alone, as golden/contract.py is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

GRAPH_SUCCESS = 0
GRAPH_FAILED = 0xFFFFFFFF  # ge::GRAPH_FAILED


def expected(dy_shape: Sequence[int], dy_dtype: str) -> dict[str, Any]:
    """The contract's inference of a node whose gradOutput has `dy_shape` and `dy_dtype`,
    whatever its output (y) is."""
    return {
        "shape_status": GRAPH_SUCCESS,
        "shape": [int(d) for d in dy_shape],
        "dtype_status": GRAPH_SUCCESS,
        "dtype": dy_dtype,
    }


def status_text(status: int) -> str:
    if status == GRAPH_SUCCESS:
        return "GRAPH_SUCCESS"
    return "GRAPH_FAILED" if status == GRAPH_FAILED else f"status {status}"


def shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def problems(inferred: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """Every way `inferred` departs from the contract's inference `want` (expected's form); []
    when it is the contract's. Each names the function, what it gave and what was due."""
    found = []
    if inferred.get("shape_status") != want["shape_status"]:
        found.append(
            f"InferShape returned {status_text(int(inferred.get('shape_status', -1)))}, "
            f"not {status_text(want['shape_status'])}"
        )
    shape = list(inferred.get("shape") or [])
    if shape != list(want["shape"]):
        found.append(
            f"InferShape gave out the shape {shape_text(shape)}; gradOutput's is "
            f"{shape_text(want['shape'])}"
        )
    if inferred.get("dtype_status") != want["dtype_status"]:
        found.append(
            f"InferDataType returned {status_text(int(inferred.get('dtype_status', -1)))}, "
            f"not {status_text(want['dtype_status'])}"
        )
    if inferred.get("dtype") != want["dtype"]:
        found.append(
            f"InferDataType gave out the dtype {inferred.get('dtype')}; gradOutput's is "
            f"{want['dtype']}"
        )
    return found
