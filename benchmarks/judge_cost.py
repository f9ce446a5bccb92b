"""What judging a case costs per element, against the vectorised lower bound (issue 13).

    .venv/bin/python benchmarks/judge_cost.py [--dtypes float32,float16,bfloat16]
        [--shapes 1x152064,8x19008] [--library build/ascendc-cpu/liblsg_ascendc_cpu.so]
        [--repeat 15] [--memory-elements 16777216]

Run by hand (never from a test). For each dtype and shape (reduced over the last axis unless the
shape says otherwise: ``4x64x4096:1`` reduces axis 1) it prints, in ns per element, the best
wall-clock time over ``--repeat`` rounds (each round times every step once, in turn, so that the
load of a shared machine falls on all of them alike) of:

* ``gen``: ``golden.inputs.make_inputs(shape, dtype, axes, "uniform", "normal", "none", seed)``;
* ``op``: the operator, ``farm.agent.backends.native.run(dy, y, axes, "Ascend910B1")`` on the
  library ``--library`` names (default: the emulated real kernel, LSG_NATIVE_LIB or
  build/ascendc-cpu/liblsg_ascendc_cpu.so; the twin is build/twin/liblsg_twin.so);
* ``golden``: the float64 golden, ``golden.reference.grad_3d`` over the merged [d0, d1, d2] view;
* ``pass``: one vectorised pass of error arithmetic over the whole tensor,
  ``a = out.astype(float64); err = |a - g|; rel = err / (|g| + 1e-7)``.

The **lower bound** is gen + op + golden + pass: what any farm must spend on a case (make it,
run it, compute the golden, look at every error once). ``judge`` is what the agent spends judging
the case once the operator has returned: ``farm.agent.execute._judge`` (golden.judge.judge_case
with the error histogram, the record's metrics and verdicts), which includes its own golden.
``ratio`` is judge / lower bound; issue 13 asks for at most 2 on 152k-element cases.

Then the peak memory judging allocates (tracemalloc, which numpy reports its buffers to), from an
empty workspace, on one large case of ``--memory-elements`` elements (fp16, one reduce row per
2^20 elements, a correctly rounded out) and on one of 152,064 elements, as
benchmarks/judge_memory.py measures it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.agent.backends import native  # noqa: E402
from farm.agent.execute import _judge  # noqa: E402
from golden.contract import merge_shape  # noqa: E402
from golden.dtypes import REL_EPS, round_to  # noqa: E402
from golden.inputs import make_inputs  # noqa: E402
from golden.judge import judge_case  # noqa: E402
from golden.reference import SLAB_ELEMENTS, grad_3d  # noqa: E402

SOC = "Ascend910B1"


def parse_shape(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    dims, _, axis = text.partition(":")
    shape = tuple(int(d) for d in dims.split("x"))
    return shape, (int(axis),) if axis else (-1,)


def golden_of(dy: np.ndarray, y: np.ndarray, axes) -> np.ndarray:
    d0, d1, d2 = merge_shape(dy.shape, axes)
    return grad_3d(dy.reshape(d0, d1, d2), y.reshape(d0, d1, d2))


def one_pass(out: np.ndarray, g: np.ndarray) -> np.ndarray:
    a = out.astype(np.float64).reshape(g.shape)
    with np.errstate(all="ignore"):
        err = np.abs(a - g)
        return err / (np.abs(g) + REL_EPS)


def measure(shape, axes, dtype: str, repeat: int, library: str) -> dict:
    """Best of `repeat` rounds, each timing every step once in turn."""
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", "none", 7)
    out = native.run(dy, y, axes, SOC, library=library).out
    g = golden_of(dy, y, axes)
    case = {"dtype": dtype, "axes": list(axes)}
    expect = {"kind": "precision"}
    steps = {
        "gen": lambda: make_inputs(shape, dtype, axes, "uniform", "normal", "none", 7),
        "op": lambda: native.run(dy, y, axes, SOC, library=library),
        "golden": lambda: golden_of(dy, y, axes),
        "pass": lambda: one_pass(out, g),
        "judge": lambda: _judge(case, dy, y, out, expect),
    }
    best = dict.fromkeys(steps, float("inf"))
    record = None
    for _ in range(repeat):
        for name, step in steps.items():
            started = time.perf_counter()
            value = step()
            best[name] = min(best[name], time.perf_counter() - started)
            if name == "judge":
                record = value
    n = dy.size
    lower = best["gen"] + best["op"] + best["golden"] + best["pass"]
    figures = {name: seconds / n * 1e9 for name, seconds in best.items()}
    assert record is not None
    return {
        **figures,
        "n": n,
        "lower": lower / n * 1e9,
        "ratio": best["judge"] / lower,
        "passed": record["verdict"]["passed"],
    }


def peak_memory(elements: int, dtype: str) -> tuple[float, float, float]:
    """(peak MiB, bytes per element, seconds) of judge_case on a large correct case, from an
    empty workspace (golden/workspace.py keeps one per thread between cases)."""
    row = 1 << 20 if elements >= 1 << 20 else elements
    rows = max(1, elements // row)
    rng = np.random.default_rng(0)
    dy = round_to(rng.normal(size=(rows, row)).astype(np.float32), dtype)
    y = round_to((np.log(1.0 / row) + 0.1 * rng.normal(size=(rows, row))).astype(np.float32), dtype)
    out = np.empty_like(dy)
    for r in range(rows):
        out[r] = round_to(grad_3d(dy[r : r + 1, :, None], y[r : r + 1, :, None])[0, :, 0], dtype)
    _drop_workspaces()
    tracemalloc.start()
    started = time.perf_counter()
    j = judge_case(dy, y, out, (-1,), dtype)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if not j.passed:
        raise SystemExit(f"the memory case failed: {j.reason}")
    return peak / 2**20, peak / dy.size, seconds


def _drop_workspaces() -> None:
    try:
        from golden import workspace

        workspace.workspace().clear()
    except AttributeError:  # before issue 13: no workspace
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--shapes", default="1x152064,8x19008")
    parser.add_argument("--library", default=os.environ.get(native.ENV_LIB) or "")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--memory-elements", type=int, default=1 << 24, help="0: skip")
    args = parser.parse_args()
    library = args.library or str(ROOT / "build" / "ascendc-cpu" / "liblsg_ascendc_cpu.so")
    os.environ[native.ENV_LIB] = library
    print(f"library {library}; best of {args.repeat}; ns per element\n")
    print("| dtype | shape | elements | gen | op | golden | pass | lower bound | judge | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for dtype in args.dtypes.split(","):
        for text in args.shapes.split(","):
            shape, axes = parse_shape(text)
            r = measure(shape, axes, dtype, args.repeat, library)
            if not r["passed"]:
                print(f"  (the case failed its verdict: {dtype} {text})")
            print(
                f"| {dtype} | {text} | {r['n']:,} | {r['gen']:.1f} | {r['op']:.1f} | "
                f"{r['golden']:.1f} | {r['pass']:.1f} | {r['lower']:.1f} | {r['judge']:.1f} | "
                f"{r['ratio']:.2f} |",
                flush=True,
            )
    if args.memory_elements:
        print()
        for elements in (args.memory_elements, 152_064):
            mib, per, seconds = peak_memory(elements, "float16")
            print(
                f"peak allocation judging {elements:,} float16 elements: {mib:.1f} MiB = "
                f"{per:.2f} bytes/element ({mib * 2**20 / (8 * SLAB_ELEMENTS):.1f} float64 slabs "
                f"of {SLAB_ELEMENTS:,}); judged in {seconds:.2f} s "
                f"({1e9 * seconds / elements:.0f} ns/element)"
            )


if __name__ == "__main__":
    main()
