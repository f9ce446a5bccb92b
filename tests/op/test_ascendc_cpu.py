"""The operator's real source on the CPU: op/ascendc (the Ascend C kernel and the host file with
OpDef, InferShape and TilingFunc) compiled unchanged against the emulation of Ascend C
(op/ascendc_cpu) into liblsg_ascendc_cpu.so.

- the host file and the kernel compile unchanged with g++;
- the OpDef registration, read back: bf16 only on ascend910b;
- the real TilingFunc (reached through the OpDef, on an emulated TilingContext) writes the tiling
  data lsg::plan plans, for many shapes on every SoC of the table, with the block dim, tiling key
  and system workspace of the platform;
- a kernel fault comes back as status 561000, reason kernel_fault and the fault's message; each
  kernel-source planted error gives its fault;
- the twin, kept as an independent second implementation, gives the same bits as the real kernel
  on every accepted case of the smoke tier.

(The ABI tests the twin passes run on this library too: tests/op parametrized over
``native_lib``; the planted bugs through the judge: test_judge_catches_planted_bugs.py.)
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from farm.agent.backends import native
from farm.agent.execute import case_layout, make_call_inputs
from farm.pool import build
from farm.run.requests import case_request
from golden.inputs import make_inputs
from golden.soc import PROFILES, representative_soc
from suites import matrix
from tests.identities import host_identity
from tests.op.conftest import acpu_planted, need_emulation

OP = build.OP_DIR
# LogSoftmaxGradTilingData (op_host/log_softmax_grad_tiling.h): nine int64 then two int32.
TILING_FIELDS = (
    "d0",
    "d1",
    "d2",
    "rowsPerBigCore",
    "rowsPerSmallCore",
    "blockBytes",
    "blockElems",
    "chunkCount",
    "tailElems",
    "bigCores",
    "publicKey",
)
TILING_FORMAT = "<9q2i"
MIB = 1024 * 1024


def _compile(source, *defines: str) -> subprocess.CompletedProcess:
    includes = [OP / "ascendc_cpu" / "include", OP / "ascendc" / "op_host", OP / "tiling"]
    cmd = ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", *defines]
    cmd += [f"-I{p}" for p in includes] + [str(source)]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.mark.build
def test_the_host_file_compiles_unchanged():
    need_emulation()
    proc = _compile(OP / "ascendc" / "op_host" / "log_softmax_grad.cpp")
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.build
@pytest.mark.parametrize("dtype", ["float", "half", "bfloat16_t"])
def test_the_kernel_compiles_unchanged_for_each_dtype(dtype):
    need_emulation()
    proc = _compile(
        OP / "ascendc" / "op_kernel" / "log_softmax_grad.cpp",
        f"-DDTYPE_GRAD_OUTPUT={dtype}",
        f"-Dlog_softmax_grad_custom=log_softmax_grad_{dtype}",
        '-DEMU_TILING_HEADER="log_softmax_grad_tiling.h"',
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _opdef(library) -> dict:
    lib = ctypes.CDLL(str(library))
    lib.lsg_acpu_opdef.restype = ctypes.c_char_p
    return json.loads(lib.lsg_acpu_opdef().decode())


def test_opdef_registers_bf16_on_ascend910b_only(acpu_lib):
    reg = _opdef(acpu_lib)
    assert reg["op_type"] == "LogSoftmaxGradCustom"
    assert reg["has_tiling"] and reg["has_infer_shape"] and reg["has_infer_dtype"]
    assert reg["attrs"] == {"axes": {"kind": "list_int", "optional": True, "default": [-1]}}
    assert set(reg["socs"]) == {"ascend910b", "ascend310b"}
    every = ["float32", "float16", "bfloat16"]
    a2 = reg["socs"]["ascend910b"]
    b = reg["socs"]["ascend310b"]
    for params in ("inputs", "outputs"):
        for name, dtypes in a2[params].items():
            assert dtypes == every, (name, dtypes)
        for name, dtypes in b[params].items():
            assert dtypes == ["float32", "float16"], (name, dtypes)
    assert set(a2["inputs"]) == {"grad_output", "output"} and set(a2["outputs"]) == {"grad_input"}
    # Every parameter with all it declares, in order (what aic-<soc>-ops-info.json lists).
    for family, config in reg["socs"].items():
        params = config["params"]
        assert [(p["name"], p["io"], p["param_type"]) for p in params] == [
            ("grad_output", "input", "required"),
            ("output", "input", "required"),
            ("grad_input", "output", "required"),
        ]
        for p in params:
            assert p["dtypes"] == config["inputs" if p["io"] == "input" else "outputs"][p["name"]]
            n = len(p["dtypes"])
            assert p["formats"] == p["unknown_shape_formats"] == ["ND"] * n, (family, p)
    # Each family's registered dtypes are what the SoC table says it can cast.
    for profile in PROFILES.values():
        has_bf16 = "bfloat16" in reg["socs"][profile.family]["inputs"]["grad_output"]
        assert has_bf16 == profile.bf16_cast, profile.name


def host_tiling(library, shape, dtype, axes, soc):
    """Only the registered TilingFunc: (status, tiling fields, block dim, key, workspace, msg)."""
    lib = native.load(library)
    fn = lib.lsg_acpu_host_tiling
    fn.restype = ctypes.c_int32
    spec = native.Spec(tuple(shape), dtype)
    d = native._Descriptor(spec)
    axes = tuple(axes)
    c_axes = (ctypes.c_int64 * max(len(axes), 1))(*axes)
    buf = ctypes.create_string_buffer(256)
    size, block_dim = ctypes.c_size_t(0), ctypes.c_uint32(0)
    key, ws = ctypes.c_uint64(0), ctypes.c_uint64(0)
    msg = ctypes.create_string_buffer(512)
    p = ctypes.pointer(d.c)
    outputs = [ctypes.byref(v) for v in (size, block_dim, key, ws)]
    status = fn(p, p, c_axes, len(axes), p, soc.encode(), buf, len(buf), *outputs, msg, len(msg))
    fields = None
    if status == 0:
        assert size.value == struct.calcsize(TILING_FORMAT)
        values = struct.unpack(TILING_FORMAT, buf.raw[: size.value])
        fields = dict(zip(TILING_FIELDS, values, strict=True))
    return status, fields, block_dim.value, key.value, ws.value, msg.value.decode()


SHAPES = [
    ((), (-1,)),
    ((7,), (0,)),
    ((3, 5), (0,)),
    ((4, 6), (-1,)),
    ((2, 1, 70), (1,)),
    ((50, 37), (-1,)),
    ((100, 19), (-1,)),
    ((2, 9825), (-1,)),
    ((3, 2 * 9824 + 3), (-1,)),
    ((2, 12689), (-1,)),
    ((1, 3, 12697), (1,)),
    ((60, 5, 7), (1,)),
    ((2, 7, 33), (1,)),
    ((1, 50000, 4), (1,)),
    ((2, 1, 8200), (1,)),
    ((97, 1, 33000), (1,)),
    ((2, 1, 2, 1, 3, 1, 2, 2), (2, 3, 4)),
    ((2, 3, 4, 5), (1, 2)),
    ((4, 152064), (-1,)),
    ((0, 5), (-1,)),
    ((4, 0, 3), (1,)),
]


@pytest.mark.parametrize("soc", list(PROFILES))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_tiling_func_writes_what_lsg_plan_plans(acpu_lib, twin_build, soc, dtype):
    profile = PROFILES[soc]
    for shape, axes in SHAPES:
        status, got, block_dim, key, ws, msg = host_tiling(acpu_lib, shape, dtype, axes, soc)
        spec = native.Spec(shape, dtype)
        plan = native.plan(spec, spec, axes, spec, soc, library=twin_build)
        if dtype == "bfloat16" and not profile.bf16_cast:
            # The host file's own check refuses it: GRAPH_FAILED, no tiling.
            assert plan.reason == "bf16_unsupported_on_soc"
            assert status == 561000 and "tiling function failed" in msg, msg
            continue
        assert status == 0, msg
        t = plan.tiling
        assert t is not None, plan.message
        assert got == {
            "d0": t["d0"],
            "d1": t["d1"],
            "d2": t["d2"],
            "rowsPerBigCore": t["rows_per_big_core"],
            "rowsPerSmallCore": t["rows_per_small_core"],
            "blockBytes": t["block_bytes"],
            "blockElems": t["block_elems"],
            "chunkCount": t["chunk_count"],
            "tailElems": t["tail_elems"],
            "bigCores": t["big_cores"],
            "publicKey": t["key"],
        }, (shape, axes)
        assert block_dim == (1 if t["is_empty"] else t["cores_used"])
        assert block_dim <= profile.vector_cores  # the platform's cores: the SoC table's
        assert key == t["schedule"]
        assert ws == (16 * MIB if profile.family == "ascend910b" else 2 * MIB)


def test_the_tiling_function_alone_says_its_status_and_reason(acpu_lib, monkeypatch):
    from farm.agent.backends import layers

    monkeypatch.setenv(native.ENV_LIB, str(acpu_lib))
    bf16, f32 = ("bfloat16", (3, 5)), ("float32", (3, 5))
    # bf16 on Ascend310B: the contract's status and reason (bf16_unsupported_on_soc, 9).
    assert layers.tiling_alone("native", [bf16] * 3, (-1,), "Ascend310B1")[:2] == (161002, 9)
    assert layers.tiling_alone("native", [bf16] * 3, (-1,), "Ascend910B1") == (0, 0, "")
    status, reason, message = layers.tiling_alone("native", [f32] * 3, (0, 2), "Ascend910B1")
    assert (status, reason) == (161002, 6), message  # dim_out_of_range


def test_the_registered_inference_runs_on_a_node_as_ge_runs_it(acpu_lib, monkeypatch):
    """lsg_acpu_infer: InferShape and InferDataType of the OpDef on emulated contexts holding the
    node's inputs and outputs by index; out is gradOutput's (input 0), whatever output (input 1)
    is. A node without output 0 gets the operator's own refusal, not a crash."""
    from farm.agent.backends import layers

    monkeypatch.setenv(native.ENV_LIB, str(acpu_lib))
    inferred, source = layers.infer("native", [("float16", (2, 3, 4)), ("float32", (5, 6))])
    assert inferred == {
        "shape_status": 0,
        "shape": [2, 3, 4],
        "dtype_status": 0,
        "dtype": "float16",
        "missing": "",
    }
    assert source.startswith("lsg_acpu_infer of ") and source.endswith(acpu_lib.name)
    scalar, _ = layers.infer("native", [("bfloat16", ()), ("float32", (2,) * 8)])
    assert (scalar["shape"], scalar["dtype"]) == ([], "bfloat16")
    lib = ctypes.CDLL(str(acpu_lib))
    u32, i32 = ctypes.c_uint32, ctypes.c_int32
    shape_status, dtype_status, rank, dtype = u32(), u32(), i32(-1), i32(-1)
    status = lib.lsg_acpu_infer(
        2, (i32 * 2)(0, 1), (i32 * 2)(1, 1), (ctypes.c_int64 * 2)(3, 4), 0,
        ctypes.byref(shape_status), ctypes.byref(rank), None, 0, ctypes.byref(dtype_status),
        ctypes.byref(dtype), None, 0,
    )  # fmt: skip
    assert (status, shape_status.value, rank.value) == (0, 0xFFFFFFFF, 0)  # GRAPH_FAILED
    assert dtype.value == layers.GE_DT_UNDEFINED  # no output 0 to set
    with pytest.raises(layers.NotAvailable, match="rank 26: a gert::Shape holds 0 to 25"):
        layers.infer("native", [("float32", (1,) * 26), ("float32", (3,))])


