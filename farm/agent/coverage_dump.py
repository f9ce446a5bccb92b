"""The coverage build's counters, case by case: after each case the agent has every library of the
package it loaded (the native library, the emulated ACL op-api) write its gcov counters into that
case's own directory under $LSG_COVERAGE_DIR and zero them (lsg_coverage_dump, which only the
coverage build exports: op/ascendc_cpu/abi/coverage_dump.cpp). `farm coverage` sets the variable
for the run; without it, or with a package that is not the coverage build, nothing happens.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path

ENV_DIR = "LSG_COVERAGE_DIR"
# "merged": every case's counters added into one directory, MERGED_DIR (libgcov merges into the
# .gcda files it finds, under a lock), for a tier too large to keep each case's apart.
ENV_MODE = "LSG_COVERAGE_MODE"
MERGED_DIR = "merged"
DUMP = "lsg_coverage_dump"
CASE_ID_FILE = "case_id"


def case_dir_name(case_id: str) -> str:
    """A case's directory under $LSG_COVERAGE_DIR: a digest of its id (ids hold dots and any
    length; the id itself is written beside the counters, CASE_ID_FILE)."""
    return hashlib.sha256(case_id.encode()).hexdigest()[:20]


def _package_libraries() -> list[Path]:
    """The package's libraries that may carry counters: the native one and, beside it, the
    emulated ACL op-api (farm/agent/backends/acl_api.py finds it there)."""
    native = os.environ.get("LSG_NATIVE_LIB")
    if not native:
        return []
    lib = Path(native)
    return [lib, lib.parent.parent / "acl" / "lib" / "libcust_opapi.so"]


def _loaded(path: Path) -> ctypes.CDLL | None:
    """`path` if this process has loaded it already (RTLD_NOLOAD: nothing new is loaded)."""
    try:
        return ctypes.CDLL(str(path), mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None


def after_case(case_id: str) -> int:
    """Dump the counters of every loaded coverage library into the case's directory (or the one
    merged directory); how many libraries did. Nothing without $LSG_COVERAGE_DIR."""
    root = os.environ.get(ENV_DIR)
    if not root:
        return 0
    merged = os.environ.get(ENV_MODE) == MERGED_DIR
    directory = Path(root) / (MERGED_DIR if merged else case_dir_name(case_id))
    dumped = 0
    for path in _package_libraries():
        lib = _loaded(path)
        dump = getattr(lib, DUMP, None) if lib is not None else None
        if dump is None:
            continue
        if not dumped and not merged:
            directory.mkdir(parents=True, exist_ok=True)
            (directory / CASE_ID_FILE).write_text(case_id, encoding="utf-8")
        dump.argtypes = [ctypes.c_char_p]
        dump.restype = ctypes.c_int
        dump(str(directory).encode())
        dumped += 1
    return dumped
