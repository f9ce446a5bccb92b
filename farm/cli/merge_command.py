"""`farm merge GROUP`: the shards of a sharded run made one run (farm/results/merge.py), with
one summary, one JUnit, one Allure report and one exit code; also what a shard does when it
finishes last (:func:`after_shard`, called by farm/cli/run_command.py).

Exit codes are `farm run`'s, decided by the same call (farm/run/finish.py decide): 0 every case
passed; 1 product failures (or the quality gate); 2 degraded by infrastructure, or incomplete: a
shard missing, not finished, of another run, or its run directory not found (the line says
which).

**One merged run a group**, whatever merges at once: the merged run's row is begun under a claim
in the store (RunStore.begin_run_unless, the group's lock), and a merge that finds the claim held
by a merge still going waits for it (until that merge says it is done, its report made, or its
process is gone), then answers as a merge done before it did (the same run, its exit code). A
merge whose process died (its run recovered as aborted) holds nothing: the next merge makes the
run again.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.console import Console
from rich.markup import escape

from farm.agent.record import ResultRecord
from farm.cli.judging import (
    degraded,
    judgement,
    make_report,
    print_gate,
    print_triage,
    say_the_run,
    summary_extra,
)
from farm.results import merge as merge_mod
from farm.run import runner
from farm.run.finish import ExitCode, RunFacts, decide
from farm.run.metadata import Merged, RunMetadata, new_run_id
from farm.run.outputs import JUNIT_XML, SUMMARY_JSON, write_summary
from farm.run.plan import Plan
from farm.util import paths
from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import FarmError, UsageError

if TYPE_CHECKING:
    from farm.results.store import StoreLocation


def main(argv: list[str]) -> int:
    from farm.results.report import add_history_runs_option
    from farm.results.store import store_location

    parser = CommandParser(
        prog="farm merge",
        description="make the shards of a sharded run (farm run --shard K/N --run-group GROUP) "
        "one run: one summary, JUnit, report and exit code (0 passed, 1 product failures, 2 "
        "degraded or incomplete: a shard missing or failed)",
    )
    parser.add_argument("group", help="the run group (--run-group of the shards)")
    parser.add_argument(
        "--runs-dir",
        type=Path,
        help="where the shards' run directories are, <runs dir>/<run id>/ (a CI merge job's "
        "downloaded artifacts); the merged run is written there too (default: $FARM_RUNS)",
    )
    parser.add_argument(
        "--store", help="the run store: a SQLite path or a postgresql:// URL (default: $FARM_STORE)"
    )
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument(
        "--json-summary",
        metavar="FILE",
        help="also write the merged run's summary JSON to FILE, for a CI script; the last line "
        "of stdout is run_id=<merged run id> either way",
    )
    add_history_runs_option(parser, default=None)
    args = parser.parse_args(argv)
    store_path = store_location(args.store)
    console = FarmConsole(stderr=True)
    said: list[Plan] = []
    code = merge(
        console,
        store_path,
        args.group,
        args.runs_dir,
        not args.no_report,
        args.history_runs,
        said=said,
    )
    for plan in said:  # the merged run, made now or before: its last lines, as farm run's
        say_the_run(console, plan, store_path, code, args.json_summary)
    return code


def after_shard(
    console: Console,
    store_path: StoreLocation,
    group: str,
    report: bool,
    history_runs: int | None,
) -> None:
    """A shard has ended: when every shard of its group has finished and their run directories
    are here, it makes the merged run (the last shard to finish merges); otherwise it says how
    to merge later. Never changes the shard's own exit code."""
    from farm.results.store import RunStore

    try:
        with RunStore(store_path) as store:
            found = merge_mod.gather(store, group)
    except FarmError as exc:
        console.print(f"[yellow]note:[/] run group {escape(group)} not merged: {escape(str(exc))}")
        return
    if not found.complete:
        console.print(
            f"run group {escape(group)}: not merged yet ({escape('; '.join(found.problems))}); "
            f"once every shard is done: farm merge {escape(group)}",
            highlight=False,
        )
        return
    console.print(f"run group {escape(group)}: every shard has finished; merging", highlight=False)
    try:
        merge(console, store_path, group, None, report, history_runs)
    except FarmError as exc:
        console.print(f"[yellow]note:[/] run group {escape(group)} not merged: {escape(str(exc))}")


