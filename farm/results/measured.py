"""What `farm mutate` and `farm coverage` measured, into the run store (farm/results/store/
measures.py), from the files they write: mutation.json of a mutation run, coverage.json of a
coverage. The commands store their measurement at the end, once those files are written; `farm
runs import DIR` stores one again from its files (a store that could not be written then).

A measurement not stored is no failure of the operator: `record` says so in one line, naming
the store's fix and where the files are, and the command's exit code stays what its result says.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from farm.results import coverage_files
from farm.results.measure_render import headline
from farm.results.store import RunStore, store_location
from farm.results.store.measure_rows import (
    COVERAGE,
    MUTATE,
    CoverageSummary,
    Figure,
    Measure,
    MutantNote,
    MutateSummary,
)
from farm.run import mutants as mutant_rules
from farm.util.errors import StoreError, UsageError

MUTATION_JSON = "mutation.json"  # farm/cli/mutate_command.py: the run directory's every mutant


def _iso(when: _dt.datetime) -> str:
    return when.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")


def _plus(started: str, seconds: float | None) -> str | None:
    if seconds is None:
        return None
    try:
        return _iso(_dt.datetime.fromisoformat(started) + _dt.timedelta(seconds=seconds))
    except ValueError:
        return None


def _mutate_started(doc: Mapping[str, Any]) -> str:
    """A mutation run's start: its id's UTC time (mutate-20261207-101500-<pid>), else what the
    document says, else now less its seconds."""
    try:
        stamp = _dt.datetime.strptime(str(doc["mutate_id"])[7:22], "%Y%m%d-%H%M%S")
        return _iso(stamp.replace(tzinfo=_dt.timezone.utc))
    except (KeyError, ValueError):
        pass
    if doc.get("started_at"):
        return str(doc["started_at"])
    seconds = float(doc.get("seconds") or 0)
    return _iso(_dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=seconds))


def mutate_subset(doc: Mapping[str, Any]) -> bool:
    """Whether a mutation run measured less than the tier on its backend's sources: -k, --only,
    --limit, --rules, or --files other than the backend's."""
    chosen = doc.get("selection") or {}
    files = [f.removeprefix("op/") for f in chosen.get("files") or ()]
    every = mutant_rules.sources_for(str(doc.get("backend") or "acl"))
    return bool(
        doc.get("k")
        or chosen.get("only")
        or chosen.get("limit")
        or chosen.get("rules")
        or (files and set(files) != set(every))
    )


def mutate_exit(doc: Mapping[str, Any]) -> int:
    """farm mutate's exit code for a finished run's document: 1 with errors or a score below
    --min-score, else 0."""
    score, floor = doc["summary"].get("score"), doc.get("min_score")
    below = floor is not None and score is not None and score * 100 < floor
    return 1 if below or doc.get("errors") else 0


def mutate_measure(
    doc: Mapping[str, Any], run_dir: Path | str, exit_code: int | None = None
) -> Measure:
    """The measurement of a mutation run's document (mutation.json)."""
    started = _mutate_started(doc)
    seconds = doc.get("seconds")
    summary: MutateSummary = doc["summary"]
    notes = [n for o in doc.get("mutants") or () if (n := MutantNote.from_outcome(o)) is not None]
    notes.sort(key=lambda n: (n.status != "survived", n.mutant_id))  # as the store reads them
    return Measure(
        measure_id=str(doc["mutate_id"]),
        kind=MUTATE,
        tier=str(doc["tier"]),
        started_at=started,
        ended_at=_plus(started, seconds),
        seconds=seconds,
        summary=summary,
        exit_code=mutate_exit(doc) if exit_code is None else exit_code,
        subset=mutate_subset(doc),
        backend=doc.get("backend"),
        git_commit=doc.get("git_commit") or None,
        run_dir=str(Path(run_dir).absolute()),
        meta={
            "k": doc.get("k"),
            "selection": doc.get("selection") or {},
            "cases": doc.get("cases"),
            "cases_judged": doc.get("cases_judged"),
            "baseline_failing": len(doc.get("baseline_failing") or ()),
            "stop_after": doc.get("stop_after"),
            "min_score": doc.get("min_score"),
            "errors": len(doc.get("errors") or ()),
        },
        mutants=notes,
    )


def _figure(f: Mapping[str, Any]) -> Figure:
    return {"covered": int(f["covered"]), "total": int(f["total"]), "percent": float(f["percent"])}


def coverage_summary(result: Mapping[str, Any]) -> CoverageSummary:
    per_case = result.get("per_case")
    return {
        "lines": _figure(result["lines"]),
        "branches": _figure(result["branches"]),
        "functions": _figure(result["functions"]),
        "uncovered": len(result.get("uncovered") or ()),
        "unexplained": int(result["unexplained"]),
        "stale": len(result.get("stale") or ()),
        "accounted": bool(result["accounted"]),
        "cases": result.get("cases"),
        "fewer_cases": per_case["fewer"] if per_case else None,
        "branches_reached": per_case["branches_reached"] if per_case else None,
        "min_cases": per_case["min_cases"] if per_case else None,
        "runs": dict(result["runs"]),
    }


