"""Packages per CPU architecture (`farm build --arch`, farm.pool.build): the aarch64 package of the
emulated real kernel is cross compiled here with Debian's toolchain (op/cmake/*.cmake), says in
its manifest and its name what it is for, holds aarch64 ELF libraries, comes out the same from two
build directories, and its library passes the C ABI self-test (op/tests/abi_selftest.cpp) under
qemu user-mode emulation, as does the aclnn example on its emulated ACL runtime; the errors that
name the fix (an unknown arch, a missing cross compiler or qemu, the targets that cannot cross).

On an x86_64 machine the build tests need aarch64-linux-gnu-g++ and qemu-aarch64 (apt-get install
g++-aarch64-linux-gnu qemu-user; .ci/setup.sh test installs them): skipped without them, failed
with FARM_REQUIRE_ALL=1 (CI). On an aarch64 machine the same tests build and run natively.
One aarch64 ascendc-cpu package for the module (build/ascendc-cpu-aarch64, incremental); the
reproducibility is checked on the twin, which builds in seconds.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import tarfile

import pytest

from farm.agent import machine
from farm.pool import acl_sdk, build, deploy
from farm.util.errors import BuildError, ConfigError, UsageError
from tests.archives import regular
from tests.op.conftest import need_emulation
from tests.requirements import need

ARCH = "aarch64"  # what Atlas hosts mostly are
CROSS = ARCH != build.HOST_ARCH
EM_AARCH64 = 183  # ELF e_machine of aarch64 (EM_AARCH64 in elf.h)
# An architecture this machine is not, for the errors of a cross build.
OTHER = next(a for a in build.ARCHES if a != build.HOST_ARCH)


def need_tools(run: bool = False) -> None:
    """The aarch64 cross compiler (and qemu-aarch64 to run what it built), where this machine
    is not aarch64."""
    if not CROSS:
        return
    compiler = build.CROSS_COMPILERS[ARCH]
    need(
        shutil.which(compiler) is not None,
        f"the {ARCH} cross compiler {compiler} (apt-get install {build.CROSS_PACKAGES[ARCH]})",
    )
    if run:
        qemu = build.QEMU[ARCH]
        need(shutil.which(qemu) is not None, f"{qemu} (apt-get install {build.QEMU_PACKAGE})")


def read_archive(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: regular(tar, m).read() for m in tar.getmembers() if m.isfile()}


def e_machine(data: bytes) -> int:
    """The ELF header's e_machine (little-endian ELF64, as both architectures are)."""
    assert data[:4] == b"\x7fELF", "not an ELF file"
    assert data[4] == 2 and data[5] == 1, "not a little-endian ELF64 file"
    return int.from_bytes(data[18:20], "little")


@pytest.fixture(scope="module")
def acpu_package(tmp_path_factory):
    """The aarch64 package of the emulated real kernel (with the emulated ACL runtime where the
    genuine ACL headers are), built in its default directory, build/ascendc-cpu-aarch64."""
    need_emulation()
    need_tools()
    return build.build_package("ascendc-cpu", tmp_path_factory.mktemp("dist"), arch=ARCH)


@pytest.mark.build
def test_the_aarch64_package_says_what_it_is(acpu_package):
    suffix = f"-{ARCH}" if CROSS else ""  # the host's own architecture keeps the plain name
    assert acpu_package.name == f"logsoftmaxgrad-{build.op_version()}-ascendc-cpu{suffix}.tar.gz"
    files = read_archive(acpu_package)
    manifest = json.loads(files.pop("manifest.json"))
    assert manifest["arch"] == ARCH
    assert manifest["target"] == "ascendc-cpu"
    assert deploy.package_arch(acpu_package) == ARCH
    # Every library in it is an aarch64 ELF: the operator's and the emulated ACL runtime's.
    libs = [name for name in files if name.endswith(".so")]
    assert "lib/liblsg_ascendc_cpu.so" in libs
    if acl_sdk.present():
        assert {f"acl/lib/{n}" for n in build.ACL_LIBS} <= set(libs)
        assert manifest["acl"]["runtime"] == "emulated"
    for name in libs:
        assert e_machine(files[name]) == EM_AARCH64, name
    for entry in manifest["files"]:
        assert entry["sha256"] == hashlib.sha256(files[entry["path"]]).hexdigest()
    # Built in a directory of its own: the host's build/ascendc-cpu is not touched.
    if CROSS:
        built = build.default_build_dir(target="ascendc-cpu", arch=ARCH) / "liblsg_ascendc_cpu.so"
        assert built.read_bytes() == files["lib/liblsg_ascendc_cpu.so"]


