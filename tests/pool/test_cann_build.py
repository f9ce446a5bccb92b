"""The pieces of the CANN package's path (the whole of it over the lab is
tests/e2e/test_cann_build.py): which package a host of a CANN version gets, what the host says of
its CANN, and what the lab's stand-in toolchain refuses, as a CANN build would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from farm.agent import hostops
from farm.pool import cann_build
from farm.pool.lab import cann_toolchain as lab_cann_toolchain
from farm.pool.transport.base import Transport
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


SEED_ENTRIES = (
    "aclnnLogSoftmaxBackwardGetWorkspaceSize",
    "aclnnLogSoftmaxBackward",
    "aclnnLogSoftmaxBackwardDimsGetWorkspaceSize",
    "aclnnLogSoftmaxBackwardDims",
)


@pytest.fixture
def stand_in_cann(tmp_path):
    """A CANN home as the SSH lab makes it (`farm lab up --cann emulated`): the emulated runtime
    and, where CANN keeps msopgen, the stand-in toolchain."""
    from farm.pool.lab.cann_install import install_cann as _install_cann
    from tests.op.conftest import need_acl_emulation

    libs = Path(need_acl_emulation())
    return _install_cann(tmp_path / "Ascend", libs, sys.executable)


def build_sh(home: Path, out: Path, script: Path = OP / "ascendc" / "build.sh"):
    env = {**os.environ, "ASCEND_HOME_PATH": str(home)}
    return subprocess.run(
        ["bash", str(script), str(out)], capture_output=True, text=True, env=env, timeout=600
    )


def exported(library: Path) -> set[str]:
    done = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    )
    return {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}


def test_build_sh_puts_the_aclnn_layer_into_the_packages_op_api_library(stand_in_cann, tmp_path):
    """A generated project compiles only the generated aclnn_*.cpp into cust_opapi: build.sh adds
    the layer (and what it calls) and installs its header, and the installed package exports the
    seed's entry points beside the generated ones."""
    done = build_sh(stand_in_cann, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compiled op_kernel/log_softmax_grad_custom.cpp for ascend310b" in done.stdout
    (installer,) = (tmp_path / "out").glob("custom_opp_*.run")
    subprocess.run(
        ["sh", str(installer), f"--install-path={tmp_path / 'opp'}"], check=True, timeout=60
    )
    vendor = tmp_path / "opp" / "vendors" / "customize" / "op_api"
    names = exported(vendor / "lib" / "libcust_opapi.so")
    assert set(SEED_ENTRIES) <= names
    assert {"aclnnLogSoftmaxGradCustomGetWorkspaceSize", "aclnnLogSoftmaxGradCustom"} <= names
    assert sorted(p.name for p in (vendor / "include").iterdir()) == [
        "aclnn_log_softmax_backward.h",
        "aclnn_log_softmax_grad_custom.h",
    ]


def test_a_build_sh_that_does_not_link_the_layer_makes_no_package(stand_in_cann, tmp_path):
    """Without the layer in cust_opapi the package's op-api has the generated entry only:
    build.sh stops naming the missing entry (and were it not to check, the acl backend would
    refuse to load the package: farm/agent/backends/acl_api.py)."""
    script = (OP / "ascendc" / "build.sh").read_text()
    layer = "  ${CMAKE_CURRENT_SOURCE_DIR}/../op_api/aclnn_log_softmax_backward.cpp\n"
    assert script.count(layer) == 1
    copy = tmp_path / "build.sh"
    copy.write_text(
        script.replace(layer, "").replace(
            'here=$(cd "$(dirname "$0")" && pwd)', f"here={OP / 'ascendc'}"
        )
    )
    done = build_sh(stand_in_cann, tmp_path / "out", copy)
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        "libcust_opapi.so does not export aclnnLogSoftmaxBackwardGetWorkspaceSize: the op_api "
        "layer was not compiled into the package's op-api library (the cust_opapi lines this "
        "script adds to the generated op_host/CMakeLists.txt)"
    )
    assert not (tmp_path / "out").exists()