def test_tiling_func_refuses_what_the_checks_refuse(acpu_lib):
    status, _, _, _, _, msg = host_tiling(acpu_lib, (2, 3), "float32", (0, 2), "Ascend910B1")
    assert status == 561000 and "tiling function failed" in msg
    status, _, _, _, _, msg = host_tiling(acpu_lib, (2, 3), "float32", (-1,), "Ascend999")
    assert status == 561000 and "Ascend999" in msg


# -- kernel faults -----------------------------------------------------------------------------

# bug -> (soc, dtype, shape, axes) that reaches it, how the fault's message starts
# ("<API>: <rule>"), and its kind: a rule of the device (kernel_fault) or of the emulation's own
# (emulation_policy).
FAULTS = {
    "ragged_datacopy": (
        ("Ascend910B1", "float32", (3, 37), (-1,)),
        "DataCopy: length not a multiple of 32 bytes",
        "kernel_fault",
    ),
    "ub_overflow": (
        ("Ascend310B1", "float32", (4, 37), (-1,)),
        "TPipe::InitBuffer: UB overflow",
        "kernel_fault",
    ),
    "queue_order": (
        ("Ascend910B1", "float16", (4, 37), (-1,)),
        "TQue::DeQue: queue empty",
        "kernel_fault",
    ),
    "cores_overlap": (
        ("Ascend910B1", "float32", (50, 37), (-1,)),
        "DataCopyPad: two cores write one output element",
        "emulation_policy",
    ),
    "short_view": (
        ("Ascend310B1", "float32", (1, 3, 300), (1,)),
        "Duplicate: count beyond the tensor: dst needs 1200 B (300 x 4 B), the tensor has 256 B",
        "kernel_fault",
    ),
}


