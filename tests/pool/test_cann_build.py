"""The pieces of the CANN package's path (the whole of it over the lab is
tests/e2e/test_cann_build.py): which package a host of a CANN version gets, what the host says of
its CANN, and what the lab's stand-in toolchain refuses, as a CANN build would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.agent import hostops
from farm.pool import cann_build, lab_cann_toolchain
from farm.run.packages import NoPackage, Packages

OP = Path(__file__).resolve().parents[2] / "op"


def test_each_cann_version_gets_its_own_package_and_a_host_without_cann_none(tmp_path):
    asked = []

    def build_for(arch, cann, host):
        asked.append((arch, cann, host))
        return tmp_path / f"{arch}-{cann}.tar.gz"

    packages = Packages(None, build_for, target="ascend")
    assert packages.for_host({"arch": "aarch64", "cann": "8.2.RC1"}, "a2-01").name == (
        "aarch64-8.2.RC1.tar.gz"
    )
    packages.for_host({"arch": "aarch64", "cann": "8.2.RC1"}, "a2-02")
    packages.for_host({"arch": "aarch64", "cann": "8.0.RC3"}, "a2-03")
    assert asked == [("aarch64", "8.2.RC1", "a2-01"), ("aarch64", "8.0.RC3", "a2-03")]
    with pytest.raises(NoPackage, match=r"^host emu-01 has no CANN \(no ASCEND_HOME_PATH"):
        packages.for_host({"arch": "x86_64", "cann": None}, "emu-01")


def test_a_failed_cann_build_sets_its_hosts_aside_with_the_build_s_words(tmp_path):
    def fails(arch, cann, host):
        raise cann_build.CannBuildFailed("the CANN build of s.tar.gz on host a2-01 failed (exit 1)")

    packages = Packages(None, fails, target="ascend")
    with pytest.raises(NoPackage) as info:
        packages.for_host({"arch": "aarch64", "cann": "8.2.RC1"}, "a2-02")
    assert str(info.value) == (
        "host a2-02 is aarch64 with CANN 8.2.RC1: the CANN package for it did not build: the "
        "CANN build of s.tar.gz on host a2-01 failed (exit 1)"
    )


def test_the_host_says_its_cann_version_from_the_toolkit_it_names(tmp_path):
    home = tmp_path / "latest"
    (home / "aarch64-linux").mkdir(parents=True)
    (home / "aarch64-linux" / "ascend_toolkit_install.info").write_text("version=8.2.RC1\n")
    found = hostops.host_platform({"ASCEND_HOME_PATH": str(home)})
    assert found["cann"] == "8.2.RC1"  # the one toolkit there, whatever this machine is
    assert hostops.host_platform({})["cann"] is None


def test_the_installers_are_what_build_sh_says_it_made():
    out = "/w/versions/abc/cann-build-x86_64-8.2"
    said = (
        f"log\nop/ascendc/build.sh: {out}/custom_opp_ubuntu_x86_64.run\n"
        "op/ascendc/build.sh: /elsewhere/x.run\n"
    )
    assert cann_build._installers(said, out) == [f"{out}/custom_opp_ubuntu_x86_64.run"]
    assert cann_build._installers("no such line\n", out) == []
    # A workdir with a space (a home of "First Last"): the path is one installer, not two words.
    spaced = "/home/First Last/lsg-farm/versions/abc/cann-build-x86_64-8.2"
    two = [f"{spaced}/custom_opp_ubuntu_x86_64.run", f"{spaced}/custom_opp_ubuntu_aarch64.run"]
    said = "".join(f"op/ascendc/build.sh: {p}\n" for p in two)
    assert cann_build._installers(f"make: done\n{said}", spaced) == two


def _project(tmp_path: Path, monkeypatch) -> Path:
    """A project as the stand-in msopgen makes it, with the sources build.sh copies in."""
    home = tmp_path / "cann"
    lib = home / "opp" / "vendors" / "customize" / "op_api" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcust_opapi.so").write_bytes(b"\x7fELF op-api")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    project = tmp_path / "project"
    lab_cann_toolchain.msopgen(
        [
            "gen",
            "-i",
            str(OP / "ascendc" / "log_softmax_grad.json"),
            "-c",
            "ai_core-Ascend910B1",
            "-lan",
            "cpp",
            "-out",
            str(project),
        ]
    )
    for part in ("op_host", "op_kernel", "op_api"):
        shutil.copytree(OP / "ascendc" / part, project / part, dirs_exist_ok=True)
    for name in ("tiling.h", "tiling.cpp", "lsg_types.h", "soc_profiles.inc"):
        shutil.copy(OP / "tiling" / name, project / "op_host" / name)
    presets = json.loads((project / "CMakePresets.json").read_text())
    cache = presets["configurePresets"][0]["cacheVariables"]
    cache["ASCEND_COMPUTE_UNIT"]["value"] = "ascend910b;ascend310b"
    cache["ASCEND_CANN_PACKAGE_PATH"]["value"] = str(home)
    (project / "CMakePresets.json").write_text(json.dumps(presets))
    return project


def test_the_stand_in_toolchain_refuses_what_a_cann_build_would(tmp_path, monkeypatch):
    refused = lab_cann_toolchain.Refused
    with pytest.raises(refused, match="-lan py: an Ascend C operator needs -lan cpp"):
        lab_cann_toolchain.msopgen(
            ["gen", "-i", "x.json", "-c", "ai_core-A", "-lan", "py", "-out", "o"]
        )
    project = _project(tmp_path, monkeypatch)
    installer = lab_cann_toolchain.build(project)
    assert installer.name.startswith("custom_opp_") and installer.suffix == ".run"
    (project / "op_host" / "tiling.cpp").unlink()  # build.sh forgot the shared tiling
    with pytest.raises(refused, match=r"op_host/tiling.cpp: No such file"):
        lab_cann_toolchain.build(project)


def test_the_build_host_is_the_inventorys_of_that_cann_else_the_host_that_needs_it(
    tmp_path, monkeypatch
):
    from farm.pool import inventory as inv

    run = inv.HostSpec("a2-01", "Ascend910B1", 1, transport="local", workdir=str(tmp_path))
    other = inv.HostSpec("b-old", "", 0, transport="local", workdir=str(tmp_path), role="build")
    right = inv.HostSpec("b-new", "", 0, transport="local", workdir=str(tmp_path), role="build")
    said = {
        "b-old": {"arch": "aarch64", "cann": "8.0.RC3"},
        "b-new": {"arch": "aarch64", "cann": "8.2.RC1"},
    }

    class Asked:
        def __init__(self, host):
            self.host = host

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def remote_platform(self):
            return said[self.host.name]

    chosen = []
    monkeypatch.setattr(cann_build, "open_transport", Asked)
    monkeypatch.setattr(
        cann_build, "build_on", lambda host, source, **kw: chosen.append(host.name) or source
    )
    monkeypatch.setattr("farm.build.source_package", lambda out: tmp_path / "source.tar.gz")
    pool = inv.Inventory([run], None, [other, right])
    build_for = cann_build.builder(pool, tmp_path)
    build_for("aarch64", "8.2.RC1", "a2-01")
    build_for("aarch64", "7.0.0", "a2-01")  # no build host has it: the host that needs it
    assert chosen == ["b-new", "a2-01"]


@pytest.mark.parametrize("backend", ["acl", "torch", "native"])
def test_only_the_acl_agent_is_told_where_the_package_is_installed(tmp_path, monkeypatch, backend):
    """torch_npu takes aclnn entries from $ASCEND_CUSTOM_OPP_PATH's packages first, and the
    package defines aclnnLogSoftmaxBackward: a torch agent told of it would test the package."""
    from farm.agent.home_paths import CUSTOM_OPP_ENV, PACKAGE_OPP_ENV
    from farm.pool import inventory as inv
    from farm.run import prepare

    host = inv.HostSpec("a2-01", "Ascend910B1", 1, address="10.0.0.5", workdir=str(tmp_path))
    package = tmp_path / "logsoftmaxgrad-ascend.tar.gz"
    vendor = "lsg-farm/versions/x/opp/vendors/customize"

    class Transport:
        def __init__(self, h):
            self.host = h

        def remote_platform(self):
            return {"arch": "aarch64", "cann": "8.2.RC1"}

        def close(self):
            return None

    class Given(Packages):
        def for_host(self, platform, name):
            return package

    monkeypatch.setattr(prepare, "open_transport", Transport)
    monkeypatch.setattr(prepare.deploy, "deploy_all", lambda t, **kw: ("report", None))
    installed = {CUSTOM_OPP_ENV: vendor, PACKAGE_OPP_ENV: vendor}
    monkeypatch.setattr(cann_build, "install", lambda t, report, p: dict(installed))
    packages = Given(None, target="ascend")
    bad, deployed = prepare._deploy_host(host, tmp_path / "bundle", packages, backend)
    assert bad is None
    assert deployed.env == (installed if backend == "acl" else {})
    assert cann_build.agent_env(installed, backend) == deployed.env
