"""The cases that check one deciding layer of the operator on its own (docs/judging.md, "Each
deciding layer on its own"): layers that decide the same thing hide each other in a whole call
(bf16 on Ascend310B is refused by the OpDef registration and by the tiling function, so breaking
either alone leaves every call right), so each is asked alone.

- registration: one case a family, the OpDef registration of the family read from the built
  operator and judged whole against the contract's table (golden/registration.py);
- tiling: the rejections section's calls (suites/matrix_values.py rejections) that the tiling
  function decides, and bf16 with data on a family that cannot cast it, run through the host tiling
  function alone, the registration out of the way, judged by status and reason against
  golden/contract.py. A missing tensor is left out: the aclnn layer refuses it before any other.
- infer: the graph inference the OpDef registers (InferShape, InferDataType), which GE runs on a
  graph's node and no aclnn call ever does, run on nodes of gradOutput and output, judged against
  the contract's inference (golden/inference.py: out is gradOutput's shape and dtype). Inference
  runs before any check, so each node's output (y) differs from gradOutput in shape and dtype
  (ranks 0 to 8, every dtype): reading input 1 for input 0 gives a wrong out. The full tiers add
  more ranks, an empty gradOutput and nodes whose y matches gradOutput.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from suites.case import Case
from suites.matrix_space import FAMILIES, casts, make_case
from suites.matrix_values import rejections

ORIGIN = "layers"
# (gradOutput's shape, output's shape) of the infer nodes: ranks 0, 1, 3 and 8, each y of another
# shape and rank; the full tiers add ranks 2, 4, 5 and an empty gradOutput.
INFER_NODES = (
    ((), (5, 6)),
    ((7,), (2, 3)),
    ((2, 3, 4), (5, 6)),
    ((2, 1, 3, 1, 2, 1, 2, 2), (4,)),
)
INFER_NODES_FULL = (
    ((3, 5), (5, 3)),
    ((2, 3, 4, 5), (6,)),
    ((1, 2, 3, 4, 5), (2, 3)),
    ((2, 0, 3), (2, 3)),
)


def layers(family: str, dtypes, full: bool) -> Iterator[Case]:
    yield Case(family, "float32", (), (-1,), layer="registration", origin=ORIGIN)
    calls = list(rejections(family, dtypes, full))
    if not casts(family, "bfloat16"):
        calls.append(make_case(family, "bfloat16", (3, 5), (-1,), ORIGIN))
    for call in calls:
        if call.expected.reason not in ("ok", "null_tensor"):
            yield replace(call, layer="tiling", origin=ORIGIN)
    yield from infer_nodes(family, dtypes, full)


def infer_nodes(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The infer cases of a family: every node of INFER_NODES (and INFER_NODES_FULL in the full
    tiers), gradOutput's dtype taking turns over the dtypes (shifted by the family, so that the
    families together give each rank two dtypes) and output's the next dtype. The graph engine
    infers before any check, so every dtype is inferred on every family; the full tiers give
    every node every dtype, and each dtype a node whose y matches gradOutput."""
    turn = FAMILIES.index(family)
    nodes = INFER_NODES + (INFER_NODES_FULL if full else ())
    for i, (shape, y_shape) in enumerate(nodes):
        chosen = dtypes if full else (dtypes[(i + turn) % len(dtypes)],)
        for dtype in chosen:
            other = dtypes[(dtypes.index(dtype) + 1) % len(dtypes)]
            yield _node(family, dtype, shape, other, y_shape)
    if full:
        for dtype in dtypes:
            yield _node(family, dtype, (3, 5), None, None)


def _node(family, dtype, shape, y_dtype, y_shape) -> Case:
    return Case(
        family, dtype, shape, (-1,), y_dtype=y_dtype, y_shape=y_shape, layer="infer",
        origin=ORIGIN,
    )  # fmt: skip
