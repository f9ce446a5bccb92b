"""Are two runs' verdicts identical, case by case? (issue 26: before and after a change.)

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/verdicts_identical.py before.sqlite after.sqlite
    .venv/bin/python benchmarks/verdicts_identical.py A.sqlite postgresql://HOST/DB --run-b ID
    .venv/bin/python benchmarks/verdicts_identical.py A.sqlite B.sqlite --tier smoke

Each store is opened through farm.results.store.RunStore (a SQLite path or a postgresql:// URL),
read only (a missing store is refused, not created). Without ``--run-a``/``--run-b``, each
store's latest finished run of ``--tier`` (default nightly). Compared per case: the set of case
ids, and of each case its outcome, category, the operator's status and reason, the case's verdict
(standard, level, passed, reason, gates) and every standard's recorded verdict (passed, reason,
gated, applicable). Timings, hosts, slots, attempts and everything else are ignored. Exit 0 when
identical, 1 with one line per difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

# The record fields that make up a case's verdict (farm/agent/record.py ResultRecord).
VERDICT_FIELDS = ("outcome", "category", "status", "reason", "verdict", "standards")


def verdict_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """What of a record must not change: VERDICT_FIELDS, absent ones as None."""
    return {name: record.get(name) for name in VERDICT_FIELDS}


def differences(
    records_a: Iterable[Mapping[str, Any]],
    records_b: Iterable[Mapping[str, Any]],
    label_a: str = "A",
    label_b: str = "B",
) -> list[str]:
    """One line per difference between two runs' records, in case id order: a case only one
    run has, or a verdict field whose values differ."""
    a = {r["case_id"]: verdict_of(r) for r in records_a}
    b = {r["case_id"]: verdict_of(r) for r in records_b}
    lines = []
    for case_id in sorted(a.keys() | b.keys()):
        if case_id not in b:
            lines.append(f"{case_id}: only in {label_a}")
        elif case_id not in a:
            lines.append(f"{case_id}: only in {label_b}")
        else:
            for name in VERDICT_FIELDS:
                if a[case_id][name] != b[case_id][name]:
                    lines.append(
                        f"{case_id}: {name} {_show(a[case_id][name])} in {label_a}, "
                        f"{_show(b[case_id][name])} in {label_b}"
                    )
    return lines


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def chosen_run(store, run_id: str | None, tier: str) -> dict:
    """The run asked for, else the store's latest finished run of `tier`; SystemExit naming the
    store when there is none."""
    run = store.get_run(run_id) if run_id else store.latest_run(tier=tier, finished=True)
    if run is None:
        what = f"no run {run_id!r}" if run_id else f"no finished run of tier {tier!r}"
        raise SystemExit(f"{store.location}: {what} (list them with farm runs)")
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store_a", help="a SQLite path or a postgresql:// URL")
    parser.add_argument("store_b", help="a SQLite path or a postgresql:// URL")
    parser.add_argument("--run-a", default=None, help="run id in STORE_A (default: latest)")
    parser.add_argument("--run-b", default=None, help="run id in STORE_B (default: latest)")
    parser.add_argument("--tier", default="nightly", help="the tier of the latest runs")
    args = parser.parse_args(argv)

    from farm.results.store import RunStore
    from farm.util.errors import FarmError

    try:
        with RunStore(args.store_a, create=False) as a, RunStore(args.store_b, create=False) as b:
            run_a = chosen_run(a, args.run_a, args.tier)
            run_b = chosen_run(b, args.run_b, args.tier)
            records_a, records_b = a.results(run_a["run_id"]), b.results(run_b["run_id"])
    except FarmError as exc:
        raise SystemExit(str(exc)) from None
    lines = differences(records_a, records_b, run_a["run_id"], run_b["run_id"])
    print(
        f"{run_a['run_id']} ({len(records_a)} cases) vs {run_b['run_id']} "
        f"({len(records_b)} cases): "
        + (f"{len(lines)} differences" if lines else "verdicts identical")
    )
    for line in lines:
        print(line)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
