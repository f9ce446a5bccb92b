"""The acl backend on the emulated ACL runtime runs what the native backend runs: the same real
kernel on the same emulated device behind the same aclnn layer source, so on every case of the
smoke tier the two give the same verdict of phase one, in the same words, and the same output,
bit for bit; and a strided case reaches the operator's
aclnn layer as the strided aclTensor a framework would pass."""

from __future__ import annotations

import json

import numpy as np
import pytest

from farm.agent.backends import acl, acl_api, native
from farm.agent.backends.acl_session import run_op
from farm.agent.execute import case_layout, descriptor_only, make_call_inputs
from farm.run.requests import case_request
from golden.soc import representative_soc
from suites import matrix
from tests.op.test_ascendc_cpu import _same
from tests.op.test_host_checks import LAYERS


@pytest.fixture(scope="module")
def both(acl_lib_dir, acpu_build, monkeypatch_module):
    monkeypatch_module.setenv(acl_api.ENV_LIB_DIR, acl_lib_dir)
    return acpu_build


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _calls(case):
    d = case_request(case)
    dy, y = make_call_inputs(d)
    out_dtype = None
    if case.out_dtype is None:
        given = dy if dy is not None else y
        assert given is not None, case.id  # a case with data has dy or y
        out_dtype = np.dtype(given.dtype)
    kw = {
        "out_dtype": out_dtype if out_dtype is not None else case.out_dtype,
        "out_shape": case.out_shape,
        "missing": case.missing,
        "out_layout": case_layout(d, "out"),
    }
    return dy, y, kw


def test_acl_and_native_agree_bit_for_bit_on_the_smoke_tier(both):
    cases = [c for c in matrix.expand("smoke") if not descriptor_only(case_request(c))]
    assert len(cases) > 250
    differ, accepted = [], 0
    for case in cases:
        soc = representative_soc(case.family)
        dy, y, kw = _calls(case)
        want = native.run(dy, y, case.axes, soc.name, library=both, **kw)
        acl.declare_host(soc.name, 1)
        got = acl.run(dy, y, case.axes, **kw)
        assert (got.status, got.reason) == (want.status, want.reason), (case.id, got.message)
        # One source decides both (op/ascendc/op_api): a refusal reads the same.
        assert want.message in got.message, (case.id, want.message, got.message)
        assert got.out_guard_ok == want.out_guard_ok, case.id
        assert got.device_run is not None, case.id  # the acl backend says where it ran
        assert got.device_run["runtime"].startswith("lsg emulated ACL runtime")
        if want.out is not None:
            accepted += 1
            assert got.out is not None, case.id  # the same status: acl accepted it too
            if not _same(got.out, want.out):
                differ.append(case.id)
    assert accepted > 200
    assert not differ, f"{len(differ)} of {accepted} accepted cases differ: {differ[:10]}"


def test_a_strided_case_reaches_the_aclnn_layer_as_a_strided_tensor(both):
    case = next(c for c in matrix.expand("smoke") if c.layout == "strided" and c.accepted)
    dy, y, kw = _calls(case)
    assert not dy.flags.c_contiguous
    acl.declare_host(representative_soc(case.family).name, 1)
    rt = acl.runtime()
    rt.libs.nnopbase.lsg_emu_acl_take_tensor_log()
    storage, _ = acl.layouts.allocate(dy.shape, dy.dtype, "strided")
    tensors = (
        acl.host_tensor(dy),
        acl.host_tensor(y),
        acl.out_tensor(storage, "strided", dy.shape),
    )
    done = run_op(rt, rt.device(0), tensors, tuple(case.axes))
    assert done.phase_one == 0 and not done.kernel_failed, done.message
    received = json.loads(rt.libs.nnopbase.lsg_emu_acl_take_tensor_log().decode())
    items = dy.itemsize
    for got, (name, a) in zip(received[:3], (("dy", dy), ("y", y)), strict=False):
        assert got["dims"] == list(a.shape), name
        assert got["strides"] == [s // items for s in a.strides], name
        assert got["strides"] != list(acl.layouts.dense_strides(a.shape)), name
    assert received[2]["strides"] == list(acl.layouts.resolve("strided", dy.shape).strides)
    # Then the aclnn layer made the contiguous copies it hands the generated entry.
    assert any(r["strides"] == list(acl.layouts.dense_strides(dy.shape)) for r in received[3:])


def test_the_record_says_which_runtime_and_device_ran_it(both):
    from farm.agent.execute import run_case
    from tests.identities import host_identity

    case = next(c for c in matrix.expand("smoke") if c.accepted and c.family == "ascend910b")
    record = run_case(
        case_request(case), "acl", 0, host_identity(representative_soc(case.family).name)
    )
    assert record["outcome"] == "passed", record["message"]
    run = record["device_run"]
    assert (
        run["runtime"].startswith("lsg emulated ACL runtime") and "soc=Ascend910B" in run["runtime"]
    )
    assert run["device_id"] == 0 and run["entry"].startswith("aclnnLogSoftmaxBackward")
    assert run["device_s"] is not None and run["device_s"] >= 0


def test_the_driver_version_is_read_from_the_driver_package(tmp_path):
    info = tmp_path / "version.info"
    info.write_text("Version=24.1.rc3\nascendhal_version=7.35.23\n")
    assert acl._driver_version(str(info)) == "24.1.rc3"
    assert acl._driver_version(str(tmp_path / "none")).startswith("unknown (no ")


def test_an_agent_leaving_releases_acl_cleanly(acl_lib_dir):
    """After calls on two devices, close() destroys the streams and events, resets the devices
    and finalises ACL without an error: the backend left nothing behind for aclFinalize to find."""
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np\n"
        "from farm.agent.backends import acl\n"
        "acl.declare_host('Ascend910B1', 2)\n"
        "dy = np.ones((4, 8), np.float32); y = np.full((4, 8), -2.0, np.float32)\n"
        "for device in (0, 1):\n"
        "    assert acl.run(dy, y, (-1,), out_dtype=np.float32, device=device).status == 0\n"
        "acl.close()\n"
        "print('released')\n"
    )
    env = {**os.environ, acl_api.ENV_LIB_DIR: acl_lib_dir}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "released", done.stderr


