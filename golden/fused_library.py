"""golden/fused.c as a library: built on first use, cached per user, loaded (``Kernel``).

Whether it judges is golden/fused.py's choice ($LSG_FUSED, and its self-check against the numpy
path, which every process runs before the library judges); this module only makes and opens it.

The library is built with this host's C compiler ($CC, else cc) for the baseline of its
architecture (BASELINE: ``-march=x86-64``, ``-march=armv8-a``; never ``-march=native``, which
would make a library that a host of an older CPU sharing the home directory (NFS) loads and dies
on with an illegal instruction), into a per-user cache ($LSG_FUSED_CACHE, an absolute path, else
$XDG_CACHE_HOME/lsg-farm, else ~/.cache/lsg-farm), named by the sha256 of the source, the flags
and the C library's version, and the machine, so hosts of one architecture build it once per
version of the source and share it. The one pass wider vectors speed up (``compared``) is in it
for AVX2 and AVX-512 as well, chosen when it is loaded by the CPU that runs it (golden/fused.c;
``Kernel.lanes`` says which).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from farm.util import proc
from golden import fp32_model, ratio_hist, rounding
from golden.dtypes import (
    BIAS_CLEAN_FRACTION,
    DOUBLE_THOUSANDTH_TOL,
    REL_EPS,
    SMALL_ERR_BOUND,
    SMALL_THRESHOLD,
    T,
)

SOURCE = Path(__file__).with_name("fused.c")
# -O3: the passes' vectors unrolled and kept in registers (lsg_compared 8.2 ns an element at -O2,
# 5.4 at -O3, AVX-512); -ffp-contract=off: a fused multiply-add rounds once where numpy rounds
# twice.
FLAGS = ("-O3", "-fPIC", "-shared", "-ffp-contract=off")
# The instruction set every CPU of the architecture has (platform.machine() -> flags): what the
# library is built for, whichever CPU builds it. A compiler that refuses the flag builds for its
# own default, which is its distribution's baseline.
BASELINE = {
    "x86_64": ("-march=x86-64",),
    "amd64": ("-march=x86-64",),
    "aarch64": ("-march=armv8-a",),
    "arm64": ("-march=armv8-a",),
}
ENV_CACHE = "LSG_FUSED_CACHE"
BUILD_TIMEOUT_S = 120

# The results of one `compared` pass, in golden/fused.c's order (its S_, M_ and I_ enums).
SUMS = ("rel_sum", "sq_sum", "signed_ulp_sum", "wc_rel_sum", "wc_sq_sum", "bc_rel_sum", "bc_sq_sum")
MAXIMA = ("max_abs", "max_rel", "wc_max_rel", "wc_max_abs", "bc_max_rel", "bound_max_ratio")
COUNTS = (
    "ulp_sum",
    "ulp_max",
    "mixed_ok",
    "dt_rel_over",
    "dt_abs_over",
    "small_n",
    "small_err_count",
    "wc_mixed_ok",
    "wc_dt_rel_over",
    "wc_dt_abs_over",
    "wc_small_err_count",
    "bc_small_err_count",
    "bound_violations",
    "rounding_bias_n",
    "rounding_bias_sum",
)
DTYPE_CODE = {"float32": 0, "float16": 1, "bfloat16": 2}


def _limits(dtype: str) -> np.ndarray:
    """lsg_compared's thresholds (golden/fused.c)."""
    return np.array(
        [
            T[dtype],
            DOUBLE_THOUSANDTH_TOL[dtype],
            SMALL_THRESHOLD[dtype],
            SMALL_ERR_BOUND[dtype],
            REL_EPS,
            BIAS_CLEAN_FRACTION,
            ratio_hist.LOG2_LO,
            ratio_hist.BINS,
        ]
    )


def _bound_constants(dtype: str) -> np.ndarray:
    """golden_bound's constants (golden/fused.c lsg_golden_bound's k[])."""
    m = fp32_model
    if dtype == "float32":
        half_ulp = [0.0] * 5
    else:
        p, bias, _ = rounding.FORMAT[dtype]
        half_ulp = [float(rounding.CARRY[dtype]), p, 1023 + 1 - bias - p, rounding.NEAR_MAX[dtype]]
        half_ulp.append(rounding.OVERFLOW[dtype])
    fixed = [m.U32, 2 * m.U32, m.EXP_REL_ERR, m.FLUSH, 1 + m.EXP_REL_ERR, 1 + 4 * m.U32]
    return np.array([*fixed, 4 * m.FLUSH, m.SLACK64, *half_ulp], dtype=np.float64)


def _address(x: np.ndarray | None) -> int | None:
    return None if x is None else x.ctypes.data


