"""Curated sections of values (suites/matrix.py SECTIONS): each takes (family, dtypes, full) and
yields cases of the inputs a caller may write that no generator family makes: distributions,
special values (and where in a row), value ranges, constant fills, precision standards, every
rejection, bad axis lists and rounding ties.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from golden import soc
from suites import gates
from suites.case import Case
from suites.matrix_space import (
    ALL_PLACED_SPECIALS,
    BAD_AXIS_LISTS,
    DY_DISTS,
    DY_LARGE,
    DY_OVERFLOW_RANGES,
    FAMILIES,
    FILLS,
    NEW_SPECIALS,
    PRECISION_STANDARDS,
    PRODUCT_OVERFLOW,
    ROW_PLACEMENTS,
    SPECIALS,
    STRIDED_INPUTS,
    TIE_LINES,
    TIES,
    Y_DISTS,
    Y_LARGE,
    Y_RANGES,
    block_elems,
    casts,
    make_case,
)


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
                if (casts(family, dtype) and not casts(FAMILIES[1 - turn], dtype))
                or ((j + i) % 2 == turn and all(casts(f, dtype) for f in FAMILIES))
            ]
            pairs = [(Y_DISTS[j], DY_DISTS[(j + i) % len(DY_DISTS)]) for j in mine]
        for y_dist, dy_dist in pairs:
            yield make_case(
                family, dtype, (6, 100), (-1,), "distributions", y_dist=y_dist, dy_dist=dy_dist
            )
            if full:
                yield make_case(
                    family, dtype, (3, 50, 9), (1,), "distributions", y_dist=y_dist, dy_dist=dy_dist
                )


def no_reduce_arbitrary(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The no-reduce path with y that is not a log-softmax: it tells dy*(1-exp(y)) apart."""
    for dtype in dtypes:
        yield make_case(family, dtype, (5, 1, 64), (1,), "no-reduce", y_dist="arbitrary")
        if full:
            yield make_case(
                family, dtype, (300,), (0,), "no-reduce", y_dist="arbitrary", api="axes"
            )
            yield make_case(
                family, dtype, (7, 1), (-1,), "no-reduce", y_dist="uniform", dy_dist="ones"
            )


def special_values(family: str, dtypes, full: bool) -> Iterator[Case]:
    for dtype in dtypes if full else dtypes[:1]:
        for special in SPECIALS:
            yield make_case(family, dtype, (4, 37), (-1,), "special-values", special=special)
            if full:
                yield make_case(family, dtype, (2, 37, 5), (1,), "special-values", special=special)


def strided_views(family: str, dtypes, full: bool) -> Iterator[Case]:
    shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((3, 33), (-1,)), ((2, 9, 5), (1,))]
    if full:
        shapes += [((4, 1, 6), (1,)), ((2, 3, 4, 5), (1, 2))]
    for dtype in dtypes if full else dtypes[:2]:
        for shape, axes in shapes:
            yield make_case(family, dtype, shape, axes, "strided", **STRIDED_INPUTS)


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
                yield make_case(family, dtype, (4, 37), (-1,), "value-ranges", **_y_range(bounds))
            else:
                yield make_case(
                    family, dtype, (4, 37), (-1,), "value-ranges", **_dy_overflow(dtype)
                )
        return
    for dtype in dtypes:
        for bounds in Y_RANGES:
            for shape, axes in (((4, 37), (-1,)), ((2, 37, 5), (1,)), ((5, 1, 64), (1,))):
                yield make_case(family, dtype, shape, axes, "value-ranges", **_y_range(bounds))
        for shape, axes in (((4, 37), (-1,)), ((2, 37, 5), (1,))):
            yield make_case(family, dtype, shape, axes, "value-ranges", **_dy_overflow(dtype))
            dy_range, y_range = PRODUCT_OVERFLOW[dtype]
            kw = dict(_y_range(y_range), dy_dist="range", dy_range=dy_range)
            yield make_case(family, dtype, shape, axes, "value-ranges", **kw)


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
            yield make_case(family, dtype, (4, 37), (-1,), "fills", dy_dist="fill", dy_fill=value)
            yield make_case(family, dtype, (4, 37), (-1,), "fills", y_dist="fill", y_fill=value)
        return
    shapes = (((4, 37), (-1,)), ((2, 37, 5), (1,)), ((3, 1, 40), (1,)))
    for dtype in dtypes:
        for shape, axes in shapes:
            for value in FILLS[:3] + (DY_LARGE[dtype],) + FILLS[3:]:
                yield make_case(family, dtype, shape, axes, "fills", dy_dist="fill", dy_fill=value)
            for value in FILLS[:3] + (Y_LARGE,) + FILLS[3:]:
                yield make_case(family, dtype, shape, axes, "fills", y_dist="fill", y_fill=value)


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
            yield make_case(
                family, dtype, shape, axes, "special-placement", **_special(special, at)
            )
        return
    for dtype in dtypes:
        for shape, axes in (tail, mid):
            for special in ALL_PLACED_SPECIALS:
                for at in ROW_PLACEMENTS:
                    kw = _special(special, at)
                    yield make_case(family, dtype, shape, axes, "special-placement", **kw)
            for special in NEW_SPECIALS:
                yield make_case(family, dtype, shape, axes, "special-placement", special=special)
        longest = max(block_elems(family, dtype, "REDUCE_TAIL"))
        for special in ("nan_dy", "inf_y"):
            for at in ("row_start", "row_end"):
                kw = _special(special, at)
                yield make_case(
                    family, dtype, (2, 2 * longest + 1), (-1,), "special-placement", **kw
                )


