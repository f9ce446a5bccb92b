"""Regression comparison of a run against a baseline run: the logic only (no rendering, no
command line: farm/results/compare_render.py renders a Comparison, farm/results/commands.py holds
`farm runs|baseline|compare`).

A *regression* is one of:
  - a new failure: the case failed in the run and passed in the baseline;
  - precision drift: one of MERE, MARE, RMSE, max_abs grew beyond drift_factor x its baseline
    value *and* above the noise floor of the case's dtype (both, so that a jump from 1e-9 to
    3e-9 in float32 is not news);
  - a case missing from the run (present in the baseline), when both runs are of one suite.
Runs of different suites (suite keys, the store's tier column: another tier, other case files;
or other exploration salts) are compared on the cases they share; a case only one of them has is
"not in both suites", never a regression, and every rendering says first that the suites differ.
A case that is *broken* in the run (an infrastructure error after retries) was not verified; it is
listed apart and counts as a regression only with strict=True (`--strict`).

A shard (`farm run --shard K/N`) ran only its slice of the selection: it is compared with the
same slice of the baseline (the baseline's cases that the shard's split gives it), never with
the other shards' cases (not "missing"); when its slice cannot be listed (its case files are
gone), it is compared with nothing, and `scope` says why.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from farm.results.store import METRIC_COLUMNS, RunStore
from golden.dtypes import T as THRESHOLDS

DEFAULT_DRIFT_FACTOR = 1.5
# Default noise floor: T/16 of the dtype for every metric. Typical float32 MERE is ~1e-7, far
# below 2^-13/16 = 7.6e-6, so ordinary float32 jitter never reports; a float16 kernel whose
# rounding changed from nearest to truncation (about 2x the mean error) does.
DEFAULT_FLOOR_FRACTION = 1.0 / 16
DEFAULT_NOISE_FLOOR = {
    dt: {m: t * DEFAULT_FLOOR_FRACTION for m in METRIC_COLUMNS} for dt, t in THRESHOLDS.items()
}
FALLBACK_FLOOR = 2.0**-13 * DEFAULT_FLOOR_FRACTION


def resolve_noise_floor(noise_floor=None) -> dict[str, dict[str, float]]:
    """Normalise a floor spec to {dtype: {metric: floor}}.

    Accepts None (defaults), a number (every dtype and metric), {dtype: number} or
    {dtype: {metric: number}}; dtypes and metrics not named keep their defaults.
    """
    out = {dt: dict(v) for dt, v in DEFAULT_NOISE_FLOOR.items()}
    if noise_floor is None:
        return out
    if isinstance(noise_floor, (int, float)):
        return {dt: {m: float(noise_floor) for m in METRIC_COLUMNS} for dt in out} | {
            "*": {m: float(noise_floor) for m in METRIC_COLUMNS}
        }
    for dt, v in noise_floor.items():
        cur = out.setdefault(dt, {m: FALLBACK_FLOOR for m in METRIC_COLUMNS})
        if isinstance(v, Mapping):
            for m, x in v.items():
                if m not in METRIC_COLUMNS:
                    raise ValueError(
                        f"unknown metric {m!r} in noise floor; one of {METRIC_COLUMNS}"
                    )
                cur[m] = float(x)
        else:
            for m in METRIC_COLUMNS:
                cur[m] = float(v)
    return out


def _floor(floors: Mapping, dtype: str | None, metric: str) -> float:
    d = floors.get(str(dtype)) or floors.get("*")
    return float(d[metric]) if d else FALLBACK_FLOOR


@dataclass(frozen=True)
class Suite:
    """What a run ran, as far as a comparison cares: its suite key (the store's tier column:
    the tier and the case files' stems), its label for people, and its exploration salt
    (explored cases are extra cases: they do not change the key)."""

    key: str
    label: str = field(default="", compare=False)  # words for the key: not the suite itself
    explore: str | None = None

    @classmethod
    def of_run(cls, run: Mapping) -> Suite:
        selection = run.get("selection") or {}
        explore = selection.get("explore") if isinstance(selection, Mapping) else None
        return cls(str(run.get("tier")), str(run.get("label") or ""), explore)

    @property
    def shown(self) -> str:
        return self.label or self.key


# An explored case's id ends in x.<salt>.<n> (suites/case.py Case.id).
_EXPLORED = re.compile(r"_x\.([A-Za-z0-9-]{1,40})\.\d+$")


def _in_suite(case_id: str, suite: Suite, other: Suite) -> bool:
    """Whether `suite` would have run a case that `other` ran: not when their keys differ (other
    fixed cases), nor for a case explored with a salt `suite` did not draw from."""
    if suite.key != other.key:
        return False
    explored = _EXPLORED.search(case_id)
    return explored is None or explored.group(1) == suite.explore


# --------------------------------------------------------------------------- result model


@dataclass
class CaseChange:
    case_id: str
    family: str | None
    dtype: str | None
    baseline_outcome: str | None
    outcome: str | None
    category: str | None = None
    baseline_category: str | None = None


@dataclass
class Drift:
    case_id: str
    family: str | None
    dtype: str | None
    metric: str
    baseline: float
    value: float
    ratio: float
    floor: float


@dataclass
class GroupSummary:
    family: str | None
    dtype: str | None
    n: int = 0
    passed: int = 0
    failed: int = 0
    broken: int = 0
    pass_rate: float | None = None
    mere_median: float | None = None
    mere_max: float | None = None
    mare_median: float | None = None
    mare_max: float | None = None


@dataclass
class Comparison:
    run_id: str
    baseline_id: str | None
    drift_factor: float
    noise_floor: dict
    new_failures: list[CaseChange] = field(default_factory=list)
    fixed: list[CaseChange] = field(default_factory=list)
    still_failing: list[CaseChange] = field(default_factory=list)
    new_broken: list[CaseChange] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    missing_in_run: list[str] = field(default_factory=list)
    missing_in_baseline: list[str] = field(default_factory=list)
    # Cases only one run has because the runs are of different suites: not regressions.
    not_in_both_suites: list[str] = field(default_factory=list)
    run_suite: Suite | None = None
    baseline_suite: Suite | None = None
    per_dtype: list[GroupSummary] = field(default_factory=list)
    baseline_per_dtype: list[GroupSummary] = field(default_factory=list)
    strict: bool = False
    scope: str = ""  # what was compared, where it is less than both runs (a shard's slice)

    @property
    def suites_differ(self) -> bool:
        return (
            self.run_suite is not None
            and self.baseline_suite is not None
            and self.run_suite != self.baseline_suite
        )

    @property
    def has_regressions(self) -> bool:
        if self.baseline_id is None:
            return False
        strict_extra = bool(self.new_broken) if self.strict else False
        return bool(self.new_failures or self.drift or self.missing_in_run or strict_extra)

    @property
    def regressed_cases(self) -> list[str]:
        """Every case id that makes this a regression, sorted and unique."""
        ids = {c.case_id for c in self.new_failures} | {d.case_id for d in self.drift}
        ids |= set(self.missing_in_run)
        if self.strict:
            ids |= {c.case_id for c in self.new_broken}
        return sorted(ids)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["has_regressions"] = self.has_regressions
        d["regressed_cases"] = self.regressed_cases
        d["suites_differ"] = self.suites_differ
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)


# --------------------------------------------------------------------------- the comparison


def _summaries(rows: Sequence[Mapping]) -> list[GroupSummary]:
    groups: dict[tuple, dict] = defaultdict(lambda: {"rows": []})
    for r in rows:
        groups[(r.get("family"), r.get("dtype"))]["rows"].append(r)
    out = []
    for (fam, dt), g in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        rs = g["rows"]
        s = GroupSummary(family=fam, dtype=dt, n=len(rs))
        s.passed = sum(r["outcome"] == "passed" for r in rs)
        s.failed = sum(r["outcome"] == "failed" for r in rs)
        s.broken = sum(r["outcome"] == "broken" for r in rs)
        s.pass_rate = s.passed / s.n if s.n else None
        for m in ("mere", "mare"):
            vals = [r[m] for r in rs if r.get(m) is not None]
            if vals:
                setattr(s, f"{m}_median", statistics.median(vals))
                setattr(s, f"{m}_max", max(vals))
        out.append(s)
    return out


def compare_rows(
    run_rows: Sequence[Mapping],
    base_rows: Sequence[Mapping] | None,
    *,
    run_id: str = "run",
    baseline_id: str | None = "baseline",
    drift_factor: float = DEFAULT_DRIFT_FACTOR,
    noise_floor=None,
    strict: bool = False,
    suites: tuple[Suite, Suite] | None = None,
) -> Comparison:
    """Compare two lists of result rows (RunStore.result_rows or full records); `suites`, the
    run's and the baseline's, tell a case missing from the run from one its suite has not."""
    if drift_factor <= 0:
        raise ValueError("drift_factor must be positive")
    floors = resolve_noise_floor(noise_floor)
    comp = Comparison(
        run_id=run_id,
        baseline_id=baseline_id if base_rows is not None else None,
        drift_factor=float(drift_factor),
        noise_floor=floors,
        strict=strict,
    )
    if suites is not None:
        comp.run_suite, comp.baseline_suite = suites
    run_rows = [_flat(r) for r in run_rows]
    comp.per_dtype = _summaries(run_rows)
    if base_rows is None:
        return comp
    base_rows = [_flat(r) for r in base_rows]
    comp.baseline_per_dtype = _summaries(base_rows)
    run = {r["case_id"]: r for r in run_rows}
    base = {r["case_id"]: r for r in base_rows}
    only_base, only_run = sorted(set(base) - set(run)), sorted(set(run) - set(base))
    if suites is not None:
        run_suite, base_suite = suites
        comp.not_in_both_suites = sorted(
            [cid for cid in only_base if not _in_suite(cid, run_suite, base_suite)]
            + [cid for cid in only_run if not _in_suite(cid, base_suite, run_suite)]
        )
        apart = set(comp.not_in_both_suites)
        only_base = [cid for cid in only_base if cid not in apart]
        only_run = [cid for cid in only_run if cid not in apart]
    comp.missing_in_run, comp.missing_in_baseline = only_base, only_run
    for cid in sorted(set(run) & set(base)):
        a, b = run[cid], base[cid]
        change = CaseChange(
            cid,
            a.get("family"),
            a.get("dtype"),
            b["outcome"],
            a["outcome"],
            a.get("category"),
            b.get("category"),
        )
        if a["outcome"] == "failed":
            if b["outcome"] == "passed":
                comp.new_failures.append(change)
            elif b["outcome"] == "failed":
                comp.still_failing.append(change)
            else:  # broken in the baseline: it was not verified then, so it is news now
                comp.new_failures.append(change)
        elif a["outcome"] == "passed" and b["outcome"] in ("failed", "broken"):
            comp.fixed.append(change)
        elif a["outcome"] == "broken" and b["outcome"] != "broken":
            comp.new_broken.append(change)
        for m in METRIC_COLUMNS:
            va, vb = a.get(m), b.get(m)
            if va is None or vb is None:
                continue
            floor = _floor(floors, a.get("dtype"), m)
            if va > drift_factor * vb and va > floor:
                ratio = va / vb if vb > 0 else float("inf")
                comp.drift.append(
                    Drift(cid, a.get("family"), a.get("dtype"), m, vb, va, ratio, floor)
                )
    return comp


def _flat(r: Mapping) -> dict:
    """A result row with metric columns whether it came as a store row or a full record."""
    if "metrics" not in r or any(m in r for m in METRIC_COLUMNS):
        return dict(r)
    d = dict(r)
    metrics = r.get("metrics") or {}
    for m in METRIC_COLUMNS:
        v = metrics.get(m)
        try:
            v = float(v) if v is not None else None
        except (TypeError, ValueError):
            v = None
        d[m] = v if v is not None and v == v and abs(v) != float("inf") else None
    return d


def shard_slice(run: Mapping) -> frozenset[str] | None:
    """The case ids of a shard run's slice: its selection expanded and split as `farm run
    --shard` split it (farm/run/shard.py); None when the selection cannot be expanded here."""
    from farm.run import shard
    from farm.util.errors import FarmError
    from suites.caseset import Selection

    try:
        cases = Selection.from_json(run.get("selection"), str(run.get("tier"))).cases()
        return frozenset(c.id for c in shard.pick(cases, shard.parse(str(run["shard"]))))
    except (FarmError, OSError, ValueError, KeyError, TypeError):
        return None


def compare(
    store: RunStore,
    run_id: str,
    baseline_id: str | None = None,
    drift_factor: float = DEFAULT_DRIFT_FACTOR,
    noise_floor=None,
    *,
    strict: bool = False,
) -> Comparison:
    """Compare `run_id` with `baseline_id` (default: store.baseline_for(the run's tier)); a
    shard on its slice only (see above)."""
    run = store.get_run(run_id)
    if run is None:
        raise KeyError(f"unknown run {run_id!r}")
    if baseline_id is None:
        baseline_id = store.baseline_for(run["tier"], exclude_run_id=run_id)
    elif store.get_run(baseline_id) is None:
        raise KeyError(f"unknown baseline run {baseline_id!r}")
    run_rows = store.result_rows(run_id)
    base_rows = store.result_rows(baseline_id) if baseline_id else None
    base = store.get_run(baseline_id) if baseline_id else None
    scope = ""
    if run.get("shard"):
        mine = shard_slice(run)
        if mine is None:
            scope = (
                f"shard {run['shard']}: its slice of {run.get('label') or run['tier']} cannot "
                "be listed here (its case files are gone?): compared with no baseline"
            )
            base_rows = base = None
        elif base_rows is not None:
            run_rows = [r for r in run_rows if r["case_id"] in mine]
            base_rows = [r for r in base_rows if r["case_id"] in mine]
            scope = (
                f"shard {run['shard']}: its slice ({len(mine):,} cases) against the same cases "
                f"of the baseline {baseline_id} ({len(base_rows):,} of them there)"
            )
    comp = compare_rows(
        run_rows,
        base_rows,
        run_id=run_id,
        baseline_id=baseline_id,
        drift_factor=drift_factor,
        noise_floor=noise_floor,
        strict=strict,
        suites=(Suite.of_run(run), Suite.of_run(base)) if base is not None else None,
    )
    comp.scope = scope
    return comp
