"""`farm mutate [--tier T]`: how many small edits of the operator's real sources a tier's cases
catch (the mutation score).

The mutants (farm/run/mutants.py: regex rules that fit Ascend C, each one edit of one line with
an id, file:line:rule.n) are made from the sources of this checkout's op/. Each is built in a
scratch copy of the sources and run through the tier's cases on the emulated real kernel, as
the agent runs them on the backend `farm run` takes (--backend; default the target's: acl, the
scratch copy's own emulated ACL runtime and aclnn layer, whose source is mutated too) and judged
as `farm run` judges them (farm/run/mutate.py). The original
operator runs the cases first: one it fails already is left out (a kill there says nothing).

Killed: at least one case fails or breaks; a kill by fewer than 3 failing cases is weak.
Survived: every case passes (the cases that came closest to failing are kept); a survivor that
op/mutants_explained.toml explains (no case can kill it, and why) is counted apart. A kill whose
failing cases were all refused by an emulation policy (a rule of the emulated device that CANN
does not enforce) is policy-only, counted apart; a kill with both kinds names a case that
catches it through the results. Equivalent: the built libraries are the original's once
stripped (not run). Stillborn: it does not compile. The score is killed / (killed + survived).

Everything goes to the run directory (default runs/mutate/<id>/): mutants.jsonl (each outcome
as it comes), mutation.json (every mutant's outcome, at the end) and report/index.html (the
score, the survivors with their lines and closest cases, the weak kills); the last lines say the
score and where the page is.

Exit 0: done (and the score is at least --min-score, when given); 1: below --min-score;
2: usage or build errors; 130/143/129: interrupted (the scratch copies are removed).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from rich.markup import escape

from farm.run import mutants as mutant_rules
from farm.run.mutate import STATUSES, WEAK_KILL, Baseline, baseline, run_mutants, summarize
from farm.util import paths, targets
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import ConfigError, UsageError

EXPLAINED = "mutants_explained.toml"  # under op/: the survivors no case can kill, and why
_COLOURS = {"killed": "green", "survived": "red", "equivalent": "blue", "stillborn": "yellow"}


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="farm mutate",
        description="the mutation score of a tier: small edits of the operator's real sources "
        "(Ascend C kernel, host tiling, op-api checks), each built and run through the tier's "
        "cases. Exit 0: done; 1: score below --min-score; 2: usage or build errors.",
    )
    parser.add_argument(
        "--tier", default="smoke", help="the tier whose cases judge (default smoke)"
    )
    parser.add_argument("-k", metavar="EXPR", help="pytest-style -k over the tier's case ids")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="ID",
        help="run this mutant (file:line:rule.n, as listed); repeatable",
    )
    parser.add_argument(
        "--files",
        action="append",
        default=[],
        metavar="FILE",
        help="mutate this source (a path under op/, or op/...); repeatable (default: what "
        "the backend's path runs: "
        + ", ".join(mutant_rules.SHARED_SOURCES)
        + f"; on acl also {mutant_rules.ACL_LAYER}; on native also {mutant_rules.NATIVE_VIEWS})",
    )
    parser.add_argument(
        "--backend",
        choices=("acl", "native"),
        default=targets.default_backend("ascendc-cpu"),
        help="how the cases call the operator, as farm run --backend ("
        + targets.backend_help()
        + "): acl runs each mutant's emulated ACL runtime and aclnn layer",
    )
    parser.add_argument(
        "--rules",
        help="comma-separated rules to apply (default all: " + ", ".join(mutant_rules.RULES) + ")",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="the first N mutants only")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="mutants built and run at once, each in its own scratch copy (default: the cores)",
    )
    parser.add_argument(
        "--case-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="a case that runs longer under a mutant is broken: the mutant is killed (default 10)",
    )
    parser.add_argument(
        "--stop-after",
        type=int,
        metavar="N",
        help="stop running a mutant's cases after N failing ones (default: run them all, so "
        "that each kill's count is whole)",
    )
    parser.add_argument(
        "--min-score", type=float, metavar="PCT", help="exit 1 when the score is below PCT %%"
    )
    parser.add_argument("--out", help="the run directory (default runs/mutate/<id>)")
    parser.add_argument(
        "--store",
        help="the run store the score is kept in, as farm run's (default: $FARM_STORE, else "
        "runs/farm.sqlite); farm runs lists it",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def select_mutants(args: argparse.Namespace) -> list[mutant_rules.Mutant]:
    """The mutants the options name, from this checkout's op/."""
    from farm.pool.build import OP_DIR

    sources = mutant_rules.sources_for(args.backend)
    files = [f.removeprefix("op/") for f in args.files] or list(sources)
    for f in files:
        only = mutant_rules.ONLY_THROUGH.get(f, args.backend)
        if only != args.backend:
            what = "the aclnn layer" if f == mutant_rules.ACL_LAYER else "the native ABI's views"
            raise UsageError(
                f"--files {f}: {what} runs only through the {only} backend; use --backend {only}"
            )
    unknown = [f for f in files if f not in sources]
    if unknown:
        raise UsageError(
            f"--files {', '.join(unknown)}: not a source farm mutate edits; use some of "
            + ", ".join(sources)
        )
    rules = [r for r in (args.rules or "").split(",") if r] or None
    bad = [r for r in rules or () if r not in mutant_rules.RULES]
    if bad:
        raise UsageError(f"--rules {', '.join(bad)}: use some of {', '.join(mutant_rules.RULES)}")
    if args.only:
        files = list(dict.fromkeys(i.split(":", 1)[0] for i in args.only if ":" in i)) or files
    found = mutant_rules.generate(OP_DIR, [f for f in files if f in sources], rules)
    if args.only:
        by_id = {m.id: m for m in found}
        missing = [i for i in args.only if i not in by_id]
        if missing:
            raise UsageError(
                f"--only {', '.join(missing)}: no such mutant of these sources (ids change when "
                "the sources do); list them with farm mutate --list"
            )
        found = [by_id[i] for i in dict.fromkeys(args.only)]
    if args.limit is not None:
        if args.limit < 1:
            raise UsageError("--limit N: N must be at least 1")
        found = found[: args.limit]
    if not found:
        raise UsageError("no mutant selected: widen --files, --rules or --only")
    return found