def coverage_measure(
    result: Mapping[str, Any], out: Path | str, store: RunStore, exit_code: int | None = None
) -> Measure:
    """The measurement of a coverage (coverage.json's result, written into `out`), whose runs
    are in `store`: its id is its first run's, with "coverage-" before it (one coverage a set of
    runs: storing it again replaces it), its start that run's, its package and commit theirs."""
    runs = {backend: store.get_run(run_id) for backend, run_id in result["runs"].items()}
    found = [r for r in runs.values() if r is not None]
    if not found:
        raise UsageError(
            f"the runs of this coverage ({', '.join(result['runs'].values())}) are not in run "
            f"store {store.location}: store it into the store they were run with (--store)"
        )
    first = found[0]
    seconds = result.get("seconds")
    summary = coverage_summary(result)
    worst = max((int(r["exit_code"] or 0) for r in found), default=0)
    return Measure(
        measure_id=f"coverage-{first['run_id']}",
        kind=COVERAGE,
        tier=str(result["tier"]),
        started_at=str(first["started_at"]),
        ended_at=_plus(str(first["started_at"]), seconds),
        seconds=seconds,
        summary=summary,
        exit_code=(1 if not summary["accounted"] else worst) if exit_code is None else exit_code,
        subset=any(r.get("subset") for r in found),
        backend=",".join(result["runs"]),
        git_commit=first.get("git_commit") or None,
        package_sha256=first.get("package_sha256") or None,
        run_dir=str(Path(out).absolute()),
        meta={"merged": result.get("per_case") is None},
    )


def store_measure(
    make: Callable[[RunStore], Measure], spec: str | None = None
) -> tuple[Measure, str]:
    """Store the measurement ``make`` builds (from the store: a coverage reads its runs there)
    in the store at ``spec`` (default: $FARM_STORE, else runs/farm.sqlite, as `farm run`):
    it, and the line that says where, with the tier's previous one. A StoreError (or a
    UsageError) when it cannot."""
    location = store_location(spec)
    with RunStore(location) as store, store.db.errors_named():
        measure = make(store)
        store.add_measure(measure)
        before = [
            m
            for m in store.measure_trend(measure.kind, measure.tier, measure.backend, n=2)
            if m.measure_id != measure.measure_id
        ]
    line = f"stored in run store {location}: farm runs show {measure.measure_id}"
    if before and not measure.subset:
        line += f"; the tier's previous: {headline(before[-1])} ({before[-1].measure_id})"
    return measure, line


def record(
    make: Callable[[RunStore], Measure], files: Path | str, spec: str | None = None
) -> tuple[Measure | None, str]:
    """What a command does at its end (store_measure): (it, the line that says where) or, when
    the store cannot take it, (None, one line saying why with the store's fix, where its files
    are and how to store them later)."""
    try:
        return store_measure(make, spec)
    except (StoreError, UsageError) as exc:
        return None, (
            f"warning: this measurement is not in the run store: {exc}; its files are in "
            f"{files} (`farm runs import {files}` stores it then)"
        )


def measurement_files(path: Path) -> tuple[str, Path]:
    """(kind, its JSON file) of what `farm runs import` was given: a mutation run's directory or
    its mutation.json, a coverage directory (runs/<run>/coverage) or its coverage.json, or the
    run directory holding that coverage."""
    names = {MUTATION_JSON: MUTATE, coverage_files.JSON: COVERAGE}
    if path.is_file() and path.name in names:
        return names[path.name], path
    for file in (
        path / MUTATION_JSON,
        path / coverage_files.JSON,
        coverage_files.coverage_dir(path) / coverage_files.JSON,
    ):
        if file.is_file():
            return names[file.name], file
    raise UsageError(
        f"{path}: no {MUTATION_JSON} or {coverage_files.DIR}/{coverage_files.JSON} there; give a "
        "farm mutate run directory (runs/mutate/<id>) or a run directory that farm coverage wrote"
    )


def import_measure(path: Path, spec: str | None = None) -> tuple[Measure, str]:
    """`farm runs import PATH`: the measurement of the files at `path`, stored (store_measure:
    a StoreError or UsageError when it cannot be)."""
    kind, file = measurement_files(path)
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{file}: cannot be read as JSON ({exc}); is it whole?") from None

    def make(store: RunStore) -> Measure:
        try:
            if kind == MUTATE:
                return mutate_measure(doc, file.parent)
            return coverage_measure(doc, file.parent, store)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(
                f"{file}: not what farm {kind} writes ({type(exc).__name__}: {exc}); give the "
                "file as the command wrote it"
            ) from None

    return store_measure(make, spec)