def merge(
    console: Console,
    store_path: StoreLocation,
    group_id: str,
    runs_dir: Path | None = None,
    report: bool = True,
    history_runs: int | None = None,
    said: list[Plan] | None = None,
) -> int:
    """Merge run group ``group_id``; the merged run's exit code. ``said``: the merged run
    (made now or by an earlier merge) is appended to it, as a Plan of its id and directory."""
    said = [] if said is None else said
    from farm.results.store import RunStore, open_existing
    from farm.util import run_dir as run_dir_mod

    said_waiting: set[str] = set()
    while True:
        with open_existing(store_path) as store:
            group = merge_mod.gather(store, group_id, runs_dir)
            earlier = _merged_already(store, group)
            if earlier is None:
                records: list[ResultRecord] = []
                for k in sorted(group.shards):
                    if group.shards[k]["status"] == "finished":
                        records += cast(
                            list[ResultRecord], store.results(group.shards[k]["run_id"])
                        )
        if earlier is None:
            plan, meta, facts, quarantined = _prepared(group, group_id, runs_dir, records)
            with run_dir_mod.refusals_as_errors(), RunStore(store_path) as store:
                # The claim: the merged run begins only where no other merge of these shards
                # has begun since this one looked (under the group's lock, one transaction).
                begun, earlier = store.begin_run_unless(
                    meta, f"merge:{group_id}", partial(_merged_already, store, group)
                )
            if begun is not None:
                break
        assert earlier is not None
        if _settled(earlier):
            said.append(_plan_of(earlier))
            return _merged_before(console, store_path, group, earlier, report, history_runs)
        _wait_for(console, store_path, group_id, earlier, said_waiting)
        # then asked again: it is done now (or its process died, and it holds nothing)
    said.append(plan)
    try:
        return _make(
            console,
            store_path,
            group,
            plan,
            meta,
            records,
            facts,
            quarantined,
            report,
            history_runs,
        )
    finally:
        _done(store_path, plan.run_id)


def _make(
    console: Console,
    store_path: StoreLocation,
    group: merge_mod.Group,
    plan: Plan,
    meta: RunMetadata,
    records: list[ResultRecord],
    facts: RunFacts,
    quarantined: dict[str, str],
    report: bool,
    history_runs: int | None,
) -> int:
    """The merged run this merge has claimed, made: its records, Allure results, JUnit,
    judgement, summary and report; its exit code."""
    from farm.results.store import RunStore
    from farm.run.allure.environment import write_results_extras
    from farm.util import run_dir as run_dir_mod

    outcome = decide(facts)
    group_id = group.group
    with run_dir_mod.refusals_as_errors():
        plan.run_dir.mkdir(parents=True, exist_ok=True)
        with RunStore(store_path) as store:
            store.add_results(plan.run_id, records)
            store.finish_run(
                plan.run_id, int(outcome.stored_code), status=outcome.status, subset=outcome.subset
            )
        results = plan.run_dir / merge_mod.ALLURE_RESULTS
        merge_mod.merged_allure(group, results, records)
        merge_mod.merged_junit(group, plan.run_dir / JUNIT_XML, records)
        gate, followup = [], None
        if group.complete:
            run = meta.judged_as(outcome.status, outcome.subset)
            facts, judged = judgement(console, store_path, run, records, facts)
            outcome = decide(facts)
            if judged is not None:
                gate, followup = judged.gate, judged.triage
        write_results_extras(results, meta.as_dict())
        extra = summary_extra(gate, followup)
        extra.update(
            run_group=group_id,
            shards={str(k): run["run_id"] for k, run in sorted(group.shards.items())},
            incomplete=list(group.problems),
        )
        write_summary(plan, records, int(outcome.stored_code), quarantined, extra)
    console.print(
        f"run group {escape(group_id)}: merged run {plan.run_id} of {len(group.shards)} of "
        f"{group.count} shards",
        highlight=False,
    )
    code = int(outcome.exit_code)
    runner.print_summary(console, records, plan, code, plan.run_dir / SUMMARY_JSON)
    if not group.complete:
        console.print(merge_mod.incomplete_line(group, plan.run_id), markup=False, highlight=False)
        return code
    print_gate(console, [] if report else gate)
    if report:
        problem = make_report(plan.run_id, store_path, history_runs)
        if problem is not None:
            console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False)
            code = degraded(plan, store_path, records, quarantined, extra, facts)
    print_triage(console, followup)  # the last block: what to do next
    return code


