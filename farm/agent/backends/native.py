"""The operator on the CPU through its C ABI (op/twin/lsg_twin.h), with ctypes: the `native`
backend.

Two libraries implement that ABI, and this module runs whichever it is given: the emulated real
kernel (liblsg_ascendc_cpu.so: the Ascend C kernel source and host tiling of op/ascendc on the CPU
emulation, `farm build --target ascendc-cpu`, the default) or the CPU twin (liblsg_twin.so, an
independent second implementation, `--target twin`). An operator package carries one of them.

`plan` checks a call and returns the operator's own tiling; `run` also executes it on numpy
arrays, with the output pre-filled with NaN so that an unwritten region cannot pass. The output
may be any view (golden/layouts.py: strides, storage, offset); the storage around it is NaN too,
and run reports whether the call left it so (out_guard_ok). A kernel the emulated device stopped
(a rule of the hardware broken: emu::Fault) comes back as status 561000, reason "kernel_fault"
and the fault's message, not as an exception ("emulation_policy" for a rule of the emulation's
own). The emulated real operator also says which layer of its host code decided the call and
what the shared checks said (`checks`, farm/agent/record.py HostChecks).

The library is found at, in order: $LSG_NATIVE_LIB; under the repository
build/ascendc-cpu/liblsg_ascendc_cpu.so, then build/twin/liblsg_twin.so (what `farm.pool.build`
writes);
the library of an operator package unpacked as package/ beside farm/.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

import ml_dtypes
import numpy as np

from farm.agent import machine
from farm.agent.backends.result import BackendResult
from golden import layouts, reasons
from golden.contract import REASON_BY_ID
from golden.dtypes import numpy_dtype

ENV_LIB = "LSG_NATIVE_LIB"
LIB_NAMES = ("liblsg_ascendc_cpu.so", "liblsg_twin.so")  # the C ABI's libraries, default first
BUILD_DIRS = {"liblsg_ascendc_cpu.so": "ascendc-cpu", "liblsg_twin.so": "twin"}
ROOT = Path(__file__).resolve().parents[3]  # the checkout (or the unpacked bundle)

# ACL dtype codes (enum lsg_dtype in op/tiling/lsg_types.h).
DTYPE_CODES: dict[np.dtype, int] = {
    np.dtype(np.float32): 0,
    np.dtype(np.float16): 1,
    np.dtype(np.int8): 2,
    np.dtype(np.int32): 3,
    np.dtype(np.uint8): 4,
    np.dtype(np.int16): 6,
    np.dtype(np.uint16): 7,
    np.dtype(np.uint32): 8,
    np.dtype(np.int64): 9,
    np.dtype(np.uint64): 10,
    np.dtype(np.float64): 11,
    np.dtype(np.bool_): 12,
    np.dtype(ml_dtypes.bfloat16): 27,
}
# The library's own reasons, outside the contract: ids 100 and above of the table of reasons the
# library compiles too (op/tiling/reasons.def, golden/reasons.py).
NATIVE_REASONS = {rid: r.name for rid, r in reasons.OWN.items()}
KERNEL_FAULT = reasons.BY_NAME["kernel_fault"].id
# The emulated device refused what CANN accepts (op/ascendc_cpu/README.md).
EMULATION_POLICY = reasons.BY_NAME["emulation_policy"].id
RUN_FAULTS = {KERNEL_FAULT: "kernel_fault", EMULATION_POLICY: "emulation_policy"}
STATUS_INNER = 561000


class NativeError(RuntimeError):
    """The library is missing or a run failed after planning succeeded (other than a kernel
    fault, which is a result)."""


class LsgTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
    ]


class TilingRecord(ctypes.Structure):
    _fields_ = (
        [  # type: ignore[assignment]
            (name, ctypes.c_int32)
            for name in (
                "schedule",
                "key",
                "is_small_shape",
                "is_contiguous",
                "is_empty",
                "cores_used",
                "big_cores",
                "ub_blocks",
            )
        ]
        + [
            (name, ctypes.c_int64)
            for name in (
                "d0",
                "d1",
                "d2",
                "rows",
                "rows_per_big_core",
                "rows_per_small_core",
                "row_len",
                "block_bytes",
                "block_elems",
                "chunk_count",
                "tail_elems",
            )
        ]
        + [
            ("workspace_bytes", ctypes.c_uint64),
            ("schedule_name", ctypes.c_char * 16),
            ("soc_name", ctypes.c_char * 32),
        ]
    )

    def as_dict(self) -> dict[str, Any]:
        out = {}
        for name, *_ in self._fields_:
            value = getattr(self, name)
            out[name] = value.decode() if isinstance(value, bytes) else int(value)
        for flag in ("is_small_shape", "is_contiguous", "is_empty"):
            out[flag] = bool(out[flag])
        return out


class SocProfileC(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 32),
        ("family", ctypes.c_char * 16),
        ("vector_cores", ctypes.c_int32),
        ("block_bytes", ctypes.c_int32),
        ("ub_bytes", ctypes.c_int64),
        ("bf16_cast", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


def find_library() -> Path:
    env = os.environ.get(ENV_LIB)
    if env:
        return Path(env)
    candidates = [ROOT / "build" / BUILD_DIRS[name] / name for name in LIB_NAMES]
    candidates += [ROOT / "package" / "lib" / name for name in LIB_NAMES]
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise NativeError(
        f"none of {', '.join(LIB_NAMES)} found: build one with `python -m farm.pool.build "
        f"--target ascendc-cpu` (or --target twin; both write build/), or set {ENV_LIB}"
    )


def load(library: str | Path | None = None) -> ctypes.CDLL:
    """The library at `library`, else the one find_library() finds; loaded once per path."""
    return _load(str(Path(library) if library else find_library()))


@cache
def _load(path: str) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        foreign = machine.foreign_library(path)
        if foreign:
            raise NativeError(foreign) from exc
        raise
    p, i32, i64, u64 = ctypes.POINTER, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64
    lib.lsg_version.restype = ctypes.c_char_p
    lib.lsg_build_info.restype = ctypes.c_char_p
    lib.lsg_soc_count.restype = i32
    lib.lsg_soc_get.argtypes = [i32, p(SocProfileC)]
    lib.lsg_soc_get.restype = i32
    lib.lsg_get_workspace_size.argtypes = [
        p(LsgTensor),
        p(LsgTensor),
        p(i64),
        i32,
        p(LsgTensor),
        ctypes.c_char_p,
        p(u64),
        p(ctypes.c_void_p),
        p(i32),
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    lib.lsg_get_workspace_size.restype = i32
    lib.lsg_executor_tiling.argtypes = [ctypes.c_void_p, p(TilingRecord)]
    lib.lsg_executor_tiling.restype = i32
    lib.lsg_run.argtypes = [ctypes.c_void_p, u64, ctypes.c_void_p, i32]
    lib.lsg_run.restype = i32
    lib.lsg_executor_destroy.argtypes = [ctypes.c_void_p]
    lib.lsg_executor_destroy.restype = None
    if hasattr(lib, "lsg_run_error"):  # every library since LSG_REASON_KERNEL_FAULT
        lib.lsg_run_error.argtypes = [
            ctypes.c_void_p,
            p(i32),
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        lib.lsg_run_error.restype = i32
    if hasattr(lib, "lsg_acpu_last_checks"):  # the emulated real operator's layers
        lib.lsg_acpu_last_checks.argtypes = []
        lib.lsg_acpu_last_checks.restype = ctypes.c_char_p
    lib.lsg_convert.argtypes = [i32, ctypes.c_void_p, i32, ctypes.c_void_p, i64]
    lib.lsg_convert.restype = i32
    return lib


def version(library: str | Path | None = None) -> str:
    return load(library).lsg_version().decode()


def build_info(library: str | Path | None = None) -> dict[str, str]:
    """How the library was built, e.g. {"plant_bug": "", "sanitize": "0", "target": "twin"}."""
    text = load(library).lsg_build_info().decode()
    return dict(part.partition("=")[::2] for part in text.split(";") if part)


def soc_profiles(library: str | Path | None = None) -> list[dict[str, Any]]:
    """The SoC table compiled into the library."""
    lib = load(library)
    out = []
    for i in range(lib.lsg_soc_count()):
        rec = SocProfileC()
        if lib.lsg_soc_get(i, ctypes.byref(rec)) != 0:
            raise NativeError(f"lsg_soc_get({i}) failed")
        out.append(
            {
                "name": rec.name.decode(),
                "family": rec.family.decode(),
                "vector_cores": rec.vector_cores,
                "ub_bytes": rec.ub_bytes,
                "block_bytes": rec.block_bytes,
                "bf16_cast": bool(rec.bf16_cast),
            }
        )
    return out


def reason_name(reason_id: int) -> str:
    return REASON_BY_ID.get(reason_id) or NATIVE_REASONS.get(reason_id, f"reason_{reason_id}")


@dataclass(frozen=True)
class Spec:
    """A tensor by shape and dtype only, for planning without data.

    dtype: anything np.dtype takes, or an int ACL code (e.g. an unsupported one).
    strides: in elements; None = contiguous.
    """

    shape: tuple[int, ...]
    dtype: Any
    strides: tuple[int, ...] | None = None


@dataclass(frozen=True)
class PlanResult:
    status: int
    reason: str
    message: str
    workspace: int
    tiling: dict[str, Any] | None  # None when rejected
    checks: dict[str, Any] | None = None  # farm/agent/record.py HostChecks


# What run() returns: status, reason (a golden.contract name), message, out (None when rejected),
# workspace, tiling (None when rejected), seconds (planning and running).
NativeResult = BackendResult


def dtype_code(dtype: Any) -> int:
    if isinstance(dtype, (int, np.integer)):
        return int(dtype)
    dt = np.dtype(dtype)
    if dt not in DTYPE_CODES:
        raise ValueError(f"dtype {dt} has no ACL code here; pass the int code instead")
    return DTYPE_CODES[dt]


class _Descriptor:
    """Keeps the ctypes arrays of one lsg_tensor alive."""

    def __init__(self, t: np.ndarray | Spec):
        if isinstance(t, np.ndarray):
            shape, code, data = t.shape, dtype_code(t.dtype), t.ctypes.data or None
            if t.size and t.ndim and any(s % t.itemsize for s in t.strides):
                raise ValueError("array strides are not whole elements")
            strides = None if t.flags.c_contiguous else tuple(s // t.itemsize for s in t.strides)
        else:
            shape, code, data = tuple(t.shape), dtype_code(t.dtype), None
            strides = None if t.strides is None else tuple(t.strides)
        rank = len(shape)
        self._shape = (ctypes.c_int64 * max(rank, 1))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * max(rank, 1))(*strides)
        self.c = LsgTensor(
            data,
            code,
            rank,
            ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)),
            None
            if self._strides is None
            else ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64)),
        )


def _plan(lib, dy, y, axes, out, soc):
    """Phase one.  Returns (status, reason id, message, workspace, executor handle or None,
    checks or None)."""
    descs = [None if t is None else _Descriptor(t) for t in (dy, y, out)]
    ptrs = [None if d is None else ctypes.pointer(d.c) for d in descs]
    axes = tuple(int(a) for a in axes)
    c_axes = (ctypes.c_int64 * max(len(axes), 1))(*axes)
    ws, handle, reason = ctypes.c_uint64(0), ctypes.c_void_p(None), ctypes.c_int32(-1)
    msg = ctypes.create_string_buffer(1024)
    status = lib.lsg_get_workspace_size(
        ptrs[0],
        ptrs[1],
        c_axes,
        len(axes),
        ptrs[2],
        soc.encode(),
        ctypes.byref(ws),
        ctypes.byref(handle),
        ctypes.byref(reason),
        msg,
        len(msg),
    )
    return status, reason.value, msg.value.decode(), ws.value, handle.value, _checks(lib)


def _checks(lib) -> dict[str, Any] | None:
    """What each layer of the last phase one on this thread said (farm/agent/record.py
    HostChecks), from a library that can say (lsg_acpu_last_checks); None from the others."""
    if not hasattr(lib, "lsg_acpu_last_checks"):
        return None
    raw = json.loads(lib.lsg_acpu_last_checks().decode(errors="replace"))
    if not raw:
        return None
    checks: dict[str, Any] = {
        "decided_by": raw["decided_by"],
        "host": reason_name(raw["host_reason"]),
        "host_status": raw["host_status"],
        "tiling_mismatch": raw["tiling_mismatch"],
    }
    if "shared_reason" in raw:
        checks.update(shared=reason_name(raw["shared_reason"]), shared_status=raw["shared_status"])
        if raw["shared_reason"] != raw["host_reason"]:  # what the record must say, only then
            checks["shared_message"] = raw["shared_message"]
    return checks


def _run_error(lib, handle) -> tuple[int, str] | None:
    """(reason id, message) of the executor's last failed run; None from a library that cannot
    say (no lsg_run_error)."""
    if not hasattr(lib, "lsg_run_error"):
        return None
    reason, msg = ctypes.c_int32(-1), ctypes.create_string_buffer(1024)
    lib.lsg_run_error(handle, ctypes.byref(reason), msg, len(msg))
    return reason.value, msg.value.decode(errors="replace")


def _tiling(lib, handle) -> dict[str, Any]:
    rec = TilingRecord()
    if lib.lsg_executor_tiling(handle, ctypes.byref(rec)) != 0:
        raise NativeError("lsg_executor_tiling failed")
    return rec.as_dict()


def plan(
    dy: np.ndarray | Spec | None,
    y: np.ndarray | Spec | None,
    axes: Sequence[int],
    out: np.ndarray | Spec | None,
    soc: str,
    *,
    library: str | Path | None = None,
) -> PlanResult:
    """Check a call and return its tiling, without running it.  None = a missing tensor."""
    lib = load(library)
    status, rid, message, ws, handle, checks = _plan(lib, dy, y, axes, out, soc)
    tiling = None
    if handle:
        try:
            tiling = _tiling(lib, handle)
        finally:
            lib.lsg_executor_destroy(handle)
    return PlanResult(status, reason_name(rid), message, ws, tiling, checks)


def strided_view(shape: Sequence[int], dtype: Any, fill: float = np.nan) -> np.ndarray:
    """A non-contiguous view of `shape` (every other element along the last axis of extent > 1),
    its buffer filled with `fill`.  Contiguous only when it has fewer than two elements."""
    shape = tuple(shape)
    axis = next((i for i in reversed(range(len(shape))) if shape[i] > 1), None)
    if axis is None:
        return np.full(shape, fill, dtype=dtype)
    big = list(shape)
    big[axis] *= 2
    index = [slice(None)] * len(shape)
    index[axis] = slice(None, None, 2)
    return np.full(big, fill, dtype=dtype)[tuple(index)]


def _make_out(shape, dtype, layout: layouts.Layout) -> tuple[np.ndarray, np.ndarray]:
    """(storage, out): out a view of `layout` over a storage filled with NaN (-1 for integer
    dtypes). An output view that overlaps itself or leaves its storage is refused."""
    shape = tuple(int(d) for d in shape)
    wrong = layouts.problems(layout, shape, writable=True)
    if wrong:
        raise ValueError(f"out layout {layouts.text(layout)}: {'; '.join(wrong)}")
    return layouts.allocate(shape, np.dtype(dtype), layout)


def out_guard_ok(storage: np.ndarray, layout: layouts.Layout, shape: Sequence[int]) -> bool:
    """Whether the storage outside the output view still holds its NaN (-1) fill, bit for bit:
    False when something wrote outside the view."""
    return layouts.outside_untouched(storage, layout, shape)


def _as_strided(a: np.ndarray) -> np.ndarray:
    view = strided_view(a.shape, a.dtype)
    view[...] = a
    return view


def run(
    dy: np.ndarray | None,
    y: np.ndarray | None,
    axes: Sequence[int],
    soc: str,
    *,
    out_dtype: Any = None,
    out_shape: Sequence[int] | None = None,
    missing: str | Iterable[str] | None = None,
    strided: bool = False,
    threads: int = 0,
    out: np.ndarray | None = None,
    library: str | Path | None = None,
    out_layout: Any = None,
) -> NativeResult:
    """Run the operator on the library (the emulated real kernel or the twin).

    dy, y: None is a missing tensor (any strides: they are passed as they are).
    out_dtype / out_shape: the output tensor's (default: dy's), to provoke mismatches.
    missing: "dy", "y", "out" (or several) to pass as NULL tensors.
    strided: copy dy and y into non-contiguous views and write a non-contiguous out.
    out: a caller's output array (any strides), instead of a fresh NaN-filled one.
    library: a library of the C ABI other than the one find_library() finds.
    out_layout: the fresh out's layout ("contiguous", "strided", a golden.layouts.View or its
      JSON dict; default: "strided" with `strided`, else "contiguous"); the result's
      out_guard_ok says whether the storage around the view was left untouched.
    """
    lib = load(library)
    missing = {missing} if isinstance(missing, str) else set(missing or ())
    unknown = missing - {"dy", "y", "out"}
    if unknown:
        raise ValueError(f"missing: unknown tensor names {sorted(unknown)}")
    missing |= {name for name, t in (("dy", dy), ("y", y)) if t is None}
    if strided:
        dy, y = (None if t is None else _as_strided(t) for t in (dy, y))
    storage = None
    if out is None:
        like = dy if dy is not None else y
        layout = layouts.parse(
            out_layout if out_layout is not None else ("strided" if strided else "contiguous")
        )
        out_dims = (() if like is None else like.shape) if out_shape is None else tuple(out_shape)
        storage, out = _make_out(
            out_dims,
            (np.float32 if like is None else like.dtype) if out_dtype is None else out_dtype,
            layout,
        )
    args = [None if name in missing else t for name, t in (("dy", dy), ("y", y), ("out", out))]
    start = time.perf_counter()
    status, rid, message, ws, handle, checks = _plan(lib, args[0], args[1], axes, args[2], soc)
    if not handle:
        seconds = time.perf_counter() - start
        return NativeResult(
            status, reason_name(rid), message, None, ws, None, seconds, checks=checks
        )
    try:
        tiling = _tiling(lib, handle)
        workspace = np.empty(ws, dtype=np.uint8) if ws else None
        rc = lib.lsg_run(None if workspace is None else workspace.ctypes.data, ws, handle, threads)
        seconds = time.perf_counter() - start
        why = _run_error(lib, handle) if rc != 0 else None
    finally:
        lib.lsg_executor_destroy(handle)
    if rc != 0:
        if rc == STATUS_INNER and why is not None and why[0] in RUN_FAULTS:
            fault = RUN_FAULTS[why[0]]
            return NativeResult(rc, fault, why[1], None, ws, tiling, seconds, checks=checks)
        detail = f": {why[1]}" if why and why[1] else ""
        raise NativeError(f"lsg_run failed with status {rc} after planning succeeded{detail}")
    guard = None if storage is None else out_guard_ok(storage, layout, out.shape)
    return NativeResult(
        status, reason_name(rid), message, out, ws, tiling, seconds, guard, checks=checks
    )


def run_call(
    dy: np.ndarray | None,
    y: np.ndarray | None,
    axes: Sequence[int],
    soc: str | None,
    *,
    out_dtype: np.dtype | str,
    out_shape: tuple[int, ...] | None = None,
    missing: str | None = None,
    api: str = "dim",
    device: int = 0,
    out_layout: layouts.Layout | None = None,
) -> BackendResult:
    """The agent's backend entry (farm.agent.execute): out_dtype is a case dtype name, out_layout
    the case's (a name, a View or its JSON dict).  The library takes the one-dim form as a one-axis
    list, and has no devices."""
    del api, device
    dtype = numpy_dtype(out_dtype) if isinstance(out_dtype, str) else out_dtype
    return run(
        dy,
        y,
        axes,
        cast(str, soc),  # a host that declares no SoC fails its health check before any case
        out_dtype=dtype,
        out_shape=out_shape,
        missing=missing,
        out_layout=out_layout,
    )
