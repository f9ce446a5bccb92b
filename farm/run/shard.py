"""One shard of a selection: `farm run --shard K/N` runs a deterministic 1/N of the cases.

Every CI job of a sharded run computes the split itself from the same selection, so the split
depends on nothing but the cases: each case's estimated cost (farm/run/leases.py case_cost),
dealt longest first to the shard with the least cost so far (ties: the lower shard), cases of
equal cost in case-id order. Every case lands in exactly one shard, and no shard's cost exceeds
the mean by more than the costliest case (:func:`imbalance_bound`). N larger than the selection
leaves shards empty; such a shard still records its (empty) run, so the merge finds all N.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from farm.run.leases import case_costs
from farm.util.errors import UsageError

_SHARD = re.compile(r"\A([1-9][0-9]*)/([1-9][0-9]*)\Z")
MAX_SHARDS = 1000
# A run group is what CI names a pipeline by (GITHUB_RUN_ID, CI_PIPELINE_ID, Jenkins' BUILD_TAG
# with its %2F): one word of plain characters, so that it reads the same in every shell.
_GROUP = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:%+@=-]{0,127}\Z")


@dataclass(frozen=True)
class Shard:
    index: int  # K, 1-based
    count: int  # N

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse(text: str) -> Shard:
    """ "K/N" (1 <= K <= N) -> Shard; a UsageError naming the mistake otherwise."""
    found = _SHARD.match(text.strip())
    if found is None:
        raise UsageError(f"--shard {text!r}: write K/N, e.g. --shard 2/4 (the 2nd of 4 shards)")
    index, count = int(found[1]), int(found[2])
    if count > MAX_SHARDS:
        raise UsageError(
            f"--shard {text}: N must be at most {MAX_SHARDS:,} (a CI's jobs of one pipeline: "
            "GitHub's matrix stops at 256, GitLab's parallel: at 200)"
        )
    if index > count:
        raise UsageError(f"--shard {text}: K must be between 1 and N={count}")
    return Shard(index, count)


def check_group(group: str) -> str:
    """A run group id as CI gives it (a pipeline id, say): letters, digits, '.', '_', '-'."""
    if _GROUP.match(group) is None:
        raise UsageError(
            f"--run-group {group!r}: use 1 to 128 letters, digits and . _ : % + @ = -, starting "
            "with a letter or digit (e.g. the CI pipeline id)"
        )
    return group


def split(case_ids: Sequence[str], count: int, costs: Mapping[str, int]) -> list[list[str]]:
    """The case ids of each of ``count`` shards (index 0: shard 1), each in the order given.
    Greedy longest-processing-time first; deterministic for one set of ids and costs."""
    if count < 1:
        raise ValueError(f"shard count must be at least 1, not {count}")
    ids = list(dict.fromkeys(case_ids))
    order = sorted(ids, key=lambda cid: (-costs[cid], cid))
    loads = [(0, k) for k in range(count)]  # (cost so far, shard): the heap's least first
    owner: dict[str, int] = {}
    for cid in order:
        load, k = heapq.heappop(loads)
        owner[cid] = k
        heapq.heappush(loads, (load + costs[cid], k))
    shards: list[list[str]] = [[] for _ in range(count)]
    for cid in ids:
        shards[owner[cid]].append(cid)
    return shards


def imbalance_bound(costs: Mapping[str, int]) -> int:
    """How far over the mean shard cost a greedy split may go: at most the costliest case (a
    shard receives its last case while it is the least loaded, so at most the mean, before)."""
    return max(costs.values(), default=0)


def pick(cases: list, shard: Shard | None) -> list:
    """The cases of ``shard`` (all of them without one), in the selection's order."""
    if shard is None:
        return cases
    costs = case_costs(cases)
    mine = set(split([c.id for c in cases], shard.count, costs)[shard.index - 1])
    return [c for c in cases if c.id in mine]
