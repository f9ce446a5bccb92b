"""Where a build reads and writes: the operator's sources (op/, or another tree's), the build
directory of each target, planted bug and architecture, and the names of what a build makes (the
libraries, their CMake targets, the emulated ACL runtime's files, the C ABI headers).
"""

from __future__ import annotations

from pathlib import Path

from farm.agent.backends import acl_api
from farm.pool.build.arches import HOST_ARCH, check_arch
from farm.util.paths import REPO_ROOT as ROOT

OP_DIR = ROOT / "op"
PACKAGE_NAME = "logsoftmaxgrad"
LIB_NAMES = {"twin": "liblsg_twin.so", "ascendc-cpu": "liblsg_ascendc_cpu.so"}
LIB_NAME = LIB_NAMES["twin"]
CMAKE_TARGETS = {"twin": "lsg_twin", "ascendc-cpu": "lsg_ascendc_cpu"}
# The emulated ACL runtime and the custom operator's op-api on it (op/acl_emu/acl_emu.cmake), built
# with the real ascendc-cpu library where the genuine ACL headers are (farm/pool/acl_sdk.py); the
# package carries them under ACL_DIR for the agent's acl backend.
ACL_CMAKE_TARGET = "lsg_acl_emu"
# Only the libraries the acl backend loads (the op-api and the runtime it links): another source
# tree's build (farm mutate) relinks these, not the example and the variants, for each edit.
ACL_OP_API_TARGET = "lsg_acl_cust_opapi"
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
# lsg_types.h includes reasons.def (enum lsg_reason), so the table ships beside it.
_ABI_HEADERS = (
    OP_DIR / "twin" / "lsg_twin.h",
    OP_DIR / "tiling" / "lsg_types.h",
    OP_DIR / "tiling" / "reasons.def",
)
HEADERS = {
    "twin": _ABI_HEADERS,
    "ascendc-cpu": _ABI_HEADERS + (OP_DIR / "ascendc_cpu" / "abi" / "lsg_ascendc_cpu.h",),
}
# The fixed metadata of every archive entry.


def op_sources(source_dir: str | Path | None) -> Path:
    """The operator sources to build: this checkout's op/, or `source_dir` (another tree's op/)."""
    return OP_DIR if source_dir is None else Path(source_dir).resolve()


def op_version(source_dir: str | Path | None = None) -> str:
    return (op_sources(source_dir) / "VERSION").read_text().strip()


def arch_suffix(arch: str | None) -> str:
    """Nothing for this machine's architecture, "-<arch>" for another."""
    arch = check_arch(arch)
    return "" if arch == HOST_ARCH else f"-{arch}"


def default_build_dir(
    plant_bug: str = "",
    sanitize: bool = False,
    target: str = "twin",
    arch: str | None = None,
    coverage: bool = False,
) -> Path:
    """build/<target> for the real library (where the native backend looks), else a variant;
    every planted bug of the emulated real kernel shares one, PLANTED_DIR. A build for another
    architecture than this machine's has its own, with "-<arch>" appended (build/twin-aarch64).
    The coverage build (gcov) is build/<target>-coverage."""
    if coverage:
        return ROOT / "build" / f"{target}-coverage"
    if target == "ascendc-cpu" and plant_bug and not sanitize:
        return planted_dir(arch)
    name = target + (f"-{plant_bug}" if plant_bug else "") + ("-sanitize" if sanitize else "")
    return ROOT / "build" / (name + arch_suffix(arch))


# One build directory for every planted bug of the emulated real kernel (CMake LSG_PLANT_ALL): each
# is its own target there, sharing the object files of the sources it does not edit, so that
# building all of them costs little more than the edited files.
PLANTED_DIR = ROOT / "build" / "ascendc-cpu-planted"


def planted_dir(arch: str | None = None) -> Path:
    """PLANTED_DIR for this machine's architecture; build/ascendc-cpu-planted-<arch> for another."""
    suffix = arch_suffix(arch)
    return PLANTED_DIR.with_name(PLANTED_DIR.name + suffix) if suffix else PLANTED_DIR


def headers(target: str, source_dir: str | Path | None = None) -> tuple[Path, ...]:
    """The C ABI headers the package of `target` ships (HEADERS), from `source_dir`'s tree."""
    if source_dir is None:
        return HEADERS[target]
    found = (op_sources(source_dir) / h.relative_to(OP_DIR) for h in HEADERS[target])
    # A tree from before the table of reasons (a commit bisected) has its enum in lsg_types.h.
    return tuple(h for h in found if h.name != "reasons.def" or h.is_file())
