"""Each check of farm/agent/first_contact.py (`farm hosts --check --deep`) fails on what it checks,
in one line with the fix, and passes on what is right (the whole of it over the SSH lab:
tests/e2e/test_first_contact.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from farm.agent import first_contact as fc
from farm.agent.backends.result import BackendResult

NPU_SMI = Path(__file__).with_name("npu_smi")


def toolkit(tmp_path: Path, version: str | None = "8.2.RC1") -> dict[str, str]:
    """A CANN install laid out as CANN's: ascend-toolkit/latest beside driver/."""
    root = tmp_path / "Ascend"
    home = root / "ascend-toolkit" / "latest"
    (home / "lib64").mkdir(parents=True)
    (home / "x86_64-linux").mkdir()
    if version:
        (home / "x86_64-linux" / "ascend_toolkit_install.info").write_text(f"version={version}\n")
    for part in ("common", "driver"):
        (root / "driver" / "lib64" / part).mkdir(parents=True)
    (root / "driver" / "version.info").write_text("Version=24.1.0\n")
    libs = [
        home / "lib64",
        root / "driver" / "lib64" / "common",
        root / "driver" / "lib64" / "driver",
    ]
    return {
        "ASCEND_HOME_PATH": str(home),
        "ASCEND_OPP_PATH": str(home / "opp"),
        "LD_LIBRARY_PATH": ":".join(str(p) for p in libs),
    }


def test_cann_driver_and_environment(tmp_path):
    env = toolkit(tmp_path)
    assert [c.status for c in (fc.check_cann(env), fc.check_driver(env))] == ["ok", "ok"]
    assert fc.check_environment(env).status == "ok"
    unset = fc.check_cann({})
    assert (unset.status, unset.detail) == (
        "fail",
        "ASCEND_HOME_PATH is not set in the agent's environment",
    )
    assert "set_env = <CANN>/set_env.sh" in unset.fix
    no_version = fc.check_cann(toolkit(tmp_path / "b", version=None))
    assert no_version.status == "fail" and "no ascend_toolkit_install.info" in no_version.detail
    (tmp_path / "Ascend" / "driver" / "version.info").unlink()
    assert fc.check_driver(env).status == "fail"
    thin = {**env, "LD_LIBRARY_PATH": env["LD_LIBRARY_PATH"].split(":")[0]}
    del thin["ASCEND_OPP_PATH"]
    said = fc.check_environment(thin)
    assert said.status == "fail"
    assert said.detail == (
        f"LD_LIBRARY_PATH lacks {tmp_path}/Ascend/driver/lib64/common; LD_LIBRARY_PATH lacks "
        f"{tmp_path}/Ascend/driver/lib64/driver; ASCEND_OPP_PATH is not set"
    )


def npu_smi(tmp_path: Path, table: str) -> dict[str, str]:
    exe = tmp_path / "npu-smi"
    exe.write_text(f"#!/bin/sh\ncat {NPU_SMI / table}\n")
    exe.chmod(0o755)
    return {"LSG_NPU_SMI": str(exe)}


def test_npu_smi_chips_their_family_and_health(tmp_path):
    good, family = fc.check_chips(npu_smi(tmp_path, "atlas800i_a2_910b4.txt"), ())
    assert (good.status, family) == ("ok", "ascend910b") and "8 chip(s): 910B4" in good.detail
    busy, _ = fc.check_chips(npu_smi(tmp_path, "atlas900_a2_910b1.txt"), ())
    assert busy.status == "warn" and "has memory held by another process" in busy.detail
    alarm, family = fc.check_chips(npu_smi(tmp_path, "board_310b4.txt"), ())
    assert (alarm.status, family) == ("fail", "ascend310b")
    assert "is in health Alarm" in alarm.detail and 'accept_health = ["Alarm"]' in alarm.detail
    assert fc.check_chips(npu_smi(tmp_path, "board_310b4.txt"), ("Alarm",))[0].status == "ok"
    missing = fc.check_chips({"LSG_NPU_SMI": str(tmp_path / "none")}, ())[0]
    assert missing.status == "fail"


def test_the_package_where_the_farm_installed_it(tmp_path):
    unset, lib = fc.check_package({})
    assert (unset.status, lib) == ("fail", None) and "LSG_PACKAGE_OPP is not set" in unset.detail
    empty, _ = fc.check_package({"LSG_PACKAGE_OPP": str(tmp_path)})
    assert empty.status == "fail" and "libcust_opapi.so" in empty.detail
    (tmp_path / "op_api" / "lib").mkdir(parents=True)
    (tmp_path / "op_api" / "lib" / "libcust_opapi.so").write_bytes(b"")
    found, lib = fc.check_package({"LSG_PACKAGE_OPP": str(tmp_path)})
    assert found.status == "ok" and lib == tmp_path / "op_api" / "lib" / "libcust_opapi.so"


