"""The case matrices by tier: smoke (pre-merge), nightly (public L0 volume), full (L2 volume).

Curated sections name the situations where kernels break (schedules, chunk boundaries, core
splits, ranks, empty tensors, special values, every rejection), and the inputs a caller may write
that no generator family makes (value ranges, constant fills, special values at a chosen place of
a row, a layout per tensor, extents at every grouping constant of the kernel). The nightly and
full tiers add cases drawn from a seeded space of shapes on top of the curated ones. Expansion is
deterministic: the same tier always gives the same cases in the same order.

One module a job; this one orders the sections (SECTIONS), draws the seeded random space and
expands a tier, and re-exports the others' names:
    suites/matrix_space.py    the tiers and the space: dtypes, distributions, the extents where
                              the kernel's tiling changes, the inputs that break it
    suites/matrix_shapes.py   curated sections of shapes: schedules, chunks, cores, ranks, axis
                              lists, layouts, extents at the kernel's grouping constants
    suites/matrix_values.py   curated sections of values: distributions, special values, ranges,
                              fills, standards, rejections, ties

"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable

from farm.util.errors import UsageError
from golden import soc
from suites import gates
from suites.case import Case
from suites.matrix_coverage import coverage_cases
from suites.matrix_layers import layers
from suites.matrix_shapes import (
    axis_lists,
    block_multiples,
    chunk_rows,
    core_splits,
    empty_tensors,
    grouping_extents,
    long_sums,
    mid_groups,
    ranks,
    schedule_boundaries,
    schedules,
    tensor_layouts,
)
from suites.matrix_space import (
    ALL_PLACED_SPECIALS,
    BAD_AXIS_LISTS,
    CHUNK_BOUNDARIES,
    CONSTANT_DY,
    CORE_COUNTS,
    DTYPES,
    DY_DISTS,
    DY_LARGE,
    DY_OVERFLOW_RANGES,
    FAMILIES,
    FILLS,
    MID_CHUNK_BOUNDARIES,
    MID_GROUP_LINES,
    MID_INNER,
    NEW_SPECIALS,
    OUTER_AROUND_CORES,
    PRECISION_STANDARDS,
    PRODUCT_OVERFLOW,
    RANDOM_CASES,
    RANDOM_CASES_REJECTED_GROUP,
    RANDOM_NUMEL_CAP,
    REDUCE_ALIGNED,
    REDUCE_LANES,
    REDUCE_SMALL,
    REDUCE_UNALIGNED,
    REDUCE_VOCAB,
    ROW_PLACEMENTS,
    SAME_SIGN_DY,
    SPECIALS,
    STRIDED_INPUTS,
    TIE_LINES,
    TIERS,
    TIES,
    Y_DISTS,
    Y_LARGE,
    Y_RANGES,
    around,
    block_elems,
    casts,
    make_case,
)
from suites.matrix_values import (
    bad_axis_lists,
    constant_fills,
    distributions,
    no_reduce_arbitrary,
    rejections,
    special_placements,
    special_values,
    standards,
    strided_views,
    ties,
    value_ranges,
)

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
    layers,
    coverage_cases,  # smoke only, last: farm coverage's (suites/matrix_coverage.py)
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
    return make_case(family, dtype, shape, axes, "random", api=api, **kw)


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


__all__ = [
    "ALL_PLACED_SPECIALS",
    "BAD_AXIS_LISTS",
    "CHUNK_BOUNDARIES",
    "CONSTANT_DY",
    "CORE_COUNTS",
    "DTYPES",
    "DY_DISTS",
    "DY_LARGE",
    "DY_OVERFLOW_RANGES",
    "FAMILIES",
    "FILLS",
    "MID_CHUNK_BOUNDARIES",
    "MID_GROUP_LINES",
    "MID_INNER",
    "NEW_SPECIALS",
    "OUTER_AROUND_CORES",
    "PRECISION_STANDARDS",
    "PRODUCT_OVERFLOW",
    "RANDOM_CASES",
    "RANDOM_CASES_REJECTED_GROUP",
    "RANDOM_NUMEL_CAP",
    "REDUCE_ALIGNED",
    "REDUCE_LANES",
    "REDUCE_SMALL",
    "REDUCE_UNALIGNED",
    "REDUCE_VOCAB",
    "ROW_PLACEMENTS",
    "SAME_SIGN_DY",
    "SECTIONS",
    "SPECIALS",
    "STRIDED_INPUTS",
    "TIERS",
    "TIES",
    "TIE_LINES",
    "UnknownTierError",
    "Y_DISTS",
    "Y_LARGE",
    "Y_RANGES",
    "around",
    "axis_lists",
    "bad_axis_lists",
    "block_elems",
    "block_multiples",
    "coverage_cases",
    "casts",
    "chunk_rows",
    "constant_fills",
    "core_splits",
    "distributions",
    "empty_tensors",
    "expand",
    "grouping_extents",
    "layers",
    "long_sums",
    "make_case",
    "mid_groups",
    "no_reduce_arbitrary",
    "random_case",
    "ranks",
    "rejections",
    "schedule_boundaries",
    "schedules",
    "special_placements",
    "special_values",
    "standards",
    "strided_views",
    "tensor_layouts",
    "ties",
    "value_ranges",
]
