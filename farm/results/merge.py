"""The shards of one sharded run (`farm run --shard K/N --run-group ID`) made one run.

The merged run is a run of its own in the store: every shard's records, one summary.json, one
junit.xml and one allure-results directory (from the shards' run directories), one exit code by
the rules of an unsharded run (farm/run/finish.py decide: the cases, then the quality gate
against the suite's baseline), and it is the baseline candidate (a shard never is). It is whole
only when every shard 1..N is in the store, finished, of one suite, package and commit, with its run
directory at hand; otherwise it is recorded incomplete (aborted, exit 2) with the reasons, one
per shard, so that a missing or failed shard never makes a green run.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from farm.run import shard as shard_mod
from farm.run.finish import ABORTED
from farm.run.outputs import JUNIT_XML, SUMMARY_JSON
from farm.util import paths
from farm.util.errors import UsageError

ALLURE_RESULTS = "allure-results"
# What each run's allure-results holds once for the run, not per case: written anew for the
# merged run (farm/run/allure/environment.py write_results_extras).
_RUN_EXTRAS = frozenset({"categories.json", "environment.properties", "executor.json"})
# What the shards of one logical run share; a shard that differs is not of the same run.
SAME_FIELDS = ("tier", "label", "git_commit", "package_sha256", "backend", "target")
# The merged run's status when it is incomplete (decided in farm/run/finish.py).
INCOMPLETE_STATUS = ABORTED


@dataclass
class Group:
    """What the store holds of one run group: its shards by index and what keeps it from being
    one whole run."""

    group: str
    count: int
    shards: dict[int, dict] = field(default_factory=dict)  # K -> the shard's run (newest of K)
    run_dirs: dict[int, Path] = field(default_factory=dict)  # K -> its run directory, found
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.problems

    @property
    def run_ids(self) -> list[str]:
        return [self.shards[k]["run_id"] for k in sorted(self.shards)]


def shard_runs(store, group: str) -> list[dict]:
    """The shard runs of ``group`` in the store, newest first."""
    return [r for r in reversed(store.group_runs(group)) if r.get("shard")]


def merged_runs(store, group: str) -> list[dict]:
    """The merged runs made of ``group`` so far, newest first."""
    return [r for r in reversed(store.group_runs(group)) if r.get("merged_from")]


def _missing(ks: list[int], count: int) -> str:
    """ "shard 3/4 is missing", "shards 2-5, 7 of 8 are missing": runs of them as ranges (a
    group of 1,000 shards with one stored is one line, not a thousand)."""
    if len(ks) == 1:
        return f"shard {ks[0]}/{count} is missing"
    spans: list[str] = []
    start = prev = ks[0]
    for k in [*ks[1:], 0]:
        if k == prev + 1:
            prev = k
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = k
    return f"shards {', '.join(spans)} of {count} are missing"


def find_run_dir(run: dict, runs_dir: Path | None) -> tuple[Path | None, list[Path]]:
    """A shard's run directory: <runs_dir>/<run id> (where a CI merge job put the shards'
    artifacts), else the directory it recorded, else <FARM_RUNS>/<run id>. Returns the one
    found (None) and the places looked in."""
    places = [runs_dir / run["run_id"]] if runs_dir is not None else []
    places += [Path(run["run_dir"])] if run.get("run_dir") else []
    places.append(paths.RUNS_DIR / run["run_id"])
    places = list(dict.fromkeys(places))
    for place in places:
        if (place / JUNIT_XML).is_file() and (place / ALLURE_RESULTS).is_dir():
            return place, places
    return None, places


def gather(store, group: str, runs_dir: Path | None = None) -> Group:
    """The group's shards and why it is not whole (if it is not). A group with no shard in the
    store is a UsageError: there is nothing to merge."""
    runs = shard_runs(store, group)
    if not runs:
        raise UsageError(
            f"run group {group!r}: no shard of it in the store; run `farm run --shard K/N "
            f"--run-group {group}` first (or point FARM_STORE at the store the shards used)"
        )
    counts = sorted({shard_mod.parse(r["shard"]).count for r in runs})
    found = Group(group, counts[-1])
    if len(counts) > 1:
        found.problems.append(f"its shards disagree on N ({', '.join(map(str, counts))})")
    by_index: dict[int, list[dict]] = {}
    for run in runs:
        by_index.setdefault(shard_mod.parse(run["shard"]).index, []).append(run)
    missing = [k for k in range(1, found.count + 1) if k not in by_index]
    if missing:
        found.problems.append(_missing(missing, found.count))
    for k in range(1, found.count + 1):
        tries = by_index.get(k, [])
        if not tries:
            continue
        # A shard retried by CI: its newest finished try counts.
        run = next((r for r in tries if r["status"] == "finished"), tries[0])
        found.shards[k] = run
        name = f"shard {k}/{found.count} (run {run['run_id']})"
        if run["status"] != "finished":
            found.problems.append(f"{name} is {run['status']}")
            continue
        where, looked = find_run_dir(run, runs_dir)
        if where is None:
            found.problems.append(
                f"{name}: its run directory is not found (looked in "
                f"{', '.join(map(str, looked))}): put its artifacts in <runs dir>/{run['run_id']}/"
            )
        else:
            found.run_dirs[k] = where
    if found.shards:
        first = found.shards[min(found.shards)]
        for k, run in sorted(found.shards.items()):
            # One line a shard, whatever it differs in (a tier also changes the label).
            other = [
                f"{name} ({run.get(name)!r}, not {first.get(name)!r})"
                for name in SAME_FIELDS
                if _field(run, name) != _field(first, name)
            ]
            if other:
                found.problems.append(
                    f"shard {k}/{found.count} (run {run['run_id']}) has another "
                    f"{' and '.join(other)}: not the same run"
                )
    return found


def _field(run: dict, name: str):
    """A field the shards of one run share. The label stands for the selection: its recorded
    form names each shard's own copies of its case files (runs/<run id>/cases/)."""
    if name == "label":
        selection = dict(run.get("selection") or {})
        selection.pop("files", None)
        return selection or run.get("label")
    return run.get(name)


