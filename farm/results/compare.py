"""Regression comparison of a run against a baseline run: the logic only (no rendering, no
command line: farm/results/compare_render.py renders a Comparison, farm/results/commands.py holds
`farm runs|baseline|compare`).

A *regression* is one of:
  - a new failure: the case failed in the run and passed in the baseline;
  - precision drift: one of MERE, MARE, RMSE, max_abs grew beyond drift_factor x its baseline
    value *and* above the noise floor of the case's dtype (both, so that a jump from 1e-9 to
    3e-9 in float32 is not news);
  - a case missing from the run (present in the baseline).
A case that is *broken* in the run (an infrastructure error after retries) was not verified; it is
listed apart and counts as a regression only with strict=True (`--strict`).
"""

from __future__ import annotations

import json
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
    per_dtype: list[GroupSummary] = field(default_factory=list)
    baseline_per_dtype: list[GroupSummary] = field(default_factory=list)
    strict: bool = False

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
) -> Comparison:
    """Compare two lists of result rows (RunStore.result_rows or full records)."""
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
    run_rows = [_flat(r) for r in run_rows]
    comp.per_dtype = _summaries(run_rows)
    if base_rows is None:
        return comp
    base_rows = [_flat(r) for r in base_rows]
    comp.baseline_per_dtype = _summaries(base_rows)
    run = {r["case_id"]: r for r in run_rows}
    base = {r["case_id"]: r for r in base_rows}
    comp.missing_in_run = sorted(set(base) - set(run))
    comp.missing_in_baseline = sorted(set(run) - set(base))
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


def compare(
    store: RunStore,
    run_id: str,
    baseline_id: str | None = None,
    drift_factor: float = DEFAULT_DRIFT_FACTOR,
    noise_floor=None,
    *,
    strict: bool = False,
) -> Comparison:
    """Compare `run_id` with `baseline_id` (default: store.baseline_for(the run's tier))."""
    run = store.get_run(run_id)
    if run is None:
        raise KeyError(f"unknown run {run_id!r}")
    if baseline_id is None:
        baseline_id = store.baseline_for(run["tier"], exclude_run_id=run_id)
    elif store.get_run(baseline_id) is None:
        raise KeyError(f"unknown baseline run {baseline_id!r}")
    base_rows = store.result_rows(baseline_id) if baseline_id else None
    return compare_rows(
        store.result_rows(run_id),
        base_rows,
        run_id=run_id,
        baseline_id=baseline_id,
        drift_factor=drift_factor,
        noise_floor=noise_floor,
        strict=strict,
    )
