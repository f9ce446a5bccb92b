"""PyTorch's benchmark results kept on the host: a run whose benchmark-ratio cases were all seen
before imports no PyTorch.

The benchmark-ratio standard's benchmark is PyTorch's own CPU kernel (golden/benchmark.py).
Importing PyTorch costs ~1.4 s of CPU in every agent that judges such a case (more than half of
the smoke tier's agents' CPU), while its result is a function of the case's inputs, of the
PyTorch build, and of the kernel it picks for this CPU. An entry is kept under a key that names
all of them:

* the inputs as PyTorch gets them: dy and y in the case dtype, their shape, the reduce axes
  (as the merged [d0, d1, d2] the kernel reduces) and the dtype;
* the installation: PyTorch's distribution version and its CPU library's size and mtime, so that
  another build of the same version misses;
* what picks PyTorch's kernel: the machine, the CPU's feature flags and $ATEN_CPU_CAPABILITY
  (AVX-512 and the default path give other bits; the thread count does not).

An entry is the result's bytes behind their sha256; one that does not match its hash (a torn
write, a disk's fault) is a miss, removed, and PyTorch computes the result again. Entries are
written whole (a temporary file renamed into place), so the agents of a host share the cache. It
holds at most BUDGET bytes: when it is full, entries unused for STALE_AFTER go, and while it
stays full nothing is added (the cases a team runs every day keep their place; a larger tier
does not push them out). Each agent looks at the directory once and then counts what it adds
itself, so agents filling it at the same time may pass the budget by what the others added
meanwhile; the next agent to look finds it full.

Where: $LSG_BENCHMARK_CACHE (an absolute path; a relative one keeps nothing, and `farm hosts`
says why), else ``benchmarks/`` in the per-user cache of golden/fused_library.py; "off": no cache
(PyTorch for every case). Without PyTorch installed nothing is read: such a host gets no
benchmark-ratio cases (farm/run/dispatch.py), and one whose PyTorch cannot be imported answers
them ``lacks`` (farm/agent/execute.py).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import math
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from golden import benchmark, fused_library
from golden.contract import merge_shape
from golden.dtypes import SUPPORTED, numpy_dtype
from golden.reference import check_axes

ENV_CACHE = "LSG_BENCHMARK_CACHE"
BUDGET = 512 << 20  # the built-in tiers' results (~450 MiB), with room
STALE_AFTER = 7 * 24 * 3600.0
SUFFIX = ".bin"
_DIGEST = hashlib.sha256().digest_size
# Bytes this process believes the cache holds, per directory (scanned once, then counted).
_HELD: dict[Path, int] = {}


def torch_benchmark(
    dy: np.ndarray, y: np.ndarray, axes: Sequence[int] | int, dtype: str
) -> np.ndarray:
    """golden.benchmark.torch_benchmark of (dy, y): from the cache when this host's PyTorch gave
    it for the same inputs before, else computed and kept."""
    entry = entry_path(dy, y, axes, dtype)
    if entry is None:
        return benchmark.torch_benchmark(dy, y, axes, dtype)
    dt = numpy_dtype(dtype)
    kept = _read(entry, np.shape(dy), dt)
    if kept is not None:
        return kept
    result = benchmark.torch_benchmark(dy, y, axes, dtype)
    _keep(entry, np.ascontiguousarray(result, dtype=dt))
    return result


def cache_dir() -> Path | None:
    return _where()[0]


def _where() -> tuple[Path | None, str]:
    """(the cache's directory, "") or (None, why there is none): PyTorch then computes every
    result, as before the cache."""
    if os.environ.get(ENV_CACHE) == "off":
        return None, f"${ENV_CACHE}=off"
    try:
        return fused_library.env_directory(
            ENV_CACHE
        ) or fused_library.user_cache_root() / "benchmarks", ""
    except RuntimeError as exc:  # a relative $LSG_BENCHMARK_CACHE, or no home directory
        return None, str(exc)


def status() -> str:
    """Where this host keeps PyTorch's results and how many it holds (`farm hosts`' judging)."""
    directory, why = _where()
    if directory is None:
        return f"PyTorch's results not kept ({why})"
    if _installation() is None:
        return "PyTorch's results not kept (no PyTorch, or the CPU's features unreadable)"
    kept = [size for path, size, _ in _entries(directory) if path.name.endswith(SUFFIX)]
    return (
        f"PyTorch's results kept in {directory}: {len(kept):,}, "
        f"{sum(kept) / 2**20:.0f} of {BUDGET >> 20} MiB"
    )


def entry_path(dy, y, axes: Sequence[int] | int, dtype: str) -> Path | None:
    """Where the result of these inputs is kept; None when it is not (no cache, no PyTorch, a
    CPU whose features cannot be read, inputs the benchmark refuses or computes without it)."""
    directory = cache_dir()
    installation = _installation()
    dy, y = np.asarray(dy), np.asarray(y)
    if directory is None or installation is None or dtype not in SUPPORTED:
        return None
    if dy.shape != y.shape or dy.size == 0:
        return None
    try:
        merged = merge_shape(dy.shape, check_axes(dy.shape, axes))
    except ValueError:
        return None
    dt = numpy_dtype(dtype)
    key = hashlib.sha256(installation)
    key.update(repr((dtype, dy.shape, merged)).encode())
    for a in (dy, y):
        key.update(np.ascontiguousarray(a.astype(dt, copy=False)).reshape(-1).view(np.uint8).data)
    return directory / (key.hexdigest() + SUFFIX)


@functools.cache
def _installation() -> bytes | None:
    """This host's PyTorch and what picks its kernels, found without importing it."""
    try:
        version = importlib.metadata.version("torch")
        spec = importlib.util.find_spec("torch")
    except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
        return None
    features = fused_library.cpu_features()
    if spec is None or spec.origin is None or features is None:
        return None
    origin = Path(spec.origin)
    libraries = sorted((origin.parent / "lib").glob("libtorch_cpu*")) or [origin]
    try:
        marks = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in libraries]
    except OSError:
        return None
    capability = os.environ.get("ATEN_CPU_CAPABILITY", "")
    return "\0".join([version, *marks, platform.machine(), features, capability]).encode()


