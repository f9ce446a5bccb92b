"""The C ABI libraries' diagnostic entry points, for tests: how one was built, its conversions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from farm.agent.backends import native


def build_info(library: str | Path | None = None) -> str:
    """How the library was built, e.g. "plant_bug=;sanitize=0;target=twin"."""
    return native.load(library).lsg_build_info().decode()


def convert(src: np.ndarray, dst_dtype: Any, *, library: str | Path | None = None) -> np.ndarray:
    """The library's own fp32 <-> fp16/bf16 conversion (for tests of its rounding)."""
    lib = native.load(library)
    src = np.ascontiguousarray(src)
    dst = np.empty(src.shape, dtype=dst_dtype)
    rc = lib.lsg_convert(
        native.dtype_code(src.dtype),
        src.ctypes.data,
        native.dtype_code(dst.dtype),
        dst.ctypes.data,
        src.size,
    )
    if rc != 0:
        raise ValueError(f"lsg_convert {src.dtype} -> {dst.dtype} is not supported")
    return dst