def _special(special: str, at: str) -> dict:
    return {"special": special, "special_at": at}


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
                    yield make_case(
                        family, dtype, shape, axes, "standards", standard=standard, level=level
                    )


def rejections(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Every rejection reason of the contract, and the departures the public code makes."""
    base, axes = (3, 5), (-1,)
    for dtype in dtypes if full else ("float32",):
        other = "float16" if dtype != "float16" else "float32"
        yield from (
            make_case(family, dtype, base, axes, "rejections", missing="dy"),
            make_case(family, dtype, base, axes, "rejections", missing="y"),
            make_case(family, dtype, base, axes, "rejections", missing="out"),
            make_case(family, dtype, base, axes, "rejections", y_dtype=other),
            make_case(family, dtype, base, axes, "rejections", out_dtype=other),
            make_case(family, dtype, base, axes, "rejections", y_shape=(3, 6)),
            make_case(family, dtype, base, axes, "rejections", out_shape=(5, 3)),
            # An empty input is still checked: the public code returns early here.
            make_case(family, dtype, (0, 3), axes, "rejections", y_shape=(0, 4)),
            make_case(family, dtype, (0, 3), axes, "rejections", out_dtype=other),
            make_case(family, dtype, (2,) * 9, (0,), "rejections"),
            make_case(family, dtype, base, (2,), "rejections"),
            make_case(family, dtype, base, (-3,), "rejections"),
            make_case(family, dtype, (), (1,), "rejections"),
            make_case(family, dtype, (2, 3, 4), (0, 2), "rejections", api="axes"),
            make_case(family, dtype, (2, 3, 4), (1, 1), "rejections", api="axes"),
            make_case(family, dtype, (2, 3, 4), (), "rejections", api="axes"),
        )
    for bad in ("float64", "int32"):
        yield make_case(family, bad, base, axes, "rejections")
    # bf16 on a SoC without the cast is refused before anything else, empty or not.
    yield make_case(family, "bfloat16", (0, 4), axes, "rejections")


def bad_axis_lists(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Duplicate and non-consecutive axis lists on shapes of several ranks (smoke: each list
    once over the two families), the accepted dtypes taking turns, so that the axes are what is
    refused."""
    accepted = [d for d in dtypes if casts(family, d)]
    turn = FAMILIES.index(family)
    for i, (shape, axes) in enumerate(BAD_AXIS_LISTS):
        if full or i % 2 == turn:
            for dtype in dtypes if full else (accepted[(i // 2 + turn) % len(accepted)],):
                yield make_case(family, dtype, shape, axes, "bad-axes", api="axes")


def ties(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Outputs that are exact ties of the fp16/bf16 rounding, at least 1,000 per case, so that
    the rounding-bias gate (golden/metrics.py) sees round-half-away or truncation: REDUCE_TAIL
    rows and REDUCE_MID lines of the tie length of the dtype."""
    two_byte = [d for d in dtypes if d != "float32" and casts(family, d)]
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
                yield make_case(family, dtype, shape, axes, "ties", **TIES)
