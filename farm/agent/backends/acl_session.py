"""How the acl backend uses ACL: one runtime per agent, one stream per device, and one operator
call as a framework makes it (acl_api.py has the prototypes; acl.py turns cases into calls and
results). Every ACL status other than success raises AclCallError with the API, its arguments
and the runtime's own message, except the operator's: its phase one's status is the call's
result, and a failure of the kernel on the device is reported as such.

Standard library and numpy only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import ctypes
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from farm.agent.backends import acl_api as api


class AclCallError(RuntimeError):
    """An ACL call of the backend failed: the backend's fault or the host's, never the operator's
    verdict."""


@dataclass(frozen=True)
class HostTensor:
    """A tensor as the case holds it on the host: its whole storage and its view of it."""

    storage: np.ndarray  # one-dimensional, every element the view may reach (and more)
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    offset: int  # in elements
    dtype_code: int  # ACL dtype


@dataclass
class OpRun:
    """What one call of the operator did on the device."""

    phase_one: int  # the operator's status from phase one
    message: str  # the runtime's message for a failed phase one or kernel
    workspace: int = 0
    kernel_failed: bool = False  # the stream failed: the kernel faulted on the device
    # Phase two's own failure, an inner status (the operator's, never a parameter status: that
    # is the caller's mistake, an AclCallError); 0 when phase two queued its work.
    launch_failed: int = 0
    out_storage: np.ndarray | None = None  # out's storage copied back
    device_ms: float | None = None  # between the events around phase two
    seconds: float = 0.0
    # How far into the workspace the call's device tasks reached (the emulated runtime says;
    # None on CANN or without a workspace): what the operator used of what it asked for.
    workspace_reached: int | None = None
    after: Any = None  # what `after` of run_op returned (a good call only)


@dataclass
class LiveCall:
    """A good call as it stands before anything is released: what `after` of run_op gets (the
    acl backend's probes of the operator's error paths, acl_probes.py)."""

    libs: api.Libraries
    device: Device
    tensors: tuple[HostTensor | None, HostTensor | None, HostTensor | None]
    handles: list  # their aclTensors (None for a missing one)
    dims: tuple[int, ...]
    one: bool  # the seed's one-dim entry, else the dim list's
    workspace: ctypes.c_void_p  # device memory of `ws` bytes (NULL when 0)
    ws: int  # what phase one asked for

    def phase_one(self) -> tuple[int, int, ctypes.c_void_p]:
        """Phase one of the same call again: (status, workspace size, executor)."""
        return phase_one(self.libs, self.handles, self.dims, self.one)

    def phase_two(self, workspace, size: int, executor) -> int:
        return phase_two_entry(self.libs, self.one)(workspace, size, executor, self.device.stream)


def message(libs: api.Libraries) -> str:
    text = libs.ascendcl.aclGetRecentErrMsg()
    return text.decode(errors="replace") if text else ""


def check(libs: api.Libraries, status: int, call: str) -> None:
    if status != api.ACL_SUCCESS:
        said = message(libs)
        raise AclCallError(f"{call} returned {status}" + (f": {said}" if said else ""))


def is_parameter_status(status: int) -> bool:
    """aclnn's parameter errors (ACLNN_ERR_PARAM_*, 161xxx): in phase two, what the caller passed
    was wrong (the workspace, the executor), the backend's mistake; any other failure of phase
    two is the operator's own (op/ascendc/op_api: ACLNN_ERR_INNER)."""
    return 161000 <= status < 162000


@dataclass
class Device:
    id: int
    stream: ctypes.c_void_p
    start: ctypes.c_void_p
    end: ctypes.c_void_p


