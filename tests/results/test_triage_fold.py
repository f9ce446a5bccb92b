"""One group per cause (farm/results/triage.py _place): a group whose failures are all a better
group's is folded into it; a group that holds every failure of a better one and scores nearly as
well takes its place, so the group covering every failure comes first; a narrower group that
tells the failures from the passes much better stays. And each condition reads in the
contract's words with the feature's name in brackets (farm/results/triage_words.py)."""

from __future__ import annotations

import pytest

from farm.results import triage
from farm.results.triage import FOLD_MARGIN, Predicate, _Cause, _place
from farm.results.triage_words import predicate_text
from suites.case import Case
from tests.results.test_triage import records_of

# Bit i: judged case i. Failures are cases 0..9, passes 10..19.
FAILS = (1 << 10) - 1


def cases(*indices: int) -> int:
    return sum(1 << i for i in indices)


def cause(name: str, bits: int, score: float) -> _Cause:
    return _Cause((Predicate(name, "=", True),), bits, score, score)


def names(causes: list[_Cause]) -> list[str]:
    return [c.preds[0].feature for c in causes]


def test_a_part_of_a_causes_failures_is_folded_into_it_however_few_passes_it_has():
    causes = [cause("whole", cases(*range(10), 10, 11), 0.9)]
    # 8 of its 10 failures and none of its passes: the same cause, told in part.
    _place(causes, cause("part", cases(*range(8)), 0.89), FAILS)
    assert names(causes) == ["whole"]


def test_the_group_covering_every_failure_takes_the_place_of_its_narrower_restatements():
    # Today's trunc_narrow: "2-byte with d1 > 1" (105 of 108 failures, 3 passes) ranked above
    # "2-byte with row_len > 1" (all 108, 8 passes) and "2-byte with d1 > 2" (98, 2 passes).
    causes: list[_Cause] = []
    _place(causes, cause("d1", cases(*range(9), 10), 0.95), FAILS)
    _place(causes, cause("row_len", cases(*range(10), 10, 11, 12), 0.93), FAILS)
    _place(causes, cause("d1_2", cases(*range(8), 10), 0.92), FAILS)
    assert names(causes) == ["row_len"]
    assert causes[0].best == 0.95  # what a later group is measured against


def test_one_covering_group_joins_two_causes_in_the_place_of_the_first():
    causes = [cause("a", cases(0, 1, 2), 0.8), cause("other", cases(6, 10), 0.75)]
    causes.append(cause("b", cases(3, 4, 5), 0.7))
    _place(causes, cause("ab", cases(*range(6), 11), 0.72), FAILS)
    assert names(causes) == ["ab", "other"]


def test_a_narrower_group_that_tells_much_more_stays_first():
    # "a precision case" holds every failure and every pass: it says nothing of the cause.
    causes = [cause("narrow", cases(*range(9)), 0.95)]
    wide = cause("kind", cases(*range(20)), 0.95 - FOLD_MARGIN - 0.01)
    _place(causes, wide, FAILS)
    assert names(causes) == ["narrow", "kind"]


def test_absorbing_is_measured_against_a_causes_best_so_no_chain_drifts_down():
    causes: list[_Cause] = []
    _place(causes, cause("best", cases(0, 1), 0.9), FAILS)
    _place(causes, cause("wider", cases(0, 1, 2, 10), 0.82), FAILS)
    # Within FOLD_MARGIN of "wider", not of the best group it stands for.
    _place(causes, cause("widest", cases(*range(4), 10, 11, 12), 0.75), FAILS)
    assert names(causes) == ["wider", "widest"]


def narrow_run() -> tuple[list[Case], set[str]]:
    """trunc_narrow in small: every float16 reduction fails, and a few float16 cases without a
    reduction (their arbitrary y makes the truncation show) among passing ones no feature tells
    apart; float32 passes."""
    out = []
    for n in (16, 24, 40, 72, 136, 264, 520, 1032):
        for dtype in ("float16", "float32"):
            out.append(Case("ascend910b", dtype, (4, n), (-1,)))  # REDUCE_TAIL
            out.append(Case("ascend910b", dtype, (2, n, 3), (1,)))  # REDUCE_MID
    for n, dy in ((5, "normal"), (6, "uniform"), (7, "normal"), (8, "uniform")):
        for dtype in ("float16", "float32"):
            out.append(Case("ascend910b", dtype, (4, 1, n), (1,), y_dist="arbitrary", dy_dist=dy))
    failing = {
        c.id
        for c in out
        if c.dtype == "float16" and (c.schedule != "NO_REDUCE" or c.shape[2] in (5, 8))
    }
    return out, failing


