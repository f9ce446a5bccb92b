"""The operator package on a device through ACL: the `acl` backend.

What a framework does with the operator, on an Atlas NPU through CANN or, everywhere else, on the
emulated ACL runtime (op/acl_emu) with the same real host code and kernel on the emulated device:
the inputs' whole storages are copied to device memory and passed as aclTensors of the case's
views (dims, strides, storage offset, storage dims), so a strided case reaches the operator's
aclnn layer as a strided tensor; out's storage is NaN around and inside its view. The two phases
of the package's entry (the seed's aclnnLogSoftmaxBackward for one dim, aclnnLogSoftmaxBackwardDims
for several) run on the device's stream, timed by ACL events (device_s), then out's storage comes
back and whether the storage around its view is untouched is checked.

The operator's phase-one status and the runtime's message (aclGetRecentErrMsg) are the result: the
reason is the one the message's last line names, read strictly in the one format the operator
writes and the table it compiles ("LogSoftmaxGrad: status S (reason R name): ... [api]",
golden/reasons.py): a refusal without such a line has no reason, and the judge fails it
(reason_unreadable), never judging it by its status alone. A kernel that failed on the device
is kernel_fault (or emulation_policy, where the emulated device refused it by a rule of its
own); a phase two that fails with an inner status is the operator's failure too (launch_failed).
Anything else that fails is the backend's or the host's (AclCallError, an infrastructure error),
a parameter status of phase two included: what the backend passed. On the emulated runtime the
backend also checks itself after every call: that the runtime received exactly the views meant
(its tensor log), and that no device buffer or handle of its own was left behind. An aclTensor,
aclIntArray or executor the operator's code made and left alive is the operator's failure
(resource_leak: acl_handles.py tells whose code made each), and after a good call the backend
tries the layer's error paths with the same tensors (acl_probes.py): a wrong answer there, or a
handle left alive on one, is the operator's too.

Standard library and numpy only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from farm.agent import hostops, machine
from farm.agent.backends import acl_api as api
from farm.agent.backends import acl_handles, acl_probes
from farm.agent.backends.acl_session import AclCallError, HostTensor, OpRun, Runtime, run_op
from farm.agent.backends.native import (
    DTYPE_CODES,
    EMULATION_POLICY,
    KERNEL_FAULT,
    RUN_FAULTS,
    STATUS_INNER,
    PlanResult,
    Spec,
    plan,
)
from farm.agent.backends.result import BackendResult
from farm.agent.outcome import LAUNCH_FAILED
from golden import layouts, reasons
from golden.dtypes import DESCRIPTOR_ONLY, numpy_dtype

# How the emulated device says it refused a kernel by a rule of its own (op/acl_emu).
_POLICY = "the emulated device refused the kernel"
NAMES = ("dy", "y", "out")
NATIVE_LIB = "liblsg_ascendc_cpu.so"  # the emulated real kernel's C ABI, beside its runtime


@cache
def runtime() -> Runtime:
    """ACL for this agent: initialised once, on first use (finalised by close())."""
    return Runtime.start(api.load())


def close() -> None:
    """Release every device and finalise ACL (the agent calls it on exit)."""
    if runtime.cache_info().currsize:
        try:
            runtime().close()
        finally:
            runtime.cache_clear()


def declare_host(soc: str | None, devices: int | None) -> None:
    """The emulated host the next call is for (its SoC and devices), where the runtime is
    emulated: one agent may serve several emulated hosts of this machine. A no-op on CANN, whose
    runtime knows its own device."""
    libs = api.load()
    if libs.emulated:
        libs.ascendcl.lsg_emu_acl_declare((soc or "").encode(), int(devices or 0))


def runtime_description() -> str:
    """Which runtime runs the operator: the emulated runtime's own line, or CANN's version."""
    libs = api.load()
    if libs.emulated:
        return libs.ascendcl.lsg_emu_acl_runtime().decode()
    return _cann_description()


@cache
def _cann_description() -> str:
    libs = api.load()
    runtime()
    soc = libs.ascendcl.aclrtGetSocName()
    said = soc.decode() if soc else "?"
    return f"CANN {_cann_version(libs)}; driver {_driver_version()}; soc={said}"


def _cann_version(libs: api.Libraries, environ: dict[str, str] | None = None) -> str:
    """CANN's version as the runtime says it: aclsysGetVersionStr of its runtime package, else
    the deprecated aclsysGetCANNVersion (a release may lack either: acl_api.OPTIONAL), else the
    toolkit's ascend_toolkit_install.info under $ASCEND_HOME_PATH, which the line then names."""
    said = []
    if "aclsysGetVersionStr" not in libs.absent:
        text = ctypes.create_string_buffer(api.ACL_PKG_VERSION_MAX_SIZE)
        name = ctypes.create_string_buffer(api.VERSION_PACKAGE)
        status = libs.ascendcl.aclsysGetVersionStr(name, text)
        if status == api.ACL_SUCCESS and text.value:
            return text.value.decode(errors="replace")
        said.append(f"aclsysGetVersionStr returned {status}")
    if "aclsysGetCANNVersion" not in libs.absent:
        version = api.AclVersion()
        status = libs.ascendcl.aclsysGetCANNVersion(
            api.ACL_PKG_NAME_CANN, ctypes.cast(ctypes.pointer(version), ctypes.c_void_p)
        )
        if status == api.ACL_SUCCESS and version.version:
            return version.version.decode(errors="replace")
        said.append(f"aclsysGetCANNVersion returned {status}")
    found = hostops.host_platform(os.environ if environ is None else environ)["cann"]
    if found:
        return f"{found} (ascend_toolkit_install.info)"
    return "unknown (" + ("; ".join(said) or "the runtime has no version query") + ")"


