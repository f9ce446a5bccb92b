"""Build the operator: its C ABI libraries, and the versioned operator package.

Targets:
    ascendc-cpu  liblsg_ascendc_cpu.so: the real Ascend C kernel and host tiling (op/ascendc,
                 unchanged) compiled for the CPU and run on the emulated device (op/ascendc_cpu).
                 The default: what the farm tests.
    twin         liblsg_twin.so: the CPU twin (op/twin), an independent second implementation of
                 the same design behind the same C ABI.
    ascend       the CANN package (op/ascendc/build.sh); needs the CANN toolkit.

    build_native(target, build_dir, plant_bug="", sanitize=False, arch=None) -> Path of the library
    build_twin(build_dir, plant_bug="", sanitize=False, arch=None) -> Path of liblsg_twin.so
    build_package(target="ascendc-cpu", out_dir="dist/op", plant_bug="", arch=None) -> the archive
    build_package(target, out_dir, build_dir=..., source_dir=<another op/>) -> the same, from
                 another tree's operator sources (`farm bisect`: a worktree at each commit)
    source_package(out_dir) -> the sources a CANN build host builds from (farm/pool/cann_build.py)
    cross_selftest(target, arch) -> (ok, output)   the C ABI self-test, under qemu for another arch
    acl_example_selftest(arch) -> (ok, output)     the aclnn example on the emulated ACL runtime
    sanitize_check(matrix=None, target="twin") -> SanitizeReport  (ASan/UBSan, driven from Python)
    main(argv) -> exit code                                        (what `farm build` runs)

Architectures (ARCHES: x86_64, aarch64; HOST_ARCH is this machine's, normalise_arch the names
machines give them): `arch=None` builds for HOST_ARCH. The other is cross compiled with Debian's
toolchain (apt-get install g++-aarch64-linux-gnu; on aarch64, g++-x86-64-linux-gnu) through the
CMake toolchain file op/cmake/<triple>.cmake, into its own build directory (build/<target>-<arch>)
and archive (...-<target>[-bug-X]-<arch>.tar.gz); the host's keep their plain names. A missing
cross compiler or qemu is a BuildError naming the package to install; the sanitizer build and the
ascend target are for this machine's architecture only. The self-test (op/tests/abi_selftest.cpp)
runs a few real calls through the C ABI against a float64 reference, under qemu-<arch> -L
/usr/<triple> for another architecture (`farm build --arch aarch64 --self-test`).

The archive dist/op/logsoftmaxgrad-<version>-<target>.tar.gz holds the library, its headers and
manifest.json (name, version, git commit, target, arch, what the library is, SoC profiles, every
file with its sha256). The same sources give the same archive byte for byte, for either
architecture: sorted entries, fixed mtime/uid/gid/mode, gzip mtime 0, and a library built without
build paths in it (op/CMakeLists.txt).
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from farm.agent.backends import acl_api
from farm.agent.hostops import normalise_arch
from farm.agent.machine import ELF_MACHINES, elf_arch_of
from farm.pool import acl_sdk
from farm.pool.deploy import package_manifest, package_problem
from farm.util.argparsing import CommandParser, make_output_dir
from farm.util.errors import BuildError
from farm.util.paths import REPO_ROOT as ROOT
from farm.util.targets import DEFAULT_TARGET, DESCRIPTIONS, NATIVE_TARGETS, TARGETS, describe
from golden.soc import FAMILIES, representative_soc

OP_DIR = ROOT / "op"
PACKAGE_NAME = "logsoftmaxgrad"
# "" is the real operator; the others plant one known defect each (op/CMakeLists.txt LSG_PLANT_BUG)
# for the farm to catch. The twin compiles the first six as LSG_PLANT_BUG_<NAME> into its own
# copy of the kernel (tests/op/test_planted_bugs.py pins what each changes); the emulated real
# kernel (ascendc-cpu) applies every one as text edits of copies of the real sources made at
# build time (op/ascendc_cpu/planted_bugs.json, in this order). benchmarks/kill_strength.py
# measures how many cases of each tier catch each one, and by how much.
TWIN_PLANT_BUGS = (
    "",
    "tail",  # the last chunk is moved in whole 32-byte blocks: its unaligned remainder is dropped
    "seed_noreduce",  # NO_REDUCE computes the seed's (dy - 1) * exp(y)
    "trunc_narrow",  # the output cast fp32 -> fp16/bf16 truncates instead of rounding to nearest
    "fp16_sum",  # sum(dy) is accumulated in fp16 (ascendc-cpu: REDUCE_TAIL's sums through half)
    "drop_element",  # a reduction over d1 >= 4096 leaves its last element (line) out of the sum
    "strided_out_unwritten",  # a non-contiguous out is never written (no copy back)
)
# Kernel-source errors that the emulated device must stop (status 561000, reason kernel_fault, or
# emulation_policy where the rule is the emulation's own; op/ascendc_cpu/README.md).
KERNEL_FAULT_BUGS = (
    "ragged_datacopy",  # DataCopy of a chunk that is not a whole number of 32-byte blocks
    "ub_overflow",  # one UB block too many on REDUCE_TAIL: past the UB of every SoC
    "queue_order",  # the output queue is dequeued before it is enqueued
    "cores_overlap",  # the big cores' rows start at the small cores' stride: two cores, one row
    "short_view",  # REDUCE_MID's column sums a TBuf view of 64 floats, summed over longer chunks
)
# Kernel-source errors in the numbers, which only the judge sees.
KERNEL_NUMERIC_BUGS = (
    "round_half_away",  # the output cast rounds ties away from zero instead of to even
    "mid_running_sum",  # REDUCE_MID sums its d1 lines in one running sum, not in groups of 64
    "mid_partial_group",  # REDUCE_MID leaves out a last partial group of lines beyond the first
)
# Errors of the host code (op_host and the shared tiling it compiles).
HOST_BUGS = (
    "bf16_cast_310b",  # bf16 registered for ascend310b and let through by the tiling's SoC check
    "host_half_blocks",  # the tiling function gives the kernel half the planned UB block
    "axes_dedup",  # duplicate axes are accepted (reduced once) instead of rejected
    "axes_span",  # non-consecutive axes are accepted, reducing over their whole span
    "tail_mod",  # the last chunk's length is row % block: 0 for a row of whole blocks
    "d2_two_as_tail",  # REDUCE_TAIL is chosen for d2 <= 2, so d2 == 2 is reduced as rows
    "empty_out_unchecked",  # the OpDef does not run for an empty out: its checks are skipped
)
PLANT_BUGS = TWIN_PLANT_BUGS + KERNEL_FAULT_BUGS + KERNEL_NUMERIC_BUGS + HOST_BUGS
PLANTED_BUGS_FILE = OP_DIR / "ascendc_cpu" / "planted_bugs.json"
LIB_NAMES = {"twin": "liblsg_twin.so", "ascendc-cpu": "liblsg_ascendc_cpu.so"}
LIB_NAME = LIB_NAMES["twin"]
CMAKE_TARGETS = {"twin": "lsg_twin", "ascendc-cpu": "lsg_ascendc_cpu"}
# The emulated ACL runtime and the custom operator's op-api on it (op/acl_emu/acl_emu.cmake), built
# with the real ascendc-cpu library where the genuine ACL headers are (farm/pool/acl_sdk.py); the
# package carries them under ACL_DIR for the agent's acl backend.
ACL_CMAKE_TARGET = "lsg_acl_emu"
ACL_DIR = "acl"
ACL_LIBS = (*acl_api.LIB_FILES.values(), acl_api.OP_API_FILE)  # the names the backend loads
ACL_HEADER = OP_DIR / "ascendc" / "op_api" / "aclnn_log_softmax_backward.h"
# The op-api entry points the package exports (the manifest says which; the acl backend asks).
ACL_EXPORTS = (
    "aclnnLogSoftmaxBackwardGetWorkspaceSize",
    "aclnnLogSoftmaxBackward",
    "aclnnLogSoftmaxBackwardDimsGetWorkspaceSize",
    "aclnnLogSoftmaxBackwardDims",
    "aclnnLogSoftmaxGradCustomGetWorkspaceSize",
    "aclnnLogSoftmaxGradCustom",
)
# What each target's library is, for the manifest, the run's environment and the report.
_ABI_HEADERS = (OP_DIR / "twin" / "lsg_twin.h", OP_DIR / "tiling" / "lsg_types.h")
HEADERS = {
    "twin": _ABI_HEADERS,
    "ascendc-cpu": _ABI_HEADERS + (OP_DIR / "ascendc_cpu" / "abi" / "lsg_ascendc_cpu.h",),
}
# The fixed metadata of every archive entry.
ENTRY_MTIME = 0
ENTRY_MODE = 0o644

# -- CPU architectures -------------------------------------------------------------------------

# The CPU architectures the C ABI targets build for: this machine's natively, the other cross
# compiled with Debian's toolchain through a CMake toolchain file (op/cmake/<triple>.cmake).
ARCHES = ("x86_64", "aarch64")
# The GNU triple of each: the cross compiler's prefix and Debian's sysroot, /usr/<triple>.
TRIPLES = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}
CROSS_COMPILERS = {arch: f"{triple}-g++" for arch, triple in TRIPLES.items()}
CROSS_PACKAGES = {"x86_64": "g++-x86-64-linux-gnu", "aarch64": "g++-aarch64-linux-gnu"}
QEMU = {arch: f"qemu-{arch}" for arch in ARCHES}  # Debian's qemu-user
QEMU_PACKAGE = "qemu-user"
TOOLCHAIN_DIR = OP_DIR / "cmake"


# This machine's architecture: what a build is for unless it says otherwise.
HOST_ARCH = normalise_arch(platform.machine())


def check_arch(arch: str | None) -> str:
    """`arch` normalised, HOST_ARCH for None; a BuildError for one not in ARCHES (this machine's
    own is taken even if it is not: a native build needs no toolchain file)."""
    if arch is None:
        return HOST_ARCH
    name = normalise_arch(arch)
    if name not in ARCHES and name != HOST_ARCH:
        raise BuildError(f"arch {arch!r}: use one of {', '.join(ARCHES)}")
    return name


def toolchain_file(arch: str) -> Path:
    """The CMake toolchain file that cross compiles op/ for `arch` (op/cmake/<triple>.cmake)."""
    return TOOLCHAIN_DIR / f"{TRIPLES[check_arch(arch)]}.cmake"


def cross_compiler(arch: str) -> str:
    """The path of the C++ cross compiler for `arch`; a BuildError naming the package when it is
    not installed."""
    arch = check_arch(arch)
    name = CROSS_COMPILERS[arch]
    found = shutil.which(name)
    if not found:
        raise BuildError(
            f"arch {arch}: the cross compiler {name} is not installed here ({HOST_ARCH}): "
            f"apt-get install {CROSS_PACKAGES[arch]}"
        )
    return found


def emulator(arch: str) -> list[str]:
    """How to run a program built for `arch` here: [] natively (HOST_ARCH), else qemu user-mode
    emulation over Debian's sysroot of the arch: [qemu-<arch>, -L, /usr/<triple>]. A BuildError
    naming the package when qemu or the sysroot is missing."""
    arch = check_arch(arch)
    if arch == HOST_ARCH:
        return []
    qemu = shutil.which(QEMU[arch])
    if not qemu:
        raise BuildError(
            f"arch {arch}: {QEMU[arch]} is not installed, which runs {arch} programs here "
            f"({HOST_ARCH}): apt-get install {QEMU_PACKAGE}"
        )
    sysroot = Path("/usr") / TRIPLES[arch]
    if not (sysroot / "lib").is_dir():
        raise BuildError(
            f"arch {arch}: {sysroot}, the {arch} libraries qemu runs against, is missing: "
            f"apt-get install {CROSS_PACKAGES[arch]}"
        )
    return [qemu, "-L", str(sysroot)]


def _op_dir(source_dir: str | Path | None) -> Path:
    """The operator sources to build: this checkout's op/, or `source_dir` (another tree's op/)."""
    return OP_DIR if source_dir is None else Path(source_dir).resolve()


def op_version(source_dir: str | Path | None = None) -> str:
    return (_op_dir(source_dir) / "VERSION").read_text().strip()


def planted_bugs() -> dict[str, list[dict]]:
    """The emulated real kernel's planted bugs: {bug: [{file, old, new}]} (paths under op/)."""
    return json.loads(PLANTED_BUGS_FILE.read_text())


