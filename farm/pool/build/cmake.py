"""The CMake builds of the C ABI libraries (ascendc-cpu, twin) for any architecture: one build at a
time per build directory, and none at all when nothing changed since the last (BuildStamp).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from farm.agent.machine import ELF_MACHINES, elf_arch_of
from farm.pool import acl_sdk
from farm.pool.build.arches import (
    HOST_ARCH,
    check_arch,
    cross_compiler,
    toolchain_file,
)
from farm.pool.build.bugs import PLANT_BUGS, TWIN_PLANT_BUGS
from farm.pool.build.locations import (
    ACL_CMAKE_TARGET,
    ACL_DIR,
    ACL_HEADER,
    ACL_LIBS,
    ACL_OP_API_TARGET,
    CMAKE_TARGETS,
    LIB_NAMES,
    default_build_dir,
    op_sources,
    planted_dir,
)
from farm.util import announce
from farm.util.errors import BuildError
from farm.util.paths import REPO_ROOT as ROOT
from farm.util.targets import DEFAULT_TARGET, NATIVE_TARGETS


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
def locked(build_dir: Path) -> Iterator[None]:
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


def run_step(cmd: list[str], what: str, cwd: Path = ROOT, env: dict | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-30:])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return output


def emulation_present(source_dir: str | Path | None = None) -> bool:
    """Whether the CPU emulation of Ascend C (the kernel side) is in the checkout."""
    emu = op_sources(source_dir) / "ascendc_cpu"
    return (emu / "include" / "kernel_operator.h").is_file() and any((emu / "src").glob("*.cpp"))


def build_native(
    target: str = DEFAULT_TARGET,
    build_dir: str | Path | None = None,
    plant_bug: str = "",
    sanitize: bool = False,
    source_dir: str | Path | None = None,
    arch: str | None = None,
    coverage: bool = False,
    acl: bool = False,
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
    the same sources give the same bytes. No sanitizer build for another architecture.

    `coverage`: the real sources instrumented for gcov (LSG_COVERAGE; ascendc-cpu, this machine,
    no planted bug), with its emulated ACL runtime, into build/ascendc-cpu-coverage (`farm
    coverage`). Its counters are written under that directory's paths, so its package runs on
    this machine's hosts only.

    `acl`: with `source_dir`, that tree's emulated ACL runtime and op-api too (its aclnn layer,
    host code and kernel), in build_dir/acl/lib (`farm mutate --backend acl`); this checkout's
    own build gets them anyway where the genuine headers are."""
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
    if coverage and (target != "ascendc-cpu" or plant_bug or sanitize or cross or source_dir):
        raise BuildError(
            "the coverage build is of this checkout's ascendc-cpu target, for this machine, with "
            "no planted bug or sanitizer"
        )
    if acl and (target != "ascendc-cpu" or sanitize or cross):
        raise BuildError(
            "the emulated ACL runtime is built with the ascendc-cpu target, for this machine, "
            "without the sanitizer"
        )
    if acl and not acl_sdk.present():
        raise BuildError(
            f"the emulated ACL runtime needs the genuine ACL headers in {acl_sdk.sdk_dir()}: "
            "fetch them with python -m farm.pool.acl_sdk"
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
        Path(build_dir)
        if build_dir
        else default_build_dir(plant_bug, sanitize, target, arch, coverage=coverage)
    )
    build_dir = build_dir if build_dir.is_absolute() else ROOT / build_dir
    # The shared planted directory builds the bug as its own target (LSG_PLANT_ALL); any other
    # directory builds the one library with the bug planted.
    shared = target == "ascendc-cpu" and bool(plant_bug) and build_dir == planted_dir(arch)
    cmake_target = f"{CMAKE_TARGETS[target]}_{plant_bug}" if shared else CMAKE_TARGETS[target]
    lib = (build_dir / "planted-lib" / plant_bug if shared else build_dir) / LIB_NAMES[target]
    # The emulated kernel of this checkout also gets its ACL path, where the genuine headers are,
    # a planted bug's with the same bug (in the shared directory: beside its library); not
    # sanitized or bisected builds: they run on the native backend. Another tree's with `acl`.
    acl_target = f"lsg_acl_planted_{plant_bug}" if shared else ACL_CMAKE_TARGET
    if acl and source_dir is not None:
        acl_target = ACL_OP_API_TARGET
    acl = acl or (target == "ascendc-cpu" and not (sanitize or source_dir) and acl_sdk.present())
    targets = [cmake_target] + ([acl_target] if acl else [])
    cmake = cmake_executable()
    env = {**os.environ, "LC_ALL": "C"}
    configure = [
        cmake,
        "-S",
        str(op_sources(source_dir)),
        "-B",
        str(build_dir),
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DLSG_PLANT_BUG={'' if shared else plant_bug}",
        f"-DLSG_PLANT_ALL={'ON' if shared else 'OFF'}",
        f"-DLSG_SANITIZE={'ON' if sanitize else 'OFF'}",
        f"-DLSG_COVERAGE={'ON' if coverage else 'OFF'}",
        f"-DLSG_ACL_SDK={acl_sdk.sdk_dir() if acl else ''}",
        *cross_args,
    ]
    acl_libs = (lib.parent if shared else build_dir) / ACL_DIR / "lib"
    outputs = [lib] + ([acl_libs / name for name in ACL_LIBS] if acl else [])
    inputs = [op_sources(source_dir)] + ([acl_sdk.sdk_dir()] if acl else [])
    with locked(build_dir):
        stamp = BuildStamp(build_dir / f".farm-built-{cmake_target}.json", configure, targets)
        sources = stamp.sources(inputs)
        if not stamp.current(sources, outputs):
            announce.worked()  # not "(cached)"
            run_step(configure, "cmake configure", env=env)
            run_step(
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
