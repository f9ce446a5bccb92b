"""The third-party benchmark for the benchmark-ratio standard: PyTorch's own CPU kernel.

torch._log_softmax_backward_data runs in the case dtype on CPU. A list of reduce axes is merged
to [d0, d1, d2] and reduced over dim 1 (the axes are consecutive, so this is the same reduction).
torch is imported lazily: the rest of golden/ runs on hosts without it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from golden.contract import merge_shape
from golden.dtypes import SUPPORTED, numpy_dtype
from golden.reference import check_axes


class TorchMissing(ImportError):
    pass


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the host
        raise TorchMissing(
            f"the benchmark-ratio standard needs PyTorch (CPU) for its benchmark ({exc}): install "
            "it where the agent runs (pip install torch, the CPU build), or judge with another "
            "standard"
        ) from exc
    return torch


def _to_torch(torch, a: np.ndarray, dtype: str):
    a = np.ascontiguousarray(a)
    if dtype == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def _to_numpy(torch, t, dtype: str) -> np.ndarray:
    t = t.contiguous()
    if dtype == "bfloat16":
        return t.view(torch.int16).numpy().view(numpy_dtype("bfloat16"))
    return t.numpy()


def torch_benchmark(
    dy: np.ndarray, y: np.ndarray, axes: Sequence[int] | int, dtype: str
) -> np.ndarray:
    """PyTorch CPU's LogSoftmax backward of (dy, y) in `dtype`, as a numpy array in that dtype."""
    if dtype not in SUPPORTED:
        raise ValueError(f"no benchmark for dtype {dtype!r}; supported: {', '.join(SUPPORTED)}")
    dt = numpy_dtype(dtype)
    dy = np.asarray(dy)
    y = np.asarray(y)
    if dy.shape != y.shape:
        raise ValueError(f"dy shape {dy.shape} differs from y shape {y.shape}")
    shape = dy.shape
    axes = check_axes(shape, axes)
    if dy.size == 0:
        return np.zeros(shape, dtype=dt)
    torch = _torch()
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    merged = merge_shape(shape, axes)
    g = _to_torch(torch, dy.astype(dt, copy=False).reshape(merged), dtype)
    o = _to_torch(torch, y.astype(dt, copy=False).reshape(merged), dtype)
    threads = torch.get_num_threads()
    # One thread: the kernel reduces each line on one thread whatever their number (the same
    # bits, tests/golden/test_benchmark.py), and an agent sharing the host's cores with others
    # gains nothing from OpenMP's extra threads but their spinning after each call.
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            r = torch._log_softmax_backward_data(g, o, 1, tdt)
    finally:
        torch.set_num_threads(threads)
    return _to_numpy(torch, r, dtype).reshape(shape)
