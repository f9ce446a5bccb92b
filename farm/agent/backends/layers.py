"""The operator's deciding layers read or run one at a time, through a backend: its OpDef
registration (what it declares per SoC family), its host tiling function alone (the registration
out of the way), and its graph inference (the InferShape and InferDataType the OpDef registers,
which GE runs on a graph's node and no aclnn call ever does). The registration, tiling and infer
cases of suites/matrix_layers.py.

Where each comes from:
- native, the emulated real operator (liblsg_ascendc_cpu.so): the OpDef compiled into it
  (lsg_acpu_opdef), its registered tiling function (lsg_acpu_tiling_alone) and inference
  functions (lsg_acpu_infer, on emulated gert inference contexts);
- acl on the emulated runtime: the same, from the op-api library the backend loaded
  (lsg_emu_opdef, lsg_emu_tiling_alone, lsg_emu_infer);
- acl on CANN: the registration as CANN's build wrote it from the OpDef, the custom operator
  package's op_impl/ai_core/tbe/config/<soc>/aic-<soc>-ops-info.json (the vendor directory holds
  op_api/lib/libcust_opapi.so too); CANN has no entry that runs a tiling function alone, and the
  inference functions live in the package's op_host library (libcust_opmaster*.so), called only
  by GE on contexts it builds from a graph: the farm does not fake those, so neither is run;
- the twin and the torch backend have none of these layers.
What a backend cannot read is NotAvailable, never a pass (the case is broken, "not_available").

Standard library and numpy only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from golden.dtypes import DESCRIPTOR_ONLY, numpy_dtype

OP_TYPE = "LogSoftmaxGradCustom"  # what op_host's OP_ADD registers (op/ascendc_cpu/host)
# CANN's dtype words in an ops-info file -> the contract's names.
OPS_INFO_DTYPES = {"float": "float32", "float32": "float32", "float16": "float16",
                   "bfloat16": "bfloat16", "double": "float64", "int32": "int32",
                   "int64": "int64"}  # fmt: skip
OPS_INFO_ATTR_KINDS = {"listInt": "list_int", "int": "int", "listFloat": "list_float"}


class NotAvailable(RuntimeError):
    """The backend cannot read or run that layer on this host (the message says why)."""


# -- the registration ---------------------------------------------------------------------------


def registration(backend: str) -> tuple[dict[str, Any], str]:
    """(the registration in golden/registration.py's form, where it was read)."""
    if backend == "native":
        from farm.agent.backends import native

        path = native.find_library()
        lib = native.load(path)
        if not hasattr(lib, "lsg_acpu_opdef"):
            raise NotAvailable(
                f"{path.name} has no OpDef registration (the CPU twin is a second implementation "
                "without one): build the real operator (farm build --target ascendc-cpu)"
            )
        lib.lsg_acpu_opdef.restype = ctypes.c_char_p
        return from_opdef(json.loads(lib.lsg_acpu_opdef().decode())), f"the OpDef of {path}"
    if backend == "acl":
        from farm.agent.backends import acl_api

        libs = acl_api.load()
        if libs.emulated:
            if not hasattr(libs.op_api, "lsg_emu_opdef"):
                raise NotAvailable(f"{libs.op_api_path} does not export lsg_emu_opdef")
            libs.op_api.lsg_emu_opdef.restype = ctypes.c_char_p
            text = libs.op_api.lsg_emu_opdef().decode()
            return from_opdef(json.loads(text)), f"the OpDef of {libs.op_api_path}"
        return ops_info_registration(Path(libs.op_api_path).parents[2])
    raise NotAvailable(f"the {backend} backend has no OpDef registration to read")


def from_opdef(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The emulated OpDef's description (op/ascendc_cpu/host/host_tiling.h describe_opdef)."""
    if not raw:
        raise NotAvailable(f"no OpDef registered as {OP_TYPE}")
    socs = {family: {"params": list(c.get("params") or [])} for family, c in raw["socs"].items()}
    attrs = {
        name: {"kind": a.get("kind"), "optional": a.get("optional")}
        for name, a in (raw.get("attrs") or {}).items()
    }
    return {"socs": socs, "attrs": attrs}


def ops_info_registration(vendor: Path) -> tuple[dict[str, Any], str]:
    """The registration from a custom operator package's ops-info files, one a SoC family."""
    config = vendor / "op_impl" / "ai_core" / "tbe" / "config"
    files = sorted(config.glob("*/aic-*-ops-info.json"))
    if not files:
        raise NotAvailable(
            f"no aic-<soc>-ops-info.json under {config}: this host's CANN package of the "
            "operator does not say what it registered"
        )
    socs: dict[str, Any] = {}
    attrs: dict[str, Any] | None = None
    for path in files:
        entry = json.loads(path.read_text()).get(OP_TYPE)
        if entry is None:
            continue
        socs[path.parent.name], attrs = ops_info_entry(entry)
    if not socs:
        raise NotAvailable(f"no ops-info file under {config} declares {OP_TYPE}")
    return {"socs": socs, "attrs": attrs}, f"{config}/*/aic-*-ops-info.json"


def ops_info_entry(entry: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One operator's entry of an ops-info file: (its configuration, its attributes)."""

    def words(value: Any) -> list[str]:
        return [w.strip() for w in str(value or "").split(",") if w.strip()]

    params = []
    for io in ("input", "output"):
        k = 0
        while f"{io}{k}" in entry:
            p = entry[f"{io}{k}"]
            params.append(
                {
                    "name": p.get("name"),
                    "io": io,
                    "param_type": p.get("paramType"),
                    "dtypes": [OPS_INFO_DTYPES.get(d, d) for d in words(p.get("dtype"))],
                    "formats": words(p.get("format")),
                    "unknown_shape_formats": words(p.get("unknownshape_format")),
                }
            )
            k += 1
    attrs = {}
    for name in words((entry.get("attr") or {}).get("list")):
        a = entry.get(f"attr_{name}") or {}
        kind = str(a.get("type"))
        kind = OPS_INFO_ATTR_KINDS.get(kind, kind)
        attrs[name] = {"kind": kind, "optional": a.get("paramType") == "optional"}
    return {"params": params}, attrs


# -- the tiling function alone ------------------------------------------------------------------


def dtype_code(name: str) -> int:
    from farm.agent.backends.native import DTYPE_CODES

    return DESCRIPTOR_ONLY.get(name) or DTYPE_CODES[numpy_dtype(name)]


def tiling_alone(
    backend: str,
    tensors: Sequence[tuple[str, Sequence[int]]],
    axes: Sequence[int],
    soc: str,
) -> tuple[int, int, str]:
    """The tiling function's own decision on a call of (dtype, shape) for gradOutput, output and
    out: (status, reason id, message); status 0 when it tiled the call."""
    codes = [dtype_code(d) for d, _ in tensors]
    shapes = [tuple(int(e) for e in s) for _, s in tensors]
    axes = tuple(int(a) for a in axes)
    c_axes = (ctypes.c_int64 * max(len(axes), 1))(*axes)
    reason, msg = ctypes.c_int32(-1), ctypes.create_string_buffer(1024)
    if backend == "native":
        from farm.agent.backends import native

        lib = native.load()
        if not hasattr(lib, "lsg_acpu_tiling_alone"):
            raise NotAvailable(
                f"{native.find_library().name} has no host tiling function (the CPU twin plans "
                "in one piece): build the real operator (farm build --target ascendc-cpu)"
            )
        descs = [native._Descriptor(native.Spec(s, c)) for s, c in zip(shapes, codes, strict=True)]
        ptrs = [ctypes.pointer(d.c) for d in descs]
        fn = lib.lsg_acpu_tiling_alone
        tensor = ctypes.POINTER(native.LsgTensor)
        fn.argtypes = [tensor, tensor, ctypes.POINTER(ctypes.c_int64), ctypes.c_int32, tensor,
                       ctypes.c_char_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_char_p,
                       ctypes.c_size_t]  # fmt: skip
        fn.restype = ctypes.c_int32
        status = fn(ptrs[0], ptrs[1], c_axes, len(axes), ptrs[2], soc.encode(),
                    ctypes.byref(reason), msg, len(msg))  # fmt: skip
        return int(status), reason.value, msg.value.decode(errors="replace")
    if backend == "acl":
        from farm.agent.backends import acl_api

        libs = acl_api.load()
        if not libs.emulated or not hasattr(libs.op_api, "lsg_emu_tiling_alone"):
            raise NotAvailable(
                "CANN has no entry that runs an operator's tiling function alone (the generated "
                "aclnn entry checks the registration first): not available on this host"
            )
        dims = [e for s in shapes for e in s]
        fn = libs.op_api.lsg_emu_tiling_alone
        i32p, i64p = ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int64)
        fn.argtypes = [i32p, i32p, i64p, i64p, ctypes.c_int32, i32p, ctypes.c_char_p,
                       ctypes.c_size_t]  # fmt: skip
        fn.restype = ctypes.c_int32
        status = fn((ctypes.c_int32 * 3)(*codes), (ctypes.c_int32 * 3)(*map(len, shapes)),
                    (ctypes.c_int64 * max(len(dims), 1))(*dims), c_axes, len(axes),
                    ctypes.byref(reason), msg, len(msg))  # fmt: skip
        return int(status), reason.value, msg.value.decode(errors="replace")
    raise NotAvailable(f"the {backend} backend cannot run the tiling function alone")


# -- the graph inference ------------------------------------------------------------------------

# The dtypes a case may name (suites/case_values.py DTYPE_SHORT), whose codes are ge::DataType's.
CASE_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64")
GE_DT_UNDEFINED = 28  # ge::DT_UNDEFINED: an output dtype no inference set
MAX_DIMS = 25  # gert::Shape::kMaxDimNum
MISSING_REGISTRATION = 561000  # lsg_acpu_infer: an inference function the OpDef did not register


def ge_dtype_name(code: int) -> str:
    """A ge::DataType code as the contract names dtypes ("undefined", else "code N")."""
    if code == GE_DT_UNDEFINED:
        return "undefined"
    names = {dtype_code(n): n for n in (*CASE_DTYPES, *DESCRIPTOR_ONLY)}
    return names.get(code, f"code {code}")


def infer(backend: str, inputs: Sequence[tuple[str, Sequence[int]]]) -> tuple[dict[str, Any], str]:
    """The registered inference functions run as GE runs them on a node of (dtype, shape) inputs,
    by index, and one output: ({"shape_status", "shape", "dtype_status", "dtype"} as
    golden/inference.py reads them, plus "missing": what the OpDef did not register, "" when
    both ran), where they were run."""
    if backend == "native":
        from farm.agent.backends import native

        path = native.find_library()
        lib, entry = native.load(path), "lsg_acpu_infer"
        if not hasattr(lib, entry):
            raise NotAvailable(
                f"{path.name} has no inference functions (the CPU twin is a second "
                "implementation without an OpDef): build the real operator (farm build --target "
                "ascendc-cpu)"
            )
    elif backend == "acl":
        from farm.agent.backends import acl_api

        libs = acl_api.load()
        path, lib, entry = Path(libs.op_api_path), libs.op_api, "lsg_emu_infer"
        if not libs.emulated or not hasattr(lib, entry):
            raise NotAvailable(
                "the operator's InferShape and InferDataType live in the CANN package's op_host "
                "library (libcust_opmaster*.so), which only GE calls, on contexts it builds from "
                "a graph: not available on this host (the farm does not fake GE's contexts)"
            )
    else:
        raise NotAvailable(f"the {backend} backend has no inference functions to run")
    codes = [dtype_code(d) for d, _ in inputs]
    shapes = [tuple(int(e) for e in s) for _, s in inputs]
    dims = [e for s in shapes for e in s]
    u32, i32 = ctypes.c_uint32, ctypes.c_int32
    shape_status, dtype_status, rank, dtype = u32(), u32(), i32(), i32()
    out = (ctypes.c_int64 * MAX_DIMS)()
    msg = ctypes.create_string_buffer(1024)
    fn = getattr(lib, entry)
    i32p, i64p, u32p = ctypes.POINTER(i32), ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(u32)
    fn.argtypes = [i32, i32p, i32p, i64p, i32, u32p, i32p, i64p, i32, u32p, i32p,
                   ctypes.c_char_p, ctypes.c_size_t]  # fmt: skip
    fn.restype = i32
    n = len(inputs)
    status = fn(n, (i32 * max(n, 1))(*codes), (i32 * max(n, 1))(*map(len, shapes)),
                (ctypes.c_int64 * max(len(dims), 1))(*dims), 1, ctypes.byref(shape_status),
                ctypes.byref(rank), out, MAX_DIMS, ctypes.byref(dtype_status),
                ctypes.byref(dtype), msg, len(msg))  # fmt: skip
    text = msg.value.decode(errors="replace")
    if status and status != MISSING_REGISTRATION:  # the node was not read: not the operator's
        raise NotAvailable(f"{path.name} {entry} could not read the node: {text}")
    inferred = {
        "shape_status": shape_status.value,
        "shape": [int(out[i]) for i in range(min(rank.value, MAX_DIMS))],
        "dtype_status": dtype_status.value,
        "dtype": ge_dtype_name(dtype.value),
        "missing": text if status else "",
    }
    return inferred, f"{entry} of {path}"
