"""The agent's memory allocator told to keep the blocks its cases free (issue 26).

A case makes and drops dozens of numpy arrays of up to a few MiB (the inputs in slabs of up to
8 MiB, the output, the golden's temporaries). glibc's malloc serves a block above its mmap
threshold with fresh pages from the kernel and hands it back when freed, and it returns the
heap's free top once that passes its trim threshold; both start small (128 KiB) and only grow
with the blocks freed, so a stream of cases of changing sizes keeps asking the kernel for pages
and every page first touched is a fault. With the mmap threshold fixed at 16 MiB and the heap's
top trimmed only past 32 MiB, a case's arrays reuse the pages of the cases before it: the
nightly's inputs, operator calls and judging in one process made 610,000 page faults with the
defaults and 228,000 with these (1.95 → 1.07 s of system time); a nightly run's two agents
1.24–1.40 million before, 0.46 million after (benchmarks/RESULTS.md). The cost: up to 32 MiB of
freed memory stays in the agent between cases; arrays above 16 MiB are mapped and unmapped as
before.

Only the agent does this (the process that runs cases); a C library without glibc's ``mallopt``
(musl, another libc) is left as it is.
"""

from __future__ import annotations

import ctypes

# glibc's <malloc.h> parameter numbers for mallopt.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 16 << 20
TRIM_THRESHOLD = 32 << 20


def keep_freed_memory() -> bool:
    """Set the thresholds in this process; False where the C library has no mallopt or
    refuses them (the allocator then works as before)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # Setting the mmap threshold also stops glibc from moving either threshold by itself.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