def _done(store_path: StoreLocation, run_id: str) -> None:
    """Say in the store that this merge is done with its run (merges waiting for it answer)."""
    from farm.results.store import RunStore
    from farm.util.errors import StoreError

    try:
        with RunStore(store_path) as store:
            store.note_run(run_id, {DONE: True})
    except StoreError:
        pass  # they go on once this process has ended


def _settled(run: dict) -> bool:
    """Whether the merge that made ``run`` is done with it: the run is no longer running, and
    the merge said it is done or is not a live process of this machine."""
    from farm.results.store import owner_alive

    if run["status"] == "running":
        return False
    return bool(run.get(DONE)) or owner_alive(run.get("owner")) is not True


WAIT_POLL_S = 0.25  # how often a merge waiting for another one asks the store again
DONE = "merge_done"  # in a merged run's metadata: the merge that made it is done with it


def _wait_for(
    console: Console, store_path: StoreLocation, group_id: str, other: dict, said: set[str]
) -> None:
    """Wait until the merge making merged run ``other`` is done with it (_settled), or its
    process died (then the run, if still running, is recovered as aborted, and holds nothing)."""
    from farm.results.store import RunStore, owner_alive

    if other["run_id"] not in said:
        said.add(other["run_id"])
        console.print(
            f"run group {escape(group_id)}: another farm merge is making its merged run "
            f"{other['run_id']}; waiting for it",
            highlight=False,
        )
    while True:
        with RunStore(store_path) as store:
            run = store.get_run(other["run_id"])
            if run is None or _settled(run):
                return
            if owner_alive(run.get("owner")) is False:
                store.recover_orphans()
                return
        time.sleep(WAIT_POLL_S)


def _merged_before(
    console: Console,
    store_path: StoreLocation,
    group: merge_mod.Group,
    earlier: dict,
    report: bool,
    history_runs: int | None,
) -> int:
    """What a merge answers when the group was merged already (by an earlier or a concurrent
    merge): that run, its report made if it has none, its exit code."""
    console.print(
        f"run group {escape(group.group)}: merged already as run {earlier['run_id']} "
        f"(exit {earlier['exit_code']})",
        highlight=False,
    )
    if not group.complete:
        console.print(merge_mod.incomplete_line(group, earlier["run_id"]), markup=False)
    problem = None
    if group.complete and report and not (Path(earlier["run_dir"]) / "report").is_dir():
        # The last shard merged without a report (shards run --no-report): make it now.
        problem = make_report(earlier["run_id"], store_path, history_runs)
        if problem is not None:
            console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False)
    facts = RunFacts(
        merged_as=ExitCode(earlier["exit_code"]),
        incomplete=not group.complete,
        report_failed=problem is not None,
    )
    return int(decide(facts).exit_code)


def _plan_of(run: dict) -> Plan:
    """A stored run as a Plan of its id and directory (what its last lines name)."""
    return Plan(
        run["run_id"],
        Path(run["run_dir"]),
        run.get("tier") or "",
        "",
        inventory={},
        slots=[],
        hosts={},
    )