def _cases(args: argparse.Namespace):
    from farm.run.bisect import matches
    from suites import matrix

    if args.tier not in matrix.TIERS:
        raise UsageError(f"unknown tier {args.tier!r}; use one of: {', '.join(matrix.TIERS)}")
    cases = matrix.expand(args.tier)
    if args.k:
        cases = [c for c in cases if matches(args.k, c.id)]
        if not cases:
            raise UsageError(f"-k {args.k!r} selects no case of tier {args.tier}")
    return cases


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.jobs < 1:
        raise UsageError("--jobs N: N must be at least 1")
    mutants = select_mutants(args)
    console = FarmConsole(stderr=args.json, highlight=False)
    if args.list:
        for m in mutants:
            console.print(f"{escape(m.id)}  {escape(repr(m.old))} -> {escape(repr(m.new))}")
        console.print(f"{len(mutants)} mutants")
        return 0
    return _mutate(args, mutants, _cases(args), console)


def _mutate(args, mutants, cases, console: FarmConsole) -> int:
    from farm.pool import build
    from farm.results import measured
    from farm.results.mutants_explained import explain
    from farm.results.mutants_explained import load as load_explained
    from farm.results.mutate_report import write_report
    from farm.run.mutate_cases import Built, preload

    started = time.perf_counter()
    mutate_id = time.strftime("mutate-%Y%m%d-%H%M%S", time.gmtime()) + f"-{os.getpid()}"
    out = Path(args.out) if args.out else paths.RUNS_DIR / "mutate" / mutate_id
    console.print(
        f"[bold]{mutate_id}[/]: {len(mutants)} mutants, tier {args.tier}"
        + (f" -k {escape(args.k)}" if args.k else "")
        + f" ({len(cases)} cases), backend {args.backend}, {args.jobs} job"
        + ("s" if args.jobs != 1 else "")
    )
    built = Built(str(build.build_native("ascendc-cpu")), args.backend)
    missing = [str(p) for p in built.libraries() if not p.is_file()]
    if missing:
        raise ConfigError(
            f"the acl backend needs the emulated ACL runtime ({missing[0]} is missing): fetch "
            "the genuine headers with python -m farm.pool.acl_sdk and build again, or use "
            "--backend native"
        )
    preload()  # the code that judges is the start's, whatever the checkout becomes meanwhile
    base = baseline(built, cases, args.case_timeout)
    if not base.cases:
        raise ConfigError(
            f"the original operator fails every selected case ({', '.join(base.failing[:3])}, "
            "...): nothing can judge a mutant; check the operator with farm run first"
        )
    if base.failing:
        console.print(
            f"[yellow]{len(base.failing)} cases fail on the original operator[/] and are left "
            f"out: {escape(', '.join(base.failing[:5]))}"
        )
    outcomes: list[dict[str, Any]] = []
    out.mkdir(parents=True, exist_ok=True)
    # Each outcome as it comes, a line each: what a long run had done when it was stopped.
    with open(out / "mutants.jsonl", "w") as stream:
        for outcome in run_mutants(
            mutants,
            base,
            build.OP_DIR,
            jobs=args.jobs,
            timeout=args.case_timeout,
            stop_after=args.stop_after,
            backend=args.backend,
        ):
            outcomes.append(outcome)
            stream.write(json.dumps(outcome) + "\n")
            stream.flush()
            console.print(_progress_line(len(outcomes), len(mutants), outcome))
    seconds = time.perf_counter() - started
    explain(outcomes, load_explained(build.OP_DIR / EXPLAINED))
    summary = summarize([o for o in outcomes if "status" in o])
    errors = [o["error"] for o in outcomes if "error" in o]
    document = _document(mutate_id, args, base, cases, outcomes, summary, seconds, errors)
    (out / "mutation.json").write_text(json.dumps(document, indent=1, allow_nan=False))
    page = write_report(document, out / "report")
    if args.json:
        print(json.dumps({"mutate_id": mutate_id, **summary, "report": str(page)}, indent=1))
    for line in _summary_lines(summary, seconds, out, page, outcomes):
        console.print(line)
    below = (
        args.min_score is not None
        and summary["score"] is not None
        and summary["score"] * 100 < args.min_score
    )
    code = 1 if below or errors else 0
    # Last, once its files are written: a store that cannot take it leaves them and the exit code.
    stored, line = measured.record(
        lambda _: measured.mutate_measure(document, out, code), out, args.store
    )
    console.print(escape(line), style=None if stored else "yellow")
    return code


