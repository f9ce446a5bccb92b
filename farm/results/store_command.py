"""`farm store`: the run store itself.

    farm store info [--store S]                  where it is, its schema, what it holds
    farm store migrate --from SRC --to DST       copy a store's whole history into an empty one
                                                 (e.g. runs/farm.sqlite to a team's postgresql://)

A URL's password is never printed; pass it in $FARM_STORE or a CI secret, not on a shared
terminal (`--to` reads $FARM_STORE_TO when not given, for the same reason).
Exit codes: 0 done, 2 the store cannot serve or the target is not empty.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from farm.results.store import RunStore, store_location
from farm.results.store.transfer import TABLES, copy_store, count, opened_source
from farm.util.argparsing import CommandParser
from farm.util.errors import UsageError
from farm.util.sizes import size_text

LOGGED_EVERY = 100_000  # rows between a migration's progress lines in a log (no terminal)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.rstrip())
        return 0
    if not argv or argv[0] not in ("info", "migrate"):
        what = f"unknown store command {argv[0]!r}" if argv else "no store command given"
        raise UsageError(
            f"{what}; use farm store info [--store S] | farm store migrate --from SRC --to DST"
        )
    return (info if argv[0] == "info" else migrate)(argv[1:])


def info(argv: list[str]) -> int:
    p = CommandParser(prog="farm store info", description="where the store is, and what it holds")
    p.add_argument("--store", help="default: $FARM_STORE or runs/farm.sqlite")
    args = p.parse_args(argv)
    with RunStore(args.store, create=False) as store:
        print(f"store {store.location} ({store.location.kind}), schema v{store.version}")
        print(
            f"size {size_text(store.size_bytes())}; "
            + ", ".join(f"{table} {count(store.db, table):,}" for table, _ in TABLES)
        )
        if not store.may_write():
            print("this role may only read (farm runs, compare and report work; farm run does not)")
    return 0


def migrate(argv: list[str]) -> int:
    p = CommandParser(
        prog="farm store migrate",
        description="copy every run, result, baseline, shrink, bisect and history line of one "
        "store into an empty one; the source is not changed",
    )
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        help="the store to copy (sqlite:PATH, a path or a URL)",
    )
    p.add_argument(
        "--to",
        dest="target",
        default=os.environ.get("FARM_STORE_TO"),
        help="the empty store to fill (default: $FARM_STORE_TO)",
    )
    args = p.parse_args(argv)
    if not args.target:
        raise UsageError("farm store migrate needs --to (or $FARM_STORE_TO): the store to fill")
    source, target = store_location(args.source), store_location(args.target)
    if source == target:
        raise UsageError(f"--from and --to are the same store ({source})")

    terminal = sys.stderr.isatty()
    logged: dict[str, int] = {}  # table -> the rows said last (a log's lines)

    def progress(table: str, n: int) -> None:
        if terminal:  # one line, rewritten (and cleared past its end) as the rows go
            print(f"\r{table}: {n:,} rows\x1b[K", end="", file=sys.stderr, flush=True)
        elif n - logged.get(table, -LOGGED_EVERY) >= LOGGED_EVERY:  # a line now and then
            logged[table] = n
            print(f"{table}: {n:,} rows", file=sys.stderr, flush=True)

    with opened_source(source) as src, RunStore(target) as dst:
        print(f"copying {source} (schema v{src.version}) into {target}", file=sys.stderr)
        copied = copy_store(src, dst, progress)
    if terminal:
        print("", file=sys.stderr)
    print(f"copied into {target}: " + ", ".join(f"{t} {n:,}" for t, n in copied.items()))
    return 0
