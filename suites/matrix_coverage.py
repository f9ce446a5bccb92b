"""The smoke tier's cases for coverage (`farm coverage`, docs/coverage.md): each reaches a branch
of the real sources that the other smoke cases reached in fewer than 3 cases, or not at all.
Smoke only (the nightly and full tiers have these checks for every dtype), and last among the
sections, so that no older case's id or random draw moves."""

from __future__ import annotations

from collections.abc import Iterator

from suites.case import Case
from suites.matrix_space import STRIDED_INPUTS, make_case

# Per family: the unsupported dtype of its third refusal, the dtype of its strided view.
_PICKS = {
    "ascend910b": ("float64", "float32"),
    "ascend310b": ("int32", "float16"),
}


def coverage_cases(family: str, dtypes, full: bool) -> Iterator[Case]:
    if full:
        return
    refused, strided = _PICKS[family]
    base = (3, 5)
    yield from (
        # float16 beside float32's: a rank over the maximum, a dim out of range, no axis at all
        # (op/tiling/tiling.cpp validate; the aclnn layer's dims check)
        make_case(family, "float16", (2,) * 9, (0,), "coverage"),
        make_case(family, "float16", base, (2,), "coverage"),
        make_case(family, "float16", (2, 3, 4), (), "coverage", api="axes"),
        # an unsupported dtype named in the refusal (tiling.cpp dtype_name), a third case
        make_case(family, refused, (2, 3, 4), (1,), "coverage"),
        # a strided view whose last dimension has extent 1: the contiguity test skips its
        # stride (tiling.cpp is_contiguous), which no other smoke case reached
        make_case(family, strided, (3, 5, 1), (1,), "coverage", **STRIDED_INPUTS),
    )
