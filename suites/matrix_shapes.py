"""Curated sections of shapes (suites/matrix.py SECTIONS): each takes (family, dtypes, full) and
yields cases at the schedules, chunk and core boundaries, ranks, axis lists, empty tensors,
tensor layouts and the kernel's grouping extents, where kernels break.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from golden.layouts import View
from suites.case import Case
from suites.matrix_space import (
    CHUNK_BOUNDARIES,
    CONSTANT_DY,
    CORE_COUNTS,
    FAMILIES,
    MID_CHUNK_BOUNDARIES,
    MID_GROUP_LINES,
    MID_INNER,
    OUTER_AROUND_CORES,
    REDUCE_ALIGNED,
    REDUCE_LANES,
    REDUCE_SMALL,
    REDUCE_UNALIGNED,
    REDUCE_VOCAB,
    SAME_SIGN_DY,
    around,
    block_elems,
    casts,
    make_case,
)


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
            yield make_case(family, dtype, shape, axes, "schedules")


def chunk_rows(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Rows that fit one UB block exactly, miss by one, and span many blocks (tails); smoke: at
    the family's own block (block_multiples adds the other boundaries)."""
    for dtype in dtypes if full else [d for d in dtypes if casts(family, d)]:
        tail: Sequence[int] = CHUNK_BOUNDARIES
        mid: Sequence[int] = MID_CHUNK_BOUNDARIES
        if not full:
            tail = [n for b in block_elems(family, dtype, "REDUCE_TAIL") for n in (b, b + 1)]
            mid = [b + 1 for b in block_elems(family, dtype, "REDUCE_MID")]
        for n in tail:
            yield make_case(family, dtype, (2, n), (-1,), "chunk-rows")
        # REDUCE_MID chunks its d2 columns, which sit side by side in a block.
        for n in mid:
            yield make_case(family, dtype, (1, 3, n), (1,), "chunk-rows")
        for n in REDUCE_VOCAB if full else REDUCE_VOCAB[:1]:
            yield make_case(family, dtype, (1, n), (1,), "chunk-rows", dy_dist="uniform")


def core_splits(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Outer extents below, at and above every core count, with remainders."""
    outers = (
        OUTER_AROUND_CORES
        if full
        else (max(CORE_COUNTS) + 1, min(c for c in CORE_COUNTS if c > 1) + 1)
    )
    for dtype in dtypes:
        for rows in outers:
            yield make_case(family, dtype, (rows, 19), (-1,), "core-splits")
            if full:
                yield make_case(family, dtype, (rows, 5, 7), (1,), "core-splits")


def ranks(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Rank 0 to 8 with every dim, positive and negative."""
    for i, dtype in enumerate(dtypes):
        yield make_case(family, dtype, (), (-1,), "ranks")
        yield make_case(family, dtype, (), (0,), "ranks")
        if full:
            yield make_case(family, dtype, (), (0,), "ranks", api="axes")
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
                yield make_case(family, dtype, shape, (dim,), "ranks")


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
            yield make_case(family, dtype, shape, axes, "axis-lists", api="axes")


def empty_tensors(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Empty tensors (smoke: each shape once per family, the accepted dtypes taking turns)."""
    shapes = [((0,), (0,)), ((2, 0, 3), (1,)), ((2, 0, 3), (0,))]
    if full:
        shapes += [((0, 5), (-1,)), ((3, 0), (-1,)), ((1, 2, 1, 2, 1, 2, 1, 0), (3,))]
    accepted = [d for d in dtypes if casts(family, d)]
    for i, (shape, axes) in enumerate(shapes):
        for dtype in dtypes if full else (accepted[(i + FAMILIES.index(family)) % len(accepted)],):
            yield make_case(family, dtype, shape, axes, "empty")


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
            # Every dtype of each family has a non-contiguous out (the aclnn layer copies it back
            # through the workspace: tests/e2e/test_reason_planted.py) and an input view.
            "ascend910b": [
                ("float32", ((3, 33), (-1,)), "out strided"),
                ("float16", ((2, 9, 5), (1,)), "all strided, distinct"),
                ("bfloat16", ((3, 33), (-1,)), "all strided, distinct"),
            ],
            "ascend310b": [
                ("float16", ((3, 33), (-1,)), "offsets"),
                ("float32", ((3, 33), (-1,)), "all strided, distinct"),
                ("float16", ((2, 9, 5), (1,)), "out strided"),
            ],
        }
        for dtype, (shape, axes), form in picks[family]:
            yield make_case(
                family, dtype, shape, axes, "layouts", **_layout_forms(shape, False)[form]
            )
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
                yield make_case(family, dtype, shape, axes, "layouts", **kw)


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
        yield make_case(family, dtype, shape, axes, "grouping")
        return
    for dtype in dtypes:
        for n in around(REDUCE_LANES) + (2 * REDUCE_LANES + 1,):
            yield make_case(family, dtype, (3, n), (-1,), "grouping")
        for n in around(MID_GROUP_LINES) + (2 * MID_GROUP_LINES + 1,):
            yield make_case(family, dtype, (2, n, 7), (1,), "grouping")
        for schedule, shape_of, axes in (
            ("REDUCE_TAIL", lambda n: (3, n), (-1,)),
            ("REDUCE_MID", lambda n: (2, 3, n), (1,)),
            ("NO_REDUCE", lambda n: (2, 1, n), (1,)),
        ):
            for b in block_elems(family, dtype, schedule):
                for n in around(b) + (2 * b + 1,):
                    yield make_case(family, dtype, shape_of(n), axes, "grouping")


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
        yield make_case(family, dtype, shape, axes, "long-sums", **kw)
    if full:
        for dtype in dtypes:
            if casts(family, dtype):
                yield make_case(family, dtype, (1, 9000, 2), (1,), "long-sums", **SAME_SIGN_DY)


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
            if casts(family, dtype) and (full or (i + j + FAMILIES.index(family)) % 3 == 0):
                yield make_case(family, dtype, (2 if i % 2 else 1, d1, d2), (1,), "mid-groups")


def schedule_boundaries(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The REDUCE_TAIL / REDUCE_MID boundary: d2 = 2 (REDUCE_MID with the fewest columns) beside
    d2 = 1 and 3, with a dim and with an axis list."""
    shapes = [((3, 50, 2), (1,)), ((2, 17, 2), (-2,)), ((2, 3, 17, 2), (1, 2)), ((4, 9, 2), (1,))]
    if full:
        shapes += [((3, 50, 1), (1,)), ((3, 50, 3), (1,)), ((1, 2, 2), (1,)), ((2, 2), (0,))]
    for i, (shape, axes) in enumerate(shapes):
        for j, dtype in enumerate(dtypes):
            if casts(family, dtype) and (full or (i + j + FAMILIES.index(family)) % 3 == 0):
                yield make_case(family, dtype, shape, axes, "schedule-boundaries")


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
    accepted = [d for d in dtypes if casts(family, d)]
    for i, (schedule, shape_of, axes) in enumerate(forms):
        for j, dtype in enumerate(accepted):
            if full or (i + j) % len(accepted) == 0:
                for b in block_elems(family, dtype, schedule):
                    yield make_case(family, dtype, shape_of(b), axes, "block-multiples")
