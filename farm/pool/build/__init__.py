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

One module a job; this package re-exports their public names (`from farm.pool import build`):
    arches.py           the CPU architectures, cross compilers and qemu
    locations.py        the operator's sources, the build directories, what a build makes
    bugs.py             the planted bugs
    cmake.py            the CMake builds of the C ABI libraries (build_native), skipped when current
    archive.py          the reproducible tar.gz and its files' checksums
    package.py          the operator package and its manifest; the CANN source package
    selftest.py         the C ABI self-test and the aclnn example, natively or under qemu
    sanitize.py         the ASan/UBSan check; sanitize_driver.py, the subprocess it drives
    command.py          `farm build`; __main__.py, `python -m farm.pool.build`
"""

from __future__ import annotations

from farm.agent.hostops import normalise_arch
from farm.pool.build.arches import (
    ARCHES,
    CROSS_COMPILERS,
    CROSS_PACKAGES,
    HOST_ARCH,
    QEMU,
    QEMU_PACKAGE,
    TOOLCHAIN_DIR,
    TRIPLES,
    check_arch,
    cross_compiler,
    emulator,
    toolchain_file,
)
from farm.pool.build.archive import (
    ENTRY_MODE,
    ENTRY_MTIME,
    file_entries,
    rebuilt,
    sha256_bytes,
    write_archive,
)
from farm.pool.build.bugs import (
    ACLNN_BUGS,
    BUG_NAMES,
    BUG_TEXT,
    HOST_BUGS,
    KERNEL_FAULT_BUGS,
    KERNEL_NUMERIC_BUGS,
    PLANT_BUGS,
    PLANTED_BUGS_FILE,
    TWIN_PLANT_BUGS,
    bug_in_archive,
    bug_lines,
    plant_bug_help,
    planted_bugs,
)
from farm.pool.build.cmake import (
    BuildStamp,
    acl_files,
    build_ascendc_cpu,
    build_native,
    build_twin,
    cmake_executable,
    emulation_present,
)
from farm.pool.build.command import main
from farm.pool.build.locations import (
    ACL_CMAKE_TARGET,
    ACL_DIR,
    ACL_EXPORTS,
    ACL_HEADER,
    ACL_LIBS,
    CMAKE_TARGETS,
    HEADERS,
    LIB_NAME,
    LIB_NAMES,
    OP_DIR,
    PACKAGE_NAME,
    PLANTED_DIR,
    default_build_dir,
    headers,
    op_version,
    planted_dir,
)
from farm.pool.build.package import (
    SOURCE_PATHS,
    SOURCE_SKIP,
    archive_name,
    build_package,
    cann_here,
    git_state,
    manifest,
    soc_profiles,
    source_files,
    source_package,
)
from farm.pool.build.sanitize import SanitizeReport, libasan_path, sanitize_check
from farm.pool.build.selftest import (
    ACL_EXAMPLE,
    SELFTEST_DIR,
    SELFTEST_TIMEOUT,
    acl_example_selftest,
    cross_selftest,
    run_for_arch,
    selftest_package,
    selftest_target,
)
from farm.util.paths import REPO_ROOT as ROOT
from farm.util.targets import DEFAULT_TARGET, DESCRIPTIONS, NATIVE_TARGETS, TARGETS, describe

__all__ = [
    "ACLNN_BUGS",
    "ACL_CMAKE_TARGET",
    "ACL_DIR",
    "ACL_EXAMPLE",
    "ACL_EXPORTS",
    "ACL_HEADER",
    "ACL_LIBS",
    "ARCHES",
    "BUG_NAMES",
    "BUG_TEXT",
    "BuildStamp",
    "CMAKE_TARGETS",
    "CROSS_COMPILERS",
    "CROSS_PACKAGES",
    "DEFAULT_TARGET",
    "DESCRIPTIONS",
    "ENTRY_MODE",
    "ENTRY_MTIME",
    "HEADERS",
    "HOST_ARCH",
    "HOST_BUGS",
    "KERNEL_FAULT_BUGS",
    "KERNEL_NUMERIC_BUGS",
    "LIB_NAME",
    "LIB_NAMES",
    "NATIVE_TARGETS",
    "OP_DIR",
    "PACKAGE_NAME",
    "PLANTED_BUGS_FILE",
    "PLANTED_DIR",
    "PLANT_BUGS",
    "QEMU",
    "QEMU_PACKAGE",
    "ROOT",
    "SELFTEST_DIR",
    "SELFTEST_TIMEOUT",
    "SOURCE_PATHS",
    "SOURCE_SKIP",
    "SanitizeReport",
    "TARGETS",
    "TOOLCHAIN_DIR",
    "TRIPLES",
    "TWIN_PLANT_BUGS",
    "acl_example_selftest",
    "acl_files",
    "archive_name",
    "bug_in_archive",
    "bug_lines",
    "build_ascendc_cpu",
    "build_native",
    "build_package",
    "build_twin",
    "cann_here",
    "check_arch",
    "cmake_executable",
    "cross_compiler",
    "cross_selftest",
    "default_build_dir",
    "describe",
    "emulation_present",
    "emulator",
    "file_entries",
    "git_state",
    "headers",
    "libasan_path",
    "main",
    "manifest",
    "normalise_arch",
    "op_version",
    "plant_bug_help",
    "planted_bugs",
    "planted_dir",
    "rebuilt",
    "run_for_arch",
    "sanitize_check",
    "selftest_package",
    "selftest_target",
    "sha256_bytes",
    "soc_profiles",
    "source_files",
    "source_package",
    "toolchain_file",
    "write_archive",
]
