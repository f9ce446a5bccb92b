"""Judging's arithmetic fused into single passes: golden/fused.c, built on first use.

Two passes replace numpy's ~100 over each slab (ARCHITECTURE.md: the golden, the bound and every
metric in one pass): ``golden_bound``, the golden and the error bound of a plain slab
(golden/bound.py golden_and_bound), and ``compared``, every metric of the compared elements
(golden/metrics.py MetricsAccumulator._compared and _bound); and ``histogram``, the error
histogram's binning of numpy's log10 values (farm/agent/histogram.py, which the self-check below
leaves to tests/golden/test_fused.py: it has no arithmetic to reorder). All give numpy's bits
exactly (golden/fused.c says how), so a record is the same whichever path judged it; the numpy
code stays as the reference and as the path where the library cannot be had.

The library is built with this host's C compiler ($CC, else cc) for the baseline of its
architecture (BASELINE: ``-march=x86-64``, ``-march=armv8-a``; never ``-march=native``, which
would make a library that a host of an older CPU sharing the home directory (NFS) loads and dies
on with an illegal instruction), into a per-user cache ($LSG_FUSED_CACHE, an absolute path, else
$XDG_CACHE_HOME/lsg-farm, else ~/.cache/lsg-farm), named by the sha256 of the source, the flags
and the C library's version, and the machine, so hosts of one architecture build it once per
version of the source and share it. The one pass wider vectors speed up (``compared``) is in it
for AVX2 and AVX-512 as well, chosen when it is loaded by the CPU that runs it (golden/fused.c;
``Kernel.lanes`` and ``status()`` say which). Each process uses it only after it has reproduced
the numpy path exactly on samples that reach every branch (each dtype, with and without a bound,
zeros, subnormals, zero and infinite bounds, values exactly on the thresholds the counts compare
with, pairwise lengths below 8, within a block and across halves, slabs reduced along and across
memory and of extent 1, plain, tiny and near float16's overflow, the half ulp's carry ties): a
compiler that fuses or reorders the arithmetic is refused, and so is the library beside a numpy
whose summation order is not the one it reproduces (numpy's internals are relied on, and
checked, here alone). ``status()`` says which path judges and why; the agent's identity carries
it.

$LSG_FUSED: "auto" (the default), "off" (numpy always: the reference, and a benchmark's before),
"require" (a RuntimeError when the library cannot be had; an agent reports it as a problem, so
the host is refused rather than judging on the slower path).
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
import threading
from pathlib import Path

import numpy as np

from farm.util import proc
from golden import bound as bound_mod
from golden.dtypes import DOUBLE_THOUSANDTH_TOL, REL_EPS, SMALL_ERR_BOUND, SMALL_THRESHOLD, T

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
ENV_MODE = "LSG_FUSED"
ENV_CACHE = "LSG_FUSED_CACHE"
MODES = ("auto", "off", "require")
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
_DTYPE_CODE = {"float32": 0, "float16": 1, "bfloat16": 2}


def _limits(dtype: str) -> np.ndarray:
    from golden.metrics import BIAS_CLEAN_FRACTION  # metrics imports this module

    return np.array(
        [
            T[dtype],
            DOUBLE_THOUSANDTH_TOL[dtype],
            SMALL_THRESHOLD[dtype],
            SMALL_ERR_BOUND[dtype],
            REL_EPS,
            BIAS_CLEAN_FRACTION,
        ]
    )


def _bound_constants(dtype: str) -> np.ndarray:
    """golden_bound's constants (golden/fused.c lsg_golden_bound's k[])."""
    b = bound_mod
    if dtype == "float32":
        half_ulp = [0.0] * 5
    else:
        p, bias, _ = b.FORMAT[dtype]
        half_ulp = [float(b.CARRY[dtype]), p, 1023 + 1 - bias - p, b.NEAR_MAX[dtype]]
        half_ulp.append(b.OVERFLOW[dtype])
    fixed = [b.U32, 2 * b.U32, b.EXP_REL_ERR, b.FLUSH, 1 + b.EXP_REL_ERR, 1 + 4 * b.U32]
    return np.array([*fixed, 4 * b.FLUSH, b.SLACK64, *half_ulp], dtype=np.float64)


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
        self._compared.argtypes = [i64, p, p, p, p, p, ctypes.c_int, p, ctypes.c_uint32, p, p, p, p]
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
        self._limits = {dt: _limits(dt) for dt in _DTYPE_CODE}
        self._constants = {dt: _bound_constants(dt) for dt in _DTYPE_CODE}

    def compared(
        self,
        a: np.ndarray,
        g: np.ndarray,
        abits: np.ndarray,
        rbits: np.ndarray,
        bound: np.ndarray | None,
        dtype: str,
        rel: np.ndarray,
    ) -> dict[str, float | int]:
        """The sums, maxima and counts of m compared elements (1-D contiguous: the actual and
        the golden in float64, the bits of the actual and of the golden rounded to the dtype,
        the bound or None); each element's relative error into ``rel``."""
        m = int(a.size)
        _check([a, g, rel] + ([] if bound is None else [bound]), m, np.dtype(np.float64))
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
            _DTYPE_CODE[dtype],
            bound_mod.SPACING_TABLE[dtype].ctypes.data,
            int(bound_mod.MAX_BITS[dtype]),
            self._limits[dtype].ctypes.data,
            rel.ctypes.data,
            dout.ctypes.data,
            iout.ctypes.data,
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
        """golden/bound.py spacing_at of float64 x >= 0, as golden_bound computes it (the
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


_LOCK = threading.Lock()
_LOADED: dict[str, tuple[str, Kernel | None]] = {}


def mode() -> str:
    value = os.environ.get(ENV_MODE, "").strip().lower() or "auto"
    if value not in MODES:
        raise RuntimeError(
            f"${ENV_MODE}={value!r} is not one of {', '.join(MODES)}; set one, or unset it (auto)"
        )
    return value


def kernel() -> Kernel | None:
    """The checked library, or None when judging takes the numpy path (``status`` says why).
    Built, loaded and checked once a process."""
    chosen = mode()
    if chosen == "off":
        return None
    if "state" not in _LOADED:
        with _LOCK:
            if "state" not in _LOADED:
                _LOADED["state"] = _load()
    why, k = _LOADED["state"]
    if k is None and chosen == "require":
        raise RuntimeError(f"${ENV_MODE}=require, but {why}")
    return k


def status() -> str:
    """Which path judges, in words."""
    if mode() == "off":
        return f"numpy (${ENV_MODE}=off)"
    k = kernel()
    if k is None:
        return f"numpy ({_LOADED['state'][0]})"
    return f"fused ({k.path}, {k.lanes} lanes)"


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


def _load(source: Path = SOURCE) -> tuple[str, Kernel | None]:
    try:
        path = library_path(source)  # RuntimeError: no home directory for the default cache
        if not path.is_file():
            _build_once(path, source)
        k = Kernel(path)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return f"golden/fused.c could not be built or loaded: {exc}", None
    differs = self_check(k)
    if differs:
        return f"{path} differs from the numpy path ({differs}); check $CC and its flags", None
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


# -- the samples a library must reproduce before it judges ---------------------------------------

SAMPLE_LENGTHS = (1, 9, 16, 129, 300, 1031)
# [rows, d1, cols]: the reduce extent 1, lines across and along memory, lengths around the
# pairwise blocks.
SAMPLE_SLABS = ((3, 1, 5), (2, 7, 3), (4, 129, 1), (1, 300, 2), (5, 9, 17))


def sample(dtype: str, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(actual in the dtype, golden, bound) of m elements reaching every branch of `compared`:
    results equal to, an ulp or two from and far from the golden, zeros and values below the
    dtype's small-value threshold, subnormals, zero and infinite bounds, bounds near half an
    ulp (the rounding-bias elements); from 16 elements on, the first few sit exactly on the
    thresholds the counts compare with (an error of exactly the small-value error bound, or of
    exactly T + T|golden|, a bound equal to the error, to T + T|golden| or to the small-value
    error bound), where a comparison turned round would count differently."""
    from golden.dtypes import numpy_dtype, round_to, ulp_of

    rng = np.random.default_rng(seed)
    g = rng.standard_normal(m) * np.exp2(rng.integers(-30, 8, m).astype(np.float64))
    g[rng.random(m) < 0.05] = 0.0
    tiny = rng.random(m) < 0.05
    g[tiny] *= 2.0**-140 if dtype != "float16" else 2.0**-20
    ulp = ulp_of(np.abs(g), dtype)
    steps = rng.choice([0, 0, 0, 1, -1, 2, -3, 1000], m)
    a = round_to(g + steps * ulp, dtype)
    bound = ulp * rng.choice([0.5, 0.5001, 0.6, 1.0, 3.0, 0.0], m)
    bound[rng.random(m) < 0.02] = np.inf
    if m >= 16:
        t, small, small_err = T[dtype], SMALL_THRESHOLD[dtype] / 2, SMALL_ERR_BOUND[dtype]
        # (golden, actual, bound); all exact in the dtype and in float64
        edges = [
            (small, small + small_err, ulp[0]),
            (1.0, 1.0 + 2 * t, 2 * t),
            (-1.0, -1.0 - 2 * t, 3 * t),
            (small, small, small_err),
            (2.0, 2.0, 3 * t),
            (-small, -small - small_err, small_err),
        ]
        for i, (golden, actual, b) in enumerate(edges):
            g[i], a[i], bound[i] = golden, actual, b
    return a.astype(numpy_dtype(dtype)), g, bound


