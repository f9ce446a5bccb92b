"""The comparison in one line (farm/results/compare_render.py summary_line), as `farm run` and
`farm report` print it: counted per case, never per metric, with where the tables are; and the
tables' own counts of drift per case as well."""

from __future__ import annotations

from farm.results.compare import CaseChange, Comparison, Drift
from farm.results.compare_render import summary_line, to_text, verdict

METRICS = ("mere", "mare", "rmse", "max_abs")


def change(case_id: str, before: str, now: str) -> CaseChange:
    return CaseChange(case_id, "ascend910b", "float16", before, now, "precision")


def drifts(case_id: str) -> list[Drift]:
    """A case drifted in every metric: four rows of the drift table, one drifted case."""
    return [Drift(case_id, "ascend910b", "float16", m, 1e-4, 3e-4, 3.0, 6e-5) for m in METRICS]


def comparison(**fields) -> Comparison:
    return Comparison("R", "B", 1.5, {}, **fields)


def test_a_red_run_is_one_line_counted_per_case():
    c = comparison(
        new_failures=[change("a", "passed", "failed"), change("b", "passed", "failed")],
        drift=drifts("a") + drifts("b") + drifts("c"),
        fixed=[change("d", "failed", "passed")],
    )
    assert summary_line(c) == (
        "vs baseline B: REGRESSIONS: 3 cases regressed (2 newly failing, 3 drifted), 1 fixed, "
        "0 still failing (the tables: farm compare R, and the report's regression summary)"
    )
    # The tables count the same: drifted cases, then their metrics.
    assert "2 new failures, 3 cases drifted (12 metrics)" in verdict(c)
    assert "Precision drift (3 cases, 12 metrics; factor 1.5)" in to_text(c)


def test_a_green_run_and_one_without_a_baseline():
    c = comparison(fixed=[change("d", "failed", "passed")], still_failing=[change("e", "f", "f")])
    assert summary_line(c).startswith(
        "vs baseline B: no regressions: 0 cases regressed, 1 fixed, 1 still failing ("
    )
    none = Comparison("R", None, 1.5, {})
    assert summary_line(none) == (
        "run R: no baseline to compare with (farm baseline set RUN makes one)"
    )


def test_missing_and_newly_broken_cases_are_named_as_they_count():
    broken = [change("x", "passed", "broken")]
    c = comparison(missing_in_run=["m"], new_broken=broken)
    # Newly broken is no regression unless --strict: said apart.
    assert summary_line(c).startswith(
        "vs baseline B: REGRESSIONS: 1 case regressed (1 missing), 0 fixed, 0 still failing, "
        "1 newly broken ("
    )
    strict = comparison(missing_in_run=["m"], new_broken=broken, strict=True)
    assert "2 cases regressed (1 missing, 1 newly broken)" in summary_line(strict)