@dataclass
class Runtime:
    """ACL for this process: aclInit once, a stream and two events per device used."""

    libs: api.Libraries
    devices: dict[int, Device] = field(default_factory=dict)
    # Whether this process's ACL is ours to finalise: aclInit succeeded here. False when ACL was
    # already initialised in the process (torch_npu's, say): its owner finalises it.
    initialised: bool = True

    @classmethod
    def start(cls, libs: api.Libraries) -> Runtime:
        """aclInit; ACL_ERROR_REPEAT_INITIALIZE (ACL already initialised in this process, which
        the ACL docs say may be ignored) is accepted, and then close() leaves aclFinalize to
        whoever initialised it."""
        status = libs.ascendcl.aclInit(None)
        if status == api.ACL_ERROR_REPEAT_INITIALIZE:
            message(libs)  # the runtime's note of it is not the next call's message
            return cls(libs, initialised=False)
        check(libs, status, "aclInit(NULL)")
        return cls(libs)

    def device(self, device_id: int) -> Device:
        libs = self.libs
        check(libs, libs.ascendcl.aclrtSetDevice(device_id), f"aclrtSetDevice({device_id})")
        if device_id not in self.devices:
            stream, start, end = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
            check(libs, libs.ascendcl.aclrtCreateStream(ctypes.byref(stream)), "aclrtCreateStream")
            check(libs, libs.ascendcl.aclrtCreateEvent(ctypes.byref(start)), "aclrtCreateEvent")
            check(libs, libs.ascendcl.aclrtCreateEvent(ctypes.byref(end)), "aclrtCreateEvent")
            self.devices[device_id] = Device(device_id, stream, start, end)
        return self.devices[device_id]

    def close(self) -> None:
        """Every stream and event destroyed, every device reset, then aclFinalize (where this
        runtime initialised ACL); the first failure raises (after the rest were tried)."""
        libs, errors = self.libs, []
        acl = libs.ascendcl
        for d in self.devices.values():
            acl.aclrtSetDevice(d.id)
            for fn, arg, call in (
                (acl.aclrtDestroyEvent, d.start, "aclrtDestroyEvent"),
                (acl.aclrtDestroyEvent, d.end, "aclrtDestroyEvent"),
                (acl.aclrtDestroyStream, d.stream, "aclrtDestroyStream"),
                (acl.aclrtResetDevice, d.id, f"aclrtResetDevice({d.id})"),
            ):
                status = fn(arg)
                if status != api.ACL_SUCCESS:  # each one's own message, read at once
                    errors.append(f"{call} returned {status}: {message(libs)}")
        self.devices.clear()
        if self.initialised:
            status = libs.ascendcl.aclFinalize()
            if status != api.ACL_SUCCESS:
                errors.append(f"aclFinalize returned {status}: {message(libs)}")
        if errors:
            raise AclCallError("; ".join(errors))


def _int64s(values) -> ctypes.Array:
    values = [int(v) for v in values]
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def run_op(
    runtime: Runtime,
    device: Device,
    tensors: tuple[HostTensor | None, HostTensor | None, HostTensor | None],
    dims: tuple[int, ...],
    seed_entry: bool = True,
    after: Callable[[LiveCall], Any] | None = None,
) -> OpRun:
    """Call the operator on (dy, y, out) over `dims` on `device`: copy the storages to device
    memory, make their tensors, run the two phases on the device's stream, synchronise, copy out's
    storage back, release everything. `seed_entry`: the seed's one-dim entry
    (aclnnLogSoftmaxBackward), else the dim list's (aclnnLogSoftmaxBackwardDims). `after`: run
    after a good call, before anything is released; what it returns is OpRun.after."""
    libs = runtime.libs
    handles: list[int | None] = []
    buffers: list[ctypes.c_void_p] = []
    try:
        one = seed_entry and len(dims) == 1
        done = _call(libs, device, tensors, dims, one, handles, buffers, after)
    except BaseException:
        # What failed is the error to report; first let the stream finish what it was given (a
        # buffer a pending task uses cannot be freed), then release what can be, quietly.
        libs.ascendcl.aclrtSynchronizeStream(device.stream)
        _release(libs, handles, buffers, quiet=True)
        message(libs)
        raise
    _release(libs, handles, buffers, quiet=False)
    return done


def phase_one(libs, handles, dims, one) -> tuple[int, int, ctypes.c_void_p]:
    """The operator's phase one on the aclTensors `handles` (dy, y, out; None missing) over
    `dims`: (status, workspace size, executor)."""
    ws, executor = ctypes.c_uint64(0), ctypes.c_void_p()
    if one:
        status = libs.op_api.aclnnLogSoftmaxBackwardGetWorkspaceSize(
            handles[0],
            handles[1],
            int(dims[0]),
            handles[2],
            ctypes.byref(ws),
            ctypes.byref(executor),
        )
    else:
        c_dims = _int64s(dims)
        status = libs.op_api.aclnnLogSoftmaxBackwardDimsGetWorkspaceSize(
            handles[0],
            handles[1],
            c_dims,
            len(dims),
            handles[2],
            ctypes.byref(ws),
            ctypes.byref(executor),
        )
    return status, ws.value, executor


def phase_two_entry(libs, one):
    """The operator's phase two of the entry phase_one called."""
    return libs.op_api.aclnnLogSoftmaxBackward if one else libs.op_api.aclnnLogSoftmaxBackwardDims


