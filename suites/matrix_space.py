"""The space the case matrices are drawn from (suites/matrix.py): the tiers and their sizes, the
dtypes, distributions and special values, the extents where the kernel's tiling changes (chunk
boundaries, core counts, its grouping constants), the inputs that break kernels (ties, overflows,
bad axis lists), and how one curated case is made (make_case: the default gate of its dtype).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from golden import inputs, soc
from suites import gates
from suites.case import Case
from suites.tiling import UB_BLOCKS

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


def around(k: int) -> tuple[int, int, int]:
    return (k - 1, k, k + 1)


def make_case(family: str, dtype: str, shape, axes, origin: str, **kw) -> Case:
    api = kw.pop("api", "dim" if len(axes) == 1 else "axes")
    case = Case(family, dtype, tuple(shape), tuple(axes), api=api, origin=origin, **kw)
    if "standard" not in kw and case.accepted:
        standard, level = gates.default_gate(dtype, case.numel, case.y_dist, case.dy_dist)
        case = replace(case, standard=standard, level=level)
    return case


def casts(family: str, dtype: str) -> bool:
    """Whether the family accepts the dtype (bf16 needs the SoC's bf16 Cast)."""
    return dtype != "bfloat16" or soc.representative_soc(family).bf16_cast
