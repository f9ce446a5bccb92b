"""The float64 golden against an independent PyTorch float64 implementation, and its properties."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch  # a dev dependency: the independent float64 implementation

from golden.contract import normalize_axes
from golden.inputs import make_inputs
from golden.reference import check_axes, log_softmax, log_softmax_grad, seed_wrong_no_reduce


def _random_case(rng: np.random.Generator, rank: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A shape of rank 0..8 (at most ~4000 elements, sometimes with a zero extent) and a
    consecutive axis list, written with positive or negative indices."""
    if rank == 0:
        return (), (int(rng.choice([0, -1])),)
    shape = [int(rng.integers(1, 6)) for _ in range(rank)]
    while np.prod(shape) > 4000:
        shape[int(rng.integers(rank))] = 1
    if rng.random() < 0.1:
        shape[int(rng.integers(rank))] = 0
    first = int(rng.integers(rank))
    length = int(rng.integers(1, rank - first + 1))
    axes = list(range(first, first + length))
    axes = [a - rank if rng.random() < 0.5 else a for a in axes]
    if rng.random() < 0.3:
        axes = axes[::-1]
    return tuple(shape), tuple(axes)


def _torch_autograd(
    x: np.ndarray, dy: np.ndarray, axes: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """y = log_softmax(x) over the axes and its exact backward, by torch autograd in float64."""
    dims = tuple(sorted(normalize_axes(axes, x.ndim))) if x.ndim else (0,)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    yt = xt - torch.logsumexp(xt, dim=dims, keepdim=True)
    (grad,) = torch.autograd.grad(yt, xt, grad_outputs=torch.tensor(dy, dtype=torch.float64))
    return yt.detach().numpy(), grad.numpy()


def _torch_formula(dy: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    dims = tuple(sorted(normalize_axes(axes, dy.ndim))) if dy.ndim else (0,)
    g = torch.tensor(dy, dtype=torch.float64)
    o = torch.tensor(y, dtype=torch.float64)
    return (g - torch.exp(o) * g.sum(dim=dims, keepdim=True)).numpy()


@pytest.mark.parametrize("seed", range(6))
def test_matches_torch_autograd_on_random_cases(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    for rank in range(9):
        shape, axes = _random_case(rng, rank)
        x = rng.uniform(-6, 6, size=shape)
        dy = rng.standard_normal(shape)
        y, want = _torch_autograd(x, dy, axes)
        got = log_softmax_grad(dy, y, axes)
        assert got.shape == shape and got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13, err_msg=f"{shape} {axes}")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_matches_torch_formula_on_generated_inputs(dtype: str) -> None:
    rng = np.random.default_rng(5)
    for i in range(40):
        shape, axes = _random_case(rng, int(rng.integers(0, 9)))
        y_dist = ["uniform", "normal", "peaked", "flat", "wide", "masked", "arbitrary"][i % 7]
        dy, y = make_inputs(shape, dtype, axes, y_dist, "normal", seed=i)
        dy64, y64 = dy.astype(np.float64), y.astype(np.float64)
        want = _torch_formula(dy64, y64, axes)
        np.testing.assert_allclose(log_softmax_grad(dy, y, axes), want, rtol=1e-12, atol=1e-13)


def test_rank0_and_rank8_and_empty() -> None:
    dy, y = np.array(0.75), np.array(0.0)
    axes: tuple[int, ...] | int
    for axes in ((0,), (-1,), 0, -1):
        assert log_softmax_grad(dy, y, axes).shape == ()
        assert float(log_softmax_grad(dy, y, axes)) == 0.0  # dy - 1 * dy
    assert float(log_softmax_grad(np.array(2.0), np.array(-1.0), [0])) == 2.0 - np.exp(-1.0) * 2.0

    shape: tuple[int, ...] = (2, 1, 3, 1, 2, 2, 1, 3)
    rng = np.random.default_rng(3)
    x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
    for axes in ((7,), (2, 3, 4), (-8, -7), tuple(range(8))):
        y, want = _torch_autograd(x, dy, axes)
        np.testing.assert_allclose(log_softmax_grad(dy, y, axes), want, rtol=1e-12, atol=1e-13)

    for shape, axes in (((0,), (0,)), ((3, 0, 4), (1,)), ((3, 0, 4), (2,)), ((0, 5), (-1,))):
        out = log_softmax_grad(np.zeros(shape, np.float16), np.zeros(shape, np.float16), axes)
        assert out.shape == shape and out.dtype == np.float64


def test_torch_backward_kernel_agrees_on_merged_shape() -> None:
    rng = np.random.default_rng(11)
    shape, axes = (3, 4, 5, 6, 2), (1, 2, 3)
    y = log_softmax(rng.standard_normal(shape), axes)
    dy = rng.standard_normal(shape)
    t = torch._log_softmax_backward_data(
        torch.tensor(dy.reshape(3, 120, 2)), torch.tensor(y.reshape(3, 120, 2)), 1, torch.float64
    ).numpy()
    np.testing.assert_allclose(
        log_softmax_grad(dy, y, axes), t.reshape(shape), rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("budget", [1, 7, 64, 1000])
def test_slab_size_does_not_change_result(budget: int) -> None:
    rng = np.random.default_rng(2)
    for shape, axes in (
        ((5, 33, 7), (1,)),
        ((4, 3, 50), (-1,)),
        ((1, 2000, 3), (1,)),
        ((6, 2, 3, 4), (1, 2)),
    ):
        dy, y = rng.standard_normal(shape), -rng.uniform(0, 5, shape)
        np.testing.assert_array_equal(  # bit for bit
            log_softmax_grad(dy, y, axes, slab_elements=budget), log_softmax_grad(dy, y, axes)
        )


def test_sums_to_zero_over_reduce_axes_for_valid_y() -> None:
    for shape, axes, y_dist in (
        ((4, 300), (-1,), "uniform"),
        ((3, 5, 6, 2), (1, 2), "normal"),
        ((2, 64, 3), (1,), "masked"),
        ((8, 100), (1,), "peaked"),
        ((2, 50), (1,), "wide"),
    ):
        dy, y = make_inputs(shape, "float64", axes, y_dist, "normal", seed=9)
        out = log_softmax_grad(dy, y, axes)
        dims = tuple(normalize_axes(axes, len(shape)))
        scale = np.abs(dy).sum(axis=dims)
        assert np.all(np.abs(out.sum(axis=dims)) <= 1e-12 * scale), y_dist


def test_linear_in_dy() -> None:
    rng = np.random.default_rng(4)
    shape, axes = (6, 7, 5), (1,)
    y = log_softmax(rng.standard_normal(shape), axes)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    lhs = log_softmax_grad(2.5 * a - 0.75 * b, y, axes)
    rhs = 2.5 * log_softmax_grad(a, y, axes) - 0.75 * log_softmax_grad(b, y, axes)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


def test_equivariant_under_moving_and_permuting_axes() -> None:
    rng = np.random.default_rng(8)
    shape = (3, 4, 5, 6)
    dy, y = rng.standard_normal(shape), -rng.uniform(0, 4, shape)
    base = log_softmax_grad(dy, y, (1,))
    for dest in range(4):  # move the reduce axis anywhere
        moved = log_softmax_grad(np.moveaxis(dy, 1, dest), np.moveaxis(y, 1, dest), (dest,))
        np.testing.assert_allclose(moved, np.moveaxis(base, 1, dest), rtol=1e-13, atol=1e-14)
    perm = (3, 1, 0, 2)  # permute the other axes; axis 1 stays at 1
    got = log_softmax_grad(dy.transpose(perm), y.transpose(perm), (1,))
    np.testing.assert_allclose(got, base.transpose(perm), rtol=1e-13, atol=1e-14)
    # a consecutive multi-axis block reordered inside itself is the same reduction
    multi = log_softmax_grad(dy, y, (1, 2))
    swapped = log_softmax_grad(dy.transpose(0, 2, 1, 3), y.transpose(0, 2, 1, 3), (1, 2))
    np.testing.assert_allclose(swapped, multi.transpose(0, 2, 1, 3), rtol=1e-13, atol=1e-14)
    # non-contiguous inputs are read correctly
    np.testing.assert_allclose(
        log_softmax_grad(dy[:, :, ::2], y[:, :, ::2], (1,)), base[:, :, ::2], rtol=1e-13, atol=1e-14
    )


def test_nan_and_inf_propagate() -> None:
    dy = np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0], [np.inf, 1.0, 1.0]])
    y = np.log(np.full((3, 3), 1 / 3))
    y[1, 0] = -np.inf  # masked: exp(y) = 0
    out = log_softmax_grad(dy, y, (1,))
    assert np.isnan(out[0]).all()  # NaN in the sum poisons its row
    assert out[1, 0] == 1.0 and np.isfinite(out[1]).all()
    # the sum is inf: inf - inf/3 = NaN where dy is inf, 1 - inf/3 = -inf elsewhere
    assert np.isnan(out[2, 0]) and np.isneginf(out[2, 1:]).all()


