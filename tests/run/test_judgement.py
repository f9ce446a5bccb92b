"""The end of `farm run`: its quality gate (farm/results/gate.py farm_gate, the one the report's
Quality Gates tab shows) decides the exit code with the cases, and the triage of its failures
goes into summary.json. A gate that fails while every case passed (a regression against the
baseline) makes the run exit 1, and the store says 1: such a run is never a baseline."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from farm.cli import judging
from farm.results.store import RunStore, store_location
from farm.results.triage import Triage
from farm.run.finish import ExitCode, RunFacts
from tests.results.conftest import failed, record
from tests.stores import stored_run


def _allure_results(run_dir: Path, records: list[dict]) -> None:
    results = run_dir / "allure-results"
    results.mkdir(parents=True)
    for r in records:
        status = {"passed": "passed", "failed": "failed"}.get(r["outcome"], "broken")
        (results / f"{r['case_id']}-result.json").write_text(
            json.dumps({"historyId": r["case_id"], "status": status, "stop": 1})
        )


def _run(store: RunStore, tmp_path: Path, records: list[dict], *, subset: bool = False) -> dict:
    run_id = store.begin_run({"tier": "smoke", "git_commit": "c" * 40})
    store.add_results(run_id, records)
    code = 1 if any(r["outcome"] == "failed" for r in records) else 0
    store.finish_run(run_id, code, status="finished", subset=subset)
    run_dir = tmp_path / run_id
    _allure_results(run_dir, records)
    return {
        "run_id": run_id,
        "tier": "smoke",
        "status": "finished",
        "subset": subset,
        "run_dir": str(run_dir),
        "git_commit": "c" * 40,
    }


def _judge(store_path: Path, run: dict, records: list[dict], facts: RunFacts):
    console = Console(file=io.StringIO(), width=200)
    return judging.judge(console, store_location(store_path), run, records, facts)


def test_a_green_run_with_a_regression_exits_1_and_is_stored_so(tmp_path):
    store_path = tmp_path / "farm.sqlite"
    every = [record(f"c{i}") for i in range(3)]
    with RunStore(store_path) as store:
        _run(store, tmp_path, every)  # the baseline: every case passed
        gone = _run(store, tmp_path, every[:2])  # the whole tier, one case gone
    code, gate, followup = _judge(store_path, gone, every[:2], RunFacts())
    assert code == ExitCode.PRODUCT
    assert [r.rule for r in gate if not r.success] == ["noRegressions"]
    assert followup is not None and followup[0].why_none.startswith("no failures")
    with RunStore(store_path) as store:
        assert stored_run(store, gone["run_id"])["exit_code"] == 1
    extra = judging.summary_extra(gate, followup)
    assert [r["rule"] for r in extra["quality_gate"]] == [r.rule for r in gate]
    assert extra["triage"]["groups"] == [] and extra["triage"]["failures"] == 0


def test_a_green_subset_passes_its_gate_and_keeps_exit_0(tmp_path):
    """The cases a -k run did not select are not regressions (the triage's rerun commands are
    such runs)."""
    store_path = tmp_path / "farm.sqlite"
    every = [record(f"c{i}") for i in range(3)]
    with RunStore(store_path) as store:
        _run(store, tmp_path, every)
        subset = _run(store, tmp_path, every[:1], subset=True)
    code, gate, _ = _judge(store_path, subset, every[:1], RunFacts(subset=True))
    assert code == ExitCode.OK and all(r.success for r in gate)


def test_a_run_with_failures_keeps_its_code_and_has_its_triage(tmp_path):
    store_path = tmp_path / "farm.sqlite"
    records = [
        record("c0"),
        record("c1"),
        failed("m0", schedule="REDUCE_MID"),
        failed("m1", schedule="REDUCE_MID"),
    ]
    with RunStore(store_path) as store:
        run = _run(store, tmp_path, records)
    code, gate, followup = _judge(store_path, run, records, RunFacts(failed=2))
    assert code == ExitCode.PRODUCT
    assert {r.rule for r in gate if not r.success} == {"maxFailures"}
    assert followup is not None
    summary = judging.summary_extra(gate, followup)["triage"]
    assert summary["failures"] == 2 and summary["groups"][0]["case_ids"] == ["m0", "m1"]
    assert summary["groups"][0]["line"].startswith(
        "2 of 2 failures (2 precision): a middle extent reduced (REDUCE_MID)"
    )


def test_the_judgement_is_printed_as_plain_text(tmp_path):
    """The gate's failed rules, then the triage: case ids and -k expressions hold brackets that
    rich would otherwise read as markup and drop."""
    store_path = tmp_path / "farm.sqlite"
    records = [record("c0"), record("c1"), failed("[m0]", schedule="REDUCE_MID")]
    with RunStore(store_path) as store:
        run = _run(store, tmp_path, records)
    _, gate, followup = _judge(store_path, run, records, RunFacts(failed=1))
    out = io.StringIO()
    console = Console(file=out, width=400, color_system=None)
    judging.print_gate(console, gate)
    judging.print_triage(console, followup)
    text = out.getvalue().splitlines()
    assert text[0] == "quality gate: maxFailures: 1 failed or broken tests exceed the allowed 0"
    assert text[1] == "triage   what the failures share:"
    assert text[2].startswith("1. 1 of 1 failures (1 precision): a middle extent reduced")
    assert text[3] == "   rerun: farm run --tier smoke -- -k '[[m0]]'"
    assert text[4] == "   shrink: farm shrink '[m0]'"
    out = io.StringIO()
    nothing: tuple[Triage, list] = (Triage("r", failures=0, passes=3, broken=0), [])
    judging.print_triage(Console(file=out), nothing)
    assert out.getvalue() == ""  # nothing failed: nothing to triage