def _read(entry: Path, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray | None:
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    size = math.prod(shape) * dt.itemsize
    if len(data) != _DIGEST + size or hashlib.sha256(data[_DIGEST:]).digest() != data[:_DIGEST]:
        _remove(entry)
        return None
    try:
        os.utime(entry)  # used: not stale
    except OSError:
        pass
    return np.frombuffer(data, dtype=dt, offset=_DIGEST).reshape(shape).copy()


def _keep(entry: Path, result: np.ndarray) -> None:
    """Write the entry whole; a cache that is full or refuses the write keeps nothing."""
    payload = result.reshape(-1).view(np.uint8).tobytes()
    blob = hashlib.sha256(payload).digest() + payload
    directory = entry.parent
    temporary = None
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)  # the user's alone
        if not _room(directory, len(blob)):
            return
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".part-")
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
        os.replace(temporary, entry)
        temporary = None
        _HELD[directory] = _HELD.get(directory, 0) + len(blob)
    except OSError:
        pass
    finally:
        if temporary is not None:
            _remove(Path(temporary))


def _room(directory: Path, size: int) -> bool:
    """Whether `size` more bytes fit the budget, once stale entries are gone if they must."""
    if directory not in _HELD:
        _HELD[directory] = sum(size for _, size, _ in _entries(directory))
    if _HELD[directory] + size <= BUDGET:
        return True
    cutoff = time.time() - STALE_AFTER
    for path, _, used in _entries(directory):
        if used < cutoff:
            _remove(path)
    _HELD[directory] = sum(size for _, size, _ in _entries(directory))
    return _HELD[directory] + size <= BUDGET


def _entries(directory: Path) -> list[tuple[Path, int, float]]:
    """(path, bytes, last used) of every entry, and of temporary files a killed writer left."""
    found = []
    try:
        with os.scandir(directory) as listing:
            for item in listing:
                if item.name.endswith(SUFFIX) or item.name.startswith(".part-"):
                    try:
                        stat = item.stat()
                    except OSError:
                        continue
                    found.append((Path(item.path), stat.st_size, stat.st_mtime))
    except OSError:
        pass
    return found


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
