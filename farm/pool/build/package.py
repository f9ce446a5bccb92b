"""The operator package: the library (or the CANN build's output), its headers and manifest.json
(name, version, git commit, target, arch, what the library is, SoC profiles, every file with its
sha256) in one archive, dist/op/logsoftmaxgrad-<version>-<target>[-bug-X][-<arch>].tar.gz; and
the source package a CANN build host builds from (farm/pool/cann_build.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from farm.pool.build.arches import HOST_ARCH, check_arch
from farm.pool.build.archive import file_entries, write_archive
from farm.pool.build.cmake import acl_files, build_native
from farm.pool.build.locations import (
    ACL_DIR,
    ACL_EXPORTS,
    LIB_NAMES,
    OP_DIR,
    PACKAGE_NAME,
    arch_suffix,
    headers,
    op_sources,
    op_version,
)
from farm.util import announce
from farm.util.errors import BuildError
from farm.util.paths import REPO_ROOT as ROOT
from farm.util.targets import DEFAULT_TARGET, DESCRIPTIONS, NATIVE_TARGETS, TARGETS


def soc_profiles(source_dir: str | Path | None = None) -> list[dict]:
    """The SoC table compiled into the library (op/tiling/soc_profiles.inc)."""
    pattern = re.compile(
        r'^LSG_SOC\("([\w-]+)",\s*"(\w+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(true|false)\)', re.M
    )
    text = (op_sources(source_dir) / "tiling" / "soc_profiles.inc").read_text()
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
    cwd = ROOT if source_dir is None else op_sources(source_dir)

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
        except OSError:
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "op" if source_dir is None else ".")
    return {"git_commit": commit or "unknown", "git_dirty": bool(status)}


def manifest(
    target: str,
    files: dict[str, bytes],
    plant_bug: str = "",
    source_dir: str | Path | None = None,
    arch: str | None = None,
    coverage: bool = False,
) -> dict:
    extra = {"coverage": True} if coverage else {}  # a gcov build: farm coverage's own
    return {
        "name": PACKAGE_NAME,
        "version": op_version(source_dir),
        "target": target,
        "arch": check_arch(arch),
        "implementation": DESCRIPTIONS.get(target, ""),
        "library": next((n for n in sorted(files) if n.startswith("lib/")), ""),
        "acl": acl_manifest(files),
        **(git_state() if source_dir is None else git_state(source_dir)),
        "plant_bug": plant_bug,
        "soc_profiles": soc_profiles(source_dir),
        "files": file_entries(files),
        **extra,
    }


def acl_manifest(files: dict[str, bytes]) -> dict | None:
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
    root = op_sources(source_dir)
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
    coverage: bool = False,
) -> str:
    """logsoftmaxgrad-<version>-<target>[-bug-<bug>].tar.gz for this machine's architecture,
    with -<arch> before .tar.gz for another (logsoftmaxgrad-0.1.0-twin-aarch64.tar.gz); the
    coverage build's is ...-<target>-coverage.tar.gz."""
    bug = f"-bug-{plant_bug}" if plant_bug else ""
    bug += "-coverage" if coverage else ""
    return f"{PACKAGE_NAME}-{op_version(source_dir)}-{target}{bug}{arch_suffix(arch)}.tar.gz"


def ascend_files() -> dict[str, bytes]:
    """Run op/ascendc/build.sh (needs the CANN toolkit) and collect what it produced."""
    announce.worked()
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
    coverage: bool = False,
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

    coverage: the gcov build of ascendc-cpu (build_native's coverage), ...-coverage.tar.gz.
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

    def line() -> str:
        return build_line(target, arch, plant_bug, source_dir) + ", gcov" * coverage

    with announce.announced(line):
        return _build_package(
            target, Path(out_dir), plant_bug, build_dir, source_dir, arch, coverage
        )


def build_line(target: str, arch: str, plant_bug: str, source_dir: str | Path | None) -> str:
    """What a build's first line names: "ascendc-cpu x86_64", with its planted bug and, for
    another tree's sources, their commit ("twin aarch64, planted bug tail, at 1a2b3c4d5e6f")."""
    bug = f", planted bug {plant_bug}" if plant_bug else ""
    at = f", at {git_state(source_dir)['git_commit'][:12]}" if source_dir is not None else ""
    return f"{target} {arch}{bug}{at}"


def _build_package(
    target: str,
    out_dir: Path,
    plant_bug: str,
    build_dir: str | Path | None,
    source_dir: str | Path | None,
    arch: str,
    coverage: bool = False,
) -> Path:
    if target in NATIVE_TARGETS:
        lib = build_native(
            target,
            build_dir,
            plant_bug=plant_bug,
            source_dir=source_dir,
            arch=arch,
            coverage=coverage,
        )
        files = {f"lib/{LIB_NAMES[target]}": lib.read_bytes()}
        files.update({f"include/{h.name}": h.read_bytes() for h in headers(target, source_dir)})
        if target == "ascendc-cpu" and source_dir is None:
            files.update(acl_files(lib.parent))  # a planted bug's ACL path has the bug too
    else:
        if plant_bug:
            raise BuildError("plant_bug applies to the ascendc-cpu and twin targets only")
        if source_dir is not None:
            raise BuildError("source_dir applies to the ascendc-cpu and twin targets only")
        files = ascend_files()
    files["manifest.json"] = (
        json.dumps(
            manifest(target, files, plant_bug, source_dir, arch, coverage),
            indent=2,
            sort_keys=True,
        )
        + "\n"
    ).encode()
    out_dir = out_dir if out_dir.is_absolute() else ROOT / out_dir
    name = archive_name(target, plant_bug, source_dir, arch, coverage)
    return write_archive(out_dir / name, files)
