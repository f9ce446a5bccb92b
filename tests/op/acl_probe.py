"""One scenario against the emulated ACL runtime, in a process of its own (aclInit is once per
process, and one scenario ends in a fault): `python tests/op/acl_probe.py <scenario>` prints one
JSON object, what the scenario saw. tests/op/test_acl_runtime.py runs each. Standard library and
the backend's prototypes only, so that what is tested is the runtime, through the genuine
declarations."""

from __future__ import annotations

import array
import ctypes
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from farm.agent.backends import acl_api as api  # noqa: E402

LIBS = api.load()
ACL = LIBS.ascendcl
NN = LIBS.nnopbase
OP = LIBS.op_api


def said() -> str:
    text = ACL.aclGetRecentErrMsg()
    return text.decode() if text else ""


def start() -> None:
    assert ACL.aclInit(None) == 0, said()
    assert ACL.aclrtSetDevice(0) == 0, said()


def malloc(n: int) -> ctypes.c_void_p:
    p = ctypes.c_void_p()
    assert ACL.aclrtMalloc(ctypes.byref(p), n, api.ACL_MEM_MALLOC_HUGE_FIRST) == 0, said()
    return p


def int64s(*values: int):
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def tensor(dims, strides, storage, data, dtype=0):
    return NN.aclCreateTensor(
        int64s(*dims),
        len(dims),
        dtype,
        int64s(*strides),
        0,
        api.ACL_FORMAT_ND,
        int64s(*storage),
        len(storage),
        data,
    )


def floats(n: int, value: float = 0.5) -> array.array:
    return array.array("f", [value] * n)


def to_device(values: array.array) -> ctypes.c_void_p:
    n = len(values) * values.itemsize
    p = malloc(n)
    address, _ = values.buffer_info()
    assert ACL.aclrtMemcpy(p, n, address, n, api.ACL_MEMCPY_HOST_TO_DEVICE) == 0, said()
    return p


def operator_call(rows: int = 4, cols: int = 8):
    """A valid call's three tensors and phase one: (tensors, buffers, workspace size, executor)."""
    n = rows * cols
    buffers = [to_device(floats(n, 0.25)), to_device(floats(n, -2.0)), to_device(floats(n, 0.0))]
    tensors = [tensor((rows, cols), (cols, 1), (n,), b) for b in buffers]
    ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
    status = OP.aclnnLogSoftmaxBackwardGetWorkspaceSize(
        tensors[0], tensors[1], -1, tensors[2], ctypes.byref(ws), ctypes.byref(ex)
    )
    assert status == 0, said()
    return tensors, buffers, ws.value, ex


def bind(lib, name: str, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


VP, U64P = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)
OPAPI = ctypes.CDLL(str(Path(LIBS.directory) / api.LIB_FILES["opapi"]), mode=ctypes.RTLD_GLOBAL)
COPY_WS = bind(OPAPI, "aclnnInplaceCopyGetWorkspaceSize", ctypes.c_int32, VP, VP, U64P, VP)
COPY = bind(OPAPI, "aclnnInplaceCopy", ctypes.c_int32, VP, ctypes.c_uint64, VP, VP)
REPEATABLE = bind(NN, "aclSetAclOpExecutorRepeatable", ctypes.c_int32, VP)
DESTROY_EXECUTOR = bind(NN, "aclDestroyAclOpExecutor", ctypes.c_int32, VP)
GENERATED_WS = bind(
    OP, "aclnnLogSoftmaxGradCustomGetWorkspaceSize", ctypes.c_int32, VP, VP, VP, VP, U64P, VP
)
OP_RUN = bind(OP, "aclnnLogSoftmaxGradCustom", ctypes.c_int32, VP, ctypes.c_uint64, VP, VP)
INT_ARRAY = bind(NN, "aclCreateIntArray", VP, ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64)


def stream() -> ctypes.c_void_p:
    s = ctypes.c_void_p()
    assert ACL.aclrtCreateStream(ctypes.byref(s)) == 0, said()
    return s


# -- scenarios: each returns what it saw ---------------------------------------------------------


def host_reads_device_memory():
    start()
    p = malloc(64)
    print(json.dumps({"reached": "before the read"}), flush=True)
    ctypes.string_at(p, 4)  # a host read of device memory: the process must not survive it
    return {"survived": True}


def wrong_device_id():
    assert ACL.aclInit(None) == 0
    return {"status": ACL.aclrtSetDevice(5), "message": said()}


def copy_kind_swapped():
    start()
    host = floats(16)
    p = malloc(64)
    address, _ = host.buffer_info()
    status = ACL.aclrtMemcpy(p, 64, address, 64, api.ACL_MEMCPY_DEVICE_TO_HOST)
    return {"status": status, "message": said()}