def test_the_stand_in_toolchain_refuses_what_a_cann_build_would(stand_in_cann, tmp_path):
    refused = lab_cann_toolchain.Refused
    with pytest.raises(refused, match="-lan py: an Ascend C operator needs -lan cpp"):
        lab_cann_toolchain.msopgen(
            ["gen", "-i", "x.json", "-c", "ai_core-A", "-lan", "py", "-out", "o"]
        )
    described = json.loads((OP / "ascendc" / "log_softmax_grad.json").read_text())
    described[0]["attr"][0]["type"] = "list_int"  # the spelling msopgen does not take
    (tmp_path / "op.json").write_text(json.dumps(described))
    with pytest.raises(refused, match="attr axes of LogSoftmaxGradCustom has type 'list_int'"):
        lab_cann_toolchain.msopgen(
            ["gen", "-i", str(tmp_path / "op.json"), "-c", "ai_core-A", "-lan", "cpp", "-out", "o"]
        )
    # Sources where CANN would not find them, or a kernel one compute unit does not compile.
    script = (OP / "ascendc" / "build.sh").read_text()
    here = 'here=$(cd "$(dirname "$0")" && pwd)'
    for wrong, said in (
        (
            ('"$project/op_kernel/$op_file.cpp"', '"$project/op_kernel/log_softmax_grad.cpp"'),
            "op_kernel/log_softmax_grad_custom.cpp: No such file",
        ),
        (
            (
                'cp "$here"/../tiling/tiling.h "$here"/../tiling/tiling.cpp',
                'cp "$here"/../tiling/tiling.h',
            ),
            "op_host/tiling.cpp: No such file",
        ),
    ):
        copy = tmp_path / "build.sh"
        copy.write_text(script.replace(*wrong).replace(here, f"here={OP / 'ascendc'}"))
        done = build_sh(stand_in_cann, tmp_path / "out", copy)
        assert done.returncode != 0 and said in done.stderr, done.stderr
    sources = tmp_path / "ascendc"
    shutil.copytree(OP / "ascendc", sources)
    kernel = sources / "op_kernel" / "log_softmax_grad.cpp"
    kernel.write_text(
        kernel.read_text().replace("#if defined(__NPU_ARCH__) && __NPU_ARCH__ == 2201", "#if 1")
    )
    copy = tmp_path / "build.sh"
    copy.write_text(script.replace(here, f"here={sources}"))
    (sources.parent / "tiling").symlink_to(OP / "tiling")
    done = build_sh(stand_in_cann, tmp_path / "out", copy)
    assert done.returncode != 0
    assert "[ascend310b]" in done.stderr and "KERNEL_TASK_TYPE_DEFAULT" in done.stderr


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

    chosen: list[str] = []
    monkeypatch.setattr(cann_build, "open_transport", Asked)

    def build_on(host: inv.HostSpec, source: Path, **kw: Any) -> Path:
        chosen.append(host.name)
        return source

    monkeypatch.setattr(cann_build, "build_on", build_on)
    monkeypatch.setattr("farm.pool.build.source_package", lambda out: tmp_path / "source.tar.gz")
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
    report = prepare.deploy.DeployReport(host.name)
    monkeypatch.setattr(prepare.deploy, "deploy_all", lambda t, **kw: (report, None))
    installed = {CUSTOM_OPP_ENV: vendor, PACKAGE_OPP_ENV: vendor}
    monkeypatch.setattr(cann_build, "install", lambda t, report, p: dict(installed))
    packages = Given(None, target="ascend")
    bad, deployed = prepare._deploy_host(host, tmp_path / "bundle", packages, backend)
    assert bad is None
    assert deployed.env == (installed if backend == "acl" else {})
    assert cann_build.agent_env(installed, backend) == deployed.env


class _BuildHost:
    """A host's side of a CANN build: build.sh says it made one installer, which comes back."""

    def __init__(self):
        self.builds = 0

    def run_argv(self, argv, timeout):
        self.builds += 1
        return 0, f"op/ascendc/build.sh: {argv[-1]}/custom_opp_euleros_aarch64.run\n", ""

    def get_file(self, remote, local):
        Path(local).write_bytes(b"#!/bin/sh\n# the installer\n" * 64)

    def close(self):
        pass


def test_a_cached_cann_package_cut_short_is_said_in_one_line_and_built_again(
    tmp_path, monkeypatch, capsys
):
    """Before, a cached package that was there was taken as it was: cut short on the disk, every
    host's deploy of it failed, run after run, until someone deleted it by hand."""
    from farm.pool import build, deploy
    from farm.pool import inventory as inv

    class Deployed:
        def remote_dir(self, name):
            return "/w/versions/source"

    monkeypatch.setattr(deploy, "deploy", lambda transport, host, files: Deployed())
    host = inv.HostSpec("a2-01", "Ascend910B1", 1, transport="local", workdir=str(tmp_path))
    dist = tmp_path / "dist"
    source = build.source_package(dist)
    t = _BuildHost()

    def built():
        return cann_build.build_on(
            host,
            source,
            arch="aarch64",
            cann="8.2.RC1",
            out_dir=dist,
            transport=cast(Transport, t),  # build_on runs build.sh and fetches what it made
        )

    cached = built()
    assert t.builds == 1 and deploy.package_problem(cached) is None
    assert built() == cached and t.builds == 1  # kept, checked, reused
    data = cached.read_bytes()
    cached.write_bytes(data[: len(data) // 2])
    capsys.readouterr()
    assert built() == cached and t.builds == 2
    assert deploy.package_problem(cached) is None
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"note: {cached}: it does not read whole (") and line.endswith(
        "; the cached package is built again"
    )
    assert built() == cached and t.builds == 2
