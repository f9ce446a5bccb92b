"""Measurements of the operator's sources as the store's rows, both ways: pure, no database.

A measurement is what `farm mutate` (the mutation score) or `farm coverage` (line and branch
coverage) measured of a tier: a `Measure` written and read, its summary typed by its kind
(MutateSummary: farm/run/mutate.py summarize; CoverageSummary: farm/cli/coverage_command.py's
figures and counts). Of a mutation run the store also keeps each mutant a person has to look
at (`MutantNote`): a survivor with the cases that came closest to failing, a weak kill (fewer
than WEAK_KILL failing cases) or a policy-only kill with the cases that failed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

from farm.results.store.rows import dumps

MUTATE, COVERAGE = "mutate", "coverage"
MEASURE_KINDS = (MUTATE, COVERAGE)
# The words of a failing case a note keeps (a case's message may be long; its first line is)
MESSAGE_KEPT = 300


class MutateSummary(TypedDict):
    """farm/run/mutate.py summarize: the counts and the scores (None: no mutant judged)."""

    mutants: int
    killed: int
    survived: int
    equivalent: int
    stillborn: int
    weak: int
    policy_only: int
    judged: int
    score: float | None
    strong_score: float | None
    explained: int
    reviewed_equivalent: int
    killable_score: float | None
    results_score: float | None


class Figure(TypedDict):
    covered: int
    total: int
    percent: float


class CoverageSummary(TypedDict):
    """What `farm coverage` measured: gcovr's figures, what no case reaches and why, and (per
    case, not --merged) how many reached branches fewer than MIN_CASES cases take."""

    lines: Figure
    branches: Figure
    functions: Figure
    uncovered: int  # lines with a line or branch no case reaches
    unexplained: int  # of those, no entry of op/coverage_unreachable.toml explains
    stale: int  # entries that explain nothing any more
    accounted: bool
    cases: int | None  # None: --merged
    fewer_cases: int | None  # reached branches taken by fewer than min_cases cases
    branches_reached: int | None
    min_cases: int | None
    runs: dict[str, str]  # backend -> the farm run that ran the tier on it


Summary = MutateSummary | CoverageSummary


class MeasureEntry(TypedDict):
    """A measurement in `farm runs --json` (docs/store.md): the keys of a run's entry that say
    what it is and how it ended (null or false where a measurement has none: it holds no cases),
    its kind, and its summary."""

    run_id: str  # the measurement's id: mutate-... or coverage-...
    kind: str  # MEASURE_KINDS
    stored: bool
    status: str
    tier: str
    backend: str | None
    git_commit: str | None
    package_sha256: str | None
    started_at: str
    ended_at: str | None
    seconds: float | None
    exit_code: int | None
    finished: bool
    green: bool
    counts: None
    subset: bool
    run_dir: str | None
    summary: dict[str, Any]
    meta: dict[str, Any]


@dataclass(frozen=True)
class MutantNote:
    """A mutant of a mutation run that a person has to look at: a survivor (its closest cases:
    case_id, closeness, baseline) or a kill that is weak or policy-only (its failing cases:
    case_id, outcome, category, message)."""

    mutant_id: str
    status: str  # survived | killed
    file: str
    line: int
    rule: str
    old: str
    new: str
    source_line: str
    failing: int = 0
    weak: bool = False
    policy_only: bool = False
    cases: list[dict[str, Any]] = field(default_factory=list)
    explained_kind: str | None = None  # op/mutants_explained.toml's kind, where it explains it
    explained_why: str | None = None

    @classmethod
    def from_outcome(cls, o: Mapping[str, Any]) -> MutantNote | None:
        """The note of a mutant's outcome (farm/run/mutate.py Outcome.to_dict), None for one
        nobody need look at (a strong kill through the results, an equivalent, a stillborn)."""
        survived = o.get("status") == "survived"
        killed = o.get("status") == "killed"
        if not (survived or (killed and (o.get("weak") or o.get("policy_only")))):
            return None
        cases = (
            [dict(c) for c in o.get("closest") or ()]
            if survived
            else [_failing_case(c) for c in o.get("failing_cases") or ()]
        )
        return cls(
            mutant_id=str(o["id"]),
            status=str(o["status"]),
            file=str(o.get("file", "")),
            line=int(o.get("line", 0)),
            rule=str(o.get("rule", "")),
            old=str(o.get("old", "")),
            new=str(o.get("new", "")),
            source_line=str(o.get("source_line", "")).strip(),
            failing=int(o.get("failing") or 0),
            weak=bool(o.get("weak")),
            policy_only=bool(o.get("policy_only")),
            cases=cases,
            explained_kind=o.get("explained_kind"),
            explained_why=o.get("explained"),
        )

    @property
    def what(self) -> str:
        """survived | weak kill | policy-only kill (both: "weak, policy-only kill")."""
        if self.status == "survived":
            return "survived"
        kinds = [k for k, on in (("weak", self.weak), ("policy-only", self.policy_only)) if on]
        return ", ".join(kinds) + " kill"

    def row(self, measure_id: str) -> tuple:
        return (
            measure_id,
            self.mutant_id,
            self.status,
            int(self.weak),
            int(self.policy_only),
            self.failing,
            self.explained_kind,
            self.explained_why,
            dumps(self.cases),
            dumps(
                {
                    "file": self.file,
                    "line": self.line,
                    "rule": self.rule,
                    "old": self.old,
                    "new": self.new,
                    "source_line": self.source_line,
                }
            ),
        )

    @classmethod
    def from_row(cls, row: Any) -> MutantNote:
        mutant = json.loads(row["mutant_json"])
        return cls(
            mutant_id=row["mutant_id"],
            status=row["status"],
            file=mutant["file"],
            line=int(mutant["line"]),
            rule=mutant["rule"],
            old=mutant["old"],
            new=mutant["new"],
            source_line=mutant["source_line"],
            failing=int(row["failing"]),
            weak=bool(row["weak"]),
            policy_only=bool(row["policy_only"]),
            cases=json.loads(row["cases_json"]),
            explained_kind=row["explained_kind"],
            explained_why=row["explained_why"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.mutant_id,
            "status": self.status,
            "what": self.what,
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "old": self.old,
            "new": self.new,
            "source_line": self.source_line,
            "failing": self.failing,
            "weak": self.weak,
            "policy_only": self.policy_only,
            "cases": self.cases,
            "explained_kind": self.explained_kind,
            "explained_why": self.explained_why,
        }


def _failing_case(c: Mapping[str, Any]) -> dict[str, Any]:
    message = str(c.get("message") or "").strip().split("\n", 1)[0][:MESSAGE_KEPT]
    return {
        "case_id": c.get("case_id"),
        "outcome": c.get("outcome"),
        "category": c.get("category"),
        "message": message,
    }


INSERT_MEASURE = (
    "INSERT INTO measures (measure_id, kind, tier, backend, git_commit, package_sha256,"
    " started_at, ended_at, seconds, exit_code, subset, run_dir, summary_json, meta_json)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
INSERT_MUTANT = (
    "INSERT INTO measure_mutants (measure_id, mutant_id, status, weak, policy_only, failing,"
    " explained_kind, explained_why, cases_json, mutant_json) VALUES (?,?,?,?,?,?,?,?,?,?)"
)


@dataclass(frozen=True)
class Measure:
    """One measurement, as written and as read (`mutants`: read only by get_measure)."""

    measure_id: str
    kind: str  # MEASURE_KINDS
    tier: str
    started_at: str  # ISO 8601, UTC (farm/results/store/timestamps.py)
    summary: Summary
    ended_at: str | None = None
    seconds: float | None = None
    exit_code: int | None = None  # the command's
    subset: bool = False  # a part of the tier or of the sources (-k, --only, --limit, ...)
    backend: str | None = None  # coverage: "acl,native"
    git_commit: str | None = None
    package_sha256: str | None = None
    run_dir: str | None = None  # where its files are (mutate: runs/mutate/<id>)
    meta: dict[str, Any] = field(default_factory=dict)  # how it was asked for: -k, --only, ...
    mutants: Sequence[MutantNote] = ()

    def __post_init__(self) -> None:
        if self.kind not in MEASURE_KINDS:
            raise ValueError(f"measurement kind {self.kind!r}: use one of {MEASURE_KINDS}")
        object.__setattr__(self, "mutants", tuple(self.mutants))  # as read: equal when the same

    @property
    def mutate(self) -> MutateSummary:
        assert self.kind == MUTATE, self.kind
        return cast(MutateSummary, self.summary)

    @property
    def coverage(self) -> CoverageSummary:
        assert self.kind == COVERAGE, self.kind
        return cast(CoverageSummary, self.summary)

    def row(self) -> tuple:
        return (
            self.measure_id,
            self.kind,
            self.tier,
            self.backend,
            self.git_commit,
            self.package_sha256,
            self.started_at,
            self.ended_at,
            self.seconds,
            self.exit_code,
            int(self.subset),
            self.run_dir,
            dumps(self.summary),
            dumps(self.meta),
        )

    @classmethod
    def from_row(cls, row: Any, mutants: Sequence[MutantNote] = ()) -> Measure:
        return cls(
            measure_id=row["measure_id"],
            kind=row["kind"],
            tier=row["tier"],
            started_at=row["started_at"],
            summary=json.loads(row["summary_json"]),
            ended_at=row["ended_at"],
            seconds=row["seconds"],
            exit_code=row["exit_code"],
            subset=bool(row["subset"]),
            backend=row["backend"],
            git_commit=row["git_commit"],
            package_sha256=row["package_sha256"],
            run_dir=row["run_dir"],
            meta=json.loads(row["meta_json"]),
            mutants=mutants,
        )

    def entry(self) -> MeasureEntry:
        """Its entry in `farm runs --json`."""
        return {
            "run_id": self.measure_id,
            "kind": self.kind,
            "stored": True,
            "status": "finished",
            "tier": self.tier,
            "backend": self.backend,
            "git_commit": self.git_commit,
            "package_sha256": self.package_sha256,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "seconds": self.seconds,
            "exit_code": self.exit_code,
            "finished": True,
            "green": False,
            "counts": None,
            "subset": self.subset,
            "run_dir": self.run_dir,
            "summary": dict(self.summary),
            "meta": self.meta,
        }

    def to_json(self) -> dict[str, Any]:
        """`farm runs show --json`: its entry and its mutants' notes."""
        return {**self.entry(), "mutants": [m.to_json() for m in self.mutants]}