def copy_back_before_sync():
    start()
    s = stream()
    tensors, buffers, ws, ex = operator_call()
    workspace = malloc(ws)
    assert OP.aclnnLogSoftmaxBackward(workspace, ws, ex, s) == 0, said()
    out = floats(32)
    address, _ = out.buffer_info()
    status = ACL.aclrtMemcpy(address, 128, buffers[2], 128, api.ACL_MEMCPY_DEVICE_TO_HOST)
    return {"status": status, "message": said()}


def workspace_smaller_than_asked():
    start()
    s = stream()
    tensors, buffers, ws, ex = operator_call()
    workspace = malloc(ws)
    status = OP.aclnnLogSoftmaxBackward(workspace, ws - 1, ex, s)
    return {"status": status, "message": said(), "asked": ws}


def storage_smaller_than_view():
    start()
    p = malloc(64)
    t = tensor((4, 4), (4, 1), (8,), p)
    return {"null": not t, "message": said()}


def use_after_destroy():
    start()
    p = malloc(64)
    t = tensor((4, 4), (4, 1), (16,), p)
    assert NN.aclDestroyTensor(t) == 0
    again = NN.aclDestroyTensor(t)
    first = said()
    ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
    status = OP.aclnnLogSoftmaxBackwardGetWorkspaceSize(
        t, t, -1, t, ctypes.byref(ws), ctypes.byref(ex)
    )
    return {"destroy_again": again, "destroy_message": first, "status": status, "message": said()}


def double_free():
    start()
    p = malloc(64)
    assert ACL.aclrtFree(p) == 0
    return {"status": ACL.aclrtFree(p), "message": said()}


def buffers_left_at_finalize():
    start()
    malloc(4096)
    return {"status": ACL.aclFinalize(), "message": said()}


def elapsed_before_sync():
    start()
    s = stream()
    a, b = ctypes.c_void_p(), ctypes.c_void_p()
    assert ACL.aclrtCreateEvent(ctypes.byref(a)) == 0 and ACL.aclrtCreateEvent(ctypes.byref(b)) == 0
    assert ACL.aclrtRecordEvent(a, s) == 0 and ACL.aclrtRecordEvent(b, s) == 0
    ms = ctypes.c_float()
    status = ACL.aclrtEventElapsedTime(ctypes.byref(ms), a, b)
    message = said()
    assert ACL.aclrtSynchronizeStream(s) == 0
    after = ACL.aclrtEventElapsedTime(ctypes.byref(ms), a, b)
    return {"status": status, "message": message, "after_sync": after}