def _driver_version(path: str | None = None) -> str:
    """The NPU driver's version, from the driver package's version.info ("Version=24.1.0") in the
    Ascend install root of the host's CANN (farm/agent/machine.py)."""
    info = Path(path) if path else machine.driver_info()
    if not info.is_file():
        return f"unknown (no {info})"
    return machine.info_value(info, "version") or f"unknown ({info} names none)"


def host_tensor(a: np.ndarray) -> HostTensor:
    """An input as it lies in host memory: the bytes its view spans (every element it reaches,
    and what lies between them) as the storage, and its view of them, in elements."""
    item = a.itemsize
    if a.size == 0:
        dense = tuple(layouts.dense_strides(a.shape))
        return HostTensor(np.empty(0, a.dtype), tuple(a.shape), dense, 0, _code(a))
    low, high = _byte_bounds(a)
    if (a.ctypes.data - low) % item or any(s % item for s in a.strides):
        raise AclCallError("an input view is not made of whole elements of its storage")
    span = (ctypes.c_char * (high - low)).from_address(low)
    return HostTensor(
        np.frombuffer(memoryview(span).cast("B"), dtype=a.dtype),
        tuple(int(d) for d in a.shape),
        tuple(int(s) // item for s in a.strides),
        (a.ctypes.data - low) // item,
        _code(a),
    )


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """The first byte and one past the last of an array's elements (numpy 1 and 2)."""
    utils = getattr(np.lib, "array_utils", np)
    low, high = utils.byte_bounds(a)
    return int(low), int(high)


def out_tensor(storage: np.ndarray, layout: layouts.Layout, shape: tuple[int, ...]) -> HostTensor:
    """out as the case lays it out: its whole NaN storage and the layout's view of it."""
    view = layouts.resolve(layout, shape)
    return HostTensor(storage, shape, tuple(view.strides), view.offset, _code(storage))


# The dtypes only a descriptor of the case has (complex), by their ACL codes.
_DESCRIPTOR_CODES = {np.dtype(name): code for name, code in DESCRIPTOR_ONLY.items()}


def _code(a: np.ndarray) -> int:
    dt = np.dtype(a.dtype)
    return DTYPE_CODES[dt] if dt in DTYPE_CODES else _DESCRIPTOR_CODES[dt]


def _received(libs: api.Libraries, meant: Sequence[HostTensor | None]) -> None:
    """The views the emulated runtime received are the ones meant, tensor by tensor."""
    log = json.loads(libs.nnopbase.lsg_emu_acl_take_tensor_log().decode())
    present = [(n, t) for n, t in zip(NAMES, meant, strict=True) if t is not None]
    if len(log) < len(present):
        raise AclCallError(
            f"the emulated runtime received {len(log)} aclCreateTensor calls for "
            f"{len(present)} tensors"
        )
    for (name, t), got in zip(present, log[: len(present)], strict=True):
        want = {
            "dims": list(t.dims),
            "strides": list(t.strides),
            "offset": t.offset,
            "storage": [t.storage.size],
            "dtype": t.dtype_code,
        }
        wrong = [f"{k} {got.get(k)} (the case's {v})" for k, v in want.items() if got.get(k) != v]
        if wrong:
            raise AclCallError(f"aclCreateTensor gave the operator {name} with " + "; ".join(wrong))


def _live(libs: api.Libraries) -> tuple[list[dict], int]:
    """The emulated runtime's live device buffers, and the serial of its last handle."""
    buffers = json.loads(libs.ascendcl.lsg_emu_acl_buffers().decode())
    return buffers, acl_handles.serial(libs)


def _left_behind(
    libs: api.Libraries, before: tuple[list[dict], int], upto: int | None = None
) -> str:
    """Nothing the call allocated is still alive (what an earlier call left is its own error):
    a device buffer or a handle of the backend's own code is the backend's mistake
    (AclCallError); the handles the operator's code made up to serial `upto` (the probes say
    what theirs left) and left alive are returned, said in words ("" none)."""
    old = {b["serial"] for b in before[0]}
    now, _ = _live(libs)
    buffers = [b for b in now if b["serial"] not in old]
    if buffers:
        sizes = ", ".join(f"{b['bytes']} bytes (aclrtMalloc #{b['serial']})" for b in buffers)
        raise AclCallError(
            f"the call left {len(buffers)} device buffer(s) allocated: {sizes}; every aclrtMalloc "
            "needs its aclrtFree"
        )
    operator, backend = acl_handles.made_since(libs, before[1])
    if backend:
        raise AclCallError(
            f"the call left {acl_handles.describe(backend)} alive: the backend destroys each "
            "handle it makes (aclDestroyTensor, aclDestroyIntArray)"
        )
    operator = [h for h in operator if upto is None or h["serial"] <= upto]
    if not operator:
        return ""
    return (
        f"the operator left {acl_handles.describe(operator)} alive after the call: every "
        "aclTensor and aclIntArray it makes needs its destroy, every executor it asks for and "
        "does not run aclSetAclOpExecutorRepeatable and aclDestroyAclOpExecutor"
    )


def _reason(status: int, message: str) -> str | None:
    """The reason of a refusal: the one the operator's line names (golden/reasons.py read_line:
    the message's last line, whole, in the table's id, name and status, and the status the call
    returned); None when there is no such line, which the judge fails as reason_unreadable."""
    if status == 0:
        return "ok"
    said = reasons.read_line(message)
    return said.reason.name if said is not None and said.status == status else None


# The layer the package's aclnn layer says refused a call (lsg::op_api::after_refusal).
_REFUSED_BY = re.compile(r"refused by the (OpDef registration|tiling function)")
_LAYERS = {"OpDef registration": "registration", "tiling function": "tiling"}


def _refused_by(status: int, reason: str | None, message: str) -> dict[str, Any] | None:
    """Which layer refused the call (farm/agent/record.py HostChecks), where the message says:
    the generated entry's (its registration check or the tiling function, as the aclnn layer
    names it), else the aclnn layer's own (its line, with no entry layer named)."""
    found = _REFUSED_BY.findall(message)
    if found:
        layer = _LAYERS[found[-1]]
    elif reasons.read_line(message) is not None:
        layer = "front"
    else:
        return None
    return {"decided_by": layer, "host": reason or "", "host_status": status}


def run(
    dy: np.ndarray | None,
    y: np.ndarray | None,
    axes: Sequence[int],
    *,
    out_dtype: Any,
    out_shape: Sequence[int] | None = None,
    missing: str | Iterable[str] | None = None,
    out_layout: Any = "contiguous",
    device: int = 0,
    api: str = "dim",
) -> BackendResult:
    """One operator call through ACL. dy, y: arrays in their views (None: missing). api "dim":
    the seed's one-dim entry; "axes": the dim list's entry."""
    missing = {missing} if isinstance(missing, str) else set(missing or ())
    rt = runtime()
    libs = rt.libs
    like = dy if dy is not None else y
    shape = tuple(out_shape) if out_shape is not None else (() if like is None else like.shape)
    layout = layouts.parse(out_layout)
    storage, _ = layouts.allocate(shape, np.dtype(out_dtype), layout)
    tensors = (
        None if dy is None or "dy" in missing else host_tensor(dy),
        None if y is None or "y" in missing else host_tensor(y),
        None if "out" in missing else out_tensor(storage, layout, shape),
    )
    if libs.emulated:
        libs.nnopbase.lsg_emu_acl_take_tensor_log()  # what came before is not this call's
        before = _live(libs)
    d = rt.device(device)
    seed_entry = api == "dim" and len(axes) == 1
    # On the emulated runtime a good call is followed by probes of the layer's error paths.
    probes = acl_probes.run if libs.emulated else None
    done: OpRun = run_op(rt, d, tensors, tuple(int(a) for a in axes), seed_entry, probes)
    leaked, wrong = "", ""
    if libs.emulated:
        _received(libs, tensors)
        found: acl_probes.Findings | None = done.after
        leaked = _left_behind(libs, before, None if found is None else found.start)
        if found is not None:
            leaked = "; ".join(text for text in (leaked, *found.leaked) if text)
            wrong = "; ".join(found.wrong)
    entry = "aclnnLogSoftmaxBackward" if seed_entry else "aclnnLogSoftmaxBackwardDims"
    device_run = {
        "runtime": runtime_description(),
        "emulated": libs.emulated,
        "op_api": libs.op_api_path,
        "device_id": device,
        "entry": entry,
        "device_s": None if done.device_ms is None else done.device_ms / 1000.0,
    }
    if done.workspace_reached is not None:
        device_run["workspace_reached"] = done.workspace_reached
    result = _result(done, device_run, layout, shape)
    result.leaked, result.error_paths = leaked, wrong
    return result


def _result(
    done: OpRun, device_run: dict[str, Any], layout: layouts.Layout, shape: tuple[int, ...]
) -> BackendResult:
    """What the call gave, as every backend says it."""
    if done.phase_one != 0:
        reason = _reason(done.phase_one, done.message)
        return BackendResult(
            done.phase_one,
            reason,
            done.message,
            None,
            0,
            None,
            done.seconds,
            checks=_refused_by(done.phase_one, reason, done.message),
            device_run=device_run,
        )
    if done.launch_failed:
        return BackendResult(
            done.launch_failed,
            LAUNCH_FAILED,
            done.message,
            None,
            done.workspace,
            None,
            done.seconds,
            device_run=device_run,
        )
    if done.kernel_failed:
        fault = EMULATION_POLICY if _POLICY in done.message else KERNEL_FAULT
        return BackendResult(
            STATUS_INNER,
            RUN_FAULTS[fault],
            done.message,
            None,
            done.workspace,
            None,
            done.seconds,
            device_run=device_run,
        )
    out = None
    guard = None
    if done.out_storage is not None:
        out = layouts.view_of(done.out_storage, layout, shape)
        guard = layouts.outside_untouched(done.out_storage, layout, shape)
    return BackendResult(
        0, "ok", "", out, done.workspace, None, done.seconds, guard, device_run=device_run
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
    """The agent's backend entry (farm.agent.execute): the case's SoC is the device's own. On the
    emulated runtime the record also gets what the package's host code planned for the call (its
    tiling and which layer decided: :func:`host_plan`), as the native backend's does."""
    dtype = numpy_dtype(out_dtype) if isinstance(out_dtype, str) else out_dtype
    layout = out_layout if out_layout is not None else "contiguous"
    result = run(
        dy,
        y,
        axes,
        out_dtype=dtype,
        out_shape=out_shape,
        missing=missing,
        out_layout=layout,
        device=device,
        api=api,
    )
    planned = host_plan(
        dy, y, axes, soc, out_dtype=dtype, out_shape=out_shape, missing=missing, out_layout=layout
    )
    # Where the two disagree (the aclnn layer refused what the host code accepts, or the
    # reverse) the plan says nothing of this call, and the judge goes by ACL's result alone.
    if planned is not None and (planned.status == 0) == (result.status == 0):
        result.checks = planned.checks
        result.tiling = planned.tiling
    return result


def host_plan(
    dy: np.ndarray | None,
    y: np.ndarray | None,
    axes: Sequence[int],
    soc: str | None,
    *,
    out_dtype: Any,
    out_shape: Sequence[int] | None,
    missing: str | Iterable[str] | None,
    out_layout: Any,
) -> PlanResult | None:
    """What the package's host code plans for the call (its C ABI's phase one: the registration,
    the tiling function, the shared checks), from the C library the emulated runtime came with;
    None on CANN's runtime (its host code ran inside CANN) or where the package has none.

    The generated entry runs the same sources on the same descriptors: the plan gives the record
    the tiling the suite checks against the design and which layer refused, which ACL's status
    and message cannot carry."""
    libs = api.load()
    library = _package_library(Path(libs.directory))
    if not libs.emulated or library is None or not soc:
        return None
    skip = {missing} if isinstance(missing, str) else set(missing or ())
    like = dy if dy is not None else y
    shape = tuple(out_shape) if out_shape is not None else (() if like is None else like.shape)
    view = layouts.resolve(layouts.parse(out_layout), shape)
    out = Spec(tuple(int(d) for d in shape), np.dtype(out_dtype), tuple(view.strides))
    return plan(
        None if "dy" in skip else dy,
        None if "y" in skip else y,
        axes,
        None if "out" in skip else out,
        soc,
        library=library,
    )


def _package_library(acl_lib: Path) -> Path | None:
    """The C ABI library beside an emulated runtime's acl/lib: a package's lib/, a build's own."""
    for candidate in (
        acl_lib.parent.parent / "lib" / NATIVE_LIB,
        acl_lib.parent.parent / NATIVE_LIB,
    ):
        if candidate.is_file():
            return candidate
    return None
