"""The case matrices by tier: smoke (pre-merge), nightly (public L0 volume), full (L2 volume).

Curated sections name the situations where kernels break (schedules, chunk boundaries, core
splits, ranks, empty tensors, special values, every rejection). The nightly and full tiers add
cases drawn from a seeded space of shapes on top of the curated ones. Expansion is deterministic:
the same tier always gives the same cases in the same order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace

from farm.errors import UsageError
from golden import soc

from . import gates
from .case import Case

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
    """Rows that fit one UB block exactly, miss by one, and span many blocks (tails)."""
    tail = CHUNK_BOUNDARIES if full else CHUNK_BOUNDARIES[1:3]
    mid = MID_CHUNK_BOUNDARIES if full else MID_CHUNK_BOUNDARIES[2:3]
    for dtype in dtypes:
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
    shapes = [((0,), (0,)), ((2, 0, 3), (1,)), ((2, 0, 3), (0,))]
    if full:
        shapes += [((0, 5), (-1,)), ((3, 0), (-1,)), ((1, 2, 1, 2, 1, 2, 1, 0), (3,))]
    for dtype in dtypes:
        for shape, axes in shapes:
            yield _case(family, dtype, shape, axes, "empty")


def distributions(family: str, dtypes, full: bool) -> Iterator[Case]:
    """Every y family with every dy family (full) or each at least once (smoke)."""
    for i, dtype in enumerate(dtypes):
        if full:
            pairs = [(y, dy) for y in Y_DISTS for dy in DY_DISTS]
        else:
            pairs = [(y, DY_DISTS[(j + i) % len(DY_DISTS)]) for j, y in enumerate(Y_DISTS)]
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
            yield _case(family, dtype, shape, axes, "strided", layout="strided")


def standards(family: str, dtypes, full: bool) -> Iterator[Case]:
    """The same kinds of inputs judged under every public standard by name."""
    chosen = PRECISION_STANDARDS if full else PRECISION_STANDARDS[:3]
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
        kw["layout"] = "strided"
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