def _arch_suffix(arch: str | None) -> str:
    """Nothing for this machine's architecture, "-<arch>" for another."""
    arch = check_arch(arch)
    return "" if arch == HOST_ARCH else f"-{arch}"


def default_build_dir(
    plant_bug: str = "", sanitize: bool = False, target: str = "twin", arch: str | None = None
) -> Path:
    """build/<target> for the real library (where the native backend looks), else a variant;
    every planted bug of the emulated real kernel shares one, PLANTED_DIR. A build for another
    architecture than this machine's has its own, with "-<arch>" appended (build/twin-aarch64)."""
    if target == "ascendc-cpu" and plant_bug and not sanitize:
        return planted_dir(arch)
    name = target + (f"-{plant_bug}" if plant_bug else "") + ("-sanitize" if sanitize else "")
    return ROOT / "build" / (name + _arch_suffix(arch))


# One build directory for every planted bug of the emulated real kernel (CMake LSG_PLANT_ALL): each
# is its own target there, sharing the object files of the sources it does not edit, so that
# building all of them costs little more than the edited files.
PLANTED_DIR = ROOT / "build" / "ascendc-cpu-planted"


def planted_dir(arch: str | None = None) -> Path:
    """PLANTED_DIR for this machine's architecture; build/ascendc-cpu-planted-<arch> for another."""
    suffix = _arch_suffix(arch)
    return PLANTED_DIR.with_name(PLANTED_DIR.name + suffix) if suffix else PLANTED_DIR