@pytest.mark.build
def test_cross_builds_are_reproducible(tmp_path, monkeypatch):
    # The twin (seconds to build; the emulated real kernel follows the same rules, op/CMakeLists)
    # from the default cross directory and from a fresh one, as on two machines.
    need_tools()
    state = build.git_state()
    monkeypatch.setattr(build.package, "git_state", lambda: state)  # one commit for both builds
    a = build.build_package("twin", tmp_path / "a", arch=ARCH)
    b = build.build_package("twin", tmp_path / "b", build_dir=tmp_path / "build-b", arch=ARCH)
    assert a.name == b.name == build.archive_name("twin", arch=ARCH)
    assert a.read_bytes() == b.read_bytes()
    files = read_archive(a)
    assert e_machine(files["lib/liblsg_twin.so"]) == EM_AARCH64
    assert json.loads(files["manifest.json"])["arch"] == ARCH


@pytest.mark.build
def test_the_packaged_library_passes_the_abi_selftest_under_qemu(acpu_package, tmp_path):
    need_tools(run=True)
    # The library the package carries, not only the one in the build directory.
    lib = tmp_path / "liblsg_ascendc_cpu.so"
    lib.write_bytes(read_archive(acpu_package)["lib/liblsg_ascendc_cpu.so"])
    ok, output = build.cross_selftest("ascendc-cpu", ARCH, library=lib)
    assert ok, output
    assert f"built for {ARCH}): {lib}" in output
    assert "abi self-test: 7 calls, 0 failed" in output
    for schedule in ("NO_REDUCE", "REDUCE_TAIL", "REDUCE_MID"):
        assert schedule in output
    assert "status 161002 reason 9" in output  # bf16 refused on Ascend310B1
    if CROSS:
        assert output.startswith(f"$ {shutil.which(build.QEMU[ARCH])} -L /usr/{ARCH}-linux-gnu ")


@pytest.mark.build
def test_the_selftest_fails_naming_the_call(tmp_path):
    # The twin passes; a twin with the seed's NO_REDUCE formula planted fails, and the driver
    # names the call (run on the planted library through LD_LIBRARY_PATH, qemu's -E).
    need_tools(run=True)
    ok, output = build.cross_selftest("twin", ARCH)
    assert ok, output
    planted = build.build_twin(plant_bug="seed_noreduce", arch=ARCH)
    assert planted.parent == build.default_build_dir("seed_noreduce", arch=ARCH)
    ok, output = build.cross_selftest("twin", ARCH, library=planted)
    assert not ok
    assert "FAILED: float32 (4,1,8) dim 1, Ascend910B1" in output
    assert "(exit 1)" in output


@pytest.mark.build
def test_the_aclnn_example_passes_under_qemu(acpu_package):
    need_tools(run=True)
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    ok, output = build.acl_example_selftest(ARCH)
    assert ok, output
    assert "0 of 6 cases failed" in output
    example = build.default_build_dir(target="ascendc-cpu", arch=ARCH) / "acl" / build.ACL_EXAMPLE
    assert e_machine(example.read_bytes()) == EM_AARCH64


# -- without building ----------------------------------------------------------------------------


def test_arch_names():
    assert build.ARCHES == ("x86_64", "aarch64")
    assert build.HOST_ARCH == build.normalise_arch(platform.machine())
    assert build.normalise_arch("AMD64") == "x86_64"
    assert build.normalise_arch("arm64") == "aarch64"
    assert build.normalise_arch("aarch64") == "aarch64"
    assert build.check_arch(None) == build.HOST_ARCH
    assert build.check_arch("arm64") == "aarch64"


def test_names_and_directories_of_another_arch():
    # The host's keep their names (other code looks there); another arch gets -<arch>.
    host = build.HOST_ARCH
    assert build.archive_name("twin", arch=host) == build.archive_name("twin")
    assert build.archive_name("twin").endswith("-twin.tar.gz")
    assert build.archive_name("twin", "tail", arch=OTHER).endswith(f"-twin-bug-tail-{OTHER}.tar.gz")
    assert build.default_build_dir(target="ascendc-cpu", arch=host) == build.ROOT / "build" / (
        "ascendc-cpu"
    )
    assert build.default_build_dir(arch=OTHER) == build.ROOT / "build" / f"twin-{OTHER}"
    assert (
        build.default_build_dir("tail", arch=OTHER) == build.ROOT / "build" / f"twin-tail-{OTHER}"
    )
    assert build.default_build_dir("tail", target="ascendc-cpu", arch=host) == build.PLANTED_DIR
    assert build.default_build_dir("tail", target="ascendc-cpu", arch=OTHER) == (
        build.ROOT / "build" / f"ascendc-cpu-planted-{OTHER}"
    )
    for arch in build.ARCHES:
        assert build.toolchain_file(arch).is_file()


