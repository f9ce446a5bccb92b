"""The farm's checks catch a broken operator: twins built with a planted bug (LSG_PLANT_BUG) fail
the precision standard where the real twin passes, and only where the bug is."""

from __future__ import annotations

import numpy as np
import pytest

from farm.agent.backends import twin
from golden.inputs import make_inputs
from golden.reference import log_softmax_grad, seed_wrong_no_reduce
from golden.standards import judge
from tests.op import twin_abi

DTYPES = ("float32", "float16", "bfloat16")


def verdict(library, dy, y, axes, soc="Ascend910B1"):
    result = twin.run(dy, y, axes, soc, library=library)
    assert result.status == 0, result.message
    return judge("experimental", result.out, log_softmax_grad(dy, y, axes), None), result.out


def test_planted_builds_say_so(seed_noreduce_lib, tail_lib):
    assert twin_abi.build_info(seed_noreduce_lib) == "plant_bug=seed_noreduce;sanitize=0"
    assert twin_abi.build_info(tail_lib) == "plant_bug=tail;sanitize=0"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("y_dist", ["uniform", "arbitrary"])
def test_seed_no_reduce_formula_is_caught(twin_lib, seed_noreduce_lib, dtype, y_dist):
    dy, y = make_inputs((5, 1, 64), dtype, (1,), y_dist, "normal", seed=1)
    good, _ = verdict(twin_lib, dy, y, (1,))
    assert good.passed, good.reason
    bad, out = verdict(seed_noreduce_lib, dy, y, (1,))
    assert not bad.passed
    # What the planted build computes is the seed's (dy - 1) * exp(y).
    wrong = seed_wrong_no_reduce(dy, y)
    assert judge("experimental", out, wrong, None).passed


def test_seed_bug_leaves_reduce_schedules_alone(seed_noreduce_lib):
    for shape, axes in (((4, 37), (-1,)), ((2, 37, 5), (1,))):
        dy, y = make_inputs(shape, "float32", axes, "uniform", "normal", seed=2)
        assert verdict(seed_noreduce_lib, dy, y, axes)[0].passed


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, axes",
    [
        ((3, 9824 + 11), (-1,)),  # REDUCE_TAIL, a tail of 11 after one full block
        ((3, 37), (-1,)),  # one chunk that is itself an unaligned tail
        ((1, 3, 9824 + 5), (1,)),  # REDUCE_MID, chunked columns
        ((2, 1, 8192 + 3), (1,)),  # NO_REDUCE
    ],
)
def test_unaligned_tail_bug_is_caught(twin_lib, tail_lib, dtype, shape, axes):
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=3)
    assert verdict(twin_lib, dy, y, axes)[0].passed
    bad, out = verdict(tail_lib, dy, y, axes)
    assert not bad.passed
    assert np.isnan(out.astype(np.float32)).any()  # the dropped tail was never written


def test_tail_bug_hides_behind_aligned_lengths(tail_lib):
    # Why the matrix needs unaligned row lengths: with whole 32-byte tails the bug is invisible.
    for shape in ((3, 9824 + 16), (3, 64)):
        dy, y = make_inputs(shape, "float32", (-1,), "uniform", "normal", seed=4)
        assert verdict(tail_lib, dy, y, (-1,))[0].passed