def cmake_executable() -> str:
    """The system cmake, else the one the `cmake` PyPI package installs."""
    found = shutil.which("cmake") or shutil.which("cmake", path=str(Path(sys.executable).parent))
    if found:
        return found
    try:
        import cmake  # the PyPI package

        return str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
    except ImportError as exc:
        raise BuildError(
            "cmake not found: install it (apt-get install cmake, or pip install cmake)"
        ) from exc


@contextmanager
def _locked(build_dir: Path) -> Iterator[None]:
    """One build at a time per build directory (pytest-xdist workers share build/)."""
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{build_dir}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass
class BuildStamp:
    """What a build directory's target was last built from, so that a build with nothing to do
    skips CMake (a no-op `cmake --build` takes a second: a farm run's start-up, and every test
    that builds). It is make's own rule, kept by the farm: every file of the inputs (the op/
    sources, the ACL headers) by path, size and modification time, the configure command, the
    targets, and the outputs as that build left them. Anything different, missing or unreadable
    runs CMake, which decides what to rebuild."""

    path: Path
    configure: list[str]
    targets: list[str]

    @staticmethod
    def sources(roots: list[Path]) -> list[list]:
        return [
            [str(f), st.st_size, st.st_mtime_ns]
            for root in roots
            for f in sorted(root.rglob("*"))
            if f.is_file() and (st := f.stat())
        ]

    @staticmethod
    def _outputs(outputs: list[Path]) -> list[list] | None:
        try:
            return [[str(f), (st := f.stat()).st_size, st.st_mtime_ns] for f in outputs]
        except OSError:
            return None

    def _key(self, sources: list[list], outputs: list[list] | None) -> dict:
        return {
            "configure": self.configure,
            "targets": self.targets,
            "sources": sources,
            "outputs": outputs,
        }

    def current(self, sources: list[list], outputs: list[Path]) -> bool:
        built = self._outputs(outputs)
        if built is None:
            return False
        try:
            return json.loads(self.path.read_text()) == self._key(sources, built)
        except (OSError, ValueError):
            return False

    def write(self, sources: list[list], outputs: list[Path]) -> None:
        try:
            self.path.write_text(json.dumps(self._key(sources, self._outputs(outputs))))
        except OSError:
            pass  # no stamp: the next build runs CMake, as without one


def _run(cmd: list[str], what: str, cwd: Path = ROOT, env: dict | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-30:])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return output


def emulation_present(source_dir: str | Path | None = None) -> bool:
    """Whether the CPU emulation of Ascend C (the kernel side) is in the checkout."""
    emu = _op_dir(source_dir) / "ascendc_cpu"
    return (emu / "include" / "kernel_operator.h").is_file() and any((emu / "src").glob("*.cpp"))


