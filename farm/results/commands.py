"""`farm runs` (and `farm runs prune`; show, trend and import of the measurements:
farm/results/measure_commands.py), `farm baseline` and `farm compare`: the run store and the
regression comparison on the command line (the comparison is farm/results/compare.py, its
renderings farm/results/compare_render.py; what a prune keeps, farm/results/retention.py and
RunStore.protected_runs).

Exit codes of `farm compare`: 0 no regression (or no baseline to compare with), 1 regressions,
2 usage error (unknown run, empty store).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
from collections.abc import Mapping, Sequence

from farm.results import measure_commands, measure_render, retention
from farm.results.arguments import drift_factor, unknown_run
from farm.results.compare import DEFAULT_DRIFT_FACTOR, DEFAULT_NOISE_FLOOR, compare
from farm.results.compare_render import (
    headline,
    plain_table,
    render_rich,
    to_html,
    to_markdown,
    to_text,
)
from farm.results.store import METRIC_COLUMNS, RunStore, StoreLocation, open_existing
from farm.results.store.rows import planted_bug
from farm.util.argparsing import CommandParser, number, whole_number
from farm.util.errors import StoreError, UsageError
from farm.util.sizes import size_text


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store", default=None, help="run store (default: $FARM_STORE or runs/farm.sqlite)"
    )


def _open(args) -> RunStore:
    """The store to read: it must exist (a typo in --store is not a new, empty store)."""
    return open_existing(args.store)


def main_runs(argv: Sequence[str] | None = None) -> int:
    """`farm runs [--tier T] [--limit N] [--json] [--recover]`: list the recorded runs, newest
    first, then the measurements of farm mutate and farm coverage, and what the store and the
    run directories take (--recover: only close the runs whose process died, importing their
    records). `farm runs prune`: remove old runs; `farm runs show ID`: a measurement whole;
    `farm runs trend`: each tier's last measurements; `farm runs import DIR`: store one."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["prune"]:
        return main_prune(argv[1:])
    if argv[:1] and argv[0] in measure_commands.SUBCOMMANDS:
        return getattr(measure_commands, f"main_{argv[0]}")(argv[1:])
    p = CommandParser(prog="farm runs", description=main_runs.__doc__)
    p.add_argument(
        "action",
        nargs="?",
        choices=("prune", *measure_commands.SUBCOMMANDS),
        help="prune, show ID, trend, import DIR: see farm runs ACTION --help",
    )
    _store_arg(p)
    p.add_argument("--tier")
    p.add_argument(
        "--recover", action="store_true", help="close dead runs (their records are imported)"
    )
    p.add_argument("--limit", type=whole_number(1), default=20, help="runs shown (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args(argv)
    if args.action:  # `farm runs --store S prune`: prune's options are its own
        raise UsageError(
            f"{args.action} goes first: farm runs {args.action} [--store S] ... (see farm runs "
            f"{args.action} --help)"
        )
    with _open(args) as store:
        if args.recover:
            return 0
        runs = store.runs(limit=args.limit, tier=args.tier)
        every = store.runs(limit=None)
        # pytest suites/ runs' directories, which no store holds: listed after the stored runs,
        # in the table and in the JSON alike
        unstored = retention.unstored(store.location, (r["run_id"] for r in every))
        # farm mutate's and farm coverage's measurements: listed after the runs
        measures = store.measures(limit=args.limit, tier=args.tier)
        if args.json:
            listed: list[Mapping] = [{**r, "kind": "run", "stored": True} for r in runs]
            listed += [retention.unstored_json(u) for u in unstored[: args.limit]]
            listed += [m.entry() for m in measures]
            print(json.dumps(listed, indent=2, sort_keys=True))
            return 0
        baselines = {r["tier"]: store.explicit_baseline(r["tier"]) for r in runs}
        size = retention.footprint(every, store.location, store.size_bytes())
    hdr = (
        "run",
        "tier",
        "shard",
        "group",
        "started",
        "ended",
        "exit",
        "cases",
        "passed",
        "failed",
        "broken",
        "package",
        "commit",
        "baseline",
    )
    rows = []
    for r in runs:
        c = r["counts"]
        rows.append(
            [
                r["run_id"],
                r["tier"],
                shard_shown(r),
                r.get("run_group") or "",
                r["started_at"] or "",
                r["ended_at"] if r["status"] == "finished" else f"({r['status']})",
                "" if r["exit_code"] is None else str(r["exit_code"]),
                str(c["total"]),
                str(c["passed"]),
                str(c["failed"]),
                str(c["broken"]),
                package_shown(r),
                (r.get("git_commit") or "")[:12],
                "yes" if baselines.get(r["tier"]) == r["run_id"] else "",
            ]
        )
    if not runs and not unstored and not measures:
        print("no runs recorded yet")
    if runs:
        _print_table("Runs (newest first)", hdr, rows)
    for line in retention.unstored_lines(unstored[: args.limit]):
        print(line)
    if measures:
        _print_table(
            "Measurements of farm mutate and farm coverage (newest first; farm runs show ID)",
            measure_render.LISTING_HEADER,
            [measure_render.listing_row(m) for m in measures],
        )
    print(size.line(store.location))
    return 0


def _print_table(title: str, hdr: Sequence[str], rows: list[list[str]]) -> None:
    """A table on a terminal; pipes and logs get every character of the ids."""
    if not sys.stdout.isatty():
        print("\n".join(plain_table(hdr, rows, indent="")))
        return
    from rich.table import Table
    from rich.text import Text

    from farm.util.console import FarmConsole

    t = Table(title=title, title_justify="left")
    for h in hdr:
        t.add_column(h, no_wrap=h in ("run", "measurement"))
    for row in rows:
        t.add_row(*map(Text, row))  # a tier of case files may hold brackets
    FarmConsole().print(t)


def shard_shown(run: Mapping) -> str:
    """The shard column of `farm runs`: K/N for a shard, "merged N" for the run `farm merge`
    made of N shards, empty for a run of its whole selection."""
    if run.get("shard"):
        return str(run["shard"])
    return f"merged {run['shards']}" if run.get("shards") else ""


def package_shown(run: Mapping) -> str:
    """The package column of `farm runs`: version and hash, and a planted bug's name (a test of
    the farm's run is told from the operator's at a glance)."""
    shown = f"{run.get('package_version') or ''} {(run.get('package_sha256') or '')[:12]}"
    bug = planted_bug(run)
    return shown.strip() + (f" (planted bug {bug})" if bug else "")


def main_prune(argv: Sequence[str] | None = None) -> int:
    """`farm runs prune (--older-than AGE | --keep N) [--dry-run] [--no-vacuum]`: delete old
    runs from the store (their results, in one transaction) and their run directories
    (runs/<run id>/), then give the space back (VACUUM). A run goes when any rule given picks
    it; running runs, baselines and each suite's newest finished run with the run it is
    compared with always stay (docs/store.md: Retention)."""
    p = CommandParser(prog="farm runs prune", description=main_prune.__doc__)
    _store_arg(p)
    p.add_argument(
        "--older-than",
        metavar="AGE",
        type=retention.parse_age,
        help="runs started longer ago than AGE (a number and m, h, d or w: 90d)",
    )
    p.add_argument(
        "--keep", metavar="N", type=int, help="the N newest runs of each suite key (the rest go)"
    )
    p.add_argument("--dry-run", action="store_true", help="list what would go; remove nothing")
    p.add_argument(
        "--no-vacuum",
        action="store_true",
        help="skip VACUUM (it holds the store's write lock while it rewrites the file; the freed "
        "pages are reused by later runs either way)",
    )
    args = p.parse_args(argv)
    if args.older_than is None and args.keep is None:
        raise UsageError("farm runs prune needs a rule: --older-than AGE, --keep N, or both")
    if args.keep is not None and args.keep < 1:
        raise UsageError(f"--keep {args.keep}: keep 1 or more runs of each suite")
    now = _dt.datetime.now(_dt.timezone.utc)
    vacuum = not args.no_vacuum
    with _open(args) as store:
        before = store.size_bytes()
        # A prune stopped after its transaction left its directories and its VACUUM: first.
        stopped = retention.finish_stopped(store, store.location, dry_run=args.dry_run)
        doomed, spared = store.prune(
            lambda runs: retention.chosen_by_rules(
                runs, now=now, older_than=args.older_than, keep=args.keep
            ),
            dry_run=args.dry_run,
            before_delete=lambda doomed: retention.write_pending(store.location, doomed, vacuum),
        )
        removed = retention.remove_run_directories(doomed, store.location, dry_run=args.dry_run)
        left = (r["run_id"] for r in store.runs(limit=None))
        old = retention.unstored_by_age(
            retention.unstored(store.location, left), now=now, older_than=args.older_than
        )
        unstored = retention.remove_unstored(old, dry_run=args.dry_run)
        left_vacuum = stopped is not None and stopped[1]
        if not args.dry_run and vacuum and (doomed or left_vacuum):
            store.reclaim_space()
        if not args.dry_run:
            retention.clear_pending(store.location)  # done: nothing left for the next prune
        after = store.size_bytes()
    lines = prune_report(removed, spared, store.location, before, after, args.dry_run)
    lines[-1:-1] = unstored_report(old, unstored, args.dry_run)
    if stopped is not None:
        lines.insert(0, stopped_line(stopped[0], left_vacuum and vacuum, args.dry_run))
    print("\n".join(lines))
    failed = removed.failed + unstored.failed
    failed += stopped[0].failed if stopped is not None else []
    if failed:  # the runs are gone from the store: nothing will find these again
        raise StoreError("\n".join(f"run directory {f}: remove it by hand" for f in failed))
    return 0


def unstored_report(old: list[retention.Unstored], done: retention.Removed, dry: bool) -> list[str]:
    """What a prune removed (or would) of the run directories no store holds (pytest suites/)."""
    verb = "would remove" if dry else "removed"
    return [
        f"{verb} {u.run_id} (not stored: pytest suites/ without farm run, started "
        f"{u.started.isoformat(timespec='seconds') if u.started else '?'}, directory "
        f"{size_text(done.dir_bytes.get(u.run_id, u.bytes))})"
        for u in old
        if u.run_id in done.dir_bytes
    ]


def stopped_line(done: retention.Removed, vacuumed: bool, dry: bool) -> str:
    """What a prune finished of one that was stopped."""
    parts = []
    if done.dir_bytes:
        parts.append(
            f"{len(done.dir_bytes)} run directories of runs no longer in the store "
            f"({size_text(sum(done.dir_bytes.values()))}): "
            + ("they would be removed" if dry else "removed")
        )
    if vacuumed:
        parts.append("its VACUUM: " + ("it would be done" if dry else "done"))
    return "a prune that was stopped left " + ("; ".join(parts) or "nothing more to do")


def prune_report(
    removed: retention.Removed,
    spared: dict[str, str],
    store: StoreLocation,
    before: int,
    after: int,
    dry: bool,
) -> list[str]:
    """What a prune removed (or would), run by run, what it kept that a rule picked, and the
    space: the store's file before and after, and the run directories."""
    verb = "would remove" if dry else "removed"
    lines = []
    for run in removed.runs:
        size = removed.dir_bytes.get(run["run_id"])
        where = f", directory {size_text(size)}" if size is not None else ", no directory"
        lines.append(
            f"{verb} {run['run_id']} ({run['tier']}, {run['status']}, started "
            f"{run['started_at']}, {run['counts']['total']} results{where})"
        )
    for run_id, why in sorted(spared.items()):
        lines.append(f"kept {run_id}: {why}")
    results = sum(r["counts"]["total"] for r in removed.runs)
    dirs = sum(removed.dir_bytes.values())
    if dry:
        store_part = f"store {store} is {size_text(before)} now"
    else:
        freed = max(before - after, 0) + dirs
        store_part = (
            f"store {store} {size_text(before)} -> {size_text(after)}; "
            f"freed {size_text(freed)} in all"
        )
    lines.append(
        f"{verb} {len(removed.runs)} runs ({results} results) and {len(removed.dir_bytes)} run "
        f"directories ({size_text(dirs)}); {store_part}"
    )
    return lines


def main_baseline(argv: Sequence[str] | None = None) -> int:
    """`farm baseline set RUN [--tier T]` | `farm baseline show [--tier T]` |
    `farm baseline clear --tier T`."""
    p = CommandParser(prog="farm baseline", description=main_baseline.__doc__)
    _store_arg(p)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("set", help="make RUN the baseline of its tier (or of --tier)")
    s.add_argument("run")
    s.add_argument("--tier", help="default: the run's own tier")
    s.add_argument(
        "--force",
        action="store_true",
        help="set a run that is not a finished, green, whole run of the real operator",
    )
    sh = sub.add_parser("show", help="the baseline each tier would use now")
    sh.add_argument("--tier")
    cl = sub.add_parser("clear", help="drop the explicit baseline (back to last green)")
    cl.add_argument("--tier", required=True)
    args = p.parse_args(argv)
    with _open(args) as store:
        if args.cmd == "set":
            run = store.get_run(args.run)
            if run is None:
                raise unknown_run(f"unknown run {args.run!r}", store.location)
            tier = args.tier or run["tier"]
            forced = store.set_baseline(tier, args.run, force=args.force)
            print(
                f"baseline of tier {tier}: {args.run}"
                + (f" (set with --force: {'; '.join(forced)})" if forced else "")
            )
            return 0
        if args.cmd == "clear":
            if args.tier not in {r["tier"] for r in store.runs(limit=None)}:
                raise UsageError(f"tier {args.tier!r} has no runs in this store: nothing to clear")
            store.clear_baseline(args.tier)
            print(f"baseline of tier {args.tier} cleared (last green run is used)")
            return 0
        tiers = [args.tier] if args.tier else sorted({r["tier"] for r in store.runs(limit=None)})
        for tier in tiers:
            explicit = store.explicit_baseline(tier)
            eff = store.baseline_for(tier)
            how = "explicit" if explicit and eff == explicit else "last green"
            print(f"{tier}: {eff or '(none)'}" + (f" ({how})" if eff else ""))
        return 0


def _parse_floor(items: Sequence[str] | None) -> dict[str, dict[str, float]] | None:
    """--noise-floor's values as {dtype: {metric: floor}}: a bare number is every dtype's and
    metric's, wherever it is given; DTYPE=X and DTYPE:METRIC=X, in order, on top of it."""
    if not items:
        return None
    base: float | None = None
    named: dict[str, dict[str, float]] = {}
    for item in items:
        key, _, text = item.rpartition("=")
        value = _floor_number(item, text)
        if not key:
            base = value
            continue
        dtype, _, metric = key.partition(":")
        if dtype not in DEFAULT_NOISE_FLOOR:
            raise UsageError(
                f"--noise-floor {item}: unknown dtype {dtype!r}; use one of "
                f"{', '.join(DEFAULT_NOISE_FLOOR)}"
            )
        if metric and metric not in METRIC_COLUMNS:
            raise UsageError(
                f"--noise-floor {item}: unknown metric {metric!r}; use one of "
                f"{', '.join(METRIC_COLUMNS)}"
            )
        named.setdefault(dtype, {}).update(
            {m: value for m in ([metric] if metric else METRIC_COLUMNS)}
        )
    spec: dict[str, dict[str, float]] = {}
    if base is not None:
        spec = {dt: dict.fromkeys(METRIC_COLUMNS, base) for dt in (*DEFAULT_NOISE_FLOOR, "*")}
    for dtype, metrics in named.items():
        spec.setdefault(dtype, {}).update(metrics)
    return spec


def _floor_number(item: str, text: str) -> float:
    value = number(text)
    if not math.isfinite(value) or value < 0:
        raise UsageError(
            f"--noise-floor {item}: {text!r} is not a number >= 0 (give X, DTYPE=X or "
            "DTYPE:METRIC=X, e.g. float16=1e-4)"
        )
    return value


def main_compare(argv: Sequence[str] | None = None) -> int:
    """`farm compare [RUN] [--baseline RUN] [--drift-factor F] [--noise-floor SPEC]...`

    Compares RUN (default: the newest finished run) with its baseline and exits 1 on
    regressions."""
    p = CommandParser(prog="farm compare", description=main_compare.__doc__)
    _store_arg(p)
    p.add_argument("run", nargs="?", help="default: the newest finished run")
    p.add_argument("--baseline", help="default: the tier's explicit baseline, else last green")
    p.add_argument("--drift-factor", type=drift_factor, default=DEFAULT_DRIFT_FACTOR)
    p.add_argument(
        "--noise-floor",
        action="append",
        metavar="SPEC",
        help="a number for every dtype, or DTYPE=X, or DTYPE:METRIC=X; repeatable",
    )
    p.add_argument(
        "--strict", action="store_true", help="count cases broken by infrastructure as regressions"
    )
    p.add_argument("--format", choices=("rich", "text", "json", "markdown", "html"), default="rich")
    p.add_argument("--output", "-o", help="write the rendering to this file instead of stdout")
    p.add_argument("--limit", type=whole_number(0), default=50, help="rows per table (0: all)")
    args = p.parse_args(argv)
    limit = None if args.limit == 0 else args.limit
    with _open(args) as store:
        run_id = args.run
        if run_id is None:
            latest = store.latest_run(finished=True)
            if latest is None:
                print("farm compare: no finished run in the store", file=sys.stderr)
                return 2
            run_id = latest["run_id"]
        try:
            comp = compare(
                store,
                run_id,
                args.baseline,
                args.drift_factor,
                _parse_floor(args.noise_floor),
                strict=args.strict,
            )
        except KeyError as exc:
            raise unknown_run(exc.args[0], store.location) from None
        except ValueError as exc:  # what compare() refuses that the options did not: one line
            raise UsageError(str(exc)) from None
    fmt = args.format
    if fmt == "rich" and (args.output or not sys.stdout.isatty()):
        fmt = "text"  # rich truncates cells to the terminal width; files and pipes get it all
    if fmt == "rich":
        render_rich(comp, limit=limit)
    else:
        text = {
            "text": lambda: to_text(comp, limit),
            "json": comp.to_json,
            "markdown": lambda: to_markdown(comp, limit),
            "html": lambda: to_html(comp, limit),
        }[fmt]()
        if args.output:
            try:
                with open(args.output, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as exc:
                raise UsageError(
                    f"-o {args.output}: cannot write it ({exc.strerror or exc}); choose another "
                    "path"
                ) from None
            print("\n".join(headline(comp)))
        else:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 1 if comp.has_regressions else 0
