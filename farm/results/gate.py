"""The farm's quality gate: what decides `farm run`'s and `farm report`'s exit 1.

`allure generate` evaluates no quality gate, and `allure quality-gate` crashes on Node 20 (3.15+
use Iterator helpers; Node >= 22 needed), so the gate is evaluated here (`farm_gate`): the rules
of reports/quality-gate.json on the allure-results files themselves (`gate_rules`), the run
finished (`run_finished_rule`), no regression against the baseline (`no_regressions_rule`). The
report's Quality Gates tab shows the very rules, values and verdict (farm/results/report_generate.py
hands them to Allure), and `gate_exit_code` turns them into the exit code.

The rules are decided by pure functions of what was read (`evaluate_rules`, `run_finished_rule`,
`no_regressions_rule`, `gate_exit_code`); `read_results` and `load_gate_rules` are the reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.run.allure.process import REPORTS_DIR
from farm.run.result_files import read_file, result_files
from farm.util.heap import paused

# gate_exit_code's codes: every rule passed; a rule failed (a product failure, a regression);
# the run did not finish (infrastructure or a stop: not every case ran).
GATE_PASSED, GATE_FAILED, RUN_UNFINISHED = 0, 1, 2
# The rules when reports/quality-gate.json is missing: no failure allowed.
DEFAULT_RULES = {"maxFailures": 0}


@dataclass(frozen=True)
class GateRule:
    """One rule of the farm's quality gate, evaluated: what the report's Quality Gates tab shows
    (Allure 3's quality gate result) and `farm report` prints."""

    rule: str
    expected: Any
    actual: Any
    success: bool
    message: str

    def to_allure(self) -> dict:
        return {
            "rule": self.rule,
            "expected": self.expected,
            "actual": self.actual,
            "success": self.success,
            "message": self.message,
            "testResults": [],
        }


def load_gate_rules(reports_dir: Path = REPORTS_DIR) -> dict:
    p = Path(reports_dir) / "quality-gate.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else dict(DEFAULT_RULES)


def read_results(results_dir: str | os.PathLike) -> list[dict]:
    """The final attempt of every test in an allure-results directory (one per historyId)."""
    latest: dict[str, dict] = {}
    # Parsed JSON holds no reference cycles: the collector would only walk the results read so
    # far, again and again (half the time of the full tier's 31,831 in farm run's tail).
    with paused():
        for f in result_files(results_dir):
            try:
                r = json.loads(read_file(f))  # bytes: no text decoding before the parser's own
            except (OSError, ValueError):
                continue
            key = r.get("historyId") or r.get("uuid") or os.path.basename(f)
            prev = latest.get(key)
            if prev is None or (r.get("stop") or 0) >= (prev.get("stop") or 0):
                latest[key] = r
    return list(latest.values())


def evaluate_rules(results: Sequence[Mapping], rules: Mapping) -> list[GateRule]:
    """Allure-3-style gate rules evaluated on the final attempts of the tests (read_results),
    each passed or failed.

    Rules: maxFailures (failed + broken tests allowed), minTestsCount, successRate (0..1,
    passed / all)."""
    total = len(results)
    failures = sum(r.get("status") in ("failed", "broken") for r in results)
    passed = sum(r.get("status") == "passed" for r in results)
    out = []
    if "maxFailures" in rules:
        most = int(rules["maxFailures"])
        ok = failures <= most
        verb = "within" if ok else "exceed"
        out.append(
            GateRule(
                "maxFailures",
                most,
                failures,
                ok,
                f"maxFailures: {failures} failed or broken tests {verb} the allowed {most}",
            )
        )
    if "minTestsCount" in rules:
        least = int(rules["minTestsCount"])
        ok = total >= least
        how = "at least" if ok else "fewer than"
        msg = f"minTestsCount: {total} tests, {how} {least}"
        out.append(GateRule("minTestsCount", least, total, ok, msg))
    if "successRate" in rules:
        least_rate = float(rules["successRate"])
        rate = passed / total if total else 0.0
        ok = rate >= least_rate
        msg = f"successRate: {rate:.4f} {'at least' if ok else 'below'} {least_rate}"
        out.append(GateRule("successRate", least_rate, round(rate, 4), ok, msg))
    return out


def gate_rules(
    results_dir: str | os.PathLike, rules: Mapping | None = None, reports_dir: Path = REPORTS_DIR
) -> list[GateRule]:
    """The rules (default: reports/quality-gate.json's) evaluated on an allure-results
    directory (evaluate_rules). Retries of a test count once (its last attempt)."""
    rules = dict(load_gate_rules(reports_dir) if rules is None else rules)
    return evaluate_rules(read_results(results_dir), rules)


def quality_gate(
    results_dir: str | os.PathLike, rules: Mapping | None = None, reports_dir: Path = REPORTS_DIR
) -> tuple[int, list[str]]:
    """The rules of gate_rules: (0 | 1, the failed rules' messages)."""
    msgs = [r.message for r in gate_rules(results_dir, rules, reports_dir) if not r.success]
    return (1 if msgs else 0), msgs


def run_finished_rule(run: Mapping) -> GateRule:
    """runFinished: an interrupted or aborted run did not run every case."""
    finished = run.get("status") == "finished"
    return GateRule(
        "runFinished",
        "finished",
        str(run.get("status")),
        finished,
        f"run {run.get('run_id')} is {run.get('status')}"
        + ("" if finished else ": not every case ran"),
    )


def no_regressions_rule(comparison: Any, subset: bool) -> GateRule:
    """noRegressions: no case regressed against the baseline (new failures, precision drift,
    cases gone; farm/results/compare.py's comparison). For a subset run (`subset`: a -k, -m or -x
    left cases out) the cases it did not select are not gone from the operator."""
    regressed_ids = set(comparison.regressed_cases) if comparison.has_regressions else set()
    if subset:
        regressed_ids -= set(comparison.missing_in_run)
    regressed = len(regressed_ids)
    if comparison.baseline_id is None:
        msg = "noRegressions: no baseline to compare with"
    elif regressed:
        msg = (
            f"noRegressions: {regressed} cases regressed against the baseline "
            f"{comparison.baseline_id} (farm compare {comparison.run_id})"
        )
    else:
        msg = f"noRegressions: no regression against the baseline {comparison.baseline_id}"
    return GateRule("noRegressions", 0, regressed, not regressed, msg)


def farm_gate(
    results_dir: str | os.PathLike,
    run: Mapping,
    comparison=None,
    *,
    regression_gate: bool = True,
    reports_dir: Path = REPORTS_DIR,
) -> list[GateRule]:
    """The farm's quality gate of a run: the rules of reports/quality-gate.json (gate_rules),
    the run finished (runFinished), and, unless `regression_gate` is off, no regression against
    its baseline (noRegressions). The last can fail when every case passed (a drift), and then
    makes `farm run` exit 1 too."""
    out = gate_rules(results_dir, reports_dir=reports_dir)
    out.append(run_finished_rule(run))
    if regression_gate and comparison is not None:
        out.append(no_regressions_rule(comparison, bool(run.get("subset"))))
    return out


def gate_exit_code(gate: Sequence[GateRule]) -> int:
    """0 every rule passed; 2 the run did not finish (infrastructure or a stop); else 1."""
    if any(r.rule == "runFinished" and not r.success for r in gate):
        return RUN_UNFINISHED
    return GATE_PASSED if all(r.success for r in gate) else GATE_FAILED
