"""What each output of a run says about its cases, compared case by case.

    python -m tests.e2e.outcome_sets RUN_DIR [STORE]

For one run: the store's results, the workers' records (the last of each case), junit.xml, the
Allure results and summary.json, each as {case id: outcome}. An output that is not there is None
(a runs directory that refused it). :func:`disagreements` lists every case that one output has
and another lacks, or that two outputs give different outcomes; the e2e tests assert it is empty
after every way a run can stop. Exit 1 when they disagree.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from farm.run.result_files import RESULT_SUFFIX

Outcomes = dict[str, str]


def case_id_of(name: str) -> str:
    """The case id of a test name: ``test_x[<case id>]``, or the name itself (an Allure title
    is the case id). Read here, not with the farm's own helpers: this checks the farm."""
    head, sep, rest = name.partition("[")
    return rest[: rest.rindex("]")] if sep and "]" in rest else name


def store_outcomes(store: Path, run_id: str) -> Outcomes | None:
    if not store.is_file():
        return None
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT case_id, outcome FROM results WHERE run_id=?", (run_id,))
        return dict(rows.fetchall())
    finally:
        db.close()


def record_outcomes(run_dir: Path) -> Outcomes | None:
    """The last record of each case (a later one amends an earlier one)."""
    if not (run_dir / "records").is_dir():
        return None
    out: Outcomes = {}
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # a line a killed worker left half-written: no record
                continue
            out[record["case_id"]] = record["outcome"]
    return out


def junit_outcomes(run_dir: Path) -> Outcomes | None:
    path = run_dir / "junit.xml"
    if not path.is_file():
        return None
    out: Outcomes = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        cid = case_id_of(case.get("name", ""))
        if cid in out:
            out[cid] = "duplicate"
            continue
        kinds = {child.tag for child in case}
        out[cid] = (
            "failed"
            if "failure" in kinds
            else "broken"
            if "error" in kinds
            else "skipped"
            if "skipped" in kinds
            else "passed"
        )
    return out


def allure_outcomes(run_dir: Path) -> Outcomes | None:
    results = run_dir / "allure-results"
    if not results.is_dir():
        return None
    out: Outcomes = {}
    for path in results.glob(f"*{RESULT_SUFFIX}"):
        result = json.loads(path.read_text(encoding="utf-8"))
        cid = case_id_of(str(result.get("name", "")))
        out[cid] = "duplicate" if cid in out else str(result.get("status"))
    return out


def summary_counts(run_dir: Path) -> dict | None:
    path = run_dir / "summary.json"
    if not path.is_file():
        return None
    summary = json.loads(path.read_text())
    return {
        "cases": summary["cases"],
        "not passed": {f["case_id"]: f["outcome"] for f in summary["failures"]},
    }


def outcome_sets(run_dir: Path, store: Path) -> dict[str, Outcomes | None]:
    """Each output's {case id: outcome} (None: the output is not there)."""
    return {
        "store": store_outcomes(store, run_dir.name),
        "records": record_outcomes(run_dir),
        "junit": junit_outcomes(run_dir),
        "allure": allure_outcomes(run_dir),
    }


def disagreements(
    run_dir: Path, store: Path, *, absent_ok: frozenset[str] = frozenset()
) -> list[str]:
    """Every way the outputs of ``run_dir`` disagree with the store, one line each. An output in
    ``absent_ok`` may be missing (the runs directory refused it); any other missing is a
    disagreement."""
    sets = outcome_sets(run_dir, store)
    truth = sets.pop("store")
    if truth is None:
        return [f"no store at {store}"]
    lines = []
    for name, found in sets.items():
        if found is None:
            if name not in absent_ok:
                lines.append(f"{name}: not written")
            continue
        for cid in sorted(set(truth) - set(found)):
            lines.append(f"{name}: lacks {cid} (stored {truth[cid]})")
        for cid in sorted(set(found) - set(truth)):
            lines.append(f"{name}: has {cid} ({found[cid]}), which is not stored")
        for cid in sorted(set(truth) & set(found)):
            if found[cid] != truth[cid]:
                lines.append(f"{name}: {cid} is {found[cid]}, stored {truth[cid]}")
    summary = summary_counts(run_dir)
    if summary is None:
        if "summary" not in absent_ok:
            lines.append("summary: not written")
    else:
        if summary["cases"] != len(truth):
            lines.append(f"summary: {summary['cases']} cases, {len(truth)} stored")
        not_passed = {c: o for c, o in truth.items() if o != "passed"}
        if summary["not passed"] != not_passed:
            lines.append(f"summary: failures {summary['not passed']}, stored {not_passed}")
    return lines


def main(argv: list[str]) -> int:
    run_dir = Path(argv[0])
    store = Path(argv[1]) if len(argv) > 1 else run_dir.parent / "farm.sqlite"
    lines = disagreements(run_dir, store)
    for line in lines:
        print(line)
    sets = outcome_sets(run_dir, store)
    print(", ".join(f"{k}: {'-' if v is None else len(v)}" for k, v in sets.items()))
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