@pytest.fixture
def op_api_libs() -> SimpleNamespace:
    """The emulated op-api with the aclnn layer (the package's) and without it."""
    from tests.op.conftest import need_acl_emulation

    built = Path(need_acl_emulation())
    return SimpleNamespace(
        ours=built / "libcust_opapi.so",
        generated=built.parent / "generated-only" / "libcust_opapi.so",
        runtime=built,
    )


def vendor(env: dict[str, str], name: str, lib: Path) -> Path:
    where = Path(env["ASCEND_OPP_PATH"]) / "vendors" / name / "op_api" / "lib"
    where.mkdir(parents=True)
    shutil.copy2(lib, where / "libcust_opapi.so")
    return where / "libcust_opapi.so"


def test_a_vendor_package_of_this_operator_shadows_it_for_every_process(tmp_path, op_api_libs):
    env = toolkit(tmp_path)
    package = tmp_path / "farm" / "libcust_opapi.so"
    package.parent.mkdir()
    shutil.copy2(op_api_libs.ours, package)
    vendor(env, "other", op_api_libs.runtime / "libopapi.so")  # another product's aclnn entries
    assert fc.check_shadowing(env, package).status == "ok"
    assert fc.check_torch(env, "", package).status == "ok"
    shared = vendor(env, "customize", op_api_libs.ours)
    said = fc.check_shadowing(env, package)
    assert (
        said.status == "fail"
        and f"{shared.parents[2]} defines aclnnLogSoftmaxBackward" in said.detail
    )
    # torch_npu loads the vendors config.ini names, before CANN's own libopapi.
    assert fc.check_torch(env, "", package).status == "ok"  # no config.ini: not loaded
    (Path(env["ASCEND_OPP_PATH"]) / "vendors" / "config.ini").write_text(
        "load_priority=customize\n"
    )
    torch = fc.check_torch(env, "", package)
    assert torch.status == "fail" and f"from {shared}, a custom package" in torch.detail


def test_torch_npus_order_custom_opp_then_vendors_then_canns_own(tmp_path, op_api_libs):
    env = toolkit(tmp_path)
    home = Path(env["ASCEND_HOME_PATH"])
    shutil.copy2(op_api_libs.ours, home / "lib64" / "libopapi.so")  # CANN's own defines it
    found, looked = fc.torch_lookup(env, "")
    assert found == home / "lib64" / "libopapi.so"
    package = tmp_path / "farm"
    (package / "op_api" / "lib").mkdir(parents=True)
    shutil.copy2(op_api_libs.ours, package / "op_api" / "lib" / "libcust_opapi.so")
    mine = package / "op_api" / "lib" / "libcust_opapi.so"
    found, looked = fc.torch_lookup(env, f"{tmp_path / 'nothing'}:{package}")
    assert found == mine and looked[0] == mine
    said = fc.check_torch(env, str(package), mine)
    assert said.status == "fail" and "from this package" in said.detail
    assert "keep the package off the torch backend's ASCEND_CUSTOM_OPP_PATH" in said.fix


def result(status: int, reason: str | None, out=None, message: str = "") -> BackendResult:
    return BackendResult(status, reason, message, out, 0, None, 0.0)


def test_one_case_and_one_rejection_through_the_device_path():
    def right(dy, y, axes, *, out_dtype, out_shape=None):
        if dy.dtype != np.float32:  # bf16, on Atlas 200I/500 A2
            return result(161002, "bf16_unsupported_on_soc")
        if y.shape != dy.shape:
            return result(161002, "shape_mismatch")
        y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
        return result(0, "ok", (dy64 - np.exp(y64) * dy64.sum(-1, keepdims=True)).astype(out_dtype))

    assert fc.check_case(right).status == "ok"
    assert fc.check_rejection(right, "ascend310b").status == "ok"

    def wrong(dy, y, axes, *, out_dtype, out_shape=None):
        return result(0, "ok", (dy - 1.0).astype(out_dtype))

    said = fc.check_case(wrong)
    assert said.status == "fail" and "largest relative error" in said.detail
    assert fc.check_rejection(wrong, "ascend910b").detail.endswith("returned 0 (), not 161002")

    def no_reason(dy, y, axes, *, out_dtype, out_shape=None):
        return result(161002, None, message="")

    said = fc.check_rejection(no_reason, "ascend910b")
    assert (
        said.status == "fail" and "161002 arrived, but not its reason shape_mismatch" in said.detail
    )
    assert "ReportErrorMessageInner" in said.fix


def test_an_optional_entry_point_a_cann_release_lacks_is_a_warning():
    said = fc.check_optional(SimpleNamespace(absent=frozenset({"aclsysGetVersionStr"})))
    assert said.status == "warn" and "lacks aclsysGetVersionStr" in said.detail
    assert fc.check_optional(SimpleNamespace(absent=frozenset())).status == "ok"