def build_native(
    target: str = DEFAULT_TARGET,
    build_dir: str | Path | None = None,
    plant_bug: str = "",
    sanitize: bool = False,
    source_dir: str | Path | None = None,
    arch: str | None = None,
) -> Path:
    """Configure op/ with CMake and build the library of `target` (ascendc-cpu or twin); returns
    its path. Incremental: a second call on the same directory only rebuilds what changed. A
    planted bug of the emulated real kernel in the default directory (PLANTED_DIR) is built there
    as its own target, planted-lib/<bug>/liblsg_ascendc_cpu.so.
    A planted bug that does not apply, or a planted edit whose text is not in the source exactly
    once, is a BuildError naming the bug (and the file).

    `source_dir`: build another tree's operator sources (its op/ directory) instead of this
    checkout's; give it its own `build_dir` (one directory per source tree: CMake refuses a build
    directory configured from another source).

    `arch`: the CPU architecture to build for (ARCHES; None: this machine's, HOST_ARCH). Another
    is cross compiled with Debian's toolchain (TRIPLES, the toolchain file op/cmake/<triple>.cmake)
    into a build directory of its own (default_build_dir(..., arch=arch)), under the same rules:
    the same sources give the same bytes. No sanitizer build for another architecture."""
    arch = check_arch(arch)
    cross = arch != HOST_ARCH
    if target not in NATIVE_TARGETS:
        raise BuildError(f"target {target!r} has no C ABI library: use one of {NATIVE_TARGETS}")
    if plant_bug not in PLANT_BUGS:
        raise BuildError(f"plant_bug {plant_bug!r}: use one of {PLANT_BUGS}")
    if target == "twin" and plant_bug not in TWIN_PLANT_BUGS:
        raise BuildError(
            f"plant_bug {plant_bug!r} is planted in the real kernel's source: it applies to the "
            "ascendc-cpu target only (the twin plants " + ", ".join(TWIN_PLANT_BUGS[1:]) + ")"
        )
    if target == "ascendc-cpu" and not emulation_present(source_dir):
        raise BuildError(
            "the ascendc-cpu target needs the CPU emulation of Ascend C (op/ascendc_cpu/include "
            "kernel_operator.h and the emulated device op/ascendc_cpu/src), which this checkout "
            "lacks; build --target twin meanwhile"
        )
    if source_dir is not None and build_dir is None:
        raise BuildError("building another source tree needs its own build_dir")
    if cross and sanitize:
        raise BuildError(
            f"arch {arch}: the sanitizer build runs here under ASan/UBSan, so it is built for "
            f"this machine's architecture only ({HOST_ARCH}): drop the arch, or run it on an "
            f"{arch} machine"
        )
    # The cross compiler first: its absence is the one line to fix, before CMake says more.
    cross_args = (
        [
            f"-DCMAKE_TOOLCHAIN_FILE={toolchain_file(arch)}",
            f"-DCMAKE_CXX_COMPILER={cross_compiler(arch)}",
        ]
        if cross
        else []
    )
    build_dir = (
        Path(build_dir) if build_dir else default_build_dir(plant_bug, sanitize, target, arch)
    )
    build_dir = build_dir if build_dir.is_absolute() else ROOT / build_dir
    # The shared planted directory builds the bug as its own target (LSG_PLANT_ALL); any other
    # directory builds the one library with the bug planted.
    shared = target == "ascendc-cpu" and bool(plant_bug) and build_dir == planted_dir(arch)
    cmake_target = f"{CMAKE_TARGETS[target]}_{plant_bug}" if shared else CMAKE_TARGETS[target]
    lib = (build_dir / "planted-lib" / plant_bug if shared else build_dir) / LIB_NAMES[target]
    # The real emulated kernel of this checkout also gets its ACL path, where the genuine headers
    # are (not planted, sanitized or bisected builds: they run on the native backend).
    acl = (
        target == "ascendc-cpu" and not (plant_bug or sanitize or source_dir) and acl_sdk.present()
    )
    targets = [cmake_target] + ([ACL_CMAKE_TARGET] if acl else [])
    cmake = cmake_executable()
    env = {**os.environ, "LC_ALL": "C"}
    configure = [
        cmake,
        "-S",
        str(_op_dir(source_dir)),
        "-B",
        str(build_dir),
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DLSG_PLANT_BUG={'' if shared else plant_bug}",
        f"-DLSG_PLANT_ALL={'ON' if shared else 'OFF'}",
        f"-DLSG_SANITIZE={'ON' if sanitize else 'OFF'}",
        f"-DLSG_ACL_SDK={acl_sdk.sdk_dir() if acl else ''}",
        *cross_args,
    ]
    outputs = [lib] + ([build_dir / ACL_DIR / "lib" / name for name in ACL_LIBS] if acl else [])
    inputs = [_op_dir(source_dir)] + ([acl_sdk.sdk_dir()] if acl else [])
    with _locked(build_dir):
        stamp = BuildStamp(build_dir / f".farm-built-{cmake_target}.json", configure, targets)
        sources = stamp.sources(inputs)
        if not stamp.current(sources, outputs):
            _run(configure, "cmake configure", env=env)
            _run(
                [
                    cmake,
                    "--build",
                    str(build_dir),
                    "--target",
                    *targets,
                    "-j",
                    str(os.cpu_count() or 2),
                ],
                "cmake build",
                env=env,
            )
            # The sources as they were before the build: one edited meanwhile builds again.
            stamp.write(sources, outputs)
    if not lib.exists():
        raise BuildError(f"the build finished but {lib} is missing")
    with open(lib, "rb") as f:
        built_for = elf_arch_of(f.read(64))
    if built_for != arch and arch in ELF_MACHINES.values():
        raise BuildError(
            f"{lib} was to be built for {arch} but is {built_for or 'not an ELF file'}: "
            f"remove {build_dir} (configured for another architecture?) and build again"
        )
    return lib


def acl_files(build_dir: Path) -> dict[str, bytes]:
    """The emulated ACL runtime and op-api libraries a build directory holds, as package paths
    (acl/lib/..., acl/include/...); {} when it has none (no genuine headers at build time)."""
    libs = build_dir / ACL_DIR / "lib"
    if not all((libs / name).is_file() for name in ACL_LIBS):
        return {}
    files = {f"{ACL_DIR}/lib/{name}": (libs / name).read_bytes() for name in ACL_LIBS}
    files[f"{ACL_DIR}/include/{ACL_HEADER.name}"] = ACL_HEADER.read_bytes()
    return files


def build_twin(
    build_dir: str | Path | None = None,
    plant_bug: str = "",
    sanitize: bool = False,
    arch: str | None = None,
) -> Path:
    """build_native("twin", ...): the twin's liblsg_twin.so."""
    return build_native("twin", build_dir, plant_bug, sanitize, arch=arch)


def build_ascendc_cpu(
    build_dir: str | Path | None = None,
    plant_bug: str = "",
    sanitize: bool = False,
    arch: str | None = None,
) -> Path:
    """build_native("ascendc-cpu", ...): the emulated real kernel's liblsg_ascendc_cpu.so."""
    return build_native("ascendc-cpu", build_dir, plant_bug, sanitize, arch=arch)


# -- the package -------------------------------------------------------------------------------


def soc_profiles(source_dir: str | Path | None = None) -> list[dict]:
    """The SoC table compiled into the library (op/tiling/soc_profiles.inc)."""
    pattern = re.compile(
        r'^LSG_SOC\("([\w-]+)",\s*"(\w+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(true|false)\)', re.M
    )
    text = (_op_dir(source_dir) / "tiling" / "soc_profiles.inc").read_text()
    return [
        {
            "name": m[1],
            "family": m[2],
            "vector_cores": int(m[3]),
            "ub_bytes": int(m[4]),
            "block_bytes": int(m[5]),
            "bf16_cast": m[6] == "true",
        }
        for m in pattern.finditer(text)
    ]


