"""What the operator must do with a call, from the contract alone (SPEC section 2).

This is written independently of the operator's own parameter checks: the farm compares the two.
Checks run in a fixed order so that a call with one defect has exactly one expected reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from golden import reasons

SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")
MAX_RANK = 8

STATUS_OK = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002

# The contract's reasons, {name: (id, status)}: the table the operator compiles too
# (op/tiling/reasons.def through golden/reasons.py), ids 0-99.
REASONS = {r.name: (r.id, r.status) for r in reasons.CONTRACT.values()}
REASON_BY_ID = {rid: name for name, (rid, _) in REASONS.items()}
REJECTION_REASONS = tuple(r for r in REASONS if r != "ok")


@dataclass(frozen=True)
class Call:
    """The descriptors of one operator call; None stands for a missing tensor."""

    dy_shape: tuple[int, ...] | None
    dy_dtype: str
    y_shape: tuple[int, ...] | None
    y_dtype: str
    out_shape: tuple[int, ...] | None
    out_dtype: str
    axes: tuple[int, ...]
    bf16_cast: bool  # whether the SoC can cast bf16 to fp32


@dataclass(frozen=True)
class Expected:
    reason: str

    @property
    def status(self) -> int:
        return REASONS[self.reason][1]

    @property
    def accepted(self) -> bool:
        return self.reason == "ok"


def normalize_axes(axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """Axes as non-negative indices; a 0-d tensor counts as rank 1 (dim -1 or 0)."""
    n = max(rank, 1)
    return tuple(a + n if a < 0 else a for a in axes)


def axes_in_range(axes: tuple[int, ...], rank: int) -> bool:
    n = max(rank, 1)
    return all(-n <= a <= n - 1 for a in axes)


def axes_consecutive(normalized: tuple[int, ...]) -> bool:
    ordered = sorted(normalized)
    return len(set(ordered)) == len(ordered) and ordered[-1] - ordered[0] == len(ordered) - 1


def expected_outcome(call: Call) -> Expected:
    if call.dy_shape is None or call.y_shape is None or call.out_shape is None:
        return Expected("null_tensor")
    if call.dy_dtype not in SUPPORTED_DTYPES:
        return Expected("dtype_unsupported")
    if call.y_dtype != call.dy_dtype or call.out_dtype != call.dy_dtype:
        return Expected("dtype_mismatch")
    if call.dy_dtype == "bfloat16" and not call.bf16_cast:
        return Expected("bf16_unsupported_on_soc")
    rank = len(call.dy_shape)
    if rank > MAX_RANK:
        return Expected("rank_too_large")
    if call.y_shape != call.dy_shape or call.out_shape != call.dy_shape:
        return Expected("shape_mismatch")
    if not call.axes:
        return Expected("axes_empty")
    if not axes_in_range(call.axes, rank):
        return Expected("dim_out_of_range")
    if not axes_consecutive(normalize_axes(call.axes, rank)):
        return Expected("axes_not_consecutive")
    # An empty tensor is accepted here, after every check, with workspace 0.
    return Expected("ok")


SCHEDULES = ("NO_REDUCE", "REDUCE_TAIL", "REDUCE_MID")


def merge_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, int, int]:
    """[d0, d1, d2]: product before the first reduce axis, of the reduce axes, after the last."""
    rank = len(shape)
    norm = sorted(normalize_axes(axes, rank))
    dims = shape if rank else (1,)
    first, last = norm[0], norm[-1]

    def prod(xs):
        out = 1
        for x in xs:
            out *= x
        return out

    return prod(dims[:first]), prod(dims[first : last + 1]), prod(dims[last + 1 :])


def schedule(shape: tuple[int, ...], axes: tuple[int, ...]) -> str:
    _, d1, d2 = merge_shape(shape, axes)
    if d1 == 1:
        return "NO_REDUCE"
    return "REDUCE_TAIL" if d2 == 1 else "REDUCE_MID"