def _document(mutate_id, args, base: Baseline, cases, outcomes, summary, seconds, errors):
    from farm.run import prepare

    order = {s: i for i, s in enumerate(STATUSES)}
    ranked = sorted(
        (o for o in outcomes if "status" in o), key=lambda o: (order[o["status"]], o["id"])
    )
    return {
        "mutate_id": mutate_id,
        "tier": args.tier,
        "k": args.k,
        "backend": args.backend,
        "cases": len(cases),
        "cases_judged": len(base.cases),
        "baseline_failing": base.failing,
        "weak_kill": WEAK_KILL,
        "stop_after": args.stop_after,
        "jobs": args.jobs,
        "seconds": round(seconds, 1),
        # what the run store keeps of it besides (farm/results/measured.py)
        "git_commit": prepare.git_commit(),
        "selection": {
            "only": args.only,
            "files": args.files,
            "rules": args.rules,
            "limit": args.limit,
        },
        "min_score": args.min_score,
        "summary": summary,
        "errors": errors,
        "mutants": ranked,
    }


def _progress_line(n: int, total: int, o: dict[str, Any]) -> str:
    if "error" in o:
        return f"[{n:>{len(str(total))}}/{total}] [red]error[/] {escape(o['error'])}"
    status = o["status"]
    detail = ""
    if status == "killed":
        more = "" if o["complete"] else "+"
        detail = f"{o['failing']}{more} failing" + (" (weak)" if o["weak"] else "")
        if o.get("policy_only"):
            detail += " (policy-only)"
    elif status == "stillborn":
        detail = o["build_error"][:80]
    return (
        f"[{n:>{len(str(total))}}/{total}] [{_COLOURS[status]}]{status:<10}[/] "
        f"{escape(o['id'])}  {escape(repr(o['old']))} -> {escape(repr(o['new']))}"
        + (f"  {escape(detail)}" if detail else "")
        + f"  ({o['seconds']:.1f} s)"
    )


def _summary_lines(
    summary: dict[str, Any], seconds: float, out: Path, page: Path, outcomes: list[dict[str, Any]]
) -> list[str]:
    score = summary["score"]
    text = "no mutant judged" if score is None else f"{score * 100:.1f}%"
    strong = summary["strong_score"]
    k = summary["killable_score"]
    killable = "no killable mutant" if k is None else f"{k * 100:.1f}%"
    through = summary["results_score"]
    also = [] if strong is None else [f"{strong * 100:.1f}% killed by {WEAK_KILL}+ cases"]
    also += [] if through is None else [f"{through * 100:.1f}% through the results"]
    lines = [
        f"{summary['mutants']} mutants in {seconds:.0f} s: {summary['killed']} killed "
        f"({summary['weak']} weak: fewer than {WEAK_KILL} failing cases; "
        f"{summary['policy_only']} policy-only), {summary['survived']} "
        f"survived ({summary['explained']} explained as unreached in op/{EXPLAINED}), "
        f"{summary['equivalent']} equivalent ({summary['reviewed_equivalent']} by review), "
        f"{summary['stillborn']} stillborn",
        f"[bold]mutation score {text}[/] of {summary['judged']} non-equivalent mutants"
        + (f" ({'; '.join(also)})" if also else ""),
        f"{killable}: the score without the {summary['explained']} unreached survivors",
    ]
    lines += _policy_lines(outcomes)
    lines.append(
        f"report: {escape(str(page))}  (every mutant: {escape(str(out / 'mutation.json'))})"
    )
    return lines


def _policy_lines(outcomes: list[dict[str, Any]]) -> list[str]:
    """The kills that rest on an emulation policy alone (CANN would run the mutant), each with
    its cases; and for a kill with both kinds, the case that catches it through the results."""
    lines = []
    for o in outcomes:
        if o.get("policy_only"):
            cases = ", ".join(o["policy_cases"][:3]) + (" ..." if o["policy_failing"] > 3 else "")
            lines.append(
                f"  [yellow]policy-only[/] {escape(o['id'])}: only an emulation policy refused "
                f"it ({o['policy_failing']} cases: {escape(cases)})"
            )
        elif o.get("caught_by"):
            caught = o["caught_by"]
            how = " without the output policies" if caught.get("without_policy") else ""
            lines.append(
                f"  policy and results {escape(o['id'])}: {o['policy_failing']} policy cases; "
                f"through the results{how}: {escape(caught['case_id'])} "
                f"({escape(str(caught['category']))})"
            )
    return lines
