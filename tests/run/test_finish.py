"""How a run ends (farm/run/finish.py decide): the README's paragraph on `farm run`'s exit codes
as a table, one row a rule, and every stop."""

from __future__ import annotations

import signal

import pytest

from farm.run.finish import ABORTED, FINISHED, INTERRUPTED, ExitCode, RunFacts, decide

OK, PRODUCT, INFRA = ExitCode.OK, ExitCode.PRODUCT, ExitCode.INFRA
FAULT = "runs/r1: the disk is full (No space left on device); free space"

# (rule, facts, exit code, stored code, stored status)
RULES = [
    ("every case passed", RunFacts(), OK, OK, FINISHED),
    ("product failures", RunFacts(failed=3), PRODUCT, PRODUCT, FINISHED),
    (
        "every case passed, the quality gate failed: 1, stored 1",
        RunFacts(gate_failed=True),
        PRODUCT,
        PRODUCT,
        FINISHED,
    ),
    (
        "failures and a failed gate",
        RunFacts(failed=1, gate_failed=True),
        PRODUCT,
        PRODUCT,
        FINISHED,
    ),
    ("a case broken or lost", RunFacts(failed=2, broken=1), INFRA, INFRA, FINISHED),
    (
        "a broken case outweighs a failed gate",
        RunFacts(broken=1, gate_failed=True),
        INFRA,
        INFRA,
        FINISHED,
    ),
    (
        "a host quarantined during the run",
        RunFacts(infrastructure=("h1 quarantined",)),
        INFRA,
        INFRA,
        FINISHED,
    ),
    (
        "a host unhealthy at the start",
        RunFacts(infrastructure=("h2 unhealthy",)),
        INFRA,
        INFRA,
        FINISHED,
    ),
    ("a chip set aside", RunFacts(infrastructure=("h1:3 set aside",)), INFRA, INFRA, FINISHED),
    (
        "pytest could not run the suites",
        RunFacts(infrastructure=("pytest broke",)),
        INFRA,
        INFRA,
        FINISHED,
    ),
    (
        "pytest refused the arguments after --: nothing ran",
        RunFacts(refused=True),
        INFRA,
        INFRA,
        ABORTED,
    ),
    (
        "the runs directory refused writes before every case had a record",
        RunFacts(cut_short=True, fault=FAULT),
        INFRA,
        INFRA,
        ABORTED,
    ),
    (
        "an output the disk refused after the cases ran: stored as it was, exit 2",
        RunFacts(fault=FAULT),
        INFRA,
        OK,
        FINISHED,
    ),
    ("a store that could not take the results", RunFacts(store_refused=True), INFRA, OK, FINISHED),
    (
        "the report not made: 2, stored and summarised 2",
        RunFacts(report_failed=True),
        INFRA,
        INFRA,
        FINISHED,
    ),
    (
        "the report not made after product failures",
        RunFacts(failed=1, report_failed=True),
        INFRA,
        INFRA,
        FINISHED,
    ),
    ("a merged run missing a shard", RunFacts(incomplete=True), INFRA, INFRA, ABORTED),
    (
        "a group merged before: that run's code",
        RunFacts(merged_as=PRODUCT),
        PRODUCT,
        PRODUCT,
        FINISHED,
    ),
    (
        "a group merged before, missing a shard now",
        RunFacts(merged_as=OK, incomplete=True),
        INFRA,
        INFRA,
        ABORTED,
    ),
    (
        "a group merged before whose report cannot be made",
        RunFacts(merged_as=OK, report_failed=True),
        INFRA,
        INFRA,
        FINISHED,
    ),
    (
        "a merged run of a shard degraded by infrastructure",
        RunFacts(infrastructure=("shard 2 exited 2",)),
        INFRA,
        INFRA,
        FINISHED,
    ),
]


@pytest.mark.parametrize(
    ("facts", "exit_code", "stored", "status"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_each_rule_of_the_exit_codes(facts, exit_code, stored, status):
    outcome = decide(facts)
    assert (outcome.exit_code, outcome.stored_code, outcome.status) == (exit_code, stored, status)
    assert outcome.interruption is None


STOPS = [
    (signal.SIGINT, 130, ExitCode.SIGINT),
    (signal.SIGTERM, 143, ExitCode.SIGTERM),
    (signal.SIGHUP, 129, ExitCode.SIGHUP),
    (signal.SIGPIPE, 141, ExitCode.PIPE),
]


@pytest.mark.parametrize(("signum", "number", "code"), STOPS, ids=[s[0].name for s in STOPS])
@pytest.mark.parametrize(
    "before",
    [
        RunFacts(),
        RunFacts(failed=2, broken=1),
        RunFacts(refused=True),
        RunFacts(cut_short=True, fault=FAULT),  # a stop outweighs the runs directory's refusal
        RunFacts(fault=FAULT),
    ],
    ids=["passed", "failures", "refused", "cut-short", "output-fault"],
)
def test_a_stop_before_the_outcome_is_decided_marks_the_run_interrupted(
    signum, number, code, before
):
    import dataclasses

    outcome = decide(dataclasses.replace(before, stop=signum))
    assert outcome.exit_code == outcome.stored_code == code == number
    assert outcome.status == INTERRUPTED and outcome.interruption == signum
    assert not outcome.judgeable


def test_a_stop_with_a_store_that_refused_exits_2():
    outcome = decide(RunFacts(stop=signal.SIGTERM, store_refused=True))
    assert outcome.exit_code == INFRA and outcome.stored_code == ExitCode.SIGTERM


def test_only_a_whole_finished_run_is_judged():
    assert decide(RunFacts(failed=1)).judgeable
    assert decide(RunFacts(infrastructure=("h1 quarantined",))).judgeable
    assert not decide(RunFacts(refused=True)).judgeable
    assert not decide(RunFacts(fault=FAULT)).judgeable
    assert not decide(RunFacts(incomplete=True)).judgeable


def test_a_subset_and_an_incomplete_merge_are_never_baselines():
    assert not decide(RunFacts()).subset
    assert decide(RunFacts(subset=True)).subset
    assert decide(RunFacts(incomplete=True)).subset


def test_a_stop_after_the_run_is_stored_is_no_fact_the_exit_code_is_the_runs():
    """A stop once the run is stored and summarised only skips the report: the caller does not
    pass it, and the run's code stands."""
    assert decide(RunFacts(failed=1)).exit_code == PRODUCT