def _call(libs, device, tensors, dims, one, handles, buffers, after=None) -> OpRun:
    acl = libs.ascendcl
    keep: list[object] = []  # the ctypes arrays the tensors were made from
    started = time.perf_counter()
    for t in tensors:
        if t is None:
            handles.append(None)
            continue
        nbytes = max(t.storage.nbytes, 1)
        ptr = ctypes.c_void_p()
        check(
            libs,
            acl.aclrtMalloc(ctypes.byref(ptr), nbytes, api.ACL_MEM_MALLOC_HUGE_FIRST),
            f"aclrtMalloc({nbytes})",
        )
        buffers.append(ptr)
        if t.storage.nbytes:
            # out too: its storage is NaN, so an element the kernel does not write stays NaN.
            check(
                libs,
                acl.aclrtMemcpy(
                    ptr,
                    nbytes,
                    t.storage.ctypes.data,
                    t.storage.nbytes,
                    api.ACL_MEMCPY_HOST_TO_DEVICE,
                ),
                "aclrtMemcpy to device",
            )
        view, strides, storage = _int64s(t.dims), _int64s(t.strides), _int64s([t.storage.size])
        keep += [view, strides, storage]
        handle = libs.nnopbase.aclCreateTensor(
            view, len(t.dims), t.dtype_code, strides, t.offset, api.ACL_FORMAT_ND, storage, 1, ptr
        )
        if not handle:
            raise AclCallError(f"aclCreateTensor returned NULL: {message(libs)}")
        handles.append(handle)
    status, asked, executor = phase_one(libs, handles, dims, one)
    if status != api.ACL_SUCCESS:
        return OpRun(status, message(libs), seconds=time.perf_counter() - started)
    ws = ctypes.c_uint64(asked)
    workspace = ctypes.c_void_p()
    if ws.value:
        check(
            libs,
            acl.aclrtMalloc(ctypes.byref(workspace), ws.value, api.ACL_MEM_MALLOC_HUGE_FIRST),
            f"aclrtMalloc({ws.value})",
        )
        buffers.append(workspace)
    check(libs, acl.aclrtRecordEvent(device.start, device.stream), "aclrtRecordEvent")
    phase_two = phase_two_entry(libs, one)
    launched = phase_two(workspace, ws.value, executor, device.stream)
    if launched != api.ACL_SUCCESS and not is_parameter_status(launched):
        said = message(libs)
        acl.aclrtSynchronizeStream(device.stream)  # what it queued before it failed ends first
        message(libs)  # what that said is not the call's
        seconds = time.perf_counter() - started
        return OpRun(0, said, ws.value, launch_failed=launched, seconds=seconds)
    check(libs, launched, f"{phase_two.__name__}(workspace {ws.value} bytes)")
    check(libs, acl.aclrtRecordEvent(device.end, device.stream), "aclrtRecordEvent")
    synced = acl.aclrtSynchronizeStream(device.stream)
    seconds = time.perf_counter() - started
    if synced != api.ACL_SUCCESS:
        return OpRun(0, message(libs), ws.value, kernel_failed=True, seconds=seconds)
    out = tensors[2]
    back = None
    if out is not None:
        back = np.empty_like(out.storage)
        if back.nbytes:
            check(
                libs,
                acl.aclrtMemcpy(
                    back.ctypes.data,
                    back.nbytes,
                    buffers[_slot(tensors, 2)],
                    back.nbytes,
                    api.ACL_MEMCPY_DEVICE_TO_HOST,
                ),
                "aclrtMemcpy to host",
            )
    ms = ctypes.c_float(0.0)
    check(
        libs,
        acl.aclrtEventElapsedTime(ctypes.byref(ms), device.start, device.end),
        "aclrtEventElapsedTime",
    )
    done = OpRun(0, "", ws.value, out_storage=back, device_ms=float(ms.value), seconds=seconds)
    if libs.emulated and ws.value:
        done.workspace_reached = _reached(libs, workspace)
    if after is not None:
        done.after = after(LiveCall(libs, device, tensors, handles, dims, one, workspace, ws.value))
    return done


def _reached(libs, buffer: ctypes.c_void_p) -> int | None:
    """How far into `buffer` the tasks queued so far reach (the emulated runtime's count)."""
    listing = json.loads(libs.ascendcl.lsg_emu_acl_buffers().decode())
    return next((b["reached"] for b in listing if b.get("base") == buffer.value), None)


def _release(libs, handles, buffers, *, quiet: bool) -> None:
    """Every tensor destroyed and every buffer freed; the first failure raises unless quiet."""
    calls = [(libs.nnopbase.aclDestroyTensor, h, "aclDestroyTensor") for h in handles if h]
    calls += [(libs.ascendcl.aclrtFree, p, "aclrtFree") for p in buffers]
    failure = None
    for fn, arg, name in calls:
        status = fn(arg)
        if status != api.ACL_SUCCESS and failure is None:
            failure = (status, name, message(libs))
    if failure and not quiet:
        status, name, said = failure
        raise AclCallError(f"{name} returned {status}" + (f": {said}" if said else ""))


def _slot(tensors, index: int) -> int:
    """The buffer index of tensors[index] (missing tensors have no buffer)."""
    return sum(t is not None for t in tensors[:index])
