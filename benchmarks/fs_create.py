"""What a new file costs on the disks a run writes to: the runs directory's and a RAM disk's.

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/fs_create.py                  # runs/ and /dev/shm
    .venv/bin/python benchmarks/fs_create.py --dirs /tmp,/dev/shm --files 3000

A farm run makes a new file for every case (allure-pytest's result, written whole then renamed)
and its report another for every case (`allure generate`); on a disk where making a file is slow,
that is a cost per case that no code of the farm's shows. Per file, in a fresh directory under
each of ``--dirs``: creating an empty file, writing 3,000 bytes into a file that exists, creating
one with 3,000 bytes (what a result file is), renaming it, linking it, and appending 100 bytes to
one file (what a records file gets). Wall and system CPU per operation; the directory is removed
afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAYLOAD = b"x" * 3000


def measure(n: int, step: Callable[[int], None]) -> tuple[float, float]:
    """(wall, system CPU) per call of step(i), i in range(n), in microseconds."""
    before, started = os.times(), time.perf_counter()
    for i in range(n):
        step(i)
    wall = time.perf_counter() - started
    return 1e6 * wall / n, 1e6 * (os.times().system - before.system) / n


def write_new(path: str, data: bytes, flags: int = 0) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def steps(d: str) -> list[tuple[str, Callable[[int], None]]]:
    return [
        ("create an empty file", lambda i: os.close(os.open(f"{d}/e{i}", os.O_CREAT, 0o644))),
        ("write 3,000 B into an existing file", lambda i: write_new(f"{d}/e{i}", PAYLOAD)),
        ("create a file of 3,000 B", lambda i: write_new(f"{d}/w{i}", PAYLOAD)),
        ("rename it", lambda i: os.rename(f"{d}/w{i}", f"{d}/r{i}")),
        ("hard-link it", lambda i: os.link(f"{d}/r{i}", f"{d}/l{i}")),
        ("append 100 B to one file", lambda i: write_new(f"{d}/one", PAYLOAD[:100], os.O_APPEND)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dirs", default=f"{REPO / 'runs'},/dev/shm", help="comma-separated")
    ap.add_argument("--files", type=int, default=2000)
    args = ap.parse_args()
    rows: dict[str, list[str]] = {}
    dirs = [d for d in args.dirs.split(",") if d]
    for base in dirs:
        Path(base).mkdir(parents=True, exist_ok=True)
        work = tempfile.mkdtemp(prefix="fs-create-", dir=base)
        try:
            for label, step in steps(work):
                wall, system = measure(args.files, step)
                rows.setdefault(label, []).append(f"{wall:.0f} µs ({system:.0f} µs system)")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{args.files:,} files each\n")
    print("| operation | " + " | ".join(dirs) + " |")
    print("|---|" + "--:|" * len(dirs))
    for label, cells in rows.items():
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
