"""The package builder (farm.pool.build): reproducible archives with a truthful manifest for both
libraries of the C ABI (ascendc-cpu, the default, and twin), the Ascend target's clear failure
without CANN, both libraries under AddressSanitizer/UBSan, and the planted bugs known alike to
CMake, `farm build` and `farm run` (and a planted edit that no longer fits its source refused,
naming the bug and the file)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from farm.agent.backends import native
from farm.pool import acl_sdk, build, deploy
from farm.util import announce
from farm.util.errors import BuildError, UsageError
from golden.soc import PROFILES
from tests.archives import regular
from tests.op.conftest import need_emulation


def read_archive(path) -> dict[str, bytes]:
    """Every regular file of an archive, by path."""
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: regular(tar, m).read() for m in tar.getmembers() if m.isfile()}


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.build
@pytest.mark.parametrize("target", build.NATIVE_TARGETS)
def test_package_is_reproducible_and_its_manifest_true(tmp_path, target, monkeypatch):
    if target == "ascendc-cpu":
        need_emulation()
    # The manifest names the commit: one commit for both builds, even when someone commits in
    # between (the same sources must give the same bytes; a new commit is not new sources).
    state = build.git_state()
    monkeypatch.setattr(build.package, "git_state", lambda: state)
    # Two builds in different directories, as on two machines: the default build directory (what
    # set-up built) and one from scratch.
    a = build.build_package(target, tmp_path / "a")
    b = build.build_package(target, tmp_path / "b", build_dir=tmp_path / "build-b")
    assert a.name == f"logsoftmaxgrad-{build.op_version()}-{target}.tar.gz"
    assert sha256(a) == sha256(b)

    assert a.read_bytes()[4:8] == b"\0\0\0\0"  # gzip mtime 0
    with tarfile.open(a, "r:gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.mode, m.uname, m.gname) for m in members} == {
        (0, 0, 0, 0o644, "", "")
    }

    files = read_archive(a)
    manifest = json.loads(files.pop("manifest.json"))
    lib_name = build.LIB_NAMES[target]
    headers = {"include/lsg_twin.h", "include/lsg_types.h", "include/reasons.def"}
    if target == "ascendc-cpu":
        headers.add("include/lsg_ascendc_cpu.h")
    # The real emulated kernel also carries the emulated ACL runtime and its op-api (the acl
    # backend's), where the genuine ACL headers were there to build them.
    acl = target == "ascendc-cpu" and acl_sdk.present()
    acl_files = {f"acl/lib/{n}" for n in build.ACL_LIBS} | {
        "acl/include/aclnn_log_softmax_backward.h"
    }
    assert set(files) == {f"lib/{lib_name}"} | headers | (acl_files if acl else set())
    if acl:
        assert manifest["acl"] == {
            "runtime": "emulated",
            "lib_dir": "acl/lib",
            "op_api": "acl/lib/libcust_opapi.so",
            "exports": list(build.ACL_EXPORTS),
        }
    else:
        assert manifest["acl"] is None
    assert [f["path"] for f in manifest["files"]] == sorted(files)
    for entry in manifest["files"]:
        data = files[entry["path"]]
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["bytes"] == len(data)
    assert (manifest["name"], manifest["version"], manifest["target"]) == (
        "logsoftmaxgrad",
        build.op_version(),
        target,
    )
    # Built for this machine's architecture: the name says nothing more, the manifest says which.
    assert manifest["arch"] == build.HOST_ARCH == deploy.package_arch(a)
    # The manifest says what the library is: for ascendc-cpu, the emulated real kernel.
    assert manifest["implementation"] == build.DESCRIPTIONS[target]
    assert manifest["library"] == f"lib/{lib_name}"
    assert re.fullmatch(r"[0-9a-f]{40}", manifest["git_commit"])
    assert [p["name"] for p in manifest["soc_profiles"]] == list(PROFILES)
    assert manifest["plant_bug"] == ""

    # The packaged library is the operator: it loads and answers, and says what it is.
    lib = tmp_path / lib_name
    lib.write_bytes(files[f"lib/{lib_name}"])
    assert native.version(lib) == manifest["version"]
    assert native.build_info(lib)["target"] == target


def test_write_archive_depends_only_on_content(tmp_path):
    files = {"b.txt": b"two", "a/x.bin": b"\x00\x01"}
    one = build.write_archive(tmp_path / "one.tar.gz", files)
    two = build.write_archive(tmp_path / "two.tar.gz", dict(reversed(files.items())))
    assert one.read_bytes() == two.read_bytes()
    assert gzip.decompress(one.read_bytes())  # a valid gzip stream


def test_an_unchanged_archive_is_not_written_again(tmp_path):
    files = {"a.txt": b"one"}
    path = build.write_archive(tmp_path / "p.tar.gz", files)
    before = path.stat()
    assert build.write_archive(path, files) == path
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    build.write_archive(path, {"a.txt": b"two"})
    assert read_archive(path) == {"a.txt": b"two"}


@pytest.mark.build
def test_a_build_with_nothing_to_do_skips_cmake(tmp_path, monkeypatch):
    """The build stamp (farm/pool/build/cmake.py BuildStamp): CMake runs again when a source is
    edited, the output is gone, or the configuration differs, and not otherwise."""
    op = tmp_path / "op"
    shutil.copytree(build.OP_DIR, op, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "build"
    lib = build.build_native("twin", out, source_dir=op)
    calls: list[str] = []
    real_run = build.cmake.run_step

    def counted(cmd, what, *args, **kwargs):
        calls.append(what)
        return real_run(cmd, what, *args, **kwargs)

    monkeypatch.setattr(build.cmake, "run_step", counted)
    assert build.build_native("twin", out, source_dir=op) == lib
    assert calls == []
    source = op / "twin" / "kernel.cpp"
    source.write_text(source.read_text() + "\n// edited\n")
    build.build_native("twin", out, source_dir=op)
    assert calls == ["cmake configure", "cmake build"]
    build.build_native("twin", out, source_dir=op)
    assert len(calls) == 2
    lib.unlink()
    assert build.build_native("twin", out, source_dir=op).is_file()
    assert len(calls) == 4
    build.build_native("twin", out, plant_bug="tail", source_dir=op)  # another configuration
    assert len(calls) == 6


def test_main_builds_the_emulated_real_kernel_by_default(tmp_path, acpu_build, capsys):
    assert build.DEFAULT_TARGET == "ascendc-cpu"
    assert build.main(["--out", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / build.archive_name("ascendc-cpu")).exists()


def test_main_builds_twin_package(tmp_path, twin_lib, capsys, monkeypatch):
    assert build.main(["--target", "twin", "--out", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / build.archive_name("twin")).exists()
    # A relative --out is the shell's, its working directory's (it went into the checkout).
    monkeypatch.chdir(tmp_path)
    assert build.main(["--target", "twin", "--out", "mine", "--quiet"]) == 0
    assert (tmp_path / "mine" / build.archive_name("twin")).exists()
    (tmp_path / "a-file").write_text("")  # one that cannot be made: one line, before the build
    with pytest.raises(UsageError, match=r"--out .*a-file/x: cannot make the directory"):
        build.main(["--target", "twin", "--out", "a-file/x", "--quiet"])


@pytest.mark.build
def test_main_builds_a_planted_package(tmp_path, trunc_narrow_lib):
    argv = ["--target", "twin", "--plant-bug", "trunc_narrow", "--out", str(tmp_path), "--quiet"]
    assert build.main(argv) == 0
    archive = tmp_path / build.archive_name("twin", "trunc_narrow")
    assert archive.name.endswith("-twin-bug-trunc_narrow.tar.gz")
    assert json.loads(read_archive(archive)["manifest.json"])["plant_bug"] == "trunc_narrow"


def test_plant_bug_names_agree():
    # CMake, farm build and farm run know the same planted bugs: the twin's, each compiled as its
    # own macro that the twin's sources use, and every one as edits of the real sources
    # (planted_bugs.json, in the same order).
    cmake = (build.OP_DIR / "CMakeLists.txt").read_text()
    plant_bugs = re.search(r"set\(LSG_PLANT_BUGS\s+([^)]*)\)", cmake)
    assert plant_bugs, "op/CMakeLists.txt sets LSG_PLANT_BUGS"
    listed = tuple(plant_bugs[1].split())
    assert listed == build.TWIN_PLANT_BUGS[1:]
    assert tuple(build.planted_bugs()) == build.PLANT_BUGS[1:]
    assert build.PLANT_BUGS[0] == ""
    sources = "".join(p.read_text() for p in sorted((build.OP_DIR / "twin").iterdir()))
    for bug in listed:
        macro = f"LSG_PLANT_BUG_{bug.upper()}"
        assert f'STREQUAL "{bug}")\n  target_compile_definitions(lsg_twin PRIVATE {macro})' in cmake
        assert f"defined({macro})" in sources


def test_cli_run_offers_every_planted_bug(capsys):
    from farm import cli

    with pytest.raises(UsageError) as refused:
        cli.cmd_run(["--plant-bug", "no_such_bug"])
    err = str(refused.value)
    assert "invalid choice: 'no_such_bug'" in err
    assert all(repr(bug) in err for bug in build.BUG_NAMES) and "''" not in err


@pytest.mark.build
def test_cmake_rejects_an_unknown_plant_bug(tmp_path):
    with pytest.raises(BuildError, match="plant_bug 'no_such_bug'"):
        build.build_twin(tmp_path / "py", plant_bug="no_such_bug")
    cmd = [build.cmake_executable(), "-S", str(build.OP_DIR), "-B", str(tmp_path / "cm")]
    proc = subprocess.run([*cmd, "-DLSG_PLANT_BUG=no_such_bug"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "LSG_PLANT_BUG='no_such_bug': use '' (none) or one of tail," in proc.stdout + proc.stderr


def test_ascend_target_fails_clearly_without_cann(tmp_path, monkeypatch):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    with pytest.raises(BuildError, match="needs the CANN toolkit"):
        build.build_package("ascend", tmp_path)
    assert (
        build.main(["--target", "ascend", "--out", str(tmp_path)]) == 2
    )  # not a product failure: nothing was built to test


def test_twin_refuses_the_kernel_source_bugs(tmp_path):
    for bug in build.KERNEL_FAULT_BUGS:
        with pytest.raises(BuildError, match=f"plant_bug '{bug}' is planted in the real kernel"):
            build.build_twin(tmp_path, plant_bug=bug)


def test_every_planted_edit_fits_the_real_source_exactly_once():
    # What the build checks too; here without building.
    for bug, edits in build.planted_bugs().items():
        assert edits, bug
        for edit in edits:
            assert set(edit) == {"file", "old", "new"}, (bug, edit)
            text = (build.OP_DIR / edit["file"]).read_text()
            assert text.count(edit["old"]) == 1, (bug, edit["file"], edit["old"])


@pytest.mark.build
@pytest.mark.parametrize(
    "old, error",
    [
        ("no such text in the kernel", "does not contain the text of edit 0"),
        ("DataCopyPad", "occurs more than once"),
    ],
)
def test_a_planted_edit_that_does_not_fit_is_a_build_error(tmp_path, old, error):
    need_emulation()
    # A copy of op/ whose planted_bugs.json has an edit that no longer fits: the configure fails,
    # naming the bug and the file.
    op = tmp_path / "op"
    shutil.copytree(build.OP_DIR, op, ignore=shutil.ignore_patterns("__pycache__"))
    bugs = json.loads((op / "ascendc_cpu" / "planted_bugs.json").read_text())
    bugs["queue_order"][0]["old"] = old
    (op / "ascendc_cpu" / "planted_bugs.json").write_text(json.dumps(bugs))
    cmd = [build.cmake_executable(), "-S", str(op), "-B", str(tmp_path / "b")]
    proc = subprocess.run([*cmd, "-DLSG_PLANT_BUG=queue_order"], capture_output=True, text=True)
    out = " ".join((proc.stdout + proc.stderr).split())  # CMake wraps its messages
    assert proc.returncode != 0
    assert "planted bug 'queue_order'" in out and error in out
    assert "op/ascendc/op_kernel/log_softmax_grad.cpp" in out


@pytest.mark.build
def test_twin_is_clean_under_sanitizers():
    report = build.sanitize_check(matrix="smoke")
    assert report.ok, report.output[-4000:]
    assert report.calls > 300  # the representative set and the smoke matrix


@pytest.mark.build
def test_emulated_real_kernel_is_clean_under_sanitizers():
    need_emulation()
    report = build.sanitize_check(target="ascendc-cpu")
    assert report.ok, report.output[-4000:]
    assert report.calls > 100  # the representative set


@pytest.mark.build
def test_sanitizer_harness_reports_what_it_finds():
    report = build.sanitize_check(overflow_probe=True)
    assert not report.ok
    assert "heap-buffer-overflow" in report.output


def test_ascend_target_packs_the_real_sources_and_says_what_it_exports(tmp_path, monkeypatch):
    """With a stand-in CANN (the SSH lab's: msopgen and the generated project's build, CMake for
    real), the ascend package carries the installer built from the operator's own sources, and
    what it installs exports the entries its manifest says."""
    from farm.pool.lab.cann_install import install_cann as _install_cann
    from tests.op.conftest import need_acl_emulation

    home = _install_cann(tmp_path / "Ascend", Path(need_acl_emulation()), sys.executable)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    archive = build.build_package("ascend", tmp_path / "dist")
    with tarfile.open(archive) as tar:
        manifest = json.load(regular(tar, "manifest.json"))
        tar.extract(manifest["acl"]["installer"], tmp_path, filter="data")
    assert manifest["target"] == "ascend"
    assert manifest["acl"]["runtime"] == "cann"
    assert manifest["acl"]["installer"].startswith("custom_opp_")
    installer = tmp_path / manifest["acl"]["installer"]
    subprocess.run(["sh", str(installer), f"--install-path={tmp_path / 'opp'}"], check=True)
    library = tmp_path / "opp" / "vendors" / "customize" / "op_api" / "lib" / "libcust_opapi.so"
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    exported = {line.split()[-1] for line in symbols.splitlines() if line.strip()}
    assert "aclnnLogSoftmaxBackwardGetWorkspaceSize" in manifest["acl"]["exports"]
    assert set(manifest["acl"]["exports"]) <= exported


def test_the_kernel_compiles_for_each_compute_unit_and_an_unguarded_kernel_type_does_not(tmp_path):
    """Atlas 200I/500 A2 (__NPU_ARCH__ 3002) does not support KERNEL_TASK_TYPE_DEFAULT (asc-devkit
    "设置Kernel类型"): the kernel guards it, and the build compiles the kernel per compute unit
    (op/CMakeLists.txt) so that a kernel that does not fails here rather than on CANN."""
    op = build.OP_DIR
    kernel = (op / "ascendc" / "op_kernel" / "log_softmax_grad.cpp").read_text()

    def compile_for(arch: int, text: str) -> subprocess.CompletedProcess:
        source = tmp_path / f"kernel_{arch}.cpp"
        source.write_text(text)
        argv = ["g++", "-std=c++17", "-fsyntax-only", f"-D__NPU_ARCH__={arch}"]
        argv += ["-DDTYPE_GRAD_OUTPUT=float", '-DEMU_TILING_HEADER="log_softmax_grad_tiling.h"']
        for d in ("ascendc_cpu/include", "ascendc/op_host", "tiling"):
            argv.append(f"-I{op / d}")
        return subprocess.run([*argv, str(source)], capture_output=True, text=True, timeout=120)

    for arch in (2201, 3002):
        done = compile_for(arch, kernel)
        assert done.returncode == 0, done.stderr
    guard = "#if defined(__NPU_ARCH__) && __NPU_ARCH__ == 2201\n"
    assert kernel.count(guard) == 1
    unguarded = compile_for(3002, kernel.replace(guard, "#if 1\n"))
    assert unguarded.returncode != 0
    assert "KERNEL_TASK_TYPE_DEFAULT is not supported on Atlas 200I/500 A2" in unguarded.stderr
    assert compile_for(2201, kernel.replace(guard, "#if 1\n")).returncode == 0


DONE = r"build: done in (\d+\.\d s|\d+ s|\d+ min \d+ s)"


def test_a_package_build_says_when_it_starts_and_ends(tmp_path, twin_lib):
    """Wherever a package is built (farm build, farm run and its builds for other architectures,
    pytest suites/, farm repro and shrink, bisect): a line as it starts, one as it ends; the twin
    the fixture built is only packed ("(cached)": CMake had nothing to do)."""
    said: list[str] = []
    with announce.saying(said.append):
        build.build_package("twin", tmp_path)
    assert said[0] == f"build: twin {build.HOST_ARCH}"
    assert re.fullmatch(DONE + r" \(cached\)", said[1]), said
    assert len(said) == 2
    with announce.saying(said.append), pytest.raises(BuildError):
        build.build_package("twin", tmp_path, plant_bug="queue_order")  # the kernel's only
    assert said[2] == f"build: twin {build.HOST_ARCH}, planted bug queue_order"
    assert re.fullmatch(r"build: failed after \d+\.\d s", said[3]), said


@pytest.mark.build
def test_a_build_that_compiles_says_so_and_names_another_tree_s_commit(tmp_path):
    """A build that runs CMake ends without "(cached)"; another tree's sources (farm bisect's
    worktree) are named by their commit."""
    op = tmp_path / "op"
    shutil.copytree(build.OP_DIR, op, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "op"], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm",
         "op"],
        check=True,
    )  # fmt: skip
    sha = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    said: list[str] = []
    with announce.saying(said.append):
        for _ in range(2):
            build.build_package("twin", tmp_path / "out", build_dir=tmp_path / "b", source_dir=op)
    assert said[0] == said[2] == f"build: twin {build.HOST_ARCH}, at {sha[:12]}"
    assert re.fullmatch(DONE, said[1]), said
    assert re.fullmatch(DONE + r" \(cached\)", said[3]), said


def test_farm_build_says_its_build_on_stderr_unless_quiet(tmp_path, twin_lib, capsys):
    assert build.main(["--target", "twin", "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0] == f"build: twin {build.HOST_ARCH}"
    assert re.fullmatch(DONE + r" \(cached\)", lines[1]), err
    assert out.startswith("logsoftmaxgrad-") or "sha256" in out  # the archive, on stdout
    assert build.main(["--target", "twin", "--out", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    assert not announce.active()  # the announcer was the command's


def test_a_cann_package_built_before_says_cached(tmp_path):
    """farm/pool/cann_build.py build_on: the CANN package of these sources kept in dist/op is
    used again, and its lines say so (no host is asked)."""
    from types import SimpleNamespace
    from typing import cast

    from farm.pool import cann_build
    from farm.pool.inventory import HostSpec

    source = build.source_package(tmp_path)
    files = {"custom_opp_ubuntu_aarch64.run": b"installer"}
    files["manifest.json"] = json.dumps(build.manifest("ascend", files, arch="aarch64")).encode()
    name = cann_build.package_name(build.op_version(), "aarch64", "8.2.RC1", sha256(source))
    kept = build.write_archive(tmp_path / name, files)
    host = cast(HostSpec, SimpleNamespace(name="a2-01"))
    said: list[str] = []
    with announce.saying(said.append):
        got = cann_build.build_on(host, source, arch="aarch64", cann="8.2.RC1", out_dir=tmp_path)
    assert got == kept
    assert said[0] == "build: ascend aarch64 CANN 8.2.RC1, on host a2-01"
    assert re.fullmatch(DONE + r" \(cached\)", said[1]), said


def test_another_trees_acl_runtime_is_of_the_ascendc_cpu_target_and_needs_the_headers(
    tmp_path, monkeypatch
):
    """build_native(..., acl=True) (farm mutate --backend acl): refused, before CMake runs, for
    the twin, and without the genuine ACL headers, each with the fix."""
    with pytest.raises(BuildError, match="built with the ascendc-cpu target"):
        build.build_native("twin", tmp_path / "b", source_dir=build.OP_DIR, acl=True)
    monkeypatch.setenv(acl_sdk.ENV_DIR, str(tmp_path / "no-sdk"))
    with pytest.raises(BuildError, match="python -m farm.pool.acl_sdk"):
        build.build_native("ascendc-cpu", tmp_path / "b", source_dir=build.OP_DIR, acl=True)
