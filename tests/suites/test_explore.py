"""Exploration draws new cases from a salt: the same salt the same cases on any machine, another
salt other cases, and every explored case found again from its id alone."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from farm.util.errors import UsageError
from suites import explore, matrix
from suites.caseset import Selection, find_case

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_same_salt_same_cases_other_salt_other_cases():
    a, again, b = explore.draw("s1", 60), explore.draw("s1", 60), explore.draw("s2", 60)
    assert [c.to_dict() for c in a] == [c.to_dict() for c in again]
    assert len({c.id for c in a}) == 60
    assert not {c.id for c in a} & {c.id for c in b}
    # Not only the tag differs: the shapes drawn do too.
    assert [c.shape for c in a] != [c.shape for c in b]
    assert all(c.id.endswith(f"_x.{c.explore}") and c.explore.startswith("s1.") for c in a)


def test_every_family_and_dtype_is_explored():
    cases = explore.draw("spread", 12)
    assert {(c.family, c.dtype) for c in cases} == {
        (f, d) for f in matrix.FAMILIES for d in matrix.DTYPES
    }


def test_the_same_salt_draws_the_same_cases_in_another_process():
    code = "from suites import explore; print([c.id for c in explore.draw('night-7', 30)])"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str([c.id for c in explore.draw("night-7", 30)])


def test_an_explored_case_is_found_from_its_id_alone():
    cases = explore.draw("found", 30)
    for case in (cases[0], cases[17], cases[-1]):
        assert explore.find(case.id) == case
        assert find_case(case.id) == case
    assert explore.find(matrix.expand("smoke")[0].id) is None
    assert explore.find(cases[3].id.replace("x.found.", "x.found.9")) is None


def test_the_default_salt_is_the_date_and_salts_are_checked():
    assert explore.nightly_salt(dt.date(2026, 11, 30)) == "20261130"
    with pytest.raises(UsageError, match="explore salt 'a b'"):
        explore.draw("a b")
    with pytest.raises(UsageError) as refused:  # a long one is not echoed whole
        explore.draw("x" * 5000)
    assert str(refused.value).startswith(f"explore salt {'x' * 40!r}... (5,000 characters): use")


def test_the_shards_of_a_run_group_draw_alike_on_either_side_of_midnight():
    """Each shard of a sharded nightly is its own `farm run`: started at midnight, they drew
    with two dates, and the merge refused them as different selections. A shard's default
    salt is its group's."""
    import argparse

    from farm.cli import _selection

    before, after = dt.date(2026, 12, 4), dt.date(2026, 12, 5)
    assert explore.nightly_salt(before, "9876543") == explore.nightly_salt(after, "9876543")
    assert explore.nightly_salt(after, "9876543") == "9876543"
    salt = explore.nightly_salt(after, "ci:pipeline.42")  # a group that is no salt: its hash
    assert explore.SALT_PATTERN.fullmatch(salt) and salt == explore.nightly_salt(
        None, "ci:pipeline.42"
    )
    assert explore.nightly_salt(after, "ci:pipeline.43") != salt
    shard = argparse.Namespace(
        explore="", run_group="9876543", tier="nightly", cases=[], explore_count=5
    )
    assert _selection(shard).explore == "9876543"


def test_a_selection_adds_explored_cases_on_top_of_its_tier():
    smoke = matrix.expand("smoke")
    chosen = Selection(tier="smoke", explore="s1", explore_count=24)
    cases = chosen.cases()
    assert [c.id for c in cases[: len(smoke)]] == [c.id for c in smoke]
    assert len(cases) == len(smoke) + 24
    assert chosen.key == "smoke"  # explored cases are extra: the baseline is the tier's
    assert chosen.label == "tier smoke + 24 explored (salt s1)"
    again = Selection.from_json(json.loads(json.dumps(chosen.to_json())))
    assert [c.id for c in again.cases()] == [c.id for c in cases]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tier": None}, "nothing to run"),
        ({"tier": "weekly"}, "unknown tier 'weekly'"),
        ({"tier": None, "files": ("a.json",), "explore": "s"}, "--explore draws on top of a tier"),
        ({"tier": "smoke", "explore": "s", "explore_count": 0}, "at least 1"),
        (  # drawn in memory before anything runs: 10^8 would take the machine's
            {"tier": "smoke", "explore": "s", "explore_count": 10**8},
            "--explore-count: 100,000,000 cases, over the limit of 100,000; if it is meant",
        ),
    ],
)
def test_selection_mistakes_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        Selection(**kwargs)


def test_one_case_file_named_twice_is_one_file_of_its_own_suite(tmp_path):
    """`--cases a.json --cases ./a.json` made the suite "cases:a+a", which no run of a.json
    alone compares with (its cases were already kept once)."""
    first = tmp_path / "a.json"
    first.write_text(json.dumps([{"dtype": "float32", "shape": [2, 3], "axes": 1}]))
    again = tmp_path / "sub" / ".." / "a.json"
    (tmp_path / "sub").mkdir()
    chosen = Selection(tier=None, files=(str(first), str(again), str(first)))
    assert chosen.files == (str(first),) and chosen.key == "cases:a"
    assert len(chosen.cases()) == 2  # one case a family