def _check(arrays: list[np.ndarray], size: int, dtype: np.dtype | None = None) -> None:
    for x in arrays:
        if x.size != size or not x.flags.c_contiguous or (dtype is not None and x.dtype != dtype):
            raise ValueError("golden/fused: arrays must be contiguous and of the same size")


class Kernel:
    """The loaded library."""

    def __init__(self, path: Path):
        lib = ctypes.CDLL(os.fspath(path))
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        lib.lsg_lanes.restype = ctypes.c_int
        self.lanes = int(lib.lsg_lanes())  # the vector code this CPU runs: 2, 4 or 8 lanes
        self._compared = lib.lsg_compared
        self._compared.argtypes = [i64, p, p, p, p, p, ctypes.c_int, p, ctypes.c_uint32]
        self._compared.argtypes += [p, p, p, p, p]
        self._compared.restype = ctypes.c_int
        self._golden_bound = lib.lsg_golden_bound
        self._golden_bound.argtypes = [i64, i64, i64, p, p, p, p, p, p, ctypes.c_int, p, p, p, p]
        self._golden_bound.restype = ctypes.c_int
        self._spacing_at = lib.lsg_spacing_at
        self._spacing_at.argtypes = [i64, p, p, p]
        self._spacing_at.restype = None
        self._histogram = lib.lsg_histogram
        self._histogram.argtypes = [i64, p, p, i64, ctypes.c_double, ctypes.c_double, p, p]
        self._histogram.restype = None
        self.path = path
        self._limits = {dt: _limits(dt) for dt in DTYPE_CODE}
        self._constants = {dt: _bound_constants(dt) for dt in DTYPE_CODE}

    def compared(
        self,
        a: np.ndarray,
        g: np.ndarray,
        abits: np.ndarray,
        rbits: np.ndarray,
        bound: np.ndarray | None,
        dtype: str,
        rel: np.ndarray,
        ratio_counts: np.ndarray | None = None,
    ) -> dict[str, float | int]:
        """The sums, maxima and counts of m compared elements (1-D contiguous: the actual and
        the golden in float64, the bits of the actual and of the golden rounded to the dtype,
        the bound or None); each element's relative error into ``rel``; with a bound, each
        element's error over it binned into ``ratio_counts`` (golden/ratio_hist.py's)."""
        m = int(a.size)
        _check([a, g, rel] + ([] if bound is None else [bound]), m, np.dtype(np.float64))
        if bound is not None:
            if ratio_counts is None:
                raise ValueError("golden/fused: a bound needs its ratio counts")
            _check([ratio_counts], ratio_hist.BINS + 1, np.dtype(np.int64))
        _check([abits, rbits], m, np.dtype(np.uint32 if dtype == "float32" else np.uint16))
        dout = np.empty(len(SUMS) + len(MAXIMA))
        iout = np.empty(len(COUNTS), np.int64)
        self._compared(
            m,
            a.ctypes.data,
            g.ctypes.data,
            abits.ctypes.data,
            rbits.ctypes.data,
            _address(bound),
            DTYPE_CODE[dtype],
            rounding.SPACING_TABLE[dtype].ctypes.data,
            int(rounding.MAX_BITS[dtype]),
            self._limits[dtype].ctypes.data,
            rel.ctypes.data,
            dout.ctypes.data,
            iout.ctypes.data,
            None if bound is None else _address(ratio_counts),
        )
        out: dict[str, float | int] = dict(zip(SUMS + MAXIMA, dout.tolist(), strict=True))
        out.update(zip(COUNTS, iout.tolist(), strict=True))
        return out

    def golden_bound(
        self,
        d: np.ndarray,
        e: np.ndarray,
        ad: np.ndarray,
        lines: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        dtype: str,
        g: np.ndarray,
        bound: np.ndarray,
    ) -> float:
        """A plain [rows, d1, cols] slab's golden into ``g`` and bound into ``bound``; returns
        max(|golden| + B32). d = dy, e = exp(y), ad = |dy| (contiguous float64 of the slab's
        shape); ``lines``: the sum of each reduce line, its magnitude and error bound
        ([rows, 1, cols]), or None for a reduce extent of 1, where ``g`` already holds the golden
        (dy * -expm1(y))."""
        rows, d1, cols = d.shape
        _check([d, e, ad, g, bound], rows * d1 * cols, np.dtype(np.float64))
        s = abs_s = s_err = None
        if lines is not None:
            s, abs_s, s_err = (np.ascontiguousarray(x, np.float64) for x in lines)
            _check([s, abs_s, s_err], rows * cols)
        top = ctypes.c_double()
        self._golden_bound(
            rows,
            d1,
            cols,
            d.ctypes.data,
            e.ctypes.data,
            ad.ctypes.data,
            _address(s),
            _address(abs_s),
            _address(s_err),
            int(dtype != "float32"),
            self._constants[dtype].ctypes.data,
            g.ctypes.data,
            bound.ctypes.data,
            ctypes.byref(top),
        )
        return top.value

    def spacing_at(self, x: np.ndarray, dtype: str) -> np.ndarray:
        """golden/rounding.py spacing_at of float64 x >= 0, as golden_bound computes it (the
        half ulp of a 16-bit dtype's bound)."""
        x = np.ascontiguousarray(x, np.float64)
        out = np.empty_like(x)
        self._spacing_at(x.size, x.ctypes.data, self._constants[dtype].ctypes.data, out.ctypes.data)
        return out

    def histogram(
        self, logs: np.ndarray, edges: np.ndarray, scale: float, top: float, counts: np.ndarray
    ) -> int:
        """farm/agent/histogram.py's binning of log10 values on evenly spaced ``edges`` (``scale``
        bins per unit, ``top`` the largest value below the last edge), added to ``counts``
        (int64, one per bin); returns how many were log10(0), which no bin keeps."""
        _check([logs], logs.size, np.dtype(np.float64))
        _check([edges], counts.size + 1, np.dtype(np.float64))
        _check([counts], counts.size, np.dtype(np.int64))
        zeros = ctypes.c_int64(0)
        self._histogram(
            logs.size,
            logs.ctypes.data,
            edges.ctypes.data,
            counts.size - 1,
            scale,
            top,
            counts.ctypes.data,
            ctypes.byref(zeros),
        )
        return zeros.value


