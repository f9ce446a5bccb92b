"""Judging's arithmetic fused into single passes: golden/fused.c, used once it is checked.

Two passes replace numpy's ~100 over each slab (ARCHITECTURE.md: the golden, the bound and every
metric in one pass): ``golden_bound``, the golden and the error bound of a plain slab
(golden/bound.py golden_and_bound), and ``compared``, every metric of the compared elements
(golden/metrics.py MetricsAccumulator._compared and _bound); and ``histogram``, the error
histogram's binning of numpy's log10 values (farm/agent/histogram.py, which the self-check below
leaves to tests/golden/test_fused.py: it has no arithmetic to reorder). All give numpy's bits
exactly (golden/fused.c says how), so a record is the same whichever path judged it; the numpy
code stays as the reference and as the path where the library cannot be had.

golden/fused_library.py builds and loads the library. Each process uses it only after it has
reproduced the numpy path exactly on samples that reach every branch (each dtype, with and
without a bound, zeros, subnormals, zero and infinite bounds, values exactly on the thresholds
the counts compare with, pairwise lengths below 8, within a block and across halves, slabs
reduced along and across memory and of extent 1, plain, tiny and near float16's overflow, the
half ulp's carry ties): a compiler that fuses or reorders the arithmetic is refused, and so is
the library beside a numpy whose summation order is not the one it reproduces (numpy's internals
are relied on, and checked, here alone). ``status()`` says which path judges and why; the
agent's identity carries it.

golden/bound.py and golden/metrics.py take the kernel they are given (None: numpy); ``kernel()``
is what their callers give them (golden/judge.py, golden/standards.py, farm/agent/histogram.py).

$LSG_FUSED: "auto" (the default), "off" (numpy always: the reference, and a benchmark's before),
"require" (a RuntimeError when the library cannot be had; an agent reports it as a problem, so
the host is refused rather than judging on the slower path).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from golden import bound as bound_mod
from golden import fused_library
from golden.dtypes import SMALL_ERR_BOUND, SMALL_THRESHOLD, T, numpy_dtype, round_to, ulp_of
from golden.fused_library import DTYPE_CODE, SOURCE, Kernel
from golden.metrics import MetricsAccumulator
from golden.rounding import FORMAT, NEAR_MAX, OVERFLOW, spacing_at
from golden.workspace import Workspace

ENV_MODE = "LSG_FUSED"
MODES = ("auto", "off", "require")

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


def _load(source: Path = SOURCE) -> tuple[str, Kernel | None]:
    why, k = fused_library.load(source)
    if k is None:
        return why, None
    differs = self_check(k)
    if differs:
        return f"{k.path} differs from the numpy path ({differs}); check $CC and its flags", None
    return "", k


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
    p, bias, _ = FORMAT[dtype]
    ties = [2.0**e * (2 - 2.0 ** -(p + 1)) for e in range(-bias - p - 2, bias + 1)]
    x = np.array(ties + [0.0, 2.0 ** (1 - bias - p), NEAR_MAX[dtype]])
    x = np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, 0.0)])
    top = OVERFLOW[dtype]
    return np.concatenate([x, [top, np.nextafter(top, 0.0), np.nextafter(top, np.inf)]])


def self_check(k: Kernel) -> str:
    """'' when ``k`` reproduces the numpy path bit for bit on the samples, else what differed."""
    for dtype in ("float16", "bfloat16"):
        x = spacing_sample(dtype)
        want = spacing_at(x, dtype, Workspace(), base=0)
        if _bits(k.spacing_at(x, dtype)) != _bits(want):
            return f"the {dtype} spacing of the bound's half ulp"
    for dtype in DTYPE_CODE:
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