def spacing_sample(dtype: str) -> np.ndarray:
    """Values x >= 0 around every branch of spacing_at: each binade's carry into the next (the
    tie and its neighbours), the subnormal spacing's floor, the largest finite value's
    neighbourhood and the overflow threshold."""
    p, bias, _ = bound_mod.FORMAT[dtype]
    ties = [2.0**e * (2 - 2.0 ** -(p + 1)) for e in range(-bias - p - 2, bias + 1)]
    x = np.array(ties + [0.0, 2.0 ** (1 - bias - p), bound_mod.NEAR_MAX[dtype]])
    x = np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, 0.0)])
    top = bound_mod.OVERFLOW[dtype]
    return np.concatenate([x, [top, np.nextafter(top, 0.0), np.nextafter(top, np.inf)]])


def self_check(k: Kernel) -> str:
    """'' when ``k`` reproduces the numpy path bit for bit on the samples, else what differed."""
    from golden.metrics import MetricsAccumulator

    for dtype in ("float16", "bfloat16"):
        x = spacing_sample(dtype)
        want = bound_mod.spacing_at(x, dtype, bound_mod.Workspace(), base=0)
        if _bits(k.spacing_at(x, dtype)) != _bits(want):
            return f"the {dtype} spacing of the bound's half ulp"
    for dtype in _DTYPE_CODE:
        for i, shape in enumerate(SAMPLE_SLABS):
            rng = np.random.default_rng(100 + i)
            dy = rng.standard_normal(shape)
            y = -np.abs(rng.standard_normal(shape)) * 3
            for scale in (1.0, 3e4, 1e-30):  # plain, near float16's overflow, near fp32's flush
                got = bound_mod.golden_and_bound(dy * scale, y, dtype, fused=k)
                want = bound_mod.golden_and_bound(dy * scale, y, dtype, fused=None)
                if any(_bits(x) != _bits(w) for x, w in zip(got, want, strict=True)):
                    return f"the golden and bound of a {dtype} slab {shape}, dy x {scale:g}"
        for i, m in enumerate(SAMPLE_LENGTHS):
            a, g, bound = sample(dtype, m, seed=i)
            for b in (bound, None):
                fused_acc = MetricsAccumulator(dtype, (m,), fused=k)
                numpy_acc = MetricsAccumulator(dtype, (m,), fused=None)
                rel = _bits(fused_acc.add(a, g, 0, bound=b))
                if rel != _bits(numpy_acc.add(a, g, 0, bound=b)):
                    return f"the relative errors of a {dtype} sample of {m}"
                if repr(fused_acc.result()) != repr(numpy_acc.result()):
                    return f"the metrics of a {dtype} sample of {m}"
    return ""


def _bits(x) -> bytes:
    return b"" if x is None else np.asarray(x).tobytes()
