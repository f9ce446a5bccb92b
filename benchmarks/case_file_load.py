"""How long `suites.casefile.load` takes on big case files: 3,000 and 30,000 cases, each in JSON,
YAML and CSV (issue 24's target: 3,000 cases in under a second as JSON, a few seconds as YAML).

    .venv/bin/python benchmarks/case_file_load.py                 # the table, with the load average
    .venv/bin/python benchmarks/case_file_load.py --sizes 3000 --repeat 5 --formats json

The cases are the full tier's (`farm cases --tier full`: 31,831), taken evenly spread so that
every section of the matrix is in both sizes, and written with `casefile.dump` (what `farm cases
-o FILE` writes) into a temporary directory. Each figure is the median of --repeat loads in this
process, after the imports: the parse, the limits, the validation and the making of every Case.
The 1-minute load average is printed before and after: on a shared machine it is what the
figures mean.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from suites import casefile, matrix  # noqa: E402

FORMATS = ("json", "yaml", "csv")


def spread(cases: list, n: int) -> list:
    """n cases evenly spread over the list (all of it when it has fewer)."""
    if n >= len(cases):
        return list(cases)
    return [cases[i * len(cases) // n] for i in range(n)]


def timed_load(path: Path, repeat: int) -> tuple[float, int]:
    """The median seconds of `repeat` loads, and how many cases a load gives."""
    times, count = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        count = len(casefile.load(path))
        times.append(time.perf_counter() - started)
    return statistics.median(times), count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3000,30000", help="cases per file, comma-separated")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    formats = args.formats.split(",")

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tier = matrix.expand("full")
    rows = []
    with tempfile.TemporaryDirectory(prefix="case-file-load-") as work:
        for n in sizes:
            cases = spread(tier, n)
            for kind in formats:
                path = casefile.dump(cases, Path(work) / f"cases-{n}.{kind}")
                seconds, count = timed_load(path, args.repeat)
                size_mb = path.stat().st_size / 1e6
                rows.append((kind, size_mb, seconds, count))
                print(f"  {n:>6} {kind:<4} {seconds:7.2f} s", file=sys.stderr)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print(f"| cases | format | file | load (median of {args.repeat}) | per case |")
    print("|---:|---|---:|---:|---:|")
    for kind, size_mb, seconds, count in rows:
        print(
            f"| {count:,} | {kind} | {size_mb:.1f} MB | {seconds:.2f} s | "
            f"{seconds / count * 1e3:.3f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
