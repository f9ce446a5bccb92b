"""The triage of a planted smoke run (tests/e2e/test_triage*.py): for each bug the farm plants
(farm/pool/build/bugs.py PLANT_BUGS) in the emulated real kernel, a run of the smoke tier's cases is
triaged: one group, which holds every failure and names what the bug depends on, with counts
that are the store's.

A run's records are made as the agent makes them (farm.agent.execute.run_case on the planted
library, the record completed with the case as the dispatcher completes it) rather than by a whole
`farm run` per bug: twenty runs of pool start-up, deploy and canary would say nothing more about
triage. The smoke tier is enough: every planted bug fails at least three of its cases
(benchmarks/kill_strength.py), and it has cases of every schedule on both families.

The bugs are tested in two files (the judge's bugs, the device's and the host's) so that
pytest-xdist's --dist loadfile runs the twenty planted runs on both workers (.ci/test.sh).
"""

from __future__ import annotations

from farm.agent.backends import native
from farm.agent.execute import run_case
from farm.agent.record import with_case
from farm.pool import build
from farm.results import triage
from farm.results.store import RunStore
from farm.run.requests import case_request
from golden import soc
from suites import matrix
from tests.identities import host_identity
from tests.op.conftest import acpu_planted

# bug -> the predicate (feature, value) the top group must hold; None: any value of the feature.
DEPENDS_ON = {
    "tail": ("ragged_tail", True),  # the unaligned remainder of the last chunk is dropped
    "seed_noreduce": ("schedule", "NO_REDUCE"),
    "trunc_narrow": ("narrow_dtype", True),  # the cast to fp16/bf16 truncates
    "fp16_sum": ("schedule", "REDUCE_TAIL"),  # REDUCE_TAIL's sums through half
    "drop_element": ("d1", None),  # a reduction over d1 >= 4096
    "strided_out_unwritten": ("out_layout", "strided"),
    "ragged_datacopy": ("ragged_tail", True),  # a chunk not of whole 32-byte blocks
    "ub_overflow": ("schedule", "REDUCE_TAIL"),
    "queue_order": ("kind", "precision"),  # every case the operator computes
    "cores_overlap": ("big_cores", None),  # the big cores' rows overlap the small cores'
    "short_view": ("schedule", "REDUCE_MID"),
    # Ties of the cast to fp16/bf16: what makes them is the ties inputs (suites/matrix.py TIES).
    "round_half_away": ("dy_dist", "integers"),
    "mid_running_sum": ("schedule", "REDUCE_MID"),
    "mid_partial_group": ("schedule", "REDUCE_MID"),
    "bf16_cast_310b": ("expected_reason", "bf16_unsupported_on_soc"),
    # bf16 on ascend310b refused by the tiling function, not the registration (and its case)
    "opdef_bf16_310b": ("expected_reason", "bf16_unsupported_on_soc"),
    "tiling_bf16_310b": ("layer", "tiling"),  # bf16 on Ascend310B through the tiling alone
    "host_half_blocks": ("kind", "precision"),  # every tiling the host hands the kernel
    "axes_dedup": ("expected_reason", None),  # a rejection (duplicate axes) accepted
    "axes_span": ("expected_reason", None),  # a rejection (axes not consecutive) accepted
    "tail_mod": ("full_last_chunk", True),  # a row of whole blocks gets a last chunk of 0
    "d2_two_as_tail": ("d2", None),  # d2 == 2 reduced as REDUCE_TAIL's rows
    "empty_out_unchecked": ("expected_reason", None),  # an empty out's rejection accepted
    "infer_reads_output": ("schedule", "INFER"),  # the infer cases: no whole call runs it
}
# The bugs whose failures have two causes: the OpDef registration's own case fails, and the whole
# calls fail, accepted (bf16_cast_310b: the tiling function's check broken too) or refused by
# the wrong layer (opdef_bf16_310b: the tiling function refuses what the registration let
# through). tiling_bf16_310b, the other half, fails only its tiling layer cases: one cause.
TWO_LAYERS = ("bf16_cast_310b", "opdef_bf16_310b")
# The two files' bugs: those whose failures the judge finds in the numbers (test_triage.py), and
# those the emulated device stops or the host code makes (test_triage_faults_and_host.py).
NUMBER_BUGS = tuple(sorted(build.TWIN_PLANT_BUGS[1:] + build.KERNEL_NUMERIC_BUGS))
FAULT_AND_HOST_BUGS = tuple(sorted(build.KERNEL_FAULT_BUGS + build.HOST_BUGS))


def planted_run(bug: str, store: RunStore, monkeypatch) -> str:
    """The smoke tier's records on the kernel with `bug` planted, stored as a run."""
    monkeypatch.setenv(native.ENV_LIB, str(acpu_planted(bug)))
    records = []
    for case in matrix.expand("smoke"):
        name = soc.representative_soc(case.family).name
        record = with_case(
            run_case(case_request(case), "native", 0, host_identity(name, host="triage")), case
        )
        record["soc"] = name
        records.append(record)
    package = {"file": build.archive_name("ascendc-cpu", bug), "target": "ascendc-cpu"}
    run_id = store.begin_run(
        {"tier": "smoke", "selection": {"tier": "smoke"}, "package": package, "backend": "native"}
    )
    store.add_results(run_id, records)
    store.finish_run(run_id, 1)
    return run_id


def assert_the_top_line_names_what_the_bug_depends_on(bug: str, tmp_path, monkeypatch) -> None:
    with RunStore(tmp_path / "farm.sqlite") as store:
        run_id = planted_run(bug, store, monkeypatch)
        result = triage.triage_run(store, run_id)
        lines = triage.triage_lines(store, run_id)
        run = store.get_run(run_id)
        assert run is not None, run_id
        outcome = {r["case_id"]: r["outcome"] for r in store.result_rows(run_id)}

    assert result.groups, lines
    top = result.groups[0]
    print(f"{bug}: {lines[0]}")
    feature, value = DEPENDS_ON[bug]
    named = {p.feature: p.value for p in top.predicates}
    assert feature in named, lines[0]
    assert value is None or named[feature] == value, lines[0]
    # The counts are the store's: the run's, and those of the group's own cases.
    assert (result.failures, result.passes) == (run["counts"]["failed"], run["counts"]["passed"])
    in_group = [outcome[cid] for cid in top.case_ids]
    assert (top.failed, top.passed) == (in_group.count("failed"), in_group.count("passed"))
    assert lines[0].startswith(f"1. {top.failed:,} of {result.failures:,} failures (") and lines[
        0
    ].endswith(f"): {top.text}; and {_passes(top.passed, result.passes)} passing cases")
    if bug in TWO_LAYERS:
        # Two layers broken at once, two causes: every whole call's failure in the top group,
        # and the registration case (suites/matrix_layers.py) beside it.
        registration = [cid for cid, o in outcome.items() if cid.endswith("_registration")]
        assert [outcome[cid] for cid in registration].count("failed") == 1, registration
        assert top.failed == result.failures - 1 and len(result.groups) <= 2, lines
        assert set(registration) & set(result.groups[-1].case_ids), lines
    else:
        # One bug, one cause: one group, which holds every failure (its narrower restatements, a
        # part of the same failures, are folded into it).
        assert len(result.groups) == 1, lines
        assert top.failed == result.failures, lines[0]
    # The rerun is of the planted operator, on the group's cases.
    assert "--plant-bug " + bug in top.rerun, top.rerun


def _passes(passed: int, passes: int) -> str:
    return f"{passed:,} of {passes:,}" if passed else f"none of the {passes:,}"