def test_every_kernel_source_error_has_a_fault_here():
    assert set(FAULTS) == set(build.KERNEL_FAULT_BUGS)


@pytest.mark.build
@pytest.mark.parametrize("bug", build.KERNEL_FAULT_BUGS)
def test_a_planted_kernel_error_is_a_kernel_fault_with_its_message(bug, acpu_lib):
    (soc, dtype, shape, axes), starts, kind = FAULTS[bug]
    library = acpu_planted(bug)
    assert native.build_info(library) == {
        "plant_bug": bug,
        "sanitize": "0",
        "target": "ascendc-cpu",
    }
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=4)
    result = native.run(dy, y, axes, soc, library=library)  # no exception: a result
    assert (result.status, result.reason) == (561000, kind), result.message
    assert result.out is None and result.tiling is not None
    assert result.message.startswith(starts), result.message
    assert ("(emulation policy: CANN accepts this; " in result.message) == (
        kind == "emulation_policy"
    )
    assert "\n" not in result.message  # one line
    # The real kernel, the same call: accepted and run.
    good = native.run(dy, y, axes, soc, library=acpu_lib)
    assert (good.status, good.reason) == (0, "ok"), good.message


@pytest.mark.build
def test_ub_overflow_shows_on_every_soc():
    library = acpu_planted("ub_overflow")
    dy, y = make_inputs((4, 37), "float32", (-1,), "uniform", "normal", seed=4)
    for soc in ("Ascend910B1", "Ascend310B1"):
        result = native.run(dy, y, (-1,), soc, library=library)
        assert result.reason == "kernel_fault" and "UB overflow" in result.message, soc