def git_state(source_dir: str | Path | None = None) -> dict:
    """The commit of the sources and whether op/ (or `source_dir`) differs from it."""
    cwd = ROOT if source_dir is None else _op_dir(source_dir)

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
        except OSError:
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "op" if source_dir is None else ".")
    return {"git_commit": commit or "unknown", "git_dirty": bool(status)}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_archive(path: Path, files: dict[str, bytes]) -> Path:
    """A tar.gz of `files` (archive path -> bytes) that depends on nothing but them."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mtime = ENTRY_MTIME
            info.mode = ENTRY_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[name]))
    if _holds(path, raw.getvalue()):
        # The same bytes already: compressing them again (level 9) is most of a no-op build.
        # Not rewritten, so that a deploy reading it meanwhile never sees it change.
        return path
    if path.is_file():
        problem = package_problem(path)
        if problem is not None:  # not an older build: a damaged one, said as it is replaced
            rebuilt(path, problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two builds at once must not mix
    with (
        open(tmp, "wb") as out,
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz,
    ):
        gz.write(raw.getvalue())
    tmp.replace(path)
    return path


def rebuilt(path: Path, problem: str) -> None:
    """Say, in one line on stderr, that a cached package did not match its manifest and is built
    again."""
    print(
        f"note: {path}: {problem}; the cached package is built again", file=sys.stderr, flush=True
    )


def _holds(path: Path, tar: bytes) -> bool:
    """Whether the archive at `path` is the gzip of exactly `tar`."""
    try:
        with gzip.open(path, "rb") as gz:
            return gz.read(len(tar) + 1) == tar
    except (OSError, EOFError, gzip.BadGzipFile):
        return False


def manifest(
    target: str,
    files: dict[str, bytes],
    plant_bug: str = "",
    source_dir: str | Path | None = None,
    arch: str | None = None,
) -> dict:
    return {
        "name": PACKAGE_NAME,
        "version": op_version(source_dir),
        "target": target,
        "arch": check_arch(arch),
        "implementation": DESCRIPTIONS.get(target, ""),
        "library": next((n for n in sorted(files) if n.startswith("lib/")), ""),
        "acl": _acl_manifest(files),
        **(git_state() if source_dir is None else git_state(source_dir)),
        "plant_bug": plant_bug,
        "soc_profiles": soc_profiles(source_dir),
        "files": file_entries(files),
    }


def file_entries(files: dict[str, bytes]) -> list[dict]:
    """A manifest's "files": every file of the archive with its sha256 and size, by name."""
    return [
        {"path": name, "sha256": sha256_bytes(files[name]), "bytes": len(files[name])}
        for name in sorted(files)
    ]


def _acl_manifest(files: dict[str, bytes]) -> dict | None:
    """What the package gives the acl backend: its runtime, op-api library and entry points."""
    op_api = f"{ACL_DIR}/lib/libcust_opapi.so"
    if any(name.startswith("custom_opp_") and name.endswith(".run") for name in files):
        return {
            "runtime": "cann",
            "installer": next(n for n in sorted(files) if n.startswith("custom_opp_")),
            # Where the installer puts it; the agent finds it through CANN's variables.
            "op_api": "$ASCEND_OPP_PATH/vendors/customize/op_api/lib/libcust_opapi.so",
            "exports": list(ACL_EXPORTS),
        }
    if op_api not in files:
        return None
    return {
        "runtime": "emulated",
        "lib_dir": f"{ACL_DIR}/lib",
        "op_api": op_api,
        "exports": list(ACL_EXPORTS),
    }


# What op/ascendc/build.sh reads, under op/: the source package a CANN build host builds from.
SOURCE_PATHS = ("ascendc", "tiling", "VERSION")
SOURCE_SKIP = ("build_out", "__pycache__")


def source_files(source_dir: str | Path | None = None) -> dict[str, bytes]:
    """The operator's sources a CANN build needs, as op/<path> -> bytes."""
    root = _op_dir(source_dir)
    files: dict[str, bytes] = {}
    for rel in SOURCE_PATHS:
        path = root / rel
        found = [path] if path.is_file() else sorted(path.rglob("*"))
        for f in found:
            if f.is_file() and not any(part in SOURCE_SKIP for part in f.parts):
                files[f"op/{f.relative_to(root).as_posix()}"] = f.read_bytes()
    return files


