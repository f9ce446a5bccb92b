"""Each planted kernel bug fails a case through the agent's own path (make the inputs, run the
twin, judge with golden.judge), and the correct twin passes the same case: the verdicts are
sharp enough for real defects, not only for the farm's own planted errors in numpy."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from farm import build
from farm.agent.execute import run_case
from golden import soc
from suites.case import Case

# bug -> a case that must catch it (and category expected)
CATCHES = {
    "tail": (Case("ascend910b", "float16", (3, 1000), (-1,)), "precision"),
    "seed_noreduce": (
        Case("ascend910b", "float32", (16, 1), (-1,), y_dist="arbitrary"),
        "precision",
    ),
    "trunc_narrow": (Case("ascend910b", "float16", (8, 1000), (-1,)), "precision"),
    "fp16_sum": (
        Case("ascend910b", "bfloat16", (2, 9000), (-1,), dy_dist="range", dy_range=(0.0, 1.0)),
        "precision",
    ),
    "drop_element": (Case("ascend910b", "float32", (4, 8192), (-1,)), "precision"),
    "strided_out_unwritten": (
        Case("ascend310b", "float16", (4, 37), (-1,), out_layout="strided"),
        "precision",
    ),
}


@dataclass(frozen=True)
class Host:
    soc: str
    host: str = "test"


def judged(case: Case, library, monkeypatch) -> dict:
    monkeypatch.setenv("LSG_TWIN_LIB", str(library))
    return run_case(case.to_dict(), "twin", 0, Host(soc.representative_soc(case.family).name))


@pytest.mark.parametrize("bug", sorted(CATCHES))
def test_the_judge_fails_each_planted_bug_and_passes_the_correct_twin(bug, twin_lib, monkeypatch):
    case, category = CATCHES[bug]
    good = judged(case, twin_lib, monkeypatch)
    assert good["outcome"] == "passed", good["message"]
    bad = judged(case, build.build_twin(build.default_build_dir(bug), plant_bug=bug), monkeypatch)
    assert (bad["outcome"], bad["category"]) == ("failed", category), bad["message"]


def test_every_planted_bug_has_a_case_that_catches_it():
    assert set(CATCHES) == set(build.PLANT_BUGS) - {""}