@pytest.mark.build
def test_the_backend_result_of_a_kernel_fault_in_the_agent(acpu_lib, monkeypatch):
    # Through the agent's path: a record, status 561000, category kernel_fault.
    from farm.agent.execute import run_case
    from suites.case import Case

    monkeypatch.setenv(native.ENV_LIB, str(acpu_planted("ragged_datacopy")))
    record = run_case(
        case_request(Case("ascend910b", "float32", (3, 37), (-1,))), "native", 0, host_identity()
    )
    assert (record["status"], record["reason"], record["category"]) == (
        561000,
        "kernel_fault",
        "kernel_fault",
    )
    assert "DataCopy" in record["op_message"] and record["verdict"] is None


# An agent loads the library (with dlopen, through ctypes), then PyTorch for a benchmark-ratio
# case, or PyTorch first when an earlier case needed it; the ACL emulation's op-api library may be
# loaded too. Each of them with initial-exec TLS takes part of glibc's static TLS surplus for
# dlopen'ed libraries (the emulated device's core lookup, device.cpp t_core; torch's libgomp).
_LOAD_ORDER = """
import ctypes, sys
import numpy as np
from farm.agent.backends import native
from golden.benchmark import torch_benchmark
from golden.inputs import make_inputs

def device():
    ctypes.CDLL(sys.argv[1])  # the ACL emulation's op-api, with its own copy of the device
    dy, y = make_inputs((64, 300), "float16", (-1,), "uniform", "normal", "none", 5)
    result = native.run(dy, y, (-1,), "Ascend910B1", threads=4)  # the lookup on 4 threads
    assert result.status == 0 and np.isfinite(result.out.astype(np.float32)).all(), result

def pytorch():
    dy, y = make_inputs((8, 64), "float32", (-1,), "uniform", "normal", "none", 5)
    assert torch_benchmark(dy, y, (-1,), "float32").shape == (8, 64)

for step in sys.argv[2:]:
    {"device": device, "pytorch": pytorch}[step]()
print("loaded")
"""


