"""torch_benchmark (PyTorch's CPU kernel in the case dtype) and the benchmark-ratio standard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from golden.benchmark import torch_benchmark
from golden.dtypes import SUPPORTED, numpy_dtype, round_to
from golden.inputs import make_inputs
from golden.reference import log_softmax_grad
from golden.standards import judge


@pytest.mark.parametrize("dtype", SUPPORTED)
@pytest.mark.parametrize(
    "shape,axes",
    [
        ((6, 300), (-1,)),
        ((3, 17, 5), (1,)),
        ((2, 3, 4, 5, 6), (1, 2, 3)),
        ((4, 1, 3), (1,)),
        ((), (0,)),
        ((5,), (-1,)),
        ((2, 1, 2, 1, 2, 1, 2, 3), (-2, -1)),
    ],
)
def test_close_to_golden_in_the_case_dtype(
    dtype: str, shape: tuple[int, ...], axes: Sequence[int] | int
) -> None:
    dy, y = make_inputs(shape, dtype, axes, "normal", "normal", seed=6)
    b = torch_benchmark(dy, y, axes, dtype)
    assert b.shape == shape and b.dtype == numpy_dtype(dtype)
    g = log_softmax_grad(dy, y, axes)
    v = judge("experimental", b, g, dtype)
    assert v.passed, v.reason


@pytest.mark.parametrize("dtype", SUPPORTED)
def test_the_benchmark_runs_on_one_thread_with_the_bits_of_any_number(dtype: str) -> None:
    """The kernel reduces each line on one thread: its result does not depend on how many
    threads PyTorch has, so the benchmark takes one (and gives the caller's count back)."""
    import torch

    shapes = [((64, 4096), (1,)), ((16, 300, 64), (1,)), ((2, 70000), (0,)), ((3, 5, 9000), (2,))]
    before = torch.get_num_threads()
    try:
        for shape, axes in shapes:
            dy, y = make_inputs(shape, dtype, axes, "normal", "normal", seed=3)
            torch.set_num_threads(4)
            ours = torch_benchmark(dy, y, axes, dtype)
            assert torch.get_num_threads() == 4
            merged = (int(np.prod(shape[: axes[0]])), shape[axes[0]], -1)
            tdt = {"float32": torch.float32, "float16": torch.float16}.get(dtype, torch.bfloat16)
            g = torch.from_numpy(np.ascontiguousarray(dy).view(np.uint8).copy())
            o = torch.from_numpy(np.ascontiguousarray(y).view(np.uint8).copy())
            g, o = (t.view(tdt).reshape(merged) for t in (g, o))
            with torch.no_grad():
                four = torch._log_softmax_backward_data(g, o, 1, tdt).contiguous()
            assert ours.tobytes() == four.view(torch.uint8).numpy().tobytes()
    finally:
        torch.set_num_threads(before)


def test_the_benchmark_asks_for_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    seen: list[int] = []
    kernel = torch._log_softmax_backward_data

    def spy(*args: Any) -> torch.Tensor:
        seen.append(torch.get_num_threads())
        return kernel(*args)

    monkeypatch.setattr(torch, "_log_softmax_backward_data", spy)
    dy, y = make_inputs((8, 129), "float16", (-1,), "normal", "normal", seed=3)
    before = torch.get_num_threads()
    torch_benchmark(dy, y, (-1,), "float16")
    assert seen == [1] and torch.get_num_threads() == before


def test_empty_and_errors() -> None:
    e = np.zeros((3, 0), dtype=numpy_dtype("bfloat16"))
    out = torch_benchmark(e, e, (-1,), "bfloat16")
    assert out.shape == (3, 0) and out.dtype == numpy_dtype("bfloat16")
    with pytest.raises(ValueError, match="float64"):
        torch_benchmark(np.zeros(3), np.zeros(3), (0,), "float64")
    with pytest.raises(ValueError, match="consecutive"):
        torch_benchmark(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), (0, 2), "float32")


def test_bf16_bits_round_trip() -> None:
    # values exactly representable in bf16 whose result is exact: ones with a no-reduce axis
    dy = round_to(np.array([[1.5], [-2.25], [3.0]]), "bfloat16")
    y = round_to(np.zeros((3, 1)), "bfloat16")
    out = torch_benchmark(dy, y, (1,), "bfloat16")
    np.testing.assert_array_equal(out.astype(np.float64), np.zeros((3, 1)))
    y = round_to(np.full((3, 1), -np.inf), "bfloat16")  # exp(y) = 0: out = dy
    np.testing.assert_array_equal(torch_benchmark(dy, y, (1,), "bfloat16"), dy)


@pytest.mark.parametrize("dtype", SUPPORTED)
def test_golden_rounded_passes_l2_and_a_worse_result_fails(dtype: str) -> None:
    shape, axes = (48, 4, 200), (1, 2)
    dy, y = make_inputs(shape, dtype, axes, "normal", "normal", seed=8)
    g = log_softmax_grad(dy, y, axes)
    bench = torch_benchmark(dy, y, axes, dtype)
    v = judge("benchmark-ratio", round_to(g, dtype), g, dtype, benchmark=bench, level="L2")
    assert v.passed, v.reason
    assert v.metrics["levels_passed"] == ["L0", "L1", "L2"]
    # computing in the case dtype (no fp32 upcast) is noticeably worse than the benchmark
    d = numpy_dtype(dtype)
    dyc, yc = dy.reshape(48, 800), y.reshape(48, 800)
    s = dyc.sum(axis=1, keepdims=True, dtype=d)
    naive = (dyc - (np.exp(yc.astype(np.float32)).astype(d) * s).astype(d)).astype(d)
    if dtype == "float32":  # float32 arithmetic is the benchmark's own: perturb instead
        naive = (g.reshape(48, 800) * (1 + 1e-5)).astype(d)
    worse = judge("benchmark-ratio", naive.reshape(shape), g, dtype, benchmark=bench, level="L2")
    assert not worse.passed, worse.reason
    assert worse.reason.startswith("FAIL benchmark-ratio L2")
    assert "ratio" in worse.reason and "limit" in worse.reason and "\n" not in worse.reason
