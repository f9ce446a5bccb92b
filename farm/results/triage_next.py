"""What to run next for each failure group of a run's triage (farm/results/triage.py): shrink a
representative failing case (`farm shrink`), and, where the run has a baseline that ran another
commit, bisect the group's failures between the two (`farm bisect`).

    next_steps(triage, records, run, baseline) -> [NextSteps]   one per group, in rank order
    with_baseline(store, records, run) -> (Triage, [NextSteps])  against the run's baseline
    run_triage(store, run_id) -> (Triage, [NextSteps])           the same, of a stored run
    triage_json(triage, steps) -> dict                           summary.json's "triage"

`farm run` prints the triage at its end and writes it into summary.json; `farm report` shows it on
the report's overview. Pure functions apart from with_baseline and run_triage, which read the
store.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from farm.results import triage as grouping
from farm.results.store.rows import planted_bug
from farm.results.triage import Group, Triage, group_file, operator_arguments, triage


@dataclass(frozen=True)
class NextSteps:
    group: Group
    representative: str  # the group's failing case with the fewest elements (the quickest shrink)
    shrink: str  # `farm shrink` of the representative
    bisect: str  # `farm bisect` from the baseline's commit to the run's; "" when there is none
    no_bisect: str  # why there is no bisect command ("" when there is one)

    def lines(self) -> list[str]:
        out = [f"   shrink: {self.shrink}"]
        out.append(f"   bisect: {self.bisect}" if self.bisect else f"   bisect: {self.no_bisect}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "representative": self.representative,
            "shrink": self.shrink,
            "bisect": self.bisect,
            "no_bisect": self.no_bisect,
        }


def _numel(record: Mapping[str, Any]) -> int:
    n = 1
    for d in record.get("shape") or ():
        n *= int(d)
    return n


def failing_ids(group: Group, records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The group's failed cases (its case_ids hold its passes as well), sorted."""
    return [cid for cid in group.case_ids if (records.get(cid) or {}).get("outcome") == "failed"]


def representative(group: Group, records: Mapping[str, Mapping[str, Any]]) -> str:
    failing = failing_ids(group, records)
    return min(failing, key=lambda cid: (_numel(records[cid]), cid)) if failing else ""


def case_file_arguments(run: Mapping[str, Any]) -> list[str]:
    """--cases for each case file of the run's selection: where its cases are found."""
    files = (run.get("selection") or {}).get("files") or ()
    return [arg for path in files for arg in ("--cases", str(path))]


def shrink_command(run: Mapping[str, Any], case_id: str) -> str:
    return shlex.join(
        ["farm", "shrink", case_id, *case_file_arguments(run), *operator_arguments(run)]
    )


def bisect_target(run: Mapping[str, Any]) -> list[str]:
    """farm bisect builds the operator at each commit: the run's target, where not the default
    (bisect builds no planted bug and runs the native backend)."""
    from farm.pool import build

    target = run.get("target") or build.DEFAULT_TARGET
    return [] if target == build.DEFAULT_TARGET else ["--target", str(target)]


def bisect_command(
    run: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    failing: Sequence[str],
    number: int,
) -> tuple[str, str]:
    """(command, "") or ("", why there is none). A group of at most INLINE_IDS failures is
    bisected by its failing case ids; a larger one by its case file (`farm triage RUN --group N
    -o FILE`, which farm bisect reads with --cases)."""
    bug = planted_bug(run)
    if bug:
        return "", (
            f"the run's operator has the planted bug {bug} (--plant-bug, a test of the farm): "
            "its failures are the bug's, no commit's: nothing to bisect"
        )
    if baseline is None:
        return "", "no baseline for this run's cases: nothing to bisect from"
    good, bad = baseline.get("git_commit"), run.get("git_commit")
    if not good or not bad:
        return "", "the run or its baseline has no git commit recorded"
    if good == bad:
        return "", (
            f"the baseline {baseline.get('run_id')} ran the same commit {str(bad)[:12]}: "
            "nothing to bisect"
        )
    ends = ["--good", str(good), "--bad", str(bad), *bisect_target(run)]
    if len(failing) <= grouping.INLINE_IDS:
        return shlex.join(["farm", "bisect", *ends, *case_file_arguments(run), *failing]), ""
    run_id = str(run.get("run_id") or "RUN")
    path = group_file(run_id, number)
    write = ["farm", "triage", run_id, "--group", str(number), "-o", path]
    return shlex.join(write) + " && " + shlex.join(["farm", "bisect", *ends, "--cases", path]), ""


def next_steps(
    result: Triage,
    records: Iterable[Mapping[str, Any]],
    run: Mapping[str, Any],
    baseline: Mapping[str, Any] | None = None,
) -> list[NextSteps]:
    by_id = {str(r["case_id"]): r for r in records}
    steps = []
    for number, group in enumerate(result.groups, 1):
        case = representative(group, by_id)
        bisect, why = bisect_command(run, baseline, failing_ids(group, by_id), number)
        steps.append(NextSteps(group, case, shrink_command(run, case), bisect, why))
    return steps


def lines(result: Triage, steps: Sequence[NextSteps]) -> list[str]:
    """The triage's lines (Triage.lines) with each group's shrink and bisect after its rerun."""
    if result.why_none:
        return result.lines()
    out: list[str] = []
    for n, (group, step) in enumerate(zip(result.groups, steps, strict=True), 1):
        out += [f"{n}. {group.line()}", f"   rerun: {group.rerun}", *step.lines()]
    if result.broken:
        out.append(f"({result.broken:,} broken cases left out: the pool's, not the operator's)")
    return out


def triage_json(result: Triage, steps: Sequence[NextSteps]) -> dict[str, Any]:
    """summary.json's "triage": each group's line, counts and commands; its case ids only for a
    group of at most INLINE_IDS cases (a nightly group can be thousands: its rerun command
    writes them to a case file)."""
    groups = []
    for group, step in zip(result.groups, steps, strict=True):
        g = {
            "line": group.line(),
            "group": group.text,
            "failed": group.failed,
            "failures": group.failures,
            "passed": group.passed,
            "passes": group.passes,
            "cases": len(group.case_ids),
            "categories": group.categories,
            "rerun": group.rerun,
            **step.to_json(),
        }
        if len(group.case_ids) <= grouping.INLINE_IDS:
            g["case_ids"] = group.case_ids
        groups.append(g)
    return {
        "failures": result.failures,
        "passes": result.passes,
        "broken": result.broken,
        "groups": groups,
        "message": result.why_none,
    }


def with_baseline(
    store: Any,
    records: Sequence[Mapping[str, Any]],
    run: Mapping[str, Any],
    baseline_id: str | None = None,
) -> tuple[Triage, list[NextSteps]]:
    """The triage of a run's records, with the next steps against `baseline_id`, by default the
    run's baseline (farm/results/store.py baseline_for; looked up only when there are groups)."""
    result = triage(records, run)
    baseline = None
    if result.groups:
        baseline_id = baseline_id or store.baseline_for(run["tier"], exclude_run_id=run["run_id"])
        baseline = store.get_run(baseline_id) if baseline_id else None
    return result, next_steps(result, records, run, baseline)


def run_triage(
    store: Any, run_id: str, baseline_id: str | None = None
) -> tuple[Triage, list[NextSteps]]:
    """The triage of a stored run and its next steps (against `baseline_id`: with_baseline)."""
    run = store.get_run(run_id)
    if run is None:
        from farm.util.errors import UsageError

        raise UsageError(f"no run {run_id!r} in the store (list them with `farm runs`)")
    return with_baseline(store, store.results(run_id), run, baseline_id)