def _prepared(
    group: merge_mod.Group, group_id: str, runs_dir: Path | None, records: list
) -> tuple[Plan, RunMetadata, RunFacts, dict[str, str]]:
    """The merged run's plan, metadata, facts (what farm/run/finish.py decides its end from)
    and hosts quarantined."""
    doubled = sorted(cid for cid, n in Counter(r["case_id"] for r in records).items() if n > 1)
    if doubled:
        group.problems.append(
            f"{len(doubled)} case(s) in more than one shard (e.g. {doubled[0]}): the shards "
            "split different selections"
        )
        # One record a case, the first shard's: the store keeps one row a case, and the
        # summary, JUnit and Allure results count what it keeps.
        first: dict[str, ResultRecord] = {}
        for r in records:
            first.setdefault(r["case_id"], r)
        records[:] = list(first.values())
    plan, hosts = _merged_plan(group, (runs_dir or paths.RUNS_DIR).absolute())
    # The latest shard's start, so that the merged run (stored after every shard) is the newest
    # run of its tier: what farm report and farm compare take without a run id.
    started = max(r["started_at"] for r in group.shards.values())
    quarantined = merge_mod.quarantined_in(group)
    meta = dataclasses.replace(
        RunMetadata.from_plan(plan, started),
        inventory=hosts,
        run_group=group_id,
        merged=Merged(
            shards=group.count, merged_from=group.run_ids, incomplete=list(group.problems)
        ),
    )
    if not group.complete:
        return plan, meta, RunFacts(incomplete=True), quarantined
    outcomes = Counter(r["outcome"] for r in records)
    # A shard degraded by infrastructure degrades the run.
    degraded_shards = [
        f"shard {k} degraded by infrastructure (run {run['run_id']}, exit 2)"
        for k, run in sorted(group.shards.items())
        if run["exit_code"] == ExitCode.INFRA
    ]
    # A baseline only when the shards ran the whole selection (none ran -k), as known here.
    whole = merge_mod.whole_selection(group)
    facts = RunFacts(
        failed=outcomes["failed"],
        broken=outcomes["broken"],
        infrastructure=(*runner.infrastructure_events(plan, quarantined), *degraded_shards),
        subset=whole is None or {r["case_id"] for r in records} != whole,
    )
    return plan, meta, facts, quarantined


def _merged_already(store, group: merge_mod.Group) -> dict | None:
    """The group's newest merged run made of exactly these shards with the same verdict on their
    completeness, which holds the group's claim: merging again would make the same run twice (a
    merge job after the last shard merged, or three at once). One still running holds it while
    its process may be alive; one whose process died holds nothing (recovered as aborted: only
    an incomplete merge is aborted by design)."""
    from farm.results.store import owner_alive

    for run in merge_mod.merged_runs(store, group.group):
        if run.get("merged_from") != group.run_ids or run.get("incomplete", []) != group.problems:
            continue
        if run["status"] == "running":
            if owner_alive(run.get("owner")) is not False:
                return run
        elif run["status"] == "finished" or (run["status"] == "aborted" and group.problems):
            return run
    return None


def _merged_plan(group: merge_mod.Group, runs_dir: Path) -> tuple[Plan, list[dict]]:
    """The merged run as a Plan (what the summary and the run's metadata are written from): the
    shards' suite, package and commit, unhealthy hosts and chips set aside; and their hosts."""
    if not group.shards:
        raise UsageError(f"run group {group.group!r}: no shard of it to merge")
    first = group.shards[min(group.shards)]
    run_id = new_run_id(first["tier"])
    # The shards' hosts as their runs stored them (farm/run/metadata.py inventory_list): the
    # merged run ran on no slot of its own.
    hosts: dict[str, dict] = {}
    unhealthy: dict[str, str] = {}
    set_aside: dict[str, str] = {}
    for run in group.shards.values():
        for host in run.get("inventory") or []:
            hosts.setdefault(str(host.get("name")), host)
        unhealthy.update(run.get("unhealthy") or {})
        set_aside.update(run.get("set_aside") or {})
    return Plan(
        run_id=run_id,
        run_dir=runs_dir / run_id,
        tier=first["tier"],
        backend=first.get("backend") or "",
        inventory={},
        slots=[],
        hosts={},
        unhealthy=unhealthy,
        set_aside=set_aside,
        package=first.get("package") or {},
        git_commit=first.get("git_commit") or "",
        selection=first.get("selection") or {},
    ), list(hosts.values())
