"""The case matrices by tier: smoke (pre-merge), nightly (public L0 volume), full (L2 volume).

Curated sections name the situations where kernels break (schedules, chunk boundaries, core
splits, ranks, empty tensors, special values, every rejection), and the inputs a caller may write
that no generator family makes (value ranges, constant fills, special values at a chosen place of
a row, a layout per tensor, extents at every grouping constant of the kernel). The nightly and
full tiers add cases drawn from a seeded space of shapes on top of the curated ones. Expansion is
deterministic: the same tier always gives the same cases in the same order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from farm.util.errors import UsageError
from golden import inputs, soc
from golden.layouts import View

from . import gates
from .case import Case
from .tiling import UB_BLOCKS

TIERS = ("smoke", "nightly", "full")
FAMILIES = tuple(soc.FAMILIES)
DTYPES = ("float32", "float16", "bfloat16")
Y_DISTS = ("uniform", "normal", "peaked", "flat", "wide", "masked", "arbitrary")
DY_DISTS = ("normal", "uniform", "ones", "outliers")
SPECIALS = ("nan_dy", "inf_dy", "nan_y", "neginf_y")
PRECISION_STANDARDS = (
    ("mixed-tolerance", None),
    ("double-thousandth", None),
    ("benchmark-ratio", "L0"),
    ("benchmark-ratio", "L1"),
    ("benchmark-ratio", "L2"),
)

# Volume per tier: random cases per (family, dtype) on top of the curated sections.
# 310B bf16 cases are all rejections, so that group needs only the per-dtype minimum.
RANDOM_CASES = {"smoke": 0, "nightly": 800, "full": 5700}
RANDOM_CASES_REJECTED_GROUP = {"smoke": 0, "nightly": 200, "full": 700}
RANDOM_NUMEL_CAP = 1 << 17


def _block_elements(profile: soc.SocProfile, blocks: int, two_byte: bool) -> int:
    """Elements of one UB block in the operator's plan (op/README.md): the UB split into
    `blocks` equal blocks aligned to the block size, fp32 compute for every dtype, and for
    2-byte dtypes aligned to 16 so the back-half load starts on a block boundary."""
    block_bytes = (profile.ub_bytes // blocks) // profile.block_bytes * profile.block_bytes
    elements = block_bytes // 4
    return elements // 16 * 16 if two_byte else elements


def _boundaries(blocks: int) -> tuple[int, ...]:
    """Row lengths at and just past one UB block, and a multi-chunk row with a ragged tail."""
    caps = sorted(
        {_block_elements(p, blocks, two) for p in soc.PROFILES.values() for two in (False, True)}
    )
    return tuple(n for cap in caps for n in (cap - 1, cap, cap + 1, 2 * cap + 3))


TAIL_BLOCKS, MID_BLOCKS = 5, 6  # REDUCE_TAIL plans 5 UB blocks; REDUCE_MID and NO_REDUCE 6
CHUNK_BOUNDARIES = _boundaries(TAIL_BLOCKS)
MID_CHUNK_BOUNDARIES = _boundaries(MID_BLOCKS)
REDUCE_SMALL = (2, 3, 7, 16, 17, 31)
REDUCE_ALIGNED = (16, 1024, 8192)
REDUCE_UNALIGNED = (17, 1023, 4097)
REDUCE_VOCAB = (32000, 152064)
MID_INNER = (1, 7, 33, 4096)
CORE_COUNTS = sorted({p.vector_cores for p in soc.PROFILES.values()})
OUTER_AROUND_CORES = tuple(sorted({max(1, c + k) for c in CORE_COUNTS for k in (-1, 0, 1)} | {97}))
# The layout cases had before per-tensor layouts: dy and y strided, out contiguous.
STRIDED_INPUTS = {"dy_layout": "strided", "y_layout": "strided"}

# The kernel's grouping constants (op/twin/kernel.cpp kMidGroupLines and reduce_sum's kLanes;
# op/ascendc/op_kernel MID_GROUP_LINES; tests/suites/test_matrix.py keeps them equal).
MID_GROUP_LINES = 64  # REDUCE_MID sums its d1 lines in groups of this many
REDUCE_LANES = 64  # REDUCE_TAIL's tree reduction works on this many fp32 lanes

# Axis lists the operator must refuse: duplicates (also once normalised) and gaps.
BAD_AXIS_LISTS = (
    ((3, 4, 5), (2, 2)),
    ((2, 3, 4, 5), (1, 3)),
    ((2, 3, 4, 5), (1, 2, 2)),
    ((3, 4, 5, 6), (0, 1, 3)),
    ((4, 5), (-1, 1)),
    ((5, 6, 7), (-1, 0)),
)
# Ties of the output rounding: with dy integers in [0, 16) (mean 7.5) and y = 0, a line of n
# elements sums to about 7.5 n, and the outputs dy - sum are exact integers; where the sum lies in
# [2^11, 2^12) for fp16 or [2^8, 2^9) for bf16 every odd output is a tie (golden/inputs.py).
TIE_LINES = {"float16": 400, "bfloat16": 51}
TIES: dict[str, Any] = {"y_dist": "fill", "y_fill": 0.0, "dy_dist": "integers"}
# Long reductions whose rounding errors do not cancel: a constant that fp32 cannot sum exactly
# (its running sum drifts one way: 3x the error bound over 3,000 lines, where random same-sign
# values only random-walk), and same-sign values. Only fp32 outputs show the order of a sum: in
# fp16/bf16 the output's own rounding is larger than any fp32 sum's drift.
CONSTANT_DY: dict[str, Any] = {"dy_dist": "fill", "dy_fill": 0.1}
SAME_SIGN_DY: dict[str, Any] = {"dy_dist": "range", "dy_range": (0.5, 1.5)}

# Inputs a caller may write that no generator family makes.
Y_RANGES = ((-1000.0, 1000.0), (1.0, 1000.0))  # arbitrary y, exp(y) overflowing fp32
# dy ranges whose outputs overflow the dtype (fp16 max 65504; bf16 and fp32 about 3.4e38).
DY_OVERFLOW_RANGES = {
    "float16": (-60000.0, 60000.0),
    "bfloat16": (-1e38, 1e38),
    "float32": (-1e38, 1e38),
}
# Outputs that overflow the dtype through exp(y) * sum(dy) while sum(dy) itself stays finite in
# fp32 (with DY_OVERFLOW_RANGES, bf16 and fp32 overflow the fp32 sum itself, which a float64
# golden does not): (dy range, y range).
PRODUCT_OVERFLOW = {
    "float16": ((-60000.0, 60000.0), (1.0, 100.0)),
    "bfloat16": ((-1e30, 1e30), (1.0, 100.0)),
    "float32": ((-1e30, 1e30), (1.0, 100.0)),
}
# A large finite dy, per dtype, and a y whose exp overflows fp32.
DY_LARGE = {"float16": 60000.0, "bfloat16": 1e38, "float32": 1e38}
Y_LARGE = 100.0
FILLS = (0.0, 1.0, -1.0, math.inf, -math.inf, math.nan)
NEW_SPECIALS = tuple(s for s in inputs.ALL_SPECIALS if s not in ("none",) + SPECIALS)
ROW_PLACEMENTS = tuple(p for p in inputs.SPECIAL_PLACEMENTS if p != "random")
ALL_PLACED_SPECIALS = SPECIALS + NEW_SPECIALS


def block_elems(family: str, dtype: str, schedule: str) -> tuple[int, ...]:
    """The tiling's block_elems (elements of one UB block) on the SoCs of `family` for a case
    of `dtype` on `schedule`, computed as op/tiling/tiling.cpp does (tests/op checks it against
    the twin's own plan)."""
    two = dtype in ("float16", "bfloat16")
    return tuple(
        sorted(
            {
                _block_elements(p, UB_BLOCKS[schedule], two)
                for p in soc.PROFILES.values()
                if p.family == family
            }
        )
    )


def _around(k: int) -> tuple[int, int, int]:
    return (k - 1, k, k + 1)


def _case(family: str, dtype: str, shape, axes, origin: str, **kw) -> Case:
    api = kw.pop("api", "dim" if len(axes) == 1 else "axes")
    case = Case(family, dtype, tuple(shape), tuple(axes), api=api, origin=origin, **kw)
    if "standard" not in kw and case.accepted:
        standard, level = gates.default_gate(dtype, case.numel, case.y_dist, case.dy_dist)
        case = replace(case, standard=standard, level=level)
    return case


# -- curated sections: each takes (family, dtypes, full) and yields cases ----------------------


def schedules(family: str, dtypes, full: bool) -> Iterator[Case]:
    shapes = [
        ((4, 1, 33), (1,)),  # NO_REDUCE inside a larger tensor
        ((1,), (0,)),  # NO_REDUCE, rank 1
        ((3, 17), (-1,)),  # REDUCE_TAIL, unaligned
        ((2, 1024), (1,)),  # REDUCE_TAIL, aligned
        ((2, 7, 33), (1,)),  # REDUCE_MID
        ((3, 16, 7), (-2,)),  # REDUCE_MID, negative dim
    ]
    if full:
        shapes += [((2, n), (1,)) for n in REDUCE_SMALL + REDUCE_ALIGNED + REDUCE_UNALIGNED]
        shapes += [((2, 17, inner), (1,)) for inner in MID_INNER]
        shapes += [((1, 4096, 1), (1,)), ((5, 1, 1), (1,)), ((7, 1), (-1,))]
    for dtype in dtypes:
        for shape, axes in shapes:
            yield _case(family, dtype, shape, axes, "schedules")


def chunk_rows(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Rows that fit one UB block exactly, miss by one, and span many blocks (tails); smoke: at
    the family's own block (block_multiples adds the other boundaries)."""
    for dtype in dtypes if full else [d for d in dtypes if _casts(family, d)]:
        tail: Sequence[int] = CHUNK_BOUNDARIES
        mid: Sequence[int] = MID_CHUNK_BOUNDARIES
        if not full:
            tail = [n for b in block_elems(family, dtype, "REDUCE_TAIL") for n in (b, b + 1)]
            mid = [b + 1 for b in block_elems(family, dtype, "REDUCE_MID")]
        for n in tail:
            yield _case(family, dtype, (2, n), (-1,), "chunk-rows")
        # REDUCE_MID chunks its d2 columns, which sit side by side in a block.
        for n in mid:
            yield _case(family, dtype, (1, 3, n), (1,), "chunk-rows")
        for n in REDUCE_VOCAB if full else REDUCE_VOCAB[:1]:
            yield _case(family, dtype, (1, n), (1,), "chunk-rows", dy_dist="uniform")


def core_splits(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Outer extents below, at and above every core count, with remainders."""
    outers = (
        OUTER_AROUND_CORES
        if full
        else (max(CORE_COUNTS) + 1, min(c for c in CORE_COUNTS if c > 1) + 1)
    )
    for dtype in dtypes:
        for rows in outers:
            yield _case(family, dtype, (rows, 19), (-1,), "core-splits")
            if full:
                yield _case(family, dtype, (rows, 5, 7), (1,), "core-splits")


def ranks(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Rank 0 to 8 with every dim, positive and negative."""
    for i, dtype in enumerate(dtypes):
        yield _case(family, dtype, (), (-1,), "ranks")
        yield _case(family, dtype, (), (0,), "ranks")
        if full:
            yield _case(family, dtype, (), (0,), "ranks", api="axes")
        for rank in range(1, 9):
            shape = tuple(2 + (j % 3) for j in range(rank))
            dims: Sequence[int]
            if full:
                dims = range(-rank, rank)
            elif rank == 8:
                dims = (0, -4, 7)
            elif rank % len(dtypes) == i:  # smoke: ranks 1-7 once each, dtypes taking turns
                dims = (rank // 2 - rank,)
            else:
                dims = ()
            for dim in dims:
                yield _case(family, dtype, shape, (dim,), "ranks")


def axis_lists(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The operator package's axis-list entry point with consecutive lists."""
    lists = [((2, 3, 4, 5, 6), (1, 2, 3)), ((6, 5, 40), (1, 2)), ((3, 4, 5, 6, 7), (-2, -1))]
    if full:
        lists += [
            ((2, 3, 4, 5, 6), (0, 1)),
            ((2, 3, 4, 5, 6), (0, 1, 2, 3, 4)),
            ((2, 3, 4, 5, 6), (3, 2, 1)),  # consecutive but given out of order
            ((2, 2, 2, 2, 2, 2, 2, 3), (2, 3, 4, 5)),
            ((4, 1, 1, 9), (1, 2)),  # reduce extent 1 over two axes: NO_REDUCE
            ((3, 7), (-1,)),
        ]
    for dtype in dtypes:
        for shape, axes in lists:
            yield _case(family, dtype, shape, axes, "axis-lists", api="axes")


def empty_tensors(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Empty tensors (smoke: each shape once per family, the accepted dtypes taking turns)."""
    shapes = [((0,), (0,)), ((2, 0, 3), (1,)), ((2, 0, 3), (0,))]
    if full:
        shapes += [((0, 5), (-1,)), ((3, 0), (-1,)), ((1, 2, 1, 2, 1, 2, 1, 0), (3,))]
    accepted = [d for d in dtypes if _casts(family, d)]
    for i, (shape, axes) in enumerate(shapes):
        for dtype in dtypes if full else (accepted[(i + FAMILIES.index(family)) % len(accepted)],):
            yield _case(family, dtype, shape, axes, "empty")


def distributions(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Every y family with every dy family (full); smoke: every y family with every dtype once
    over the two families (bf16 where it is accepted), each dy family in turn."""
    turn = FAMILIES.index(family)
    for i, dtype in enumerate(dtypes):
        if full:
            pairs = [(y, dy) for y in Y_DISTS for dy in DY_DISTS]
        else:
            mine = [
                j
                for j in range(len(Y_DISTS))
                if (_casts(family, dtype) and not _casts(FAMILIES[1 - turn], dtype))
                or ((j + i) % 2 == turn and all(_casts(f, dtype) for f in FAMILIES))
            ]
            pairs = [(Y_DISTS[j], DY_DISTS[(j + i) % len(DY_DISTS)]) for j in mine]
        for y_dist, dy_dist in pairs:
            yield _case(
                family, dtype, (6, 100), (-1,), "distributions", y_dist=y_dist, dy_dist=dy_dist
            )
            if full:
                yield _case(
                    family, dtype, (3, 50, 9), (1,), "distributions", y_dist=y_dist, dy_dist=dy_dist
                )


def no_reduce_arbitrary(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The no-reduce path with y that is not a log-softmax: it tells dy*(1-exp(y)) apart."""
    for dtype in dtypes:
        yield _case(family, dtype, (5, 1, 64), (1,), "no-reduce", y_dist="arbitrary")
        if full:
            yield _case(family, dtype, (300,), (0,), "no-reduce", y_dist="arbitrary", api="axes")
            yield _case(family, dtype, (7, 1), (-1,), "no-reduce", y_dist="uniform", dy_dist="ones")


def special_values(family: str, dtypes, full: bool) -> Iterator[Case]:
    for dtype in dtypes if full else dtypes[:1]:
        for special in SPECIALS:
            yield _case(family, dtype, (4, 37), (-1,), "special-values", special=special)
            if full:
                yield _case(family, dtype, (2, 37, 5), (1,), "special-values", special=special)


def strided_views(family: str, dtypes, full: bool) -> Iterator[Case]:
    shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((3, 33), (-1,)), ((2, 9, 5), (1,))]
    if full:
        shapes += [((4, 1, 6), (1,)), ((2, 3, 4, 5), (1, 2))]
    for dtype in dtypes if full else dtypes[:2]:
        for shape, axes in shapes:
            yield _case(family, dtype, shape, axes, "strided", **STRIDED_INPUTS)


def value_ranges(family: str, dtypes, full: bool) -> Iterator[Case]:
    """y arbitrary in wide ranges (exp(y) overflows fp32) and dy whose outputs overflow the
    dtype (fp16 and bf16 alike)."""
    if not full:
        picks = {
            "ascend910b": [("float32", "y", Y_RANGES[0]), ("bfloat16", "dy", None)],
            "ascend310b": [("float16", "y", Y_RANGES[1]), ("float16", "dy", None)],
        }[family]
        for dtype, which, bounds in picks:
            if which == "y":
                yield _case(family, dtype, (4, 37), (-1,), "value-ranges", **_y_range(bounds))
            else:
                yield _case(family, dtype, (4, 37), (-1,), "value-ranges", **_dy_overflow(dtype))
        return
    for dtype in dtypes:
        for bounds in Y_RANGES:
            for shape, axes in (((4, 37), (-1,)), ((2, 37, 5), (1,)), ((5, 1, 64), (1,))):
                yield _case(family, dtype, shape, axes, "value-ranges", **_y_range(bounds))
        for shape, axes in (((4, 37), (-1,)), ((2, 37, 5), (1,))):
            yield _case(family, dtype, shape, axes, "value-ranges", **_dy_overflow(dtype))
            dy_range, y_range = PRODUCT_OVERFLOW[dtype]
            kw = dict(_y_range(y_range), dy_dist="range", dy_range=dy_range)
            yield _case(family, dtype, shape, axes, "value-ranges", **kw)


def _y_range(bounds) -> dict:
    return {"y_dist": "range", "y_range": bounds}


def _dy_overflow(dtype: str) -> dict:
    return {"dy_dist": "range", "dy_range": DY_OVERFLOW_RANGES[dtype]}


def constant_fills(family: str, dtypes, full: bool) -> Iterator[Case]:
    """dy or y one constant: 0, 1, -1, a large value, +inf, -inf, NaN."""
    if not full:
        # Smoke: the families take turns over the fills (each fill of dy and of y once in all).
        turn = tuple(soc.FAMILIES).index(family) % 2
        for j, value in enumerate(FILLS[turn::2]):
            dtype = ("float32", "float16")[j % 2]
            yield _case(family, dtype, (4, 37), (-1,), "fills", dy_dist="fill", dy_fill=value)
            yield _case(family, dtype, (4, 37), (-1,), "fills", y_dist="fill", y_fill=value)
        return
    shapes = (((4, 37), (-1,)), ((2, 37, 5), (1,)), ((3, 1, 40), (1,)))
    for dtype in dtypes:
        for shape, axes in shapes:
            for value in FILLS[:3] + (DY_LARGE[dtype],) + FILLS[3:]:
                yield _case(family, dtype, shape, axes, "fills", dy_dist="fill", dy_fill=value)
            for value in FILLS[:3] + (Y_LARGE,) + FILLS[3:]:
                yield _case(family, dtype, shape, axes, "fills", y_dist="fill", y_fill=value)


def special_placements(family: str, dtypes, full: bool) -> Iterator[Case]:
    """NaN and +-inf at the first, middle and last element of reduce rows (REDUCE_TAIL and
    REDUCE_MID rows, and the last, ragged UB chunk of a long row), and the specials added
    later (+inf in y, +inf or -inf in dy) at random positions."""
    tail, mid = ((4, 37), (-1,)), ((2, 37, 5), (1,))
    if not full:
        picks = {
            "ascend910b": [
                ("float32", "nan_dy", "row_start", tail),
                ("float16", "inf_y", "row_middle", mid),
                ("bfloat16", "neginf_dy", "row_end", tail),
            ],
            "ascend310b": [
                ("float16", "posinf_dy", "row_start", mid),
                ("float32", "nan_y", "row_middle", tail),
                ("float32", "inf_dy", "row_end", mid),
            ],
        }[family]
        for dtype, special, at, (shape, axes) in picks:
            yield _case(family, dtype, shape, axes, "special-placement", **_special(special, at))
        return
    for dtype in dtypes:
        for shape, axes in (tail, mid):
            for special in ALL_PLACED_SPECIALS:
                for at in ROW_PLACEMENTS:
                    kw = _special(special, at)
                    yield _case(family, dtype, shape, axes, "special-placement", **kw)
            for special in NEW_SPECIALS:
                yield _case(family, dtype, shape, axes, "special-placement", special=special)
        longest = max(block_elems(family, dtype, "REDUCE_TAIL"))
        for special in ("nan_dy", "inf_y"):
            for at in ("row_start", "row_end"):
                kw = _special(special, at)
                yield _case(family, dtype, (2, 2 * longest + 1), (-1,), "special-placement", **kw)


def _special(special: str, at: str) -> dict:
    return {"special": special, "special_at": at}


def _padded(shape, step: int = 1, pad: int = 0, offset: int = 0, tail: int = 0) -> View:
    """C order with `step` between neighbours on the last axis and `pad` elements after each
    line of every outer axis; the storage starts `offset` before the view and ends `tail`
    after it."""
    strides, acc = [], step
    for d in reversed(shape):
        strides.append(acc)
        acc = acc * max(d, 1) + pad
    strides.reverse()
    span = sum(s * (d - 1) for s, d in zip(strides, shape, strict=True)) if math.prod(shape) else 0
    return View(tuple(strides), offset + span + 1 + tail, offset)


def _column_major(shape, offset: int = 0) -> View:
    strides, acc = [], 1
    for d in shape:
        strides.append(acc)
        acc *= max(d, 1)
    return View(tuple(strides), offset + max(acc, 1), offset)


def _broadcast(shape, axis: int = 0) -> View:
    """Every index along `axis` at the same place (stride 0): an input that overlaps itself."""
    inner = _padded(shape[:axis] + shape[axis + 1 :])
    strides = inner.strides[:axis] + (0,) + inner.strides[axis:]
    return View(strides, inner.storage, 0)


def _layout_forms(shape, full: bool) -> dict[str, dict[str, Any]]:
    """Named per-tensor layouts for one shape."""
    forms: dict[str, dict[str, Any]] = {
        "out strided": {"out_layout": "strided"},
        "all strided, distinct": {
            "dy_layout": _padded(shape, step=2, pad=3, offset=1, tail=2),
            "y_layout": _column_major(shape, offset=2) if len(shape) > 1 else _padded(shape, 3),
            "out_layout": _padded(shape, pad=5, offset=7, tail=4),
        },
        "offsets": {
            "dy_layout": _padded(shape, offset=5, tail=3),
            "y_layout": _padded(shape, offset=11),
            "out_layout": _padded(shape, offset=3, tail=9),
        },
    }
    if full:
        forms.update(
            {
                "dy strided": {"dy_layout": "strided"},
                "y strided": {"y_layout": "strided"},
                "all strided": {
                    "dy_layout": "strided",
                    "y_layout": "strided",
                    "out_layout": "strided",
                },
                "out offset": {"out_layout": _padded(shape, offset=13, tail=13)},
            }
        )
        if len(shape) > 1 and shape[0] > 1:
            forms["dy broadcast"] = {"dy_layout": _broadcast(shape)}
    return forms


def tensor_layouts(family: str, dtypes, full: bool) -> Iterator[Case]:
    """dy, y and out each a view of its own: strided out alone, all three strided with distinct
    strides, explicit storage with an offset, an input that overlaps itself."""
    if not full:
        picks: dict[str, list[tuple[str, tuple[tuple[int, ...], tuple[int, ...]], str]]] = {
            "ascend910b": [
                ("float32", ((3, 33), (-1,)), "out strided"),
                ("float16", ((2, 9, 5), (1,)), "all strided, distinct"),
            ],
            "ascend310b": [
                ("float16", ((3, 33), (-1,)), "offsets"),
                ("float32", ((3, 33), (-1,)), "all strided, distinct"),
            ],
        }
        for dtype, (shape, axes), form in picks[family]:
            yield _case(family, dtype, shape, axes, "layouts", **_layout_forms(shape, False)[form])
        return
    shapes = [
        ((3, 33), (-1,)),
        ((2, 9, 5), (1,)),
        ((4, 1, 6), (1,)),
        ((2, 3, 4, 5), (1, 2)),
        ((), (-1,)),
        ((2, 0, 3), (1,)),
    ]
    for dtype in dtypes:
        for shape, axes in shapes:
            for kw in _layout_forms(shape, True).values():
                yield _case(family, dtype, shape, axes, "layouts", **kw)


def grouping_extents(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Extents at every grouping constant of the kernel, -1, +0, +1: REDUCE_TAIL rows of
    REDUCE_LANES, REDUCE_MID lines of MID_GROUP_LINES, rows (REDUCE_TAIL), columns
    (REDUCE_MID) and NO_REDUCE rows of one UB block, and 2 blocks + 1."""
    if not full:
        # Smoke: one grouping constant per family (a row one element past the UB block is
        # chunk_rows', on every family and dtype).
        extents: dict[str, tuple[str, tuple[int, ...], tuple[int, ...]]] = {
            "ascend910b": ("float32", (3, REDUCE_LANES + 1), (-1,)),
            "ascend310b": ("float16", (2, MID_GROUP_LINES + 1, 7), (1,)),
        }
        dtype, shape, axes = extents[family]
        yield _case(family, dtype, shape, axes, "grouping")
        return
    for dtype in dtypes:
        for n in _around(REDUCE_LANES) + (2 * REDUCE_LANES + 1,):
            yield _case(family, dtype, (3, n), (-1,), "grouping")
        for n in _around(MID_GROUP_LINES) + (2 * MID_GROUP_LINES + 1,):
            yield _case(family, dtype, (2, n, 7), (1,), "grouping")
        for schedule, shape_of, axes in (
            ("REDUCE_TAIL", lambda n: (3, n), (-1,)),
            ("REDUCE_MID", lambda n: (2, 3, n), (1,)),
            ("NO_REDUCE", lambda n: (2, 1, n), (1,)),
        ):
            for b in block_elems(family, dtype, schedule):
                for n in _around(b) + (2 * b + 1,):
                    yield _case(family, dtype, shape_of(n), axes, "grouping")


def standards(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The same kinds of inputs judged under every public standard by name. Smoke asks for
    benchmark-ratio on the first family only: its benchmark is PyTorch on the CPU whatever the
    SoC, and the first call of it costs an agent 1.5 s of CPU to import torch."""
    chosen: Sequence[tuple[str, str | None]] = (
        PRECISION_STANDARDS if full else PRECISION_STANDARDS[:3]
    )
    if not full and family != FAMILIES[0]:
        chosen = [(s, lv) for s, lv in chosen if s != "benchmark-ratio"]
    shapes = [(8, 129), (4, 17, 6)] if full else [(8, 129)]
    for dtype in dtypes:
        for standard, level in chosen:
            for shape in shapes:
                numel = math.prod(shape)
                if gates.applicable(standard, dtype, numel, "uniform", "normal"):
                    axes = (-1,) if len(shape) == 2 else (1,)
                    yield _case(
                        family, dtype, shape, axes, "standards", standard=standard, level=level
                    )


def rejections(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Every rejection reason of the contract, and the departures the public code makes."""
    base, axes = (3, 5), (-1,)
    for dtype in dtypes if full else ("float32",):
        other = "float16" if dtype != "float16" else "float32"
        yield from (
            _case(family, dtype, base, axes, "rejections", missing="dy"),
            _case(family, dtype, base, axes, "rejections", missing="y"),
            _case(family, dtype, base, axes, "rejections", missing="out"),
            _case(family, dtype, base, axes, "rejections", y_dtype=other),
            _case(family, dtype, base, axes, "rejections", out_dtype=other),
            _case(family, dtype, base, axes, "rejections", y_shape=(3, 6)),
            _case(family, dtype, base, axes, "rejections", out_shape=(5, 3)),
            # An empty input is still checked: the public code returns early here.
            _case(family, dtype, (0, 3), axes, "rejections", y_shape=(0, 4)),
            _case(family, dtype, (0, 3), axes, "rejections", out_dtype=other),
            _case(family, dtype, (2,) * 9, (0,), "rejections"),
            _case(family, dtype, base, (2,), "rejections"),
            _case(family, dtype, base, (-3,), "rejections"),
            _case(family, dtype, (), (1,), "rejections"),
            _case(family, dtype, (2, 3, 4), (0, 2), "rejections", api="axes"),
            _case(family, dtype, (2, 3, 4), (1, 1), "rejections", api="axes"),
            _case(family, dtype, (2, 3, 4), (), "rejections", api="axes"),
        )
    for bad in ("float64", "int32"):
        yield _case(family, bad, base, axes, "rejections")
    # bf16 on a SoC without the cast is refused before anything else, empty or not.
    yield _case(family, "bfloat16", (0, 4), axes, "rejections")


def bad_axis_lists(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Duplicate and non-consecutive axis lists on shapes of several ranks (smoke: each list
    once over the two families), the accepted dtypes taking turns, so that the axes are what is
    refused."""
    accepted = [d for d in dtypes if _casts(family, d)]
    turn = FAMILIES.index(family)
    for i, (shape, axes) in enumerate(BAD_AXIS_LISTS):
        if full or i % 2 == turn:
            for dtype in dtypes if full else (accepted[(i // 2 + turn) % len(accepted)],):
                yield _case(family, dtype, shape, axes, "bad-axes", api="axes")


def ties(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Outputs that are exact ties of the fp16/bf16 rounding, at least 1,000 per case, so that
    the rounding-bias gate (golden/metrics.py) sees round-half-away or truncation: REDUCE_TAIL
    rows and REDUCE_MID lines of the tie length of the dtype."""
    two_byte = [d for d in dtypes if d != "float32" and _casts(family, d)]
    for i, dtype in enumerate(two_byte):
        n = TIE_LINES[dtype]
        rows = -(-1000 // n) + 1
        shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = [
            ((rows, n), (-1,)),
            ((1, n, rows), (1,)),
        ]
        if full:
            shapes += [((2, n, 2), (1,)), ((2, 2, n // 2, 2), (1, 2))]
        for j, (shape, axes) in enumerate(shapes):
            if full or (i + j) % len(two_byte) == 0 or len(two_byte) == 1:
                yield _case(family, dtype, shape, axes, "ties", **TIES)


def long_sums(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Long reductions with dy whose rounding errors accumulate instead of cancelling (a constant
    fp32 cannot sum exactly, and same-sign values), along both reducing schedules: a running sum
    where the kernel must group (REDUCE_MID's lines) or a sum kept in a narrow type shows here."""
    b = block_elems(family, "float32", "REDUCE_TAIL")[0]
    picks: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
        ("float32", (1, 5000, 2), (1,), CONSTANT_DY),
        ("float32", (2, 3000, 3), (1,), CONSTANT_DY),
        ("float32", (1, 2 * b + 7), (-1,), CONSTANT_DY),
        ("float16", (1, 2 * b + 7), (-1,), SAME_SIGN_DY),
    ]
    if not full:
        picks = picks[:2] if family == FAMILIES[0] else picks[::2] + picks[3:]
    for dtype, shape, axes, kw in picks:
        yield _case(family, dtype, shape, axes, "long-sums", **kw)
    if full:
        for dtype in dtypes:
            if _casts(family, dtype):
                yield _case(family, dtype, (1, 9000, 2), (1,), "long-sums", **SAME_SIGN_DY)


def mid_groups(family: str, dtypes, full: bool) -> Iterator[Case]:
    """REDUCE_MID over more than one group of MID_GROUP_LINES lines: one group and a partial
    one, several whole groups, several and a partial one."""
    lines = (
        MID_GROUP_LINES + 36,
        2 * MID_GROUP_LINES + 2,
        3 * MID_GROUP_LINES + 8,
        4 * MID_GROUP_LINES + 1,
    )
    inner = (7, 3, 5, 4)
    for i, (d1, d2) in enumerate(zip(lines, inner, strict=True)):
        for j, dtype in enumerate(dtypes):
            if _casts(family, dtype) and (full or (i + j + FAMILIES.index(family)) % 3 == 0):
                yield _case(family, dtype, (2 if i % 2 else 1, d1, d2), (1,), "mid-groups")


def schedule_boundaries(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The REDUCE_TAIL / REDUCE_MID boundary: d2 = 2 (REDUCE_MID with the fewest columns) beside
    d2 = 1 and 3, with a dim and with an axis list."""
    shapes = [((3, 50, 2), (1,)), ((2, 17, 2), (-2,)), ((2, 3, 17, 2), (1, 2)), ((4, 9, 2), (1,))]
    if full:
        shapes += [((3, 50, 1), (1,)), ((3, 50, 3), (1,)), ((1, 2, 2), (1,)), ((2, 2), (0,))]
    for i, (shape, axes) in enumerate(shapes):
        for j, dtype in enumerate(dtypes):
            if _casts(family, dtype) and (full or (i + j + FAMILIES.index(family)) % 3 == 0):
                yield _case(family, dtype, shape, axes, "schedule-boundaries")


def block_multiples(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Chunk boundaries at the family's own UB block: rows (REDUCE_TAIL), columns (REDUCE_MID)
    and NO_REDUCE rows of exactly one and two blocks, one element over, and a column tail."""
    forms = [
        ("REDUCE_TAIL", lambda b: (2, b), (-1,)),
        ("REDUCE_TAIL", lambda b: (1, 2 * b), (-1,)),
        ("REDUCE_TAIL", lambda b: (2, b + 1), (-1,)),
        ("REDUCE_MID", lambda b: (1, 3, b), (1,)),
        ("REDUCE_MID", lambda b: (1, 2, b + 7), (1,)),
        ("NO_REDUCE", lambda b: (2, 1, b), (1,)),
    ]
    accepted = [d for d in dtypes if _casts(family, d)]
    for i, (schedule, shape_of, axes) in enumerate(forms):
        for j, dtype in enumerate(accepted):
            if full or (i + j) % len(accepted) == 0:
                for b in block_elems(family, dtype, schedule):
                    yield _case(family, dtype, shape_of(b), axes, "block-multiples")


def _casts(family: str, dtype: str) -> bool:
    """Whether the family accepts the dtype (bf16 needs the SoC's bf16 Cast)."""
    return dtype != "bfloat16" or soc.representative_soc(family).bf16_cast


SECTIONS: tuple[Callable[[str, tuple, bool], Iterable[Case]], ...] = (
    schedules,
    chunk_rows,
    core_splits,
    ranks,
    axis_lists,
    empty_tensors,
    distributions,
    no_reduce_arbitrary,
    special_values,
    strided_views,
    standards,
    rejections,
    value_ranges,
    constant_fills,
    special_placements,
    tensor_layouts,
    grouping_extents,
    bad_axis_lists,
    ties,
    long_sums,
    mid_groups,
    schedule_boundaries,
    block_multiples,
)


# -- seeded random space ---------------------------------------------------------------


def _spread(rng: random.Random, total: int, slots: int) -> list[int]:
    """Split `total` into `slots` positive factors, each prime factor to a random slot."""
    out = [1] * slots
    n, p = total, 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out[rng.randrange(slots)] *= p
            n //= p
        p += 1
    if n > 1:
        out[rng.randrange(slots)] *= n
    return out


def random_case(rng: random.Random, family: str, dtype: str) -> Case:
    rank = rng.choice((1, 2, 2, 3, 3, 3, 4, 4, 5, 6, 7, 8))
    first = rng.randrange(rank)
    width = 1 if rng.random() < 0.75 else rng.randint(1, rank - first)
    shape_kind = rng.random()
    if shape_kind < 0.1:
        reduce = 1
    elif shape_kind < 0.35:
        reduce = rng.choice(REDUCE_SMALL)
    elif shape_kind < 0.5:
        reduce = rng.choice(REDUCE_ALIGNED + REDUCE_UNALIGNED + CHUNK_BOUNDARIES)
    else:
        reduce = rng.randint(2, 3000)
    before, after = first, rank - first - width
    inner = rng.choice(MID_INNER + (2, 3, 5)) if after else 1
    while reduce * inner > RANDOM_NUMEL_CAP and inner > 1:
        inner = max(1, inner // 8)
    budget = max(1, RANDOM_NUMEL_CAP // (reduce * inner))
    outer = rng.choice((1, 2, 3) + OUTER_AROUND_CORES + (rng.randint(1, 300),)) if before else 1
    outer = max(1, min(outer, budget))
    shape = _spread(rng, outer, before) + _spread(rng, reduce, width) + _spread(rng, inner, after)
    axes = tuple(range(first, first + width))
    if rng.random() < 0.5:
        axes = tuple(a - rank for a in axes)
    api = "dim" if width == 1 and rng.random() < 0.7 else "axes"
    kw: dict = dict(y_dist=rng.choice(Y_DISTS), dy_dist=rng.choice(DY_DISTS))
    roll = rng.random()
    if roll < 0.05:
        kw["special"] = rng.choice(SPECIALS)
        if kw["y_dist"] == "wide":
            # exp(y) below fp32's smallest subnormal is 0 on the device and tiny in float64:
            # 0 * inf is NaN where float64 says inf, and the contract does not say which is right.
            kw["y_dist"] = "uniform"
    elif roll < 0.12:
        kw.update(STRIDED_INPUTS)
    elif roll < 0.2:
        standard, level = rng.choice(PRECISION_STANDARDS)
        if gates.applicable(standard, dtype, math.prod(shape), kw["y_dist"], kw["dy_dist"]):
            kw["standard"], kw["level"] = standard, level
    elif roll < 0.24:
        _perturb(rng, kw, shape, dtype)
    return _case(family, dtype, shape, axes, "random", api=api, **kw)


def _perturb(rng: random.Random, kw: dict, shape: list[int], dtype: str) -> None:
    other = rng.choice([d for d in DTYPES if d != dtype])
    choice = rng.randrange(4)
    if choice == 0:
        kw["missing"] = rng.choice(("dy", "y", "out"))
    elif choice == 1:
        kw[rng.choice(("y_dtype", "out_dtype"))] = other
    elif choice == 2:
        wrong = list(shape)
        wrong[rng.randrange(len(wrong))] += 1
        kw[rng.choice(("y_shape", "out_shape"))] = tuple(wrong)
    else:
        kw["y_shape"] = tuple(shape) + (1,)


# -- expansion -------------------------------------------------------------------------


class UnknownTierError(UsageError):
    pass


def expand(tier: str) -> list[Case]:
    if tier not in TIERS:
        raise UnknownTierError(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
    full = tier != "smoke"
    seen: dict[str, Case] = {}

    def add(case: Case) -> bool:
        if case.id in seen:
            return False
        seen[case.id] = case
        return True

    for family in FAMILIES:
        for section in SECTIONS:
            for case in section(family, DTYPES, full):
                add(case)
    for family in FAMILIES:
        bf16_ok = soc.representative_soc(family).bf16_cast
        for dtype in DTYPES:
            rejected_group = dtype == "bfloat16" and not bf16_ok
            want = (RANDOM_CASES_REJECTED_GROUP if rejected_group else RANDOM_CASES)[tier]
            rng = random.Random(f"{tier}/{family}/{dtype}")
            added = 0
            while added < want:
                added += add(random_case(rng, family, dtype))
    return list(seen.values())
