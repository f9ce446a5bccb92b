"""`farm hosts --check --deep` over an SSH lab whose hosts have a CANN of their own (the emulated
runtime, the stand-in toolchain, CANN's set_env.sh): every assumption of the device path passes
there, and each one the lab is made to break fails on its own line, naming the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from farm.pool import acl_sdk
from farm.util.paths import DIST_DIR
from tests.requirements import need, need_sshd

VERSION = "first-contact"  # the lab's toolkit version here

CHECKS = (
    "cann",
    "driver",
    "environment",
    "npu-smi",
    "package",
    "shadowing",
    "torch",
    "exports",
    "optional",
    "case",
    "rejection",
)


def deep(farm, inventory: Path) -> tuple[int, dict[str, dict[str, dict]], str]:
    """(exit status, host -> check -> its line, stderr) of `farm hosts --check --deep --json`."""
    done = farm.run("hosts", "--check", "--deep", "--json", "--inventory", str(inventory))
    rows = json.loads(done.out) if done.out.strip() else []
    found = {r["host"]: {c["check"]: c for c in r["checks"]} for r in rows}
    return done.code, found, done.err


def failed(found: dict[str, dict[str, dict]]) -> set[tuple[str, str]]:
    return {
        (h, n) for h, checks in found.items() for n, c in checks.items() if c["status"] == "fail"
    }


def test_first_contact_passes_on_the_lab_and_says_each_broken_assumption(farm, tmp_path):
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    need_sshd()
    from farm.pool.lab.core import Lab
    from tests.op.conftest import need_acl_emulation

    built = Path(need_acl_emulation()).parent
    lab = Lab(tmp_path / "lab")
    try:
        lab.up(layout=[("a2-01", "Ascend910B1", 1), ("a200-01", "Ascend310B1", 1)], cann="emulated")
        # A CANN version of its own: the CANN package it builds is cached under its own name in
        # dist/op, never the one tests/e2e/test_cann_build.py builds, removes and builds again.
        for h in lab.hosts.values():
            for info in Path(h.cann_home).glob("*-linux/ascend_toolkit_install.info"):
                info.write_text(
                    info.read_text().replace("version=emulated-", f"version={VERSION}-")
                )
        broken_one_by_one(farm, lab, built, tmp_path)
    finally:
        lab.down()
        for p in DIST_DIR.glob(f"logsoftmaxgrad-*-ascend-*-cann{VERSION}-*"):
            p.unlink()


def broken_one_by_one(farm, lab, built: Path, tmp_path: Path) -> None:
    code, found, err = deep(farm, lab.inventory_path)
    assert code == 0, (err, found)
    for host in ("a2-01", "a200-01"):
        assert list(found[host]) == list(CHECKS), found[host]
        assert all(c["status"] == "ok" for c in found[host].values()), found[host]
    rejection = found["a200-01"]["rejection"]["detail"]
    assert "bf16 on Atlas 200I/500 A2: bf16_unsupported_on_soc" in rejection
    package = Path(found["a2-01"]["package"]["detail"].removeprefix("installed at "))
    installed = package / "op_api" / "lib" / "libcust_opapi.so"
    home = Path(lab.hosts["a2-01"].cann_home)

    # An op-api library without the aclnn layer (a package whose build did not link it).
    good = installed.read_bytes()
    shutil.copy2(built / "generated-only" / "libcust_opapi.so", installed)
    code, found, _ = deep(farm, lab.inventory_path)
    installed.write_bytes(good)
    assert code == 2 and failed(found) == {("a2-01", "exports")}, found
    exports = found["a2-01"]["exports"]["detail"]
    assert "does not export aclnnLogSoftmaxBackwardGetWorkspaceSize" in exports

    # The package in CANN's own vendors, loaded by default: every process's.
    vendor = home / "opp" / "vendors" / "customize"
    (vendor / "op_api" / "lib").mkdir(parents=True)
    shutil.copy2(installed, vendor / "op_api" / "lib" / "libcust_opapi.so")
    (home / "opp" / "vendors" / "config.ini").write_text("load_priority=customize\n")
    code, found, _ = deep(farm, lab.inventory_path)
    shutil.rmtree(vendor)
    (home / "opp" / "vendors" / "config.ini").unlink()
    assert code == 2 and failed(found) == {("a2-01", "shadowing"), ("a2-01", "torch")}, found
    assert f"{vendor} defines aclnnLogSoftmaxBackward" in found["a2-01"]["shadowing"]["detail"]
    assert "torch_npu would take aclnnLogSoftmaxBackward from" in found["a2-01"]["torch"]["detail"]
    assert "remove it from CANN's vendors" in found["a2-01"]["shadowing"]["fix"]

    # An Atlas 200I/500 A2 board whose npu-smi says Alarm.
    lab.set_chip("a200-01", 0, health="Alarm")
    code, found, _ = deep(farm, lab.inventory_path)
    lab.set_chip("a200-01", 0, health="OK")
    assert code == 2 and {h for h, _ in failed(found)} == {"a200-01"}, found
    said = " ".join(c["detail"] for c in found["a200-01"].values() if c["status"] == "fail")
    assert "is in health Alarm" in said and 'accept_health = ["Alarm"]' in said

    # A CANN release before 8.1.RC1: no version queries. The device path does without them.
    runtime = home / "lib64" / "libascendcl.so"
    current = runtime.read_bytes()
    shutil.copy2(built / "cann-before-8.1" / "libascendcl.so", runtime)
    code, found, _ = deep(farm, lab.inventory_path)
    runtime.write_bytes(current)
    assert code == 0 and not failed(found), found
    optional = found["a2-01"]["optional"]
    assert optional["status"] == "warn"
    assert "lacks aclsysGetCANNVersion, aclsysGetVersionStr" in optional["detail"]

    # A thin environment: CANN's variables listed by hand, set_env.sh not sourced.
    text = lab.inventory_path.read_text()
    script = f'set_env = "{home.parent / "set_env.sh"}"'
    assert script in text
    thin = tmp_path / "thin.toml"
    thin.write_text(
        text.replace(script, f'set_env = ""\nenv = {{ ASCEND_HOME_PATH = "{home}" }}', 1)
    )
    code, found, _ = deep(farm, thin)
    assert code == 2 and failed(found) == {("a2-01", "environment")}, found
    environment = found["a2-01"]["environment"]
    assert f"LD_LIBRARY_PATH lacks {home / 'lib64'}" in environment["detail"]
    assert "ASCEND_OPP_PATH is not set" in environment["detail"]
    assert "source CANN's set_env.sh" in environment["fix"]