@pytest.mark.build
@pytest.mark.parametrize("order", [("device", "pytorch"), ("pytorch", "device")])
def test_the_library_and_pytorch_load_into_one_process_in_either_order(acpu_build, order):
    op_api = acpu_build.parent / build.ACL_DIR / "lib" / "libcust_opapi.so"
    assert op_api.is_file(), f"{op_api}: the ascendc-cpu build has no ACL op-api library"
    env = {**os.environ, native.ENV_LIB: str(acpu_build)}
    proc = subprocess.run(
        [sys.executable, "-c", _LOAD_ORDER, str(op_api), *order],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "loaded", proc.stderr[-2000:]


# -- the twin, an independent second implementation ------------------------------------------


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, except that any NaN equals any NaN."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(fa)
    if not np.array_equal(nan, np.isnan(fb)):
        return False
    width = np.uint16 if a.dtype.itemsize == 2 else np.uint32
    return np.array_equal(a.view(width)[~nan], b.view(width)[~nan])


def test_twin_and_real_kernel_agree_bit_for_bit_on_the_smoke_tier(acpu_build, twin_build):
    cases = [c for c in matrix.expand("smoke") if c.accepted]
    assert len(cases) > 100
    differ = []
    for case in cases:
        d = case_request(case)
        dy, y = make_call_inputs(d)
        socname = representative_soc(case.family).name
        results = [
            native.run(
                dy,
                y,
                case.axes,
                socname,
                out_dtype=np.dtype(dy.dtype) if dy is not None else None,
                out_shape=case.out_shape,
                missing=case.missing,
                out_layout=case_layout(d, "out"),
                library=library,
            )
            for library in (acpu_build, twin_build)
        ]
        real, twin = results
        assert (real.status, real.reason) == (twin.status, twin.reason), case.id
        assert real.tiling == twin.tiling, case.id
        assert real.out_guard_ok == twin.out_guard_ok, case.id
        if real.out is not None:
            assert twin.out is not None, case.id  # the same status: the twin accepted it too
            if not _same(real.out, twin.out):
                differ.append(case.id)
    assert not differ, f"{len(differ)} of {len(cases)} cases differ: {differ[:10]}"
