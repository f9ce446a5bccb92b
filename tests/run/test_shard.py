"""The split of `farm run --shard K/N` (farm/run/shard.py): deterministic, every case in exactly
one shard, balanced by estimated cost within the bound the costs give, and a shard of nothing
when N is over the cases."""

from __future__ import annotations

import random

import pytest

from farm.run import shard
from farm.run.leases import case_costs
from farm.run.plan import Plan
from farm.util.errors import UsageError
from suites import matrix

SMOKE = matrix.expand("smoke")
COSTS = case_costs(SMOKE)
IDS = [c.id for c in SMOKE]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_every_case_is_in_exactly_one_shard(count):
    shards = shard.split(IDS, count, COSTS)
    assert len(shards) == count
    together = [cid for part in shards for cid in part]
    assert sorted(together) == sorted(IDS)
    assert len(together) == len(set(together))


@pytest.mark.parametrize("count", [2, 4, 5])
def test_the_split_is_the_same_whatever_order_the_cases_come_in(count):
    """Each CI job computes the split itself: only the set of cases and their costs count."""
    shuffled = list(IDS)
    random.Random(count).shuffle(shuffled)
    a = [set(part) for part in shard.split(IDS, count, COSTS)]
    b = [set(part) for part in shard.split(shuffled, count, COSTS)]
    assert a == b


@pytest.mark.parametrize("count", [2, 3, 4, 8])
def test_no_shard_costs_more_than_the_mean_plus_the_costliest_case(count):
    shards = shard.split(IDS, count, COSTS)
    loads = [sum(COSTS[cid] for cid in part) for part in shards]
    mean = sum(loads) / count
    assert max(loads) <= mean + shard.imbalance_bound(COSTS)
    # and the bound is a real constraint here: the costliest case is a fraction of a shard
    assert shard.imbalance_bound(COSTS) < mean


def test_the_split_balances_cost_not_case_counts():
    """One costly case and many cheap ones: the costly one has a shard almost to itself."""
    costs = {"big": 100, **{f"small{i:02d}": 1 for i in range(100)}}
    big_shard, other = shard.split(list(costs), 2, costs)
    assert "big" in big_shard
    assert sum(costs[c] for c in big_shard) == 100  # the cheap ones all went to the other
    assert len(other) == 100


def test_more_shards_than_cases_leaves_shards_empty():
    few = IDS[:3]
    shards = shard.split(few, 5, COSTS)
    assert sorted(c for part in shards for c in part) == sorted(few)
    assert sum(1 for part in shards if not part) == 2
    assert shard.pick(SMOKE[:3], shard.Shard(5, 5)) == []


def test_pick_keeps_the_selection_order():
    mine = shard.pick(SMOKE, shard.Shard(2, 3))
    positions = [IDS.index(c.id) for c in mine]
    assert positions == sorted(positions)
    assert {c.id for c in mine} == set(shard.split(IDS, 3, COSTS)[1])
    assert shard.pick(SMOKE, None) is SMOKE


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "1", "a/b", "1/4/2", "-1/4", ""])
def test_a_bad_shard_is_one_usage_line(text):
    with pytest.raises(UsageError, match="--shard"):
        shard.parse(text)


def test_n_is_bounded_by_what_a_ci_runs():
    """1/100000 was taken: its group's message named 99,999 missing shards, 3 MB on one line."""
    with pytest.raises(UsageError, match=r"--shard 1/100000: N must be at most 1,000"):
        shard.parse("1/100000")
    assert shard.parse(f"{shard.MAX_SHARDS}/{shard.MAX_SHARDS}").count == shard.MAX_SHARDS


def test_a_shard_reads_as_written():
    assert str(shard.parse("3/4")) == "3/4"
    assert shard.parse(" 1/1 ") == shard.Shard(1, 1)


@pytest.mark.parametrize("group", ["", "a b", "x/y", "../up", "-lead", "g" * 129, "a;b", "$x"])
def test_a_bad_run_group_is_refused(group):
    with pytest.raises(UsageError, match="--run-group"):
        shard.check_group(group)


def test_a_run_group_as_ci_gives_it():
    assert shard.check_group("1234567") == "1234567"
    assert shard.check_group("nightly-2026.12.02_1") == "nightly-2026.12.02_1"
    assert shard.check_group("jenkins-lsg-farm-main%2Fx-12") == "jenkins-lsg-farm-main%2Fx-12"


def test_a_worker_without_the_kept_cases_expands_its_shard_only(tmp_path):
    """Plan.cases() without cases.pickle expands the selection itself: the shard's cases, not
    the whole tier's."""
    plan = Plan(
        run_id="r",
        run_dir=tmp_path,
        tier="smoke",
        backend="native",
        inventory={},
        slots=[],
        hosts={},
        shard="2/3",
        run_group="g",
    )
    assert [c.id for c in plan.cases()] == [c.id for c in shard.pick(SMOKE, shard.Shard(2, 3))]