def test_an_unknown_arch_is_a_build_error(tmp_path):
    calls = [
        lambda: build.build_package("twin", tmp_path, arch="sparc"),
        lambda: build.build_package("ascend", tmp_path, arch="sparc"),
        lambda: build.build_native("twin", tmp_path, arch="sparc"),
        lambda: build.build_twin(tmp_path, arch="sparc"),
        lambda: build.build_ascendc_cpu(tmp_path, arch="sparc"),
        lambda: build.cross_selftest("twin", "sparc"),
        lambda: build.default_build_dir(arch="sparc"),
        lambda: build.archive_name("twin", arch="sparc"),
    ]
    for call in calls:
        with pytest.raises(BuildError, match=r"^arch 'sparc': use one of x86_64, aarch64$"):
            call()


def test_a_missing_cross_compiler_names_the_package(tmp_path, monkeypatch):
    fix = f"apt-get install {build.CROSS_PACKAGES[OTHER]}"
    # Not on PATH ...
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError) as caught:
        build.build_twin(tmp_path / "b", arch=OTHER)
    message = str(caught.value)
    assert f"the cross compiler {build.CROSS_COMPILERS[OTHER]} is not installed" in message
    assert message.endswith(fix)
    monkeypatch.undo()
    # ... or under another name.
    monkeypatch.setitem(build.CROSS_COMPILERS, OTHER, "no-such-g++")
    with pytest.raises(BuildError) as caught:
        build.build_package("twin", tmp_path, arch=OTHER)
    message = str(caught.value)
    assert message == (
        f"arch {OTHER}: the cross compiler no-such-g++ is not installed here "
        f"({build.HOST_ARCH}): {fix}"
    )
    assert not (tmp_path / "b").exists()  # refused before CMake ran


def test_a_missing_qemu_names_the_package(monkeypatch):
    monkeypatch.setitem(build.QEMU, OTHER, "no-such-qemu")
    with pytest.raises(
        BuildError, match=r"no-such-qemu is not installed.*apt-get install qemu-user$"
    ):
        build.cross_selftest("twin", OTHER)  # before building anything
    assert build.emulator(build.HOST_ARCH) == []


def test_what_cannot_cross_says_so(tmp_path, capsys):
    with pytest.raises(BuildError, match=rf"target ascend .* where CANN is installed.*not {OTHER}"):
        build.build_package("ascend", tmp_path, arch=OTHER)
    with pytest.raises(BuildError, match=rf"sanitizer build .* only \({build.HOST_ARCH}\)"):
        build.build_twin(tmp_path, sanitize=True, arch=OTHER)
    assert build.main(["--arch", OTHER, "--sanitize-check"]) == 2
    assert "architecture only" in capsys.readouterr().err


def test_farm_build_takes_arch(capsys):
    from farm import cli

    with pytest.raises(SystemExit):
        cli.main(["build", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--arch {x86_64,aarch64}" in out
    assert f"this machine's, {build.HOST_ARCH}" in out
    with pytest.raises(UsageError, match="argument --arch: invalid choice: 'sparc'"):
        build.main(["--arch", "sparc"])


def test_package_arch_reads_the_manifest_else_the_library(tmp_path):
    def archive(name, manifest, files=()):
        content = {"manifest.json": json.dumps(manifest).encode(), **dict(files)}
        return build.write_archive(tmp_path / name, content)

    elf = bytearray(64)
    elf[:6] = b"\x7fELF\x02\x01"
    elf[18:20] = EM_AARCH64.to_bytes(2, "little")
    assert deploy.package_arch(archive("new.tar.gz", {"arch": "arm64"})) == "aarch64"
    # From before the field: the library says (its ELF header) ...
    old = archive("old.tar.gz", {"library": "lib/x.so"}, {"lib/x.so": bytes(elf)})
    assert deploy.package_arch(old) == "aarch64"
    # ... and without an ELF library (an old CANN package), the machine that built it: this one.
    assert deploy.package_arch(archive("cann.tar.gz", {"library": ""})) == build.HOST_ARCH
    assert machine.elf_arch_of(b"#!/bin/sh\n") is None
    with pytest.raises(ConfigError, match="no readable manifest.json"):
        deploy.package_arch(build.write_archive(tmp_path / "none.tar.gz", {"a": b""}))