def whole_selection(group: Group) -> set[str] | None:
    """The case ids of the shards' whole selection (their union, when nothing deselected any),
    from a shard's own copy of its case files; None when it cannot be expanded here."""
    from farm.util.errors import FarmError
    from suites.caseset import Selection

    if not group.shards:
        return None
    k = min(group.shards)
    run = group.shards[k]
    data = dict(run.get("selection") or {})
    if data.get("files"):
        if k not in group.run_dirs:
            return None
        cases = group.run_dirs[k] / "cases"
        data["files"] = [str(cases / Path(f).name) for f in data["files"]]
    try:
        return {c.id for c in Selection.from_json(data, run["tier"]).cases()}
    except (FarmError, OSError):
        return None


def merged_junit(group: Group, out: Path, records: list) -> None:
    """One junit.xml of the shards' testsuites, holding exactly the merged run's cases
    (farm/run/reconcile.py junit: a stored case a shard's JUnit lacks gains an entry)."""
    from farm.run import reconcile

    root = ET.Element("testsuites", name="pytest tests")
    for k in sorted(group.run_dirs):
        try:
            shard_root = ET.parse(group.run_dirs[k] / JUNIT_XML).getroot()
        except ET.ParseError:
            continue  # its cases come from their records below
        suites = [shard_root] if shard_root.tag == "testsuite" else shard_root.iter("testsuite")
        for suite in suites:
            suite.set("name", f"{suite.get('name', 'pytest')} shard {k}/{group.count}")
            root.append(suite)
    combined = out.with_name(out.name + ".shards")
    try:
        combined.write_bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))
        reconcile.junit(combined, out, records, {})
    finally:
        combined.unlink(missing_ok=True)


def merged_allure(group: Group, results: Path, records: list) -> None:
    """One allure-results: every shard's per-case files (results, attachments, plots), then
    reconciled to exactly the merged run's cases. The run's own extras are written afterwards
    for the merged run."""
    from farm.run import reconcile

    results.mkdir(parents=True, exist_ok=True)
    for k in sorted(group.run_dirs):
        for path in sorted((group.run_dirs[k] / ALLURE_RESULTS).iterdir()):
            if path.is_file() and path.name not in _RUN_EXTRAS:
                shutil.copyfile(path, results / path.name)
    reconcile.allure(results, records, {}, {})


def quarantined_in(group: Group) -> dict[str, str]:
    """The hosts the shards quarantined mid-run (each shard's summary.json)."""
    out: dict[str, str] = {}
    for k in sorted(group.run_dirs):
        try:
            summary = json.loads((group.run_dirs[k] / SUMMARY_JSON).read_text())
        except (OSError, ValueError):
            continue
        out.update(summary.get("quarantined_during_run") or {})
    return out


def incomplete_line(group: Group, merged_id: str) -> str:
    """The one line `farm merge` ends an incomplete merge with."""
    return f"run group {group.group}: merged run {merged_id} is incomplete (exit 2): " + "; ".join(
        group.problems
    )
