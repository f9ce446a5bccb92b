"""A run's outputs besides its records and the store: junit.xml, summary.json and the Allure
results, each made to hold exactly the stored cases (farm/run/reconcile.py), and each left
out whole, never partial, when the runs directory refuses it."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from farm.agent.record import FAILURE_FIELDS, ResultRecord
from farm.run.plan import Plan
from farm.util import run_dir
from suites.caseset import Selection as CaseSelection

# What a run leaves in runs/<run id>/ besides records/ and allure-results/ (the report's
# directory is farm.results.run_paths.default_report_dir).
JUNIT_XML = "junit.xml"
SUMMARY_JSON = "summary.json"


class RunOutputs:
    """A run's JUnit, Allure results and summary, each holding exactly the stored cases (the
    records): farm/run/reconcile.py. An output the runs directory refuses to take whole is
    left out, never left partial: what was written of it is removed."""

    def __init__(
        self, plan: Plan, records: list[ResultRecord], nodeids: dict[str, str], cases: dict
    ):
        self.plan, self.records, self.nodeids, self.cases = plan, records, nodeids, cases
        self.missing: list[str] = []

    def allure(self) -> str | None:
        """The Allure results made to hold the stored cases; the fault's line, if refused."""
        from farm.run import reconcile

        results = self.plan.run_dir / "allure-results"
        try:
            reconcile.allure(results, self.records, self.nodeids, self.cases)
        except OSError as exc:
            if not run_dir.is_fault(exc):
                raise
            shutil.rmtree(results, ignore_errors=True)  # deleting needs no space
            self.missing.append("Allure results")
            return str(run_dir.unwritable(exc))
        return None

    def rest(
        self, pytest_junit: Path, code: int, quarantined: dict, meta: dict, extra=None
    ) -> str | None:
        """junit.xml, summary.json (with `extra`: write_summary) and the Allure extras; the first
        fault's line, if any."""
        from farm.run import reconcile
        from farm.run.allure.environment import write_results_extras

        run = self.plan.run_dir
        steps = [
            (
                "JUnit",
                run / JUNIT_XML,
                lambda: reconcile.junit(
                    pytest_junit,
                    run / JUNIT_XML,
                    self.records,
                    self.nodeids,
                    junit_suite(self.plan),
                ),
            ),
            (
                "summary",
                run / SUMMARY_JSON,
                lambda: write_summary(self.plan, self.records, code, quarantined, extra),
            ),
            ("Allure extras", None, lambda: write_results_extras(run / "allure-results", meta)),
        ]
        fault = None
        for name, path, write in steps:
            try:
                write()
            except OSError as exc:
                if not run_dir.is_fault(exc):
                    raise
                if path is not None:
                    path.unlink(missing_ok=True)
                self.missing.append(name)
                fault = fault or str(run_dir.unwritable(exc))
        return fault

    def left_out(self) -> str:
        return f"; not written: {', '.join(self.missing)}" if self.missing else ""


def junit_suite(plan: Plan) -> str:
    """The name of a run's JUnit test suite, as CI lists it: "farm smoke run <run id>"."""
    return f"farm {plan.tier} run {plan.run_id}"


def write_summary(
    plan: Plan, records: list[ResultRecord], code: int, quarantined: dict, extra=None
) -> Path:
    """summary.json; `extra`: what the run's judgement adds (farm/cli/judging.py summary_extra:
    quality_gate, triage)."""
    outcomes = Counter(r["outcome"] for r in records)
    summary = {
        "run_id": plan.run_id,
        "tier": plan.tier,
        "label": CaseSelection.from_json(plan.selection, plan.tier).label,
        "backend": plan.backend,
        "target": plan.package.get("target", ""),
        "exit_code": code,
        "cases": len(records),
        "outcomes": dict(outcomes),
        "categories": dict(Counter(r["category"] for r in records if r["category"])),
        "unhealthy_hosts": plan.unhealthy,
        "set_aside_chips": plan.set_aside,
        "quarantined_during_run": quarantined,
        "failures": [
            {k: r.get(k) for k in FAILURE_FIELDS} for r in records if r["outcome"] != "passed"
        ],
        "allure_results": str(plan.run_dir / "allure-results"),
        "junit": str(plan.run_dir / JUNIT_XML),
        **(extra or {}),
    }
    path = plan.run_dir / SUMMARY_JSON
    run_dir.write_whole(path, json.dumps(summary, indent=1).encode("utf-8"))
    return path