# CANN's names of SoCs (aclrtGetSocName) beyond the first of each family: those of the table, and
# newer ones it does not list, known by their family. A call the contract refuses is refused with
# its status and reason there too (161002), never as an unknown SoC (561000).
REAL_SOCS = [
    ("Ascend910B2C", "float32", "float16", "dtype_mismatch"),
    ("Ascend910B4-1", "float16", "float32", "dtype_mismatch"),
    ("Ascend310B4", "bfloat16", "bfloat16", "bf16_unsupported_on_soc"),
    ("Ascend310B2", "float32", "float16", "dtype_mismatch"),
    ("Ascend910B9", "float32", "float16", "dtype_mismatch"),  # not in the table
    ("Ascend310B7", "bfloat16", "bfloat16", "bf16_unsupported_on_soc"),  # not in the table
]


@pytest.fixture
def declared(both):
    yield acl.declare_host
    acl.declare_host(representative_soc("ascend910b").name, 1)


@pytest.mark.parametrize("socname, dtype, y_dtype, reason", REAL_SOCS)
def test_a_refusal_on_a_soc_of_a_known_family_is_the_contracts(
    declared, socname, dtype, y_dtype, reason
):
    import ml_dtypes

    def zeros(name):
        return np.zeros((4, 6), ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name))

    declared(socname, 1)
    got = acl.run(zeros(dtype), zeros(y_dtype), (-1,), out_dtype=zeros(dtype).dtype)
    assert (got.status, got.reason) == (161002, reason), got.message
    assert got.device_run is not None  # the acl backend says where it ran
    assert f"soc={socname}" in got.device_run["runtime"]


def test_a_soc_of_no_known_family_or_not_emulated_is_an_inner_error(declared):
    dy = np.zeros((4, 6), np.float32)
    # Of the table: the emulated platform takes its values from it, and the call runs.
    declared("Ascend910B4-1", 1)
    assert acl.run(dy, dy, (-1,), out_dtype=np.float32).status == 0
    # Of a known family but not in the table: the emulation has no values to run it with.
    declared("Ascend910B9", 1)
    got = acl.run(dy, dy, (-1,), out_dtype=np.float32)
    assert (got.status, got.reason) == (561000, "internal"), got.message
    assert "refused a call the contract accepts" in got.message
    # A bare "Ascend910B" is CANN's name of an older Ascend910: of no family here.
    declared("Ascend910B", 1)
    got = acl.run(dy, dy.astype(np.float16), (-1,), out_dtype=np.float32)
    assert (got.status, got.reason) == (561000, "unknown_soc"), got.message


@pytest.mark.parametrize("reason, socname, kw, layer", LAYERS)
def test_the_acl_record_says_which_layer_refused(declared, reason, socname, kw, layer):
    import ml_dtypes

    kw = dict(kw)
    dtype = kw.pop("dtype", np.float32)
    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    shape, axes = kw.pop("shape", (4, 6)), kw.pop("axes", (-1,))
    y = np.zeros(kw.pop("y_shape", shape), kw.pop("y_dtype", dtype))
    out_dtype = kw.pop("out_dtype", dtype)
    declared(socname, 1)
    got = acl.run(np.zeros(shape, dtype), y, axes, out_dtype=out_dtype, api="axes", **kw)
    assert got.reason == reason, got.message
    assert got.checks == {"decided_by": layer, "host": reason, "host_status": got.status}
