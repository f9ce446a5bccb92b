"""The smoke tier's cases for coverage (`farm coverage`, docs/coverage.md): each reaches a branch
of the real sources that the other smoke cases reached in fewer than 3 cases, or not at all.
Smoke only (the nightly and full tiers have these checks for every dtype), and last among the
sections, so that no older case's id or random draw moves."""

from __future__ import annotations

from collections.abc import Iterator

from suites.case import Case
from suites.matrix_space import make_case

BASE = (3, 5)
# y alone a strided view, whose last dimension has extent 1: the shared tiling's contiguity test
# skips that dimension's stride, and plan() sees a strided y behind a contiguous dy
# (op/tiling/tiling.cpp is_contiguous, plan), which no other smoke case does.
EXTENT_ONE_LAST = ((3, 5, 1), (1,))
Y_STRIDED = {"y_layout": "strided"}


def coverage_cases(family: str, dtypes, full: bool) -> Iterator[Case]:
    if full:
        return
    shape, axes = EXTENT_ONE_LAST
    if family == "ascend910b":
        yield from (
            # float16 beside float32's two: a rank over the maximum, a dim past the last
            make_case(family, "float16", (2,) * 9, (0,), "coverage"),
            make_case(family, "float16", BASE, (2,), "coverage"),
            # float64 refused and named (tiling.cpp dtype_name): a third case
            make_case(family, "float64", (2, 3, 4), (1,), "coverage"),
            make_case(family, "float32", shape, axes, "coverage", **Y_STRIDED),
            make_case(family, "float16", shape, axes, "coverage", **Y_STRIDED),
        )
    else:
        yield from (
            # float16 beside float32's two: no axis at all (the aclnn dims check), a dim before
            # the first
            make_case(family, "float16", (2, 3, 4), (), "coverage", api="axes"),
            make_case(family, "float16", BASE, (-3,), "coverage"),
            make_case(family, "int32", (2, 3, 4), (1,), "coverage"),
            make_case(family, "float16", shape, axes, "coverage", **Y_STRIDED),
        )
