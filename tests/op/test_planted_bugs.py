"""The farm's checks catch a broken operator: twins built with a planted bug (LSG_PLANT_BUG) fail
the precision standard where the real twin passes, and only where the bug is.  Each planted kernel
defect the twin plants (farm.pool.build.TWIN_PLANT_BUGS) changes its results exactly where it is and
nowhere else. (The emulated real kernel's planted bugs: tests/op/test_ascendc_cpu.py.)

trunc_narrow moves about half of the 2-byte results by one ulp toward zero: within what the
experimental, mixed-tolerance and double-thousandth standards allow, so the tests here pin the
defect itself.  fp16_sum fails the experimental standard in fp32 and fp16 but, with bf16 data,
only for some inputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from farm.agent.backends import native
from farm.pool import build
from golden.inputs import make_inputs
from golden.reference import log_softmax_grad, seed_wrong_no_reduce
from golden.standards import judge
from tests.op import twin_abi

DTYPES = ("float32", "float16", "bfloat16")


def verdict(library, dy, y, axes, soc="Ascend910B1"):
    result = native.run(dy, y, axes, soc, library=library)
    assert result.status == 0, result.message
    assert result.out is not None  # an accepted call has its output
    return judge("experimental", result.out, log_softmax_grad(dy, y, axes), None), result.out


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


# -- the planted kernel defects: each changes the results exactly where it is, and nowhere else ----

NARROW = ("float16", "bfloat16")
# One case per schedule: REDUCE_TAIL, REDUCE_MID, NO_REDUCE (whose y must be arbitrary: a softmax
# over one element has y = 0 and an all-zero result).
SCHEDULES = [
    ((4, 1000), (-1,), "uniform"),
    ((2, 300, 5), (1,), "uniform"),
    ((3, 1, 700), (1,), "arbitrary"),
]
FP32_EPS = 2.0**-23


def run_out(library, dy, y, axes, soc="Ascend910B1", **kw) -> np.ndarray:
    result = native.run(dy, y, axes, soc, library=library, **kw)
    assert result.status == 0, result.message
    return np.ascontiguousarray(result.out)


def bits(a: np.ndarray) -> np.ndarray:
    """The bit patterns of a float array (NaN compares equal to the same NaN)."""
    return np.ascontiguousarray(a).view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


@pytest.mark.parametrize("bug", [bug for bug in build.TWIN_PLANT_BUGS if bug])
def test_planted_builds_name_their_bug(request, bug):
    # Every name the twin plants has a fixture here, and the library says what was planted.
    lib = request.getfixturevalue(f"{bug}_lib")
    assert twin_abi.build_info(lib) == f"plant_bug={bug};sanitize=0;target=twin"


# trunc_narrow ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axes, y_dist", SCHEDULES)
def test_trunc_narrow_rounds_the_output_toward_zero(
    twin_lib, trunc_narrow_lib, dtype, shape, axes, y_dist
):
    dy, y = make_inputs(shape, dtype, axes, y_dist, "normal", seed=6)
    good = run_out(twin_lib, dy, y, axes)
    bad = run_out(trunc_narrow_lib, dy, y, axes)
    if dtype == "float32":
        assert np.array_equal(bits(bad), bits(good))  # no narrowing, nothing changes
        return
    assert np.all(np.abs(f64(bad)) <= np.abs(f64(good)))  # never farther from zero
    g, b = bits(good), bits(bad)
    assert np.array_equal(g & 0x8000, b & 0x8000)
    # The same fp32 result cast down: the same value, or the one an ulp nearer zero where
    # round-to-nearest-even went away from zero (about half of the elements).
    step = (g & 0x7FFF).astype(np.int32) - (b & 0x7FFF).astype(np.int32)
    assert set(np.unique(step)) <= {0, 1}
    assert 0.3 < step.mean() < 0.7


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("special", ["nan_dy", "inf_dy"])
def test_trunc_narrow_keeps_nan_and_inf(twin_lib, trunc_narrow_lib, dtype, special):
    dy, y = make_inputs((4, 1000), dtype, (-1,), "uniform", "normal", special=special, seed=6)
    good = run_out(twin_lib, dy, y, (-1,))
    bad = run_out(trunc_narrow_lib, dy, y, (-1,))
    finite = np.isfinite(f64(good))
    assert not finite.all()
    assert np.array_equal(np.isfinite(f64(bad)), finite)
    assert np.array_equal(bits(bad)[~finite], bits(good)[~finite])


def test_trunc_narrow_leaves_the_other_conversions_alone(twin_lib, trunc_narrow_lib):
    # Only the kernel's output cast truncates: lsg_convert still rounds to nearest even, and the
    # widening (every fp16 and bf16 bit pattern, NaN payloads included) is exact.
    rng = np.random.default_rng(9)
    wide = np.concatenate(
        [
            rng.standard_normal(4096).astype(np.float32) * np.float32(1000.0),
            # exactly halfway between two fp16 (bf16) neighbours: 1 + 2^-11 (1 + 2^-8), ...
            np.array(
                [1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 1 + 2**-8, 1 + 3 * 2**-8], np.float32
            ),
            np.array([65519.0, 65520.0, 1e-8, np.inf, -np.inf, np.nan], np.float32),
        ]
    )
    all_patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for dt in (np.float16, ml_dtypes.bfloat16):
        down = twin_abi.convert(wide, dt, library=trunc_narrow_lib)
        assert np.array_equal(bits(down), bits(twin_abi.convert(wide, dt, library=twin_lib)))
        narrow = all_patterns.view(dt)
        up = twin_abi.convert(narrow, np.float32, library=trunc_narrow_lib)
        assert np.array_equal(
            bits(up), bits(twin_abi.convert(narrow, np.float32, library=twin_lib))
        )
    assert twin_abi.convert(
        np.array([1 + 3 * 2**-11], np.float32), np.float16, library=trunc_narrow_lib
    )[0] == np.float16(1 + 4 * 2**-11)  # rounded up, to even


# fp16_sum ----------------------------------------------------------------------------------------


def fp16(x: np.ndarray) -> np.ndarray:
    """fp32 -> fp16 (round to nearest even) -> fp32, as the planted accumulator rounds."""
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def fp16_sum_tail(dy: np.ndarray) -> np.ndarray:
    """sum(dy) over the last axis of a [rows, d1] fp32 array (one UB chunk per row) as the planted
    REDUCE_TAIL computes it on Atlas A2 (ReduceSum's documented order): each 64-lane repeat as a
    binary tree of adjacent pairs, the repeat sums added in sequence, every addition rounded to
    fp16."""

    def tree(x: np.ndarray) -> np.ndarray:
        while x.shape[-1] > 1:
            pairs = x.shape[-1] // 2 * 2
            summed = fp16(x[:, 0:pairs:2] + x[:, 1:pairs:2])
            x = np.concatenate([summed, x[:, pairs:]], axis=-1)
        return x[:, 0]

    n = dy.shape[-1]
    total = tree(dy[:, :64].astype(np.float32))
    for i in range(64, n, 64):
        total = fp16(total + tree(dy[:, i : i + 64].astype(np.float32)))
    return fp16(np.float32(0) + total)


def fp16_sum_mid(dy: np.ndarray) -> np.ndarray:
    """sum(dy) over axis 1 of a [d0, d1, d2] fp32 array as the planted REDUCE_MID computes it: lines
    added into a partial sum in groups of 64, partial sums into the total, each rounded to fp16."""
    d1 = dy.shape[1]
    acc = np.zeros((dy.shape[0], dy.shape[2]), dtype=np.float32)
    for first in range(0, d1, 64):
        part = np.zeros_like(acc)
        for line in range(first, min(d1, first + 64)):
            part = fp16(part + dy[:, line, :])
        acc = fp16(acc + part)
    return acc


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axes, y_dist", SCHEDULES)
def test_fp16_sum_changes_reductions_only(twin_lib, fp16_sum_lib, dtype, shape, axes, y_dist):
    dy, y = make_inputs(shape, dtype, axes, y_dist, "normal", seed=7)
    good = run_out(twin_lib, dy, y, axes)
    bad = run_out(fp16_sum_lib, dy, y, axes)
    if shape[1] == 1:  # NO_REDUCE: no sum
        assert np.array_equal(bits(bad), bits(good))
        return
    assert (bits(bad) != bits(good)).any()
    golden = log_softmax_grad(dy, y, axes)
    assert judge("experimental", good, golden, None).passed
    if dtype != "bfloat16":  # in bf16 the fp16 sum's error is near bf16's own: caught by chance
        assert not judge("experimental", bad, golden, None).passed


@pytest.mark.parametrize(
    "shape, axes, fp16_sum",
    [((4, 1000), (-1,), fp16_sum_tail), ((2, 300, 5), (1,), fp16_sum_mid)],
)
def test_fp16_sum_is_the_fp16_accumulated_sum(twin_lib, fp16_sum_lib, shape, axes, fp16_sum):
    # In fp32 the planted result is dy - exp(y) * S with S the fp16-accumulated sum, to a few fp32
    # roundings; the real result is not.
    dy, y = make_inputs(shape, "float32", axes, "uniform", "normal", seed=7)
    s = np.expand_dims(f64(fp16_sum(dy)), axis=axes[0])
    expected = f64(dy) - np.exp(f64(y)) * s
    tol = 4 * FP32_EPS * (np.abs(f64(dy)) + np.exp(f64(y)) * np.abs(s))
    bad = run_out(fp16_sum_lib, dy, y, axes)
    assert np.all(np.abs(f64(bad) - expected) <= tol)
    good = run_out(twin_lib, dy, y, axes)
    assert np.mean(np.abs(f64(good) - expected) > tol) > 0.5


# drop_element ------------------------------------------------------------------------------------


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310B1"])
@pytest.mark.parametrize(
    "shape, axes, changed",
    [
        ((4, 8192), (-1,), True),  # REDUCE_TAIL, one chunk
        ((2, 20000), (-1,), True),  # REDUCE_TAIL, 2-3 chunks with a tail
        ((2, 4096, 3), (1,), True),  # REDUCE_MID
        ((4, 4095), (-1,), False),  # just short of a long reduction
        ((4, 1000), (-1,), False),
        ((2, 1000, 3), (1,), False),
    ],
)
def test_drop_element_loses_the_last_term_of_long_sums(
    twin_lib, drop_element_lib, soc, shape, axes, changed
):
    dy, y = make_inputs(shape, "float32", axes, "uniform", "normal", seed=8)
    good = run_out(twin_lib, dy, y, axes, soc)
    bad = run_out(drop_element_lib, dy, y, axes, soc)
    if not changed:
        assert np.array_equal(bits(bad), bits(good))
        return
    # out = dy - exp(y) * sum: without the row's last element (REDUCE_MID: its last line) in the
    # sum, every result of the row moves by exp(y) times that element, up to fp32 roundings.
    last = f64(dy[..., -1:] if axes == (-1,) else dy[:, -1:, :])
    e = np.exp(f64(y))
    abs_sum = np.abs(f64(dy)).sum(axis=axes[0], keepdims=True)
    tol = 16 * FP32_EPS * (e * abs_sum + np.abs(f64(good)))
    assert np.all(np.abs((f64(bad) - f64(good)) - e * last) <= tol)
    assert np.mean(bits(bad) != bits(good)) > 0.5


@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
@pytest.mark.parametrize(
    "shape, axes, changed",
    [((4, 8192), (-1,), True), ((2, 4096, 3), (1,), True), ((4, 1000), (-1,), False)],
)
def test_drop_element_in_2_byte_dtypes(twin_lib, drop_element_lib, dtype, shape, axes, changed):
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=8)
    good = run_out(twin_lib, dy, y, axes)
    bad = run_out(drop_element_lib, dy, y, axes)
    assert (bits(bad) != bits(good)).any() == changed
    if changed:
        assert not judge("experimental", bad, log_softmax_grad(dy, y, axes), None).passed


# strided_out_unwritten ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axes, y_dist", SCHEDULES)
@pytest.mark.parametrize("strided_in", [False, True], ids=["dense_in", "strided_in"])
@pytest.mark.parametrize("strided_out", [False, True], ids=["dense_out", "strided_out"])
def test_strided_out_unwritten_leaves_only_a_strided_out_alone(
    twin_lib, strided_out_unwritten_lib, dtype, shape, axes, y_dist, strided_in, strided_out
):
    dy, y = make_inputs(shape, dtype, axes, y_dist, "normal", seed=9)

    def out_of(library):
        # A fresh NaN-filled out, strided or not; dy and y strided (through the workspace) or not.
        out = (
            native.strided_view(shape, dy.dtype)
            if strided_out
            else np.full(shape, np.nan, dy.dtype)
        )
        return run_out(library, dy, y, axes, strided=strided_in, out=out)

    good, bad = out_of(twin_lib), out_of(strided_out_unwritten_lib)
    assert not np.isnan(f64(good)).any()
    if strided_out:
        assert np.isnan(f64(bad)).all()  # never written: what it held before the call
    else:
        assert np.array_equal(bits(bad), bits(good))


def test_strided_out_unwritten_through_strided_flag(twin_lib, strided_out_unwritten_lib):
    # native.run(strided=True) makes dy, y and out strided, as the matrix's strided cases do.
    dy, y = make_inputs((4, 1000), "float16", (-1,), "uniform", "normal", seed=9)
    bad = run_out(strided_out_unwritten_lib, dy, y, (-1,), strided=True)
    assert np.isnan(f64(bad)).all()
    assert not np.isnan(f64(run_out(twin_lib, dy, y, (-1,), strided=True))).any()
    assert np.array_equal(
        bits(run_out(strided_out_unwritten_lib, dy, y, (-1,))),
        bits(run_out(twin_lib, dy, y, (-1,))),
    )