def source_package(out_dir: str | Path = "dist/op") -> Path:
    """logsoftmaxgrad-<version>-source.tar.gz: the sources of the CANN package, built on a host
    with CANN (farm/pool/cann_build.py); byte for byte the same for the same sources, so its
    sha256 names them."""
    files = source_files()
    files["manifest.json"] = (
        json.dumps(
            {
                "name": PACKAGE_NAME,
                "version": op_version(),
                "target": "source",
                **git_state(),
                "files": file_entries(files),
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    ).encode()
    out = Path(out_dir) if Path(out_dir).is_absolute() else ROOT / out_dir
    return write_archive(out / f"{PACKAGE_NAME}-{op_version()}-source.tar.gz", files)


def cann_here() -> bool:
    """Whether this machine has the CANN toolkit to build the ascend target (ASCEND_HOME_PATH)."""
    home = os.environ.get("ASCEND_HOME_PATH", "")
    return bool(home) and Path(home).is_dir()


def archive_name(
    target: str,
    plant_bug: str = "",
    source_dir: str | Path | None = None,
    arch: str | None = None,
) -> str:
    """logsoftmaxgrad-<version>-<target>[-bug-<bug>].tar.gz for this machine's architecture,
    with -<arch> before .tar.gz for another (logsoftmaxgrad-0.1.0-twin-aarch64.tar.gz)."""
    bug = f"-bug-{plant_bug}" if plant_bug else ""
    return f"{PACKAGE_NAME}-{op_version(source_dir)}-{target}{bug}{_arch_suffix(arch)}.tar.gz"


def bug_in_archive(name: str) -> str:
    """The bug planted in the package an archive_name names ("" for the real operator)."""
    stem = Path(name).name.removesuffix(".tar.gz")
    for bug in PLANT_BUGS:
        if bug and (stem.endswith(f"-bug-{bug}") or f"-bug-{bug}-" in stem):
            return bug
    return ""


def headers(target: str, source_dir: str | Path | None = None) -> tuple[Path, ...]:
    """The C ABI headers the package of `target` ships (HEADERS), from `source_dir`'s tree."""
    if source_dir is None:
        return HEADERS[target]
    return tuple(_op_dir(source_dir) / h.relative_to(OP_DIR) for h in HEADERS[target])


def _ascend_files() -> dict[str, bytes]:
    """Run op/ascendc/build.sh (needs the CANN toolkit) and collect what it produced."""
    out = ROOT / "build" / "ascend"
    if out.exists():
        shutil.rmtree(out)
    proc = subprocess.run(
        ["bash", str(OP_DIR / "ascendc" / "build.sh"), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()
        raise BuildError(f"op/ascendc/build.sh failed: {lines[-1]}")
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    if not files:
        raise BuildError(f"op/ascendc/build.sh succeeded but left nothing in {out}")
    return files


def build_package(
    target: str = DEFAULT_TARGET,
    out_dir: str | Path = "dist/op",
    plant_bug: str = "",
    build_dir: str | Path | None = None,
    source_dir: str | Path | None = None,
    arch: str | None = None,
) -> Path:
    """Build the operator for `target` and write its archive; returns the archive's path.

    ascendc-cpu: the real Ascend C kernel and host tiling on the CPU emulation (the default).
    twin: the CPU twin. (build_dir defaults to build/<target>, where the native backend looks.)
    ascend: the Ascend C package via op/ascendc/build.sh; fails clearly without CANN.

    source_dir: another tree's op/ directory to build instead of this checkout's (ascendc-cpu
    and twin; needs a build_dir of its own); its version, headers, SoC table and git commit go
    into the archive and its manifest.

    arch: the CPU architecture (ARCHES; None: this machine's). ascendc-cpu and twin cross compile
    for another (build_native), into an archive named with -<arch> (archive_name); ascend builds
    where CANN is, for that machine only. The manifest says the arch of every package.
    """
    if target not in TARGETS:
        raise BuildError(f"target {target!r}: use one of {TARGETS}")
    arch = check_arch(arch)
    if target not in NATIVE_TARGETS and arch != HOST_ARCH:
        raise BuildError(
            f"target {target} is built by CANN's toolchain where CANN is installed, for that "
            f"machine's architecture ({HOST_ARCH} here), not {arch}: run farm build --target "
            f"{target} on an {arch} machine with the CANN toolkit"
        )
    if target in NATIVE_TARGETS:
        lib = build_native(target, build_dir, plant_bug=plant_bug, source_dir=source_dir, arch=arch)
        files = {f"lib/{LIB_NAMES[target]}": lib.read_bytes()}
        files.update({f"include/{h.name}": h.read_bytes() for h in headers(target, source_dir)})
        if target == "ascendc-cpu" and not plant_bug and source_dir is None:
            files.update(acl_files(lib.parent))
    else:
        if plant_bug:
            raise BuildError("plant_bug applies to the ascendc-cpu and twin targets only")
        if source_dir is not None:
            raise BuildError("source_dir applies to the ascendc-cpu and twin targets only")
        files = _ascend_files()
    files["manifest.json"] = (
        json.dumps(manifest(target, files, plant_bug, source_dir, arch), indent=2, sort_keys=True)
        + "\n"
    ).encode()
    out_dir = Path(out_dir)
    out_dir = out_dir if out_dir.is_absolute() else ROOT / out_dir
    return write_archive(out_dir / archive_name(target, plant_bug, source_dir, arch), files)


# -- the self-test, on any architecture -------------------------------------------------------

# The C ABI self-test (op/tests/abi_selftest.cpp): a driver of a few real calls per library,
# built only on request, into <build dir>/tests/ (op/tests/abi_selftest.cmake).
SELFTEST_DIR = "tests"
ACL_EXAMPLE = "test_aclnn_log_softmax_grad"  # the aclnn example (lsg_acl_example), <build>/acl/
SELFTEST_TIMEOUT = 300.0


def selftest_target(target: str) -> str:
    """The CMake target of `target`'s self-test: lsg_abi_selftest_twin, ..._ascendc_cpu."""
    return "lsg_abi_selftest_" + target.replace("-", "_")


def run_for_arch(
    arch: str | None,
    cmd: list[str],
    env: dict[str, str] | None = None,
    timeout: float = SELFTEST_TIMEOUT,
) -> tuple[bool, str]:
    """Run a program built for `arch` here, natively or under qemu user-mode emulation
    (emulator); `env` goes to the program (qemu's -E), not to qemu. (ok, the command line and
    what it printed)."""
    prefix = emulator(check_arch(arch))
    run_env = dict(os.environ)
    if prefix:
        prefix = prefix + [arg for k, v in (env or {}).items() for arg in ("-E", f"{k}={v}")]
    else:
        run_env.update(env or {})
    full = prefix + cmd
    shown = " ".join([*(f"{k}={v}" for k, v in (env or {}).items() if not prefix), *full])
    try:
        proc = subprocess.run(full, env=run_env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"$ {shown}\ntimed out after {timeout:.0f} s\n"
    except OSError as exc:
        return False, f"$ {shown}\n{exc}\n"
    tail = "" if proc.returncode == 0 else f"(exit {proc.returncode})\n"
    return proc.returncode == 0, f"$ {shown}\n{proc.stdout}{proc.stderr}{tail}"


def cross_selftest(
    target: str = DEFAULT_TARGET,
    arch: str | None = None,
    build_dir: str | Path | None = None,
    library: str | Path | None = None,
) -> tuple[bool, str]:
    """Build `target`'s library and its C ABI self-test for `arch` (None: this machine's) and run
    the self-test: natively, or under qemu-<arch> -L /usr/<triple> for another architecture.
    (ok, output). The driver makes a few real calls (every schedule, float32 and float16, a
    rejection) and checks each against a float64 reference of its own; it exits non-zero naming
    the call that failed. `library`: run it on that liblsg_*.so instead of the one it was linked
    with (a packaged one: LD_LIBRARY_PATH, read before the driver's RUNPATH)."""
    if target not in NATIVE_TARGETS:
        raise BuildError(f"target {target!r} has no C ABI library: use one of {NATIVE_TARGETS}")
    arch = check_arch(arch)
    emulator(arch)  # qemu missing: say so before building anything
    lib = build_native(target, build_dir, arch=arch)
    cmake = cmake_executable()
    with _locked(lib.parent):
        _run(
            [cmake, "--build", str(lib.parent), "--target", selftest_target(target)],
            "cmake build",
            env={**os.environ, "LC_ALL": "C"},
        )
    env = {}
    if library is not None:
        library = Path(library).resolve()
        if library.name != LIB_NAMES[target]:
            raise BuildError(f"{library}: the {target} self-test loads {LIB_NAMES[target]}")
        env["LD_LIBRARY_PATH"] = str(library.parent)
    exe = lib.parent / SELFTEST_DIR / selftest_target(target)
    return run_for_arch(arch, [str(exe)], env)


def acl_example_selftest(
    arch: str | None = None, build_dir: str | Path | None = None
) -> tuple[bool, str]:
    """Build the emulated real kernel with the emulated ACL runtime for `arch` and run the aclnn
    example (op/ascendc/examples) on it, natively or under qemu: (ok, output). Needs the genuine
    ACL headers (farm.pool.acl_sdk)."""
    if not acl_sdk.present():
        raise BuildError(
            "the aclnn example is built against the genuine ACL headers, which are not here: "
            "python -m farm.pool.acl_sdk"
        )
    arch = check_arch(arch)
    emulator(arch)  # qemu missing: say so before building anything
    acl = build_native("ascendc-cpu", build_dir, arch=arch).parent / ACL_DIR
    return run_for_arch(arch, [str(acl / ACL_EXAMPLE)], {"LD_LIBRARY_PATH": str(acl / "lib")})


# -- sanitizers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SanitizeReport:
    returncode: int
    output: str
    calls: int

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not _sanitizer_report(self.output)


def _sanitizer_report(output: str) -> bool:
    return any(mark in output for mark in ("Sanitizer", "runtime error:"))


def libasan_path() -> str:
    compiler = os.environ.get("CXX") or shutil.which("g++") or "gcc"
    proc = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = proc.stdout.strip()
    if proc.returncode != 0 or not os.path.isabs(path) or not os.path.exists(path):
        raise BuildError(f"libasan.so not found through {compiler} -print-file-name")
    return os.path.realpath(path)


def sanitize_check(
    matrix: str | None = None,
    build_dir: str | Path | None = None,
    timeout: float = 600,
    overflow_probe: bool = False,
    target: str = "twin",
) -> SanitizeReport:
    """Build `target`'s library (twin or ascendc-cpu) with LSG_SANITIZE=ON and drive it from a
    Python subprocess with libasan preloaded.  The calls are a fixed representative set, plus
    every case of `matrix` (a tier of suites.matrix) when given.  overflow_probe adds one call that
    lies about a buffer's size, to show that the harness reports what the sanitizers find (the
    report is then not ok)."""
    lib = build_native(target, build_dir, sanitize=True)
    env = {
        **os.environ,
        "LD_PRELOAD": libasan_path(),
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "LSG_NATIVE_LIB": str(lib),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [sys.executable, "-m", "farm.pool.build", "--drive"] + (
        ["--matrix", matrix] if matrix else []
    )
    cmd += ["--overflow-probe"] if overflow_probe else []
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    found = re.search(r"sanitize driver: (\d+) calls", output)
    return SanitizeReport(proc.returncode, output, int(found[1]) if found else 0)


def _driver_calls() -> Iterator[tuple[str, dict]]:
    """(label, keyword arguments of farm.agent.backends.native.run) over schedules, dtypes,
    chunking, ranks, strided views, empty tensors, threads and every rejection, on both
    families."""
    shapes = [
        ((3, 1, 70), (1,)),  # NO_REDUCE
        ((2, 20000), (-1,)),  # REDUCE_TAIL, 3 chunks with a tail
        ((50, 37), (-1,)),  # REDUCE_TAIL, more rows than cores
        ((2, 7, 33), (1,)),  # REDUCE_MID
        ((1, 3, 20001), (1,)),  # REDUCE_MID, chunked columns with a tail
        ((3, 9000), (0,)),  # REDUCE_MID, d0 = 1
        ((), (-1,)),  # rank 0
        ((2, 1, 2, 1, 3, 1, 2, 2), (2, 3, 4)),  # rank 8, an axis list
        ((0, 5), (-1,)),
        ((4, 0, 3), (1,)),  # empty
    ]
    for soc in (representative_soc(family).name for family in FAMILIES):
        for dtype in ("float32", "float16", "bfloat16"):
            for shape, axes in shapes:
                for strided in (False, True):
                    yield (
                        f"{soc} {dtype} {shape} {axes} strided={strided}",
                        dict(
                            shape=shape, dtype=dtype, axes=axes, soc=soc, strided=strided, threads=2
                        ),
                    )
        bad = dict(shape=(4, 6), dtype="float32", axes=(-1,), soc=soc)
        yield f"{soc} missing", {**bad, "missing": "out"}
        yield f"{soc} int32", {**bad, "dtype": "int32"}
        yield f"{soc} dtype mismatch", {**bad, "out_dtype": "float16"}
        yield f"{soc} rank 9", {**bad, "shape": (1,) * 9}
        yield f"{soc} shape mismatch", {**bad, "out_shape": (6, 4)}
        yield f"{soc} axes empty", {**bad, "axes": ()}
        yield f"{soc} dim out of range", {**bad, "axes": (2,)}
        yield f"{soc} axes not consecutive", {**bad, "shape": (2, 3, 4), "axes": (0, 2)}
        yield f"{soc} bf16 empty", {**bad, "dtype": "bfloat16", "shape": (0, 3)}


def _plan_only_calls() -> Iterator[tuple[str, tuple]]:
    """Descriptors numpy cannot make, or that never get as far as running: plan() arguments."""
    from farm.agent.backends.native import Spec

    huge_empty = Spec((1 << 40, 1 << 40, 0), "float32")
    negative = Spec((2, -3), "float32")
    ok = Spec((2, 3), "float32")
    yield (
        "empty, merged extent past int64",
        (huge_empty, huge_empty, (2,), huge_empty, "Ascend910B1"),
    )
    yield "negative extent", (negative, negative, (-1,), negative, "Ascend910B1")
    yield "unknown SoC", (ok, ok, (-1,), ok, "Ascend999")
    yield "all missing", (None, None, (), None, "Ascend310B1")


def _run_matrix(tier: str) -> int:
    """Every case of a suites.matrix tier, with the inputs the agent makes and its backend call."""
    from farm.agent.backends import native
    from farm.agent.execute import make_call_inputs
    from golden.soc import representative_soc
    from suites import matrix

    cases = matrix.expand(tier)
    for case in cases:
        c = case.to_dict()
        dy, y = make_call_inputs(c)
        result = native.run_call(
            dy,
            y,
            case.axes,
            representative_soc(case.family).name,
            out_dtype=case.out_dtype or case.dtype,
            out_shape=case.out_shape,
            missing=case.missing,
            api=case.api,
        )
        print(f"{case.id}: {result.status} {result.reason}", flush=True)
    return len(cases)


def _overflow_probe() -> None:
    """Run the library on a tensor that claims 2000 elements of a 1000-element buffer."""
    import numpy as np

    from farm.agent.backends import native

    buf = np.zeros(1000, dtype=np.float32)  # 4000 bytes: its own malloc, which ASan guards
    lie = np.lib.stride_tricks.as_strided(buf, shape=(2000,), strides=(4,))
    native.run(lie, lie, (-1,), "Ascend910B1", threads=1)


def _drive(tier: str | None, overflow_probe: bool = False) -> int:
    """The subprocess side of sanitize_check: make each call's inputs and run it."""
    from farm.agent.backends import native
    from golden.dtypes import numpy_dtype
    from golden.inputs import make_inputs

    plans = list(_plan_only_calls())
    for label, args in plans:
        print(f"{label}: {native.plan(*args).reason}", flush=True)
    calls = list(_driver_calls())
    for label, kw in calls:
        dy, y = make_inputs(kw["shape"], kw["dtype"], kw["axes"], "uniform", "normal", seed=1)
        out_dtype = numpy_dtype(kw["out_dtype"]) if kw.get("out_dtype") else None
        result = native.run(
            dy,
            y,
            kw["axes"],
            kw["soc"],
            out_dtype=out_dtype,
            out_shape=kw.get("out_shape"),
            missing=kw.get("missing"),
            strided=kw.get("strided", False),
            threads=kw.get("threads", 0),
        )
        print(f"{label}: {result.status} {result.reason}", flush=True)
    count = len(plans) + len(calls) + (_run_matrix(tier) if tier else 0)
    if overflow_probe:
        _overflow_probe()
    print(f"sanitize driver: {count} calls", flush=True)
    return 0


# -- command line ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """`farm build`: build and package the operator into dist/op (default target: ascendc-cpu,
    the real Ascend C kernel on the CPU emulation; twin: the CPU twin; ascend: the CANN package)."""
    parser = CommandParser(prog="farm build", description=main.__doc__)
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default=DEFAULT_TARGET,
        help="; ".join(describe(t) for t in TARGETS),
    )
    parser.add_argument(
        "--arch",
        type=normalise_arch,
        choices=ARCHES,
        default=None,
        help=f"the CPU architecture to build for (default: this machine's, {HOST_ARCH}); "
        "ascendc-cpu and twin cross compile for another with Debian's toolchain (apt-get install "
        + " ".join(CROSS_PACKAGES[a] for a in ARCHES if a != HOST_ARCH)
        + "; op/cmake/*.cmake) into build/<target>-<arch> and "
        "dist/op/logsoftmaxgrad-<version>-<target>-<arch>.tar.gz",
    )
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="after packaging ascendc-cpu or twin, run the C ABI self-test on the packaged "
        "library (op/tests/abi_selftest.cpp; under qemu-user for another arch), and for "
        "ascendc-cpu with the emulated ACL runtime the aclnn example too",
    )
    parser.add_argument(
        "--out",
        type=lambda text: Path(text).resolve(),  # a path given here is the shell's: its cwd's
        default=ROOT / "dist" / "op",
        help="directory of the archive (default: dist/op of this checkout)",
    )
    parser.add_argument(
        "--plant-bug",
        choices=PLANT_BUGS,
        default="",
        help="build the operator with a known bug (for testing the farm); the twin plants "
        + ", ".join(TWIN_PLANT_BUGS[1:])
        + "; ascendc-cpu every one (op/ascendc_cpu/planted_bugs.json)",
    )
    parser.add_argument(
        "--sanitize-check",
        action="store_true",
        help="build the target's library with ASan/UBSan and drive it; no package",
    )
    parser.add_argument("--matrix", help="with --sanitize-check: also run this tier's cases")
    parser.add_argument("--quiet", action="store_true", help="print only errors")
    parser.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--overflow-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        return _drive(args.matrix, args.overflow_probe)
    try:
        if args.sanitize_check:
            if args.arch not in (None, HOST_ARCH):
                raise BuildError(
                    f"--sanitize-check drives the library here: it builds for this machine's "
                    f"architecture only ({HOST_ARCH}), not {args.arch}"
                )
            if args.target not in NATIVE_TARGETS:
                raise BuildError(f"--sanitize-check: target {args.target} has no library to drive")
            report = sanitize_check(args.matrix, target=args.target)
            if not report.ok:
                print(report.output[-4000:], file=sys.stderr)
                print(f"sanitize check FAILED (exit {report.returncode})", file=sys.stderr)
                return 1
            if not args.quiet:
                print(f"sanitize check ok: {report.calls} calls, no sanitizer report")
            return 0
        if args.self_test and args.target not in NATIVE_TARGETS:
            raise BuildError(f"--self-test: target {args.target} has no C ABI library to test")
        if args.self_test and args.plant_bug:
            raise BuildError("--self-test checks the real operator: drop --plant-bug")
        make_output_dir(args.out, "--out")  # before the build, not after it
        path = build_package(args.target, args.out, args.plant_bug, arch=args.arch)
        if not args.quiet:
            print(
                f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  "
                f"sha256 {sha256_bytes(path.read_bytes())}"
            )
        if args.self_test:
            return _self_test(path, args.target, check_arch(args.arch), args.quiet)
    except BuildError as exc:
        print(f"farm build: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def _self_test(package: Path, target: str, arch: str, quiet: bool) -> int:
    """`farm build --self-test`: the C ABI self-test on the library of `package` (and the aclnn
    example where the package has the emulated ACL runtime); 1 when one fails."""
    with tempfile.TemporaryDirectory(prefix="lsg-selftest-") as tmp:
        with tarfile.open(package, "r:gz") as tar:
            member = tar.extractfile(f"lib/{LIB_NAMES[target]}")
            if member is None:
                raise BuildError(f"{package} has no lib/{LIB_NAMES[target]}")
            library = Path(tmp) / LIB_NAMES[target]
            library.write_bytes(member.read())
        runs = [("C ABI self-test", cross_selftest(target, arch, library=library))]
    if target == "ascendc-cpu" and package_manifest(package).get("acl"):
        runs.append(("aclnn example", acl_example_selftest(arch)))
    failed = [what for what, (ok, _) in runs if not ok]
    for _, (ok, output) in runs:
        if not ok or not quiet:
            print(
                output,
                end="" if output.endswith("\n") else "\n",
                file=sys.stdout if ok else sys.stderr,
            )
    if failed:
        print(f"farm build: {' and '.join(failed)} FAILED on {arch}", file=sys.stderr)
        return 1
    if not quiet:
        print(f"self-test ok on {arch}: " + ", ".join(what for what, _ in runs))
    return 0


if __name__ == "__main__":  # `python -m farm.pool.build` is `farm build`: its mistakes one line too
    from farm.cli import main as farm

    sys.exit(farm(["build", *sys.argv[1:]]))
