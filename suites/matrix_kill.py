"""The smoke tier's cases to kill mutants (`farm mutate`, docs/mutate.md): each kills edits of
the real sources that no older smoke case told from the operator (benchmarks/RESULTS.md, "Issue
59: mutation score"). Smoke only, and last among the sections, so that no older case's id or
random draw moves; three cases a situation, so that each mutant is killed by 3 or more.

The survivors no case can kill are explained in op/mutants_explained.toml."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from golden.layouts import View
from suites.case import Case
from suites.matrix_space import make_case

# NO_REDUCE with a row of several chunks (3 of 8192 elements on Ascend910B, 2 on Ascend310B):
# the chunk offset (op_kernel base + c * blockElems) and a vector count one long at a chunk that
# fills its UB block (Exp/Muls/Adds/Mul with n + 1) only show past the first chunk.
NO_REDUCE_CHUNKS = ((2, 1, 20000), (1,))
# A view the operator must copy though a numpy-style test would let two of its edits through:
# dy a broadcast (every stride 0: the contiguity test's running product starting at 0 takes it
# for contiguous), y overlapping rows (strides (1, 1): without the running product it is
# contiguous). op/tiling/tiling.cpp is_contiguous.
OVERLAP = ((3, 5), (-1,))
DY_BROADCAST = View((0, 0), 1, 0)
Y_OVERLAP = View((1, 1), 7, 0)
# A 1-d row of 2, every tensor strided: the only stride off is of an extent of 2 (the
# contiguity test skipping extents of 2 instead of 1 takes it for contiguous).
PAIR = ((2,), (0,))
# Reduce axes given out of order (consecutive once sorted): the axis normalisation must sort
# them (op/tiling/tiling.cpp normalized_sorted) before checking that they are consecutive and
# taking the first and the last.
UNSORTED = (((4, 3, 5), (2, 1)), ((4, 3, 5), (-1, -2)), ((3, 4, 5, 2), (2, 0, 1)))
# A copied view whose bytes are a whole number of UB blocks (32 B): the workspace rounded up one
# block too far (op/tiling/tiling.cpp align_up with v + a, or v + a + 1) shows only there.
WHOLE_BLOCKS = (((4, 8), (-1,)), ((2, 16), (-1,)), ((8, 4), (0,)))
ALL_STRIDED = {"dy_layout": "strided", "y_layout": "strided", "out_layout": "strided"}
# A strided out of 2-byte elements over one 512-byte block (every other strided out of the tier
# fits in one): the aclnn layer's buffer for it, aligned to 512, shows a wrong element count or
# element size only past the first block (suites/workspace.py checks the workspace it asks for).
WIDE_OUT = ((4, 101), (-1,))
# A contiguous out whose dimension of extent 1 has an odd stride (PyTorch makes such strides:
# unsqueeze, a slice of one row): the operator's rule skips extents of 1, so nothing is copied;
# a contiguity test that checks them (op/tiling/tiling.cpp is_contiguous with `!= 0` or the next
# extent) plans a copy and a workspace the call does not need (the tiling check). An out: with
# dy or y so strided instead, both edits passed every check (not looked into further).
EXTENT_ONE = ((3, 1, 5), (-1,))
ODD_STRIDE = View((5, 11, 1), 15, 0)
# An empty call of no rows (d0 = 0): a plan that forgets the call is empty splits 0 rows over 0
# cores (op/tiling/tiling.cpp plan's is_empty, checked_numel's 0 for a zero extent); an empty
# call with rows runs nothing either way.
NO_ROWS = (((0, 7), (-1,)), ((0, 4), (-1,)))
# dy strided alone: the plan's key says "not contiguous" only through dy's copy (another view
# strided hides a forgotten dy copy, op/tiling/tiling.cpp workspace_layout).
DY_ALONE = (((2, 9, 5), (1,)), ((3, 33), (-1,)))
# The tiling function alone with y of another dtype than dy (as the rejections section's f32 one
# on each family): the host's description of y read from dy's (op_host's TilingFunc) lets it
# through.
Y_OTHER_DTYPE = ((3, 5), (-1,))


def kill_cases(family: str, dtypes, full: bool) -> Iterator[Case]:
    if full:
        return
    shape, axes = NO_REDUCE_CHUNKS
    views = {"dy_layout": DY_BROADCAST, "y_layout": Y_OVERLAP}
    pair, pair_axes = PAIR
    if family == "ascend910b":
        yield from (
            make_case(family, "float32", shape, axes, "kill"),
            make_case(family, "float16", shape, axes, "kill"),
            make_case(family, "float32", *OVERLAP, "kill", **views),
            make_case(family, "float16", *OVERLAP, "kill", **views),
            make_case(family, "float32", pair, pair_axes, "kill", **ALL_STRIDED),
            make_case(family, "float16", pair, pair_axes, "kill", **ALL_STRIDED),
            make_case(family, "float32", *UNSORTED[0], "kill"),
            make_case(family, "float16", *UNSORTED[1], "kill"),
            make_case(family, "float32", *WHOLE_BLOCKS[0], "kill", dy_layout="strided"),
            make_case(family, "float16", *WHOLE_BLOCKS[1], "kill", out_layout="strided"),
            make_case(family, "float16", *WIDE_OUT, "kill", out_layout="strided"),
            make_case(family, "bfloat16", *WIDE_OUT, "kill", out_layout="strided"),
            make_case(family, "float32", *EXTENT_ONE, "kill", out_layout=ODD_STRIDE),
            make_case(family, "float16", *EXTENT_ONE, "kill", out_layout=ODD_STRIDE),
            make_case(family, "float16", *NO_ROWS[0], "kill"),
            make_case(family, "float16", *DY_ALONE[0], "kill", dy_layout="strided"),
            replace(
                make_case(family, "float16", *Y_OTHER_DTYPE, "kill", y_dtype="float32"),
                layer="tiling",
            ),
        )
    else:
        yield from (
            make_case(family, "float32", shape, axes, "kill"),
            make_case(family, "float32", *OVERLAP, "kill", **views),
            make_case(family, "float32", pair, pair_axes, "kill", **ALL_STRIDED),
            make_case(family, "float32", *UNSORTED[2], "kill"),
            make_case(family, "float32", *WHOLE_BLOCKS[2], "kill", y_layout="strided"),
            make_case(family, "float16", *WIDE_OUT, "kill", out_layout="strided"),
            make_case(family, "float32", *EXTENT_ONE, "kill", out_layout=ODD_STRIDE),
            make_case(family, "float32", *NO_ROWS[1], "kill"),
            make_case(family, "float32", *DY_ALONE[1], "kill", dy_layout="strided"),
        )