def cache_dir() -> Path:
    return env_directory(ENV_CACHE) or user_cache_root()


def user_cache_root() -> Path:
    """The farm's per-user cache on a host: $XDG_CACHE_HOME/lsg-farm, else ~/.cache/lsg-farm (a
    relative $XDG_CACHE_HOME is ignored, as the XDG base directory specification says)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "lsg-farm"


def env_directory(name: str) -> Path | None:
    """The directory $name names (``~`` expanded), None where it is unset or empty. A relative
    path is refused (RuntimeError): every agent starts in a working directory of its own, so one
    setting in an inventory would be another directory on every host and in every run."""
    given = os.environ.get(name, "")
    if not given:
        return None
    path = Path(given).expanduser()
    if not path.is_absolute():
        raise RuntimeError(
            f"${name}={given!r} is not an absolute path: give a directory such as "
            f"/var/cache/lsg-farm or ~/.cache/lsg-farm"
        )
    return path


def baseline_flags(machine: str | None = None) -> tuple[str, ...]:
    """The flags that build for the architecture's baseline (none where it is not known)."""
    return BASELINE.get((machine or platform.machine()).lower(), ())


def library_path(source: Path = SOURCE) -> Path:
    """Named by what makes the library: the source, the flags, and the C library it links
    against (a library built against a newer glibc does not load beside an older one); one per
    architecture, whatever CPU built it."""
    libc = " ".join(platform.libc_ver())
    key = hashlib.sha256(source.read_bytes() + " ".join([*FLAGS, *baseline_flags(), libc]).encode())
    return cache_dir() / f"fused-{key.hexdigest()[:16]}-{platform.machine() or 'unknown'}.so"


def cpu_features() -> str | None:
    """The CPU's feature flags when every CPU has the same (farm/util/proc.py); None otherwise."""
    return proc.cpu_features()


def load(source: Path = SOURCE) -> tuple[str, Kernel | None]:
    """("", the library) built when this host has none yet, else (why not, None). Not yet
    checked: golden/fused.py uses it only once it reproduces the numpy path."""
    try:
        path = library_path(source)  # RuntimeError: no home directory for the default cache
        if not path.is_file():
            _build_once(path, source)
        k = Kernel(path)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return f"golden/fused.c could not be built or loaded: {exc}", None
    return "", k


def _build_once(path: Path, source: Path) -> None:
    """Build unless another process of this host did while this one waited: the agents of a
    fresh host start together, and one compiler run serves them all."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path.parent / f".{path.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            build(path, source)


def build(path: Path, source: Path = SOURCE) -> None:
    """Compile ``source`` into ``path`` for the architecture's baseline (with its vector code for
    wider units chosen at load: golden/fused.c); atomic, so agents building at once each load a
    whole library."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError("no C compiler (install gcc, or set $CC)")
    command = shlex.split(cc)  # as make reads $CC: "ccache gcc", "gcc -m64"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        baseline = baseline_flags()
        for flags in ([*FLAGS, *baseline], [*FLAGS]) if baseline else ([*FLAGS],):
            run = subprocess.run(
                # The source by its absolute path: it includes itself (#include __FILE__).
                [*command, *flags, "-o", tmp, os.fspath(Path(source).resolve()), "-lm"],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
            )
            if run.returncode == 0:
                break
        else:
            first = (run.stderr.strip().splitlines() or ["no output"])[0]
            raise RuntimeError(f"{cc} failed on {source.name}: {first}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
