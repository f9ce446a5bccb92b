"""The sanitizer check: the target's library built with ASan/UBSan and driven from a Python
subprocess with libasan preloaded (farm/pool/build/sanitize_driver.py, the subprocess's side).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from farm.pool.build.arches import HOST_ARCH
from farm.pool.build.cmake import build_native
from farm.util import announce
from farm.util.errors import BuildError
from farm.util.paths import REPO_ROOT as ROOT


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
    target: str = "twin",
) -> SanitizeReport:
    """Build `target`'s library (twin or ascendc-cpu) with LSG_SANITIZE=ON and drive it from a
    Python subprocess with libasan preloaded.  The calls are a fixed representative set, plus
    every case of `matrix` (a tier of suites.matrix) when given.  overflow_probe adds one call that
    lies about a buffer's size, to show that the harness reports what the sanitizers find (the
    report is then not ok)."""
    with announce.announced(f"{target} {HOST_ARCH} under ASan/UBSan"):
        lib = build_native(target, build_dir, sanitize=True)
    env = {
        **os.environ,
        "LD_PRELOAD": libasan_path(),
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "LSG_NATIVE_LIB": str(lib),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [sys.executable, "-m", "farm.pool.build", "--drive"] + (
        ["--matrix", matrix] if matrix else []
    )
    cmd += ["--overflow-probe"] if overflow_probe else []
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    found = re.search(r"sanitize driver: (\d+) calls", output)
    return SanitizeReport(proc.returncode, output, int(found[1]) if found else 0)
