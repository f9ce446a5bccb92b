"""Both libraries' results (the emulated real kernel and the twin, ``native_lib``) against the
float64 golden (golden.reference) under the default precision standard, across schedules, dtypes,
tails, multi-chunk rows, ranks 0 and 8, strided views and empty tensors; and the libraries' own
fp16/bf16 rounding (lsg_convert, shared code) against ml_dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from farm.agent.backends import native
from golden.inputs import make_inputs
from golden.reference import log_softmax_grad
from golden.standards import judge
from tests.op import twin_abi

DTYPES = ("float32", "float16", "bfloat16")


def assert_same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def check(dy, y, axes, soc="Ascend910B1", **kw):
    result = native.run(dy, y, axes, soc, **kw)
    assert (result.status, result.reason) == (0, "ok"), result.message
    assert result.out is not None and result.tiling is not None  # an accepted call has both
    golden = log_softmax_grad(dy, y, axes)
    verdict = judge("experimental", result.out, golden, None)
    assert verdict.passed, f"{result.tiling['schedule_name']}: {verdict.reason}"
    return result


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, axes, schedule",
    [
        ((3, 1, 70), (1,), "NO_REDUCE"),
        ((5, 300), (-1,), "REDUCE_TAIL"),
        ((2, 7, 33), (1,), "REDUCE_MID"),
        ((60, 5, 7), (1,), "REDUCE_MID"),  # more rows than cores: big and small cores
        ((100, 19), (-1,), "REDUCE_TAIL"),
    ],
)
def test_schedules(native_lib, dtype, shape, axes, schedule):
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=3)
    result = check(dy, y, axes)
    assert result.tiling["schedule_name"] == schedule


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [2, 7, 8, 9, 15, 16, 17, 31, 33, 1023])
def test_tail_lengths(native_lib, dtype, n):
    dy, y = make_inputs((3, n), dtype, (-1,), "normal", "uniform", seed=n)
    check(dy, y, (-1,))


@pytest.mark.parametrize(
    "soc, dtype, shape, axes, chunks",
    [
        ("Ascend910B1", "float32", (2, 9825), (-1,), 2),
        ("Ascend910B1", "float16", (2, 2 * 9824 + 3), (-1,), 3),
        ("Ascend910B1", "bfloat16", (1, 3 * 9824), (-1,), 3),
        ("Ascend310B1", "float16", (2, 12689), (-1,), 2),
        ("Ascend310B1", "float32", (1, 3, 12697), (1,), 2),
        ("Ascend910B1", "bfloat16", (1, 3, 9833), (1,), 2),
        ("Ascend910B1", "float32", (2, 1, 8200), (1,), 2),
    ],
)
def test_multi_chunk_rows(native_lib, soc, dtype, shape, axes, chunks):
    dy, y = make_inputs(shape, dtype, axes, "uniform", "outliers", seed=7)
    result = check(dy, y, axes, soc)
    assert result.tiling["chunk_count"] == chunks


@pytest.mark.parametrize(
    "soc, shape, seed",
    [
        ("Ascend310B1", (1, 9824, 3), 767234174),  # the smoke case 310b_f32_1x9824x3_d1_...
        ("Ascend910B1", (1, 50000, 4), 0),
        ("Ascend910B1", (1, 50000, 4), 2),
    ],
)
def test_reduce_mid_long_columns(native_lib, soc, shape, seed):
    # Summing the d1 lines one by one in fp32 fails these (MARE 2.1e-3, 1.4e-2, 5.6e-3 against
    # 10T = 1.2e-3); the kernel sums them in groups of 64 lines (MARE below 7.2e-4).
    dy, y = make_inputs(shape, "float32", (1,), "uniform", "normal", seed=seed)
    check(dy, y, (1,), soc)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rank0_and_rank8(native_lib, dtype):
    axes: tuple[int, ...]
    for axes in ((-1,), (0,)):
        dy, y = make_inputs((), dtype, axes, "arbitrary", "normal", seed=1)
        result = check(dy, y, axes)
        assert result.out.shape == ()
    shape = (2, 1, 2, 1, 3, 1, 2, 2)
    for axes in ((2, 3, 4), (-1,), (0,), tuple(range(8))):
        dy, y = make_inputs(shape, dtype, axes, "normal", "normal", seed=2)
        check(dy, y, axes)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, axes",
    [
        ((3, 1, 70), (1,)),
        ((4, 9830), (-1,)),
        ((3, 5, 40), (1,)),
    ],
)
def test_strided_views(native_lib, dtype, shape, axes):
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=5)
    result = check(dy, y, axes, strided=True)
    assert not result.tiling["is_contiguous"] and result.workspace > 0
    # Same bits as the contiguous run, and nothing written outside the out view.
    plain = native.run(dy, y, axes, "Ascend910B1")
    assert_same_bits(result.out, plain.out)
    buffer = np.full(shape[:-1] + (shape[-1] * 3,), np.nan, dtype=dy.dtype)
    out = buffer[..., 1::3]
    native.run(dy, y, axes, "Ascend910B1", out=out)
    assert_same_bits(out, plain.out)
    gaps = np.delete(buffer, np.s_[1::3], axis=-1).astype(np.float64)
    assert np.isnan(gaps).all()


def test_transposed_and_reversed_inputs(native_lib):
    dy, y = make_inputs((40, 30), "float32", (0,), "normal", "normal", seed=9)
    dyt, yt = dy.T, y.T  # (30, 40) views with strides (1, 30)
    check(dyt, yt, (-1,))
    check(dy[::-1], y[::-1], (-1,))  # negative strides


@pytest.mark.parametrize(
    "shape, axes", [((0, 5), (-1,)), ((4, 0, 3), (1,)), ((3, 0), (0,)), ((0,), (0,))]
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_tensors(native_lib, shape, axes, dtype):
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal")
    for strided in (False, True):
        result = native.run(dy, y, axes, "Ascend910B1", strided=strided)
        assert result.out is not None, result.message
        assert (result.status, result.workspace, result.out.shape) == (0, 0, shape)


def test_threads_do_not_change_bits(native_lib):
    dy, y = make_inputs((97, 300), "float16", (-1,), "normal", "normal", seed=4)
    one = native.run(dy, y, (-1,), "Ascend910B1", threads=1).out
    for threads in (2, 5, 0):
        assert_same_bits(native.run(dy, y, (-1,), "Ascend910B1", threads=threads).out, one)


def test_no_reduce_is_dy_times_one_minus_exp_y(native_lib):
    # A valid forward output over an extent of 1 is y = 0: the gradient is exactly 0.
    dy = np.linspace(-3, 3, 50, dtype=np.float32).reshape(5, 1, 10)
    result = native.run(dy, np.zeros_like(dy), (1,), "Ascend910B1")
    np.testing.assert_array_equal(result.out, np.zeros_like(dy))
    # Arbitrary y (the API accepts any tensor): dy * (1 - exp(y)), each step rounded to fp32
    # (exp correctly rounded, as glibc's expf is for these inputs).
    dy, y = make_inputs((4, 1, 64), "float32", (1,), "arbitrary", "normal", seed=11)
    result = check(dy, y, (1,))
    e = np.exp(y.astype(np.float64)).astype(np.float32)
    assert_same_bits(result.out, dy * (np.float32(1) - e))


@pytest.mark.parametrize("special", ["nan_dy", "inf_dy", "nan_y", "neginf_y"])
def test_special_values_propagate(native_lib, special):
    for shape, axes in (((4, 37), (-1,)), ((2, 37, 5), (1,)), ((3, 1, 9), (1,))):
        dy, y = make_inputs(shape, "float32", axes, "uniform", "normal", special=special, seed=6)
        check(dy, y, axes)


@pytest.mark.parametrize("name, dtype", [("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)])
def test_conversions_match_ml_dtypes(twin_lib, name, dtype):
    every = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    widened = twin_abi.convert(every, np.float32)
    np.testing.assert_array_equal(widened.view(np.uint32), every.astype(np.float32).view(np.uint32))
    rng = np.random.default_rng(0)
    bits = np.concatenate(
        [
            rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32),
            # halfway cases, subnormal and overflow boundaries of the narrow type
            every.astype(np.float32).view(np.uint32) + np.uint32(1 << 12),
            every.astype(np.float32).view(np.uint32) + np.uint32(1 << 15),
            np.array(
                [
                    0x477FF000,
                    0x477FEFFF,
                    0x477FF001,
                    0x7F7FFFFF,
                    0x33000000,
                    0x33000001,
                    0x7F800001,
                    0xFFC00000,
                    0x7F7F8000,
                ],
                dtype=np.uint32,
            ),
        ]
    )
    src = bits.view(np.float32)
    got = twin_abi.convert(src, dtype).view(np.uint16)
    with np.errstate(over="ignore", invalid="ignore"):
        want = src.astype(dtype).view(np.uint16)
    nan = np.isnan(src)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.isnan(got[nan].view(dtype).astype(np.float32)).all()