def a_whole_call_leaves_nothing():
    start()
    s = stream()
    tensors, buffers, ws, ex = operator_call()
    workspace = malloc(ws)
    assert OP.aclnnLogSoftmaxBackward(workspace, ws, ex, s) == 0, said()
    assert ACL.aclrtSynchronizeStream(s) == 0, said()
    out = floats(32, float("nan"))
    address, _ = out.buffer_info()
    assert ACL.aclrtMemcpy(address, 128, buffers[2], 128, api.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    for t in tensors:
        assert NN.aclDestroyTensor(t) == 0
    for b in [*buffers, workspace]:
        assert ACL.aclrtFree(b) == 0, said()
    assert ACL.aclrtDestroyStream(s) == 0
    assert ACL.aclrtResetDevice(0) == 0, said()
    return {"out": list(out), "finalize": ACL.aclFinalize(), "message": said()}


def strided_copy_asks_for_workspace():
    """CANN's aclnnInplaceCopy makes a strided source contiguous in its workspace first."""
    start()
    s = stream()
    src = to_device(array.array("f", range(12)))  # a (3, 4) storage; its transpose is (4, 3)
    dst = malloc(48)
    strided = tensor((4, 3), (1, 4), (12,), src)
    dense = tensor((4, 3), (3, 1), (12,), dst)
    sizes = {}
    for name, (to, frm) in {"strided": (dense, strided), "contiguous": (strided, dense)}.items():
        ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
        assert COPY_WS(to, frm, ctypes.byref(ws), ctypes.byref(ex)) == 0, said()
        sizes[name] = ws.value
        if name == "contiguous":  # not run: released as CANN documents it
            assert REPEATABLE(ex) == 0 and DESTROY_EXECUTOR(ex) == 0, said()
            continue
        short = COPY(malloc(16), 16, ex, s)  # less than it asked for: refused, executor kept
        short_said = said()
        workspace = malloc(ws.value)
        assert COPY(workspace, ws.value, ex, s) == 0, said()
    assert ACL.aclrtSynchronizeStream(s) == 0, said()
    back = array.array("f", [0.0] * 12)
    address, _ = back.buffer_info()
    assert ACL.aclrtMemcpy(address, 48, dst, 48, api.ACL_MEMCPY_DEVICE_TO_HOST) == 0, said()
    return {**sizes, "short": short, "short_message": short_said, "copied": list(back)}


def recent_error_gets_and_clears():
    """A refusal of the operator's aclnn layer arrives through nnopbase's error channel, once."""
    start()
    buffers = [to_device(floats(12)) for _ in range(3)]
    dy, y = (tensor((3, 4), (4, 1), (12,), b) for b in buffers[:2])
    out = tensor((4, 3), (3, 1), (12,), buffers[2])  # the wrong shape
    ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
    status = OP.aclnnLogSoftmaxBackwardGetWorkspaceSize(
        dy, y, -1, out, ctypes.byref(ws), ctypes.byref(ex)
    )
    first, second = said(), said()
    return {"status": status, "first": first, "second": second}


def executor_lifetime():
    """An unrun executor is released only once made repeatable; a repeatable one runs again."""
    start()
    s = stream()
    buffers = [to_device(floats(8, v)) for v in (0.25, -2.0, 0.0)]
    tensors = [tensor((2, 4), (4, 1), (8,), b) for b in buffers]
    axes = INT_ARRAY(int64s(-1), 1)
    seen = {}
    ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
    assert GENERATED_WS(*tensors[:2], axes, tensors[2], ctypes.byref(ws), ctypes.byref(ex)) == 0
    seen["destroy_unrun"] = DESTROY_EXECUTOR(ex)
    seen["destroy_message"] = said()
    seen["repeatable"] = REPEATABLE(ex)
    workspace = malloc(ws.value)
    seen["runs"] = [OP_RUN(workspace, ws.value, ex, s) for _ in range(2)]
    assert ACL.aclrtSynchronizeStream(s) == 0, said()
    seen["destroy_repeatable"] = DESTROY_EXECUTOR(ex)
    seen["destroy_again"] = DESTROY_EXECUTOR(ex)
    return seen


def empty_out_of_the_wrong_shape():
    """An empty out is checked: the OpDef asks CANN to tile (and launch) for empty outputs."""
    start()
    s = stream()
    p = malloc(64)
    dy, y = (tensor((0, 3), (3, 1), (1,), p) for _ in range(2))
    out = tensor((0, 4), (4, 1), (1,), p)
    seen = {}
    for name, o in (("wrong", out), ("right", tensor((0, 3), (3, 1), (1,), p))):
        ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
        seen[name] = OP.aclnnLogSoftmaxBackwardGetWorkspaceSize(
            dy, y, -1, o, ctypes.byref(ws), ctypes.byref(ex)
        )
        seen[name + "_message"] = said()
        if seen[name] == 0:
            workspace = malloc(ws.value) if ws.value else None
            seen["ran"] = OP.aclnnLogSoftmaxBackward(workspace, ws.value, ex, s)
            seen["synced"] = ACL.aclrtSynchronizeStream(s)
    return seen


def handles_name_their_maker():
    """Each live handle names the library whose code made it: the caller of aclCreateTensor, or
    of the phase one that made an executor (the layer, asking the generated entry for it)."""
    start()
    s = stream()
    tensors, buffers, ws, ex = operator_call()
    held = json.loads(NN.lsg_emu_acl_live_handle_list())
    workspace = malloc(ws)
    assert OP.aclnnLogSoftmaxBackward(workspace, ws, ex, s) == 0, said()
    assert ACL.aclrtSynchronizeStream(s) == 0, said()
    listing = json.loads(ACL.lsg_emu_acl_buffers())
    reached = [b["reached"] for b in listing if b["base"] == workspace.value]
    ran = json.loads(NN.lsg_emu_acl_live_handle_list())
    for t in tensors:
        assert NN.aclDestroyTensor(t) == 0
    return {
        "op_api": LIBS.op_api_path,
        "held": held,
        "ran": ran,
        "left": json.loads(NN.lsg_emu_acl_live_handle_list()),
        "serial": NN.lsg_emu_acl_handle_serial(),
        "ws": ws,
        "reached": reached,
    }


def faults_armed_for_a_phase_one():
    """lsg_emu_acl_inject: the next phase one of an api fails, or asks for 512 bytes more."""
    start()
    src = to_device(array.array("f", range(12)))
    dst = malloc(48)
    strided = tensor((4, 3), (1, 4), (12,), src)
    dense = tensor((4, 3), (3, 1), (12,), dst)
    seen = {"unknown": NN.lsg_emu_acl_inject(b"aclnnInplaceCopy", b"explode")}
    for fault in ("refuse", "grow", ""):
        seen[f"armed_{fault}"] = NN.lsg_emu_acl_inject(b"aclnnInplaceCopy", fault.encode())
        ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
        seen[fault] = [COPY_WS(dense, strided, ctypes.byref(ws), ctypes.byref(ex)), ws.value]
        seen[f"{fault}_message"] = said()
        seen[f"{fault}_left"] = NN.lsg_emu_acl_inject(b"aclnnInplaceCopy", b"")
        if ex.value:
            assert REPEATABLE(ex) == 0 and DESTROY_EXECUTOR(ex) == 0, said()
    return seen


if __name__ == "__main__":
    print(json.dumps(globals()[sys.argv[1]]()))
