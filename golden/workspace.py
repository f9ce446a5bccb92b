"""Work arrays reused slab after slab and case after case (golden/judge.py, golden/bound.py,
golden/metrics.py): each thread keeps one ``Workspace``."""

from __future__ import annotations

import math
import threading

import numpy as np


class Workspace:
    """Work arrays reused slab after slab and case after case.

    A fresh slab-sized array costs a page fault per 4 KiB the first time it is written (the
    allocator hands large blocks back to the system when they are freed), which on a 152k-element
    case cost more than the arithmetic itself; judging takes its slab-sized arrays from here
    instead. ``get(name, shape, dtype)`` views the bytes kept under `name` (grown when too small)
    as an array: the caller owns its contents until that name is asked for again.

    Results that outlive a stage have their own names ("golden", "bound", "rg", an
    accumulator's "<prefix>.rel"). Temporaries use the scratch slots ``s(i)`` (numbers, any
    dtype) and ``b(i)`` (bool): the slots a function uses are in its docstring, each function
    leaves alone the slots below the ``base`` its caller gives, and the stages of a slab (golden
    and bound, rounding, the metrics) use the same slots one after the other, so the workspace
    holds about a dozen float64 arrays of a slab."""

    def __init__(self) -> None:
        self._bytes: dict[str, np.ndarray] = {}

    def get(self, name: str, shape, dtype=np.float64) -> np.ndarray:
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        dt = np.dtype(dtype)
        need = math.prod(shape) * dt.itemsize
        have = self._bytes.get(name)
        if have is None or have.size < need:
            have = self._bytes[name] = np.empty(need, np.uint8)
        return have[:need].view(dt).reshape(shape)

    def s(self, i: int, shape, dtype=np.float64) -> np.ndarray:
        return self.get(f"s{i}", shape, dtype)

    def b(self, i: int, shape) -> np.ndarray:
        return self.get(f"b{i}", shape, bool)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._bytes.values())

    def clear(self) -> None:
        self._bytes.clear()


# What a thread keeps between cases; a larger workspace is dropped at the end of its case.
KEEP_BYTES = 64 << 20
_LOCAL = threading.local()


def workspace() -> Workspace:
    """This thread's workspace (golden.judge.judge_case uses it and trims it to KEEP_BYTES)."""
    ws = getattr(_LOCAL, "workspace", None)
    if ws is None:
        ws = _LOCAL.workspace = Workspace()
    return ws
