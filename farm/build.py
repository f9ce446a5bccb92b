"""Build the operator: the CPU twin library, and the versioned operator package.

    build_twin(build_dir, plant_bug="", sanitize=False) -> Path of liblsg_twin.so
    build_package(target="twin", out_dir="dist/op", plant_bug="") -> Path of the archive
    sanitize_check(matrix=None) -> SanitizeReport   (the twin under ASan/UBSan, driven from Python)
    main(argv) -> exit code                          (what `farm build` runs)

The archive dist/op/logsoftmaxgrad-<version>-<target>.tar.gz holds the library, its headers and
manifest.json (name, version, git commit, target, SoC profiles, every file with its sha256). The
same sources give the same archive byte for byte: sorted entries, fixed mtime/uid/gid/mode, gzip
mtime 0, and a library built without build paths in it (op/CMakeLists.txt).
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from farm.errors import BuildError
from farm.paths import REPO_ROOT as ROOT
from golden.soc import FAMILIES, representative_soc

OP_DIR = ROOT / "op"
LIB_NAME = "liblsg_twin.so"
PACKAGE_NAME = "logsoftmaxgrad"
# "" is the real operator; the others plant one known defect each (op/CMakeLists.txt LSG_PLANT_BUG,
# compiled as LSG_PLANT_BUG_<NAME>) for the farm's judging to catch; tests/op/test_planted_bugs.py
# pins what each one changes.
PLANT_BUGS = (
    "",
    "tail",  # the last chunk is moved in whole 32-byte blocks: its unaligned remainder is dropped
    "seed_noreduce",  # NO_REDUCE computes the seed's (dy - 1) * exp(y)
    "trunc_narrow",  # the output cast fp32 -> fp16/bf16 truncates instead of rounding to nearest
    "fp16_sum",  # sum(dy) is accumulated in fp16
    "drop_element",  # a reduction over d1 >= 4096 leaves its last element (line) out of the sum
    "strided_out_unwritten",  # a non-contiguous out is never written (no copy back)
)
TARGETS = ("twin", "ascend")
HEADERS = (OP_DIR / "twin" / "lsg_twin.h", OP_DIR / "tiling" / "lsg_types.h")
# The fixed metadata of every archive entry.
ENTRY_MTIME = 0
ENTRY_MODE = 0o644


def op_version() -> str:
    return (OP_DIR / "VERSION").read_text().strip()


def default_build_dir(plant_bug: str = "", sanitize: bool = False) -> Path:
    """build/twin for the real library (where the twin backend looks), else a variant dir."""
    name = "twin" + (f"-{plant_bug}" if plant_bug else "") + ("-sanitize" if sanitize else "")
    return ROOT / "build" / name


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


def _run(cmd: list[str], what: str, cwd: Path = ROOT, env: dict | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-30:])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return output


def build_twin(
    build_dir: str | Path | None = None, plant_bug: str = "", sanitize: bool = False
) -> Path:
    """Configure and build op/ (tiling + twin) with CMake; returns the path of liblsg_twin.so.

    Incremental: a second call on the same directory only rebuilds what changed.
    """
    if plant_bug not in PLANT_BUGS:
        raise BuildError(f"plant_bug {plant_bug!r}: use one of {PLANT_BUGS}")
    build_dir = Path(build_dir) if build_dir else default_build_dir(plant_bug, sanitize)
    build_dir = build_dir if build_dir.is_absolute() else ROOT / build_dir
    cmake = cmake_executable()
    env = {**os.environ, "LC_ALL": "C"}
    with _locked(build_dir):
        _run(
            [
                cmake,
                "-S",
                str(OP_DIR),
                "-B",
                str(build_dir),
                "-DCMAKE_BUILD_TYPE=Release",
                f"-DLSG_PLANT_BUG={plant_bug}",
                f"-DLSG_SANITIZE={'ON' if sanitize else 'OFF'}",
            ],
            "cmake configure",
            env=env,
        )
        _run(
            [cmake, "--build", str(build_dir), "-j", str(os.cpu_count() or 2)],
            "cmake build",
            env=env,
        )
    lib = build_dir / LIB_NAME
    if not lib.exists():
        raise BuildError(f"the build finished but {lib} is missing")
    return lib


# -- the package -------------------------------------------------------------------------------


def soc_profiles() -> list[dict]:
    """The SoC table compiled into the library (op/tiling/soc_profiles.inc)."""
    pattern = re.compile(
        r'^LSG_SOC\("(\w+)",\s*"(\w+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(true|false)\)', re.M
    )
    text = (OP_DIR / "tiling" / "soc_profiles.inc").read_text()
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


def git_state() -> dict:
    """The commit of the sources and whether op/ differs from it."""

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        except OSError:
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "op")
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two builds at once must not mix
    with (
        open(tmp, "wb") as out,
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz,
    ):
        gz.write(raw.getvalue())
    tmp.replace(path)
    return path


def manifest(target: str, files: dict[str, bytes], plant_bug: str = "") -> dict:
    return {
        "name": PACKAGE_NAME,
        "version": op_version(),
        "target": target,
        **git_state(),
        "plant_bug": plant_bug,
        "soc_profiles": soc_profiles(),
        "files": [
            {"path": name, "sha256": sha256_bytes(files[name]), "bytes": len(files[name])}
            for name in sorted(files)
        ],
    }


def archive_name(target: str, plant_bug: str = "") -> str:
    bug = f"-bug-{plant_bug}" if plant_bug else ""
    return f"{PACKAGE_NAME}-{op_version()}-{target}{bug}.tar.gz"


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
    target: str = "twin",
    out_dir: str | Path = "dist/op",
    plant_bug: str = "",
    build_dir: str | Path | None = None,
) -> Path:
    """Build the operator for `target` and write its archive; returns the archive's path.

    twin: the CPU twin (build_dir defaults to build/twin, where the twin backend looks).
    ascend: the Ascend C package via op/ascendc/build.sh; fails clearly without CANN.
    """
    if target not in TARGETS:
        raise BuildError(f"target {target!r}: use one of {TARGETS}")
    if target == "twin":
        lib = build_twin(build_dir, plant_bug=plant_bug)
        files = {f"lib/{LIB_NAME}": lib.read_bytes()}
        files.update({f"include/{h.name}": h.read_bytes() for h in HEADERS})
    else:
        if plant_bug:
            raise BuildError("plant_bug applies to the twin only")
        files = _ascend_files()
    files["manifest.json"] = (
        json.dumps(manifest(target, files, plant_bug), indent=2, sort_keys=True) + "\n"
    ).encode()
    out_dir = Path(out_dir)
    out_dir = out_dir if out_dir.is_absolute() else ROOT / out_dir
    return write_archive(out_dir / archive_name(target, plant_bug), files)


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
) -> SanitizeReport:
    """Build the twin with LSG_SANITIZE=ON and drive it from a Python subprocess with libasan
    preloaded.  The calls are a fixed representative set, plus every case of `matrix` (a tier of
    suites.matrix) when given.  overflow_probe adds one call that lies about a buffer's size, to
    show that the harness reports what the sanitizers find (the report is then not ok)."""
    lib = build_twin(build_dir, sanitize=True)
    env = {
        **os.environ,
        "LD_PRELOAD": libasan_path(),
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "LSG_TWIN_LIB": str(lib),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [sys.executable, "-m", "farm.build", "--drive"] + (["--matrix", matrix] if matrix else [])
    cmd += ["--overflow-probe"] if overflow_probe else []
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    found = re.search(r"sanitize driver: (\d+) calls", output)
    return SanitizeReport(proc.returncode, output, int(found[1]) if found else 0)


def _driver_calls() -> Iterator[tuple[str, dict]]:
    """(label, keyword arguments of farm.agent.backends.twin.run) over schedules, dtypes, chunking,
    ranks, strided views, empty tensors, threads and every rejection, on both families."""
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
    from farm.agent.backends.twin import Spec

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
    from farm.agent.backends import twin
    from farm.agent.execute import make_call_inputs
    from golden.soc import representative_soc
    from suites import matrix

    cases = matrix.expand(tier)
    for case in cases:
        c = case.to_dict()
        dy, y = make_call_inputs(c)
        result = twin.run_call(
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
    """Run the twin on a tensor that claims 2000 elements of a 1000-element buffer."""
    import numpy as np

    from farm.agent.backends import twin

    buf = np.zeros(1000, dtype=np.float32)  # 4000 bytes: its own malloc, which ASan guards
    lie = np.lib.stride_tricks.as_strided(buf, shape=(2000,), strides=(4,))
    twin.run(lie, lie, (-1,), "Ascend910B1", threads=1)


def _drive(tier: str | None, overflow_probe: bool = False) -> int:
    """The subprocess side of sanitize_check: make each call's inputs and run it."""
    from farm.agent.backends import twin
    from golden.dtypes import numpy_dtype
    from golden.inputs import make_inputs

    plans = list(_plan_only_calls())
    for label, args in plans:
        print(f"{label}: {twin.plan(*args).reason}", flush=True)
    calls = list(_driver_calls())
    for label, kw in calls:
        dy, y = make_inputs(kw["shape"], kw["dtype"], kw["axes"], "uniform", "normal", seed=1)
        out_dtype = numpy_dtype(kw["out_dtype"]) if kw.get("out_dtype") else None
        result = twin.run(
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
    """`farm build`: build and package the operator (default: the twin into dist/op)."""
    parser = argparse.ArgumentParser(prog="farm build", description=main.__doc__)
    parser.add_argument("--target", choices=TARGETS, default="twin")
    parser.add_argument("--out", default="dist/op", help="directory of the archive")
    parser.add_argument(
        "--plant-bug",
        choices=PLANT_BUGS,
        default="",
        help="build a twin with a known bug (for testing the farm)",
    )
    parser.add_argument(
        "--sanitize-check",
        action="store_true",
        help="build the twin with ASan/UBSan and drive it; no package",
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
            report = sanitize_check(args.matrix)
            if not report.ok:
                print(report.output[-4000:], file=sys.stderr)
                print(f"sanitize check FAILED (exit {report.returncode})", file=sys.stderr)
                return 1
            if not args.quiet:
                print(f"sanitize check ok: {report.calls} calls, no sanitizer report")
            return 0
        path = build_package(args.target, args.out, args.plant_bug)
    except BuildError as exc:
        print(f"farm build: {exc}", file=sys.stderr)
        return exc.exit_code
    if not args.quiet:
        print(
            f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  "
            f"sha256 {sha256_bytes(path.read_bytes())}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
