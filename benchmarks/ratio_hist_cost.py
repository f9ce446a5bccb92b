"""What binning every element's error over its bound costs the judge (issue 58), A against B.

    git show c9aab6f:golden/fused.c > /tmp/fused-before.c
    .venv/bin/python benchmarks/ratio_hist_cost.py --baseline /tmp/fused-before.c [--repeat 300]

Run by hand (never from a test). The histogram (golden/ratio_hist.py) is made in golden/fused.c's
one pass over the compared elements (``lsg_compared``, golden/metrics.py's fused path), so that
pass is what it can slow down. Both libraries, this tree's golden/fused.c and ``--baseline``'s,
are built as golden/fused_library.py builds them, and each round times one pass of each in
turn over the same elements (152,064 of each dtype: a correct kernel's result, each element's
bound from golden/bound.py), so the load of a shared machine falls on both alike; it prints the
best round of each in ns per element. A baseline source from before the histogram takes the
same call: its function ignores the extra argument (the x86-64 and AArch64 C calling
conventions) and reads the first six limits. Then numpy's path (no compiler on the host): the
binning alone, ``ratio_hist.add``, against the ``MetricsAccumulator._bound`` it is part of.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from golden import bound as bound_mod  # noqa: E402
from golden import fused_library, ratio_hist, rounding  # noqa: E402
from golden.dtypes import numpy_dtype, round_to  # noqa: E402
from golden.metrics import MetricsAccumulator  # noqa: E402

M = 152_064


def elements(dtype: str):
    """(a, g, abits, rbits, bound) of M elements: a case's golden and bound, a result rounded
    from it with a correct kernel's few-ulp noise."""
    rng = np.random.default_rng(1)
    dy = rng.standard_normal((8, M // 8, 1))
    y = np.log(rng.dirichlet(np.ones(M // 8), size=8))[:, :, None]
    g, _, bound = bound_mod.golden_and_bound(dy, y, dtype)
    g, bound = g.reshape(-1).copy(), bound.reshape(-1).copy()
    a = round_to(g * (1 + rng.standard_normal(M) * 2e-8), dtype).astype(numpy_dtype(dtype))
    uint = np.uint32 if dtype == "float32" else np.uint16
    rbits = round_to(g, dtype).astype(numpy_dtype(dtype)).view(uint)
    return a.astype(np.float64), g, a.view(uint).copy(), rbits.copy(), bound


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another golden/fused.c to time beside")
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        kernels = {}
        for name, source in (("this tree", fused_library.SOURCE), ("baseline", args.baseline)):
            if source is None:
                continue
            path = Path(tmp) / f"{name.replace(' ', '_')}.so"
            fused_library.build(path, Path(source))
            kernels[name] = fused_library.Kernel(path)
        print(f"lsg_compared with a bound, best of {args.repeat} rounds; ns per element")
        for dtype in ("float32", "float16", "bfloat16"):
            a, g, abits, rbits, bound = elements(dtype)
            rel = np.empty(M)
            best = dict.fromkeys(kernels, float("inf"))
            for _ in range(args.repeat):
                for name, k in kernels.items():
                    counts = ratio_hist.new_counts()
                    t = time.perf_counter()
                    k.compared(a, g, abits, rbits, bound, dtype, rel, counts)
                    best[name] = min(best[name], time.perf_counter() - t)
            line = ", ".join(f"{n} {1e9 * s / M:.2f}" for n, s in best.items())
            print(f"  {dtype}: {line}")
        print("numpy's path, float16: the binning alone and the whole _bound it is part of")
        a, g, abits, rbits, bound = elements("float16")
        ratio = np.abs(a - g) / bound
        idx, mask = np.empty(M, np.int64), np.empty(M, bool)
        counts = ratio_hist.new_counts()
        acc = MetricsAccumulator("float16", (M,), k=8, fused=None)
        out = a.astype(np.float16)
        rg = rounding.rounded(g, "float16")
        b_bin = b_all = float("inf")
        for _ in range(max(1, args.repeat // 10)):
            t = time.perf_counter()
            ratio_hist.add(counts, ratio, idx, mask)
            b_bin = min(b_bin, time.perf_counter() - t)
            t = time.perf_counter()
            acc.add(out, g, 0, bound=bound, rounded=rg)
            b_all = min(b_all, time.perf_counter() - t)
        print(f"  binning {1e9 * b_bin / M:.2f}, the accumulator's add {1e9 * b_all / M:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