def test_a_one_cause_run_has_one_group_holding_every_failure():
    run_cases, failing = narrow_run()
    result = triage.triage(records_of(run_cases, failing), {"run_id": "R"})
    assert len(result.groups) == 1, result.lines()
    (group,) = result.groups
    assert group.failed == result.failures == len(failing)
    assert "float16" in group.text, group.text


def test_without_folding_the_same_run_restated_its_cause(monkeypatch):
    """What the run above was before the folding: narrower groups ranked above the covering
    one (the test above would not hold by chance of the data)."""
    run_cases, failing = narrow_run()

    def keep_all(causes, group, fail_bits):
        if len(causes) < triage.TOP and all(group.bits != c.bits for c in causes):
            causes.append(group)

    monkeypatch.setattr(triage, "_place", keep_all)
    groups = triage.triage(records_of(run_cases, failing)).groups
    assert groups[0].failed < len(failing)
    assert any(g.failed == len(failing) for g in groups[1:])


@pytest.mark.parametrize(
    "predicate, text",
    [
        (("d1", ">", 1), "reduce extent > 1 (d1)"),
        (("d0", "<=", 4096), "outer extent <= 4,096 (d0)"),
        (("d2", ">", 64), "inner extent > 64 (d2)"),
        (("row_len", ">", 1), "row length > 1 (row_len)"),
        (("chunk_count", "<=", 2), "chunks per row <= 2 (chunk_count)"),
        (("tail_elems", "<=", 1024), "elements in a row's last chunk <= 1,024 (tail_elems)"),
        (("big_cores", ">", 1), "cores with an extra row > 1 (big_cores)"),
        (("schedule", "=", "REDUCE_MID"), "a middle extent reduced (REDUCE_MID)"),
        (("schedule", "=", "REDUCE_TAIL"), "the innermost extent reduced (REDUCE_TAIL)"),
        (("schedule", "=", "NO_REDUCE"), "no reduction, reduce extent 1 (NO_REDUCE)"),
        (("narrow_dtype", "=", True), "a 2-byte dtype, float16 or bfloat16 (narrow_dtype)"),
        (("ragged_tail", "=", False), "a row's last chunk in whole blocks (ragged_tail)"),
        (("out_layout", "=", "strided"), "out layout strided (out_layout)"),
        (("kind", "=", "precision"), "a precision case (kind)"),
        # A feature named in the contract's own words has no bracket.
        (("dtype", "=", "float16"), "dtype float16"),
        (("rank", ">", 2), "rank > 2"),
    ],
)
def test_a_condition_reads_in_the_contracts_words_with_its_name_in_brackets(predicate, text):
    assert predicate_text(*predicate) == text
    assert Predicate(*predicate).text == text


def test_every_feature_reads_in_words():
    """No feature triage can name is shown as its bare field name, unless that name is a word of
    the contract's (family, dtype, soc, rank, ...)."""
    plain = {"family", "soc", "dtype", "standard", "rank", "layout", "special", "api", "axes"}
    for feature in set(triage.FEATURES) - {"schedule"}:  # a schedule is its own name, bracketed
        shown = predicate_text(feature, "=", 1)
        assert feature in plain or f"({feature})" in shown, (feature, shown)


def test_the_group_line_says_its_counts_around_the_words():
    group = triage.Group(
        predicates=(Predicate("narrow_dtype", "=", True), Predicate("row_len", ">", 1)),
        failed=108,
        failures=108,
        passed=8,
        passes=182,
        case_ids=[],
        categories={"precision": 108},
    )
    assert group.line() == (
        "108 of 108 failures (108 precision): a 2-byte dtype, float16 or bfloat16 (narrow_dtype) "
        "with row length > 1 (row_len); and 8 of 182 passing cases"
    )
