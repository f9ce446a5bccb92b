"""The case request: what a case holds on its way to an agent, in its JSON form.

One typed definition, as the result record has one (farm/agent/record.py): suites.case.Case.to_dict
writes it, the channel and the protocol carry it (farm/pool/transport, farm/agent/protocol.py),
the agent reads it (farm/agent/execute.py) and hands its backend what it says. A field added to a
case is added here, and the type checker finds every reader.

Standard library only: this module ships to hosts with the agent.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# A tensor's layout in JSON: "contiguous", "strided", or a view {"strides", "storage", "offset"}
# (golden/layouts.py).
LayoutJson = str | dict[str, Any]


class Expectation(TypedDict, total=False):
    """What the contract says of the call (suites/case.py Case.expectation)."""

    # registration: golden/registration.py; infer: golden/inference.py (its expected form too)
    kind: Literal["precision", "reject", "registration", "infer"]
    standard: str | None  # precision: the standard that gates it
    level: str | None  # benchmark-ratio's L0/L1/L2
    tolerance: dict[str, float] | None  # the case's own bound, judged too
    status: int  # reject: the aclnn status
    reason: str  # reject: the golden.contract reason
    shape_status: int  # infer: InferShape's ge::graphStatus due (GRAPH_SUCCESS)
    shape: list[int]  # infer: out's shape due (gradOutput's)
    dtype_status: int  # infer: InferDataType's ge::graphStatus due
    dtype: str  # infer: out's dtype due (gradOutput's)


class CaseRequest(TypedDict, total=False):
    """A case as it travels: its fields (suites/case.py Case), then what is derived from them."""

    family: str
    dtype: str
    shape: list[int]
    axes: list[int]
    api: Literal["dim", "axes"]  # the seed's one-dim entry, or the axis list
    y_dist: str
    dy_dist: str
    special: str
    layout: str  # the layouts' summary: "contiguous" or "strided"
    dy_layout: LayoutJson
    y_layout: LayoutJson
    out_layout: LayoutJson
    standard: str
    level: str | None
    # Perturbations that make the call invalid (None: as dy).
    y_dtype: str | None
    out_dtype: str | None
    y_shape: list[int] | None
    out_shape: list[int] | None
    missing: Literal["dy", "y", "out"] | None
    # Inputs given by the case rather than drawn; fills as numbers or "nan", "inf", "-inf".
    y_range: list[float] | None
    dy_range: list[float] | None
    y_fill: float | str | None
    dy_fill: float | str | None
    special_at: str
    tolerance: dict[str, float] | None
    explore: str
    layer: str  # suites/case_values.py LAYERS: "" the whole call, "registration", "tiling", "infer"
    # Derived.
    id: str
    seed: int
    schedule: str
    expect: Expectation
    origin: str  # the matrix section or case file it came from
    note: str  # where an outside source departs from the contract
