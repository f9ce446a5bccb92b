"""The operator's cost per element on the CPU: the emulated real kernel (liblsg_ascendc_cpu.so, the
Ascend C kernel source run on the emulated device) beside the twin (liblsg_twin.so).

    .venv/bin/python benchmarks/kernel_cost.py [--soc Ascend910B1] [--threads 1] [--repeat 3]
                                               [--sizes small,large] [--json FILE]

For each dtype (fp32, fp16, bf16), schedule (NO_REDUCE, REDUCE_TAIL, REDUCE_MID) and size, both
libraries run the same inputs through the C ABI (farm.agent.backends.native.run: phase one, the
checks and the tiling, then phase two, the kernel); the best of --repeat calls, divided by the
element count, is the cost per element in ns. The table also gives the ratio emulated / twin. The
emulated device checks every UB and GM access, keeps a write map of the output and runs the
kernel's vector instructions one by one, which is what the ratio measures. --threads 1 (the
default) is one host thread for all emulated cores: the cost per element of the emulation itself;
--threads 0 uses every core of the machine. Each call's outputs are compared bit for bit
(NaN-aware) between the two libraries: the table says so. A call of the emulated kernel also pays
a fixed cost: the device copies the inputs and the output into its guarded arena (the system
workspace, 16 MiB on Atlas A2, is presented as zero pages, not copied) and sets up each core's
state, which weighs on small calls.

Both libraries are built first (farm.pool.build, a no-op when up to date). Nothing is asserted:
timings
on a shared machine are measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from farm.agent.backends import native  # noqa: E402
from farm.pool import build  # noqa: E402
from golden.inputs import make_inputs  # noqa: E402
from golden.soc import PROFILES  # noqa: E402

DTYPES = ("float32", "float16", "bfloat16")
# schedule -> size -> (shape, axes)
CASES = {
    "NO_REDUCE": {
        "small": ((16, 1, 1024), (1,)),
        "large": ((64, 1, 16384), (1,)),
    },
    "REDUCE_TAIL": {
        "small": ((16, 1024), (-1,)),
        "large": ((32, 32000), (-1,)),
    },
    "REDUCE_MID": {
        "small": ((4, 64, 64), (1,)),
        "large": ((8, 512, 256), (1,)),
    },
}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    nan = np.isnan(a.astype(np.float64))
    if not np.array_equal(nan, np.isnan(b.astype(np.float64))):
        return False
    width = np.uint16 if a.dtype.itemsize == 2 else np.uint32
    return np.array_equal(a.view(width)[~nan], b.view(width)[~nan])


def best(library, dy, y, axes, soc, threads: int, repeat: int) -> tuple[float, np.ndarray]:
    seconds, out = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = native.run(dy, y, axes, soc, threads=threads, library=library)
        elapsed = time.perf_counter() - started
        if result.status != 0:
            raise SystemExit(f"{library}: {result.reason}: {result.message}")
        seconds, out = min(seconds, elapsed), result.out
    assert out is not None
    return seconds, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    parser.add_argument("--threads", type=int, default=1, help="host threads (0: all cores)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    sizes = args.sizes.split(",")

    libs = {
        "ascendc-cpu": build.build_ascendc_cpu(build.default_build_dir(target="ascendc-cpu")),
        "twin": build.build_twin(build.default_build_dir()),
    }
    print(
        f"# kernel cost per element: {args.soc}, threads={args.threads}, best of {args.repeat}"
        f" ({platform.processor() or platform.machine()}, {os.cpu_count()} cores,"
        f" load {os.getloadavg()[0]:.1f})\n"
    )
    print(
        "| dtype | schedule | size | shape | elements | emulated ns/elem | twin ns/elem "
        "| emulated/twin | same bits |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---|")
    rows = []
    for dtype in DTYPES:
        if dtype == "bfloat16" and not PROFILES[args.soc].bf16_cast:
            print(f"| {dtype} | (rejected on {args.soc}: no bf16 Cast) | | | | | | | |")
            continue
        for schedule, by_size in CASES.items():
            for size in sizes:
                shape, axes = by_size[size]
                dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=1)
                n = dy.size
                emu_s, emu_out = best(libs["ascendc-cpu"], dy, y, axes, args.soc, args.threads,
                                      args.repeat)  # fmt: skip
                twin_s, twin_out = best(libs["twin"], dy, y, axes, args.soc, args.threads,
                                        args.repeat)  # fmt: skip
                row = {
                    "dtype": dtype,
                    "schedule": schedule,
                    "size": size,
                    "shape": list(shape),
                    "elements": n,
                    "emulated_ns": 1e9 * emu_s / n,
                    "twin_ns": 1e9 * twin_s / n,
                    "same_bits": same(emu_out, twin_out),
                }
                rows.append(row)
                print(
                    f"| {dtype} | {schedule} | {size} | {'x'.join(map(str, shape))} | {n:,} "
                    f"| {row['emulated_ns']:.1f} | {row['twin_ns']:.1f} "
                    f"| {row['emulated_ns'] / row['twin_ns']:.1f} | {row['same_bits']} |",
                    flush=True,
                )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
