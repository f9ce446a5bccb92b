"""The C ABI self-test (op/tests/abi_selftest.cpp) and the aclnn example, on any architecture:
built for `arch`, run natively or under qemu-<arch> -L /usr/<triple> for another
(`farm build --arch aarch64 --self-test`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from farm.pool import acl_sdk
from farm.pool.build.arches import check_arch, emulator
from farm.pool.build.cmake import build_native, cmake_executable, locked, run_step
from farm.pool.build.locations import ACL_DIR, LIB_NAMES
from farm.pool.deploy import package_manifest
from farm.util.errors import BuildError
from farm.util.targets import DEFAULT_TARGET, NATIVE_TARGETS

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
    with locked(lib.parent):
        run_step(
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


def selftest_package(package: Path, target: str, arch: str, quiet: bool) -> int:
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
