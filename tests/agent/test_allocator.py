"""The agent's allocator keeps the pages its cases free (farm/agent/allocator.py): counted in
page faults, which depend on the C library's policy, not on the machine's speed."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Arrays of changing sizes made and dropped, as a stream of cases does. Transparent huge pages
# are off in the process (PR_SET_THP_DISABLE), so that a fault is one 4 KiB page whatever the
# machine's THP setting.
_WORKLOAD = """
import ctypes, resource, sys
import numpy as np
from farm.agent import allocator
if ctypes.CDLL(None).prctl(41, 1, 0, 0, 0) != 0:
    raise SystemExit("prctl(PR_SET_THP_DISABLE) refused")
if sys.argv[1] == "kept":
    assert allocator.keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(40):
    x = np.ones((1 << 17) * (1 + i % 7))
    y = np.exp(x)
    del x, y
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _WORKLOAD, mode], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_stream_of_arrays_reuses_freed_pages_once_the_thresholds_are_set():
    default, kept = _faults("default"), _faults("kept")
    # ~1 MiB to 7 MiB arrays: with glibc's defaults each is fresh pages (~31,000 faults here),
    # with the thresholds set they reuse the heap (~3,600).
    assert kept * 4 < default, (default, kept)
