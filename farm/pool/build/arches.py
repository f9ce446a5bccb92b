"""The CPU architectures a build is for: this machine's (HOST_ARCH) natively, the other (ARCHES)
cross compiled with Debian's toolchain through a CMake toolchain file (op/cmake/<triple>.cmake),
and how to run what was built for it here (qemu user-mode emulation). A missing cross compiler or
qemu is a BuildError naming the package to install.
"""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

from farm.agent.hostops import normalise_arch
from farm.util.errors import BuildError
from farm.util.paths import REPO_ROOT as ROOT

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
TOOLCHAIN_DIR = ROOT / "op" / "cmake"  # op/cmake (OP_DIR: farm/pool/build/locations.py)


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