def test_seed_wrong_no_reduce_differs_from_golden() -> None:
    dy, y = make_inputs((4, 1, 6), "float32", (1,), "uniform", "normal", seed=1)
    assert np.all(y == 0)
    golden = log_softmax_grad(dy, y, (1,))
    assert np.all(golden == 0.0)
    np.testing.assert_array_equal(seed_wrong_no_reduce(dy, y), dy.astype(np.float64) - 1.0)


@pytest.mark.parametrize(
    "shape,axes,msg",
    [
        ((2, 3), (), "empty"),
        ((2, 3), (2,), "out of range"),
        ((2, 3, 4), (0, 2), "consecutive"),
        ((2, 3), (1, 1), "consecutive"),
        ((), (1,), "out of range"),
    ],
)
def test_rejects_axes_the_contract_rejects(
    shape: tuple[int, ...], axes: Sequence[int] | int, msg: str
) -> None:
    with pytest.raises(ValueError, match=msg):
        check_axes(shape, axes)
    with pytest.raises(ValueError, match=msg):
        log_softmax_grad(np.zeros(shape), np.zeros(shape), axes)


def test_rejects_shape_mismatch() -> None:
    with pytest.raises(ValueError, match="shape"):
        log_softmax_grad(np.zeros((2, 3)), np.zeros((3, 2)), (1,))
