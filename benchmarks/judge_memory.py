"""How much memory judging a large case takes beyond its tensors (golden/judge.py works in slabs).

    .venv/bin/python benchmarks/judge_memory.py [--elements 100000000] [--dtype float16]

Makes dy, y (one long reduce row per 2^20 elements) and a correctly rounded out, then measures
with tracemalloc (numpy reports its buffers to it) the peak of what judge_case allocates. A float64
copy of the tensor alone would be 8 bytes per element.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from golden.dtypes import round_to
from golden.judge import judge_case
from golden.reference import SLAB_ELEMENTS, grad_3d


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=100_000_000)
    parser.add_argument("--dtype", default="float16")
    args = parser.parse_args()
    row = 1 << 20
    rows = max(1, args.elements // row)
    rng = np.random.default_rng(0)
    dy = round_to(rng.normal(size=(rows, row)).astype(np.float32), args.dtype)
    y = round_to(
        (np.log(1.0 / row) + 0.1 * rng.normal(size=(rows, row))).astype(np.float32), args.dtype
    )
    out = np.empty_like(dy)
    for r in range(rows):
        out[r] = round_to(
            grad_3d(dy[r : r + 1, :, None], y[r : r + 1, :, None])[0, :, 0], args.dtype
        )
    n = dy.size
    tracemalloc.start()
    started = time.perf_counter()
    j = judge_case(dy, y, out, (-1,), args.dtype)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{n:,} {args.dtype} elements ({rows} rows of {row:,}): judged in {seconds:.1f} s "
        f"({1e9 * seconds / n:.1f} ns/element), passed={j.passed}; peak allocation while judging "
        f"{peak / 2**20:.0f} MiB = {peak / n:.2f} bytes/element, "
        f"{peak / (8 * SLAB_ELEMENTS):.0f} float64 slabs (tensors: "
        f"{3 * dy.itemsize} bytes/element; a float64 copy: 8; one slab: {SLAB_ELEMENTS:,} elements)"
    )


if __name__ == "__main__":
    main()
