"""The `torch` backend: LogSoftmax backward through PyTorch on this host's device.

On an Atlas host with torch_npu, the npu device dispatches to aclnnLogSoftmaxBackward, so the farm
tests the vendor operator itself; elsewhere it runs on cuda or cpu. PyTorch does not implement
the operator's parameter contract, so a call it refuses comes back with its exception text and
the aclnn status when the message carries one (torch_npu prints it), otherwise status -1.

The output is written the way aclnn writes into a caller's out: into a view of the case's out
layout (torch as_strided over a NaN-filled storage on the device), which comes back as a numpy
view of the same layout; out_guard_ok says whether the storage around the view stayed NaN. The
inputs reach torch as contiguous copies (the merged [d0, d1, d2] reshape copies a strided view
anyway).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import numpy as np

from farm.agent.backends.result import BackendResult
from golden import dtypes, layouts
from golden.contract import merge_shape, normalize_axes

_STATUS_IN_MESSAGE = re.compile(r"\b(1610\d\d)\b")


def _torch():
    import torch

    try:
        import torch_npu  # noqa: F401  (registers the npu device)
    except ImportError:
        pass
    return torch


def device_name(torch, device: int) -> str:
    if hasattr(torch, "npu") and torch.npu.is_available():
        return f"npu:{device}"
    if torch.cuda.is_available():
        return f"cuda:{device % torch.cuda.device_count()}"
    return "cpu"


def _to_torch(torch, a: np.ndarray, dev: str):
    if a.dtype == dtypes.numpy_dtype("bfloat16"):
        t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(np.ascontiguousarray(a))
    return t.to(dev)


def _to_numpy(torch, t) -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(dtypes.numpy_dtype("bfloat16"))
    return t.numpy()


def _out_view(torch, shape, dtype_name: str, layout: layouts.Layout, dev: str):
    """(storage, out): out a torch view of `layout` over a sentinel-filled storage on `dev`."""
    wrong = layouts.problems(layout, shape, writable=True)
    if wrong:
        raise ValueError(f"out layout {layouts.text(layout)}: {'; '.join(wrong)}")
    view = layouts.resolve(layout, shape)
    tdtype = getattr(torch, dtype_name)
    fill = float("nan") if tdtype.is_floating_point else -1
    storage = torch.full((max(view.storage, 1),), fill, dtype=tdtype, device=dev)
    return storage, storage.as_strided(tuple(shape), view.strides, view.offset)


def run_call(
    dy: np.ndarray | None,
    y: np.ndarray | None,
    axes: Sequence[int],
    soc: str | None,
    *,
    out_dtype: str,
    out_shape: tuple[int, ...] | None = None,
    missing: str | None = None,
    api: str = "dim",
    device: int = 0,
    out_layout: layouts.Layout | None = None,
) -> BackendResult:
    torch = _torch()
    dev = device_name(torch, device)
    started = time.perf_counter()
    try:
        if dy is None or y is None or missing == "out":
            raise ValueError(f"torch has no form of this call without {missing}")
        shape = dy.shape
        norm = sorted(normalize_axes(tuple(axes), len(shape)))
        if not norm or norm != list(range(norm[0], norm[-1] + 1)):
            raise ValueError(f"torch cannot express the axis list {list(axes)}")
        # One dim on the merged [d0, d1, d2] view is the same reduction as the axis list.
        t_dy = _to_torch(torch, dy, dev).reshape(merge_shape(shape, tuple(axes)))
        t_y = _to_torch(torch, y, dev).reshape(t_dy.shape)
        result = torch._log_softmax_backward_data(t_dy, t_y, 1, t_dy.dtype).reshape(shape)
        # aclnn writes into the caller's out; torch returns a fresh tensor. Copying into an out
        # of the case's layout (or of another dtype or shape) is what a caller would do, and
        # torch allows it.
        out_dims = tuple(out_shape) if out_shape else shape
        layout = layouts.parse(out_layout if out_layout is not None else "contiguous")
        storage, out = _out_view(torch, out_dims, out_dtype, layout, dev)
        out.copy_(result)
        if dev.startswith(("cuda", "npu")):
            getattr(torch, dev.split(":")[0]).synchronize()
        seconds = time.perf_counter() - started
        host = _to_numpy(torch, storage)
        view = layouts.view_of(host, layout, out_dims)
        guard = layouts.outside_untouched(host, layout, out_dims)
        return BackendResult(0, "ok", "", view, 0, None, seconds, guard)
    except (RuntimeError, ValueError, TypeError) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        match = _STATUS_IN_MESSAGE.search(str(exc))
        status = int(match.group(1)) if match else -1
        reason = None if match else "backend_error"
        return BackendResult(status, reason, text, None, 0, None, time.perf_counter() - started)
