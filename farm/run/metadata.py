"""A run's metadata, made once: what the store's runs row, the Allure environment, the
judgement and the report read of a run (its id, tier, selection, package, hosts, commit, times,
shard or merge). `RunMetadata.as_dict()` is the one dict form of it (the store keeps it as the
run's meta_json; farm/results/store/runs.py begin_run).

Also the one maker of run ids (new_run_id: `farm run`, `farm merge`, and the store for a run
begun without one), and the pure readings of a run's metadata that the store, the Allure glue
and the triage share (inventory_list, planted_bug)."""

from __future__ import annotations

import datetime as _dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from farm import __version__
from farm.run.slots import SlotInfo


class PlanFacts(Protocol):
    """What the metadata takes of a run's plan (farm/run/plan.py Plan, which imports this
    module: named here by its shape, not imported)."""

    run_id: str
    run_dir: Path
    tier: str
    backend: str
    slots: list[SlotInfo]
    unhealthy: dict[str, str]
    set_aside: dict[str, str]
    package: dict
    git_commit: str
    selection: dict
    shard: str
    run_group: str


# Every id this process made: one process may begin several runs of one tier within a
# second (a store's tests, `farm merge` after a run), and 4 random hex digits alone then
# collide once in a while (the store refused the second run: "two runs given one id").
_ISSUED: set[str] = set()


def new_run_id(tier: str, when: _dt.datetime | None = None) -> str:
    """A run's id: its local start time, its tier (made safe for a directory name), 4 random
    hex digits: "20261129-151200-smoke-ab12". Never one this process made before."""
    stamp = (when or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isalnum() or c == "-" else "-" for c in tier)[:40]
    while True:
        run_id = f"{stamp}-{slug}-{secrets.token_hex(2)}"
        if run_id not in _ISSUED:
            _ISSUED.add(run_id)
            return run_id


@dataclass(frozen=True)
class Merged:
    """What a merged run (`farm merge`) says of the shards it was made of."""

    shards: int  # how many shards the group was split into
    merged_from: list[str]  # the shards' run ids
    incomplete: list[str]  # why the group is incomplete (empty: every shard finished)


@dataclass(frozen=True)
class RunMetadata:
    run_id: str
    tier: str
    label: str
    selection: dict
    backend: str
    target: str
    started_at: str
    package: dict
    git_commit: str
    inventory: list[dict]  # the plan's healthy slots
    unhealthy: dict[str, str]
    set_aside: dict[str, str]
    run_dir: str
    farm_version: str = __version__
    shard: str = ""  # "K/N": one shard of run_group
    run_group: str = ""
    merged: Merged | None = None

    @classmethod
    def from_plan(cls, plan: PlanFacts, started: str) -> RunMetadata:
        from suites.caseset import Selection

        return cls(
            run_id=plan.run_id,
            tier=plan.tier,
            label=Selection.from_json(plan.selection, plan.tier).label,
            selection=plan.selection,
            backend=plan.backend,
            target=plan.package.get("target", ""),
            started_at=started,
            package=plan.package,
            git_commit=plan.git_commit,
            inventory=[s.to_json() for s in plan.slots],
            unhealthy=plan.unhealthy,
            set_aside=plan.set_aside,
            run_dir=str(plan.run_dir),
            shard=plan.shard,
            run_group=plan.run_group,
        )

    def as_dict(self) -> dict[str, Any]:
        """The run's metadata as the store keeps it (and as every command reads a run)."""
        d: dict[str, Any] = {
            "run_id": self.run_id,
            "tier": self.tier,
            "label": self.label,
            "selection": self.selection,
            "backend": self.backend,
            "target": self.target,
            "started_at": self.started_at,
            "package": self.package,
            "git_commit": self.git_commit,
            "inventory": self.inventory,
            "unhealthy": self.unhealthy,
            "set_aside": self.set_aside,
            "run_dir": self.run_dir,
            "farm_version": self.farm_version,
        }
        if self.shard:
            d.update(shard=self.shard, run_group=self.run_group)
        if self.merged is not None:
            d.update(
                run_group=self.run_group,
                shards=self.merged.shards,
                merged_from=self.merged.merged_from,
                incomplete=self.merged.incomplete,
            )
        return d

    def judged_as(self, status: str, subset: bool) -> dict[str, Any]:
        """The metadata with the run's stored status and subset: what its judgement reads."""
        return dict(self.as_dict(), status=status, subset=subset)


def inventory_list(inv) -> list[dict]:
    """Inventory as a list of {"name", "soc", ...} whatever form it came in."""
    if not inv:
        return []
    if isinstance(inv, Mapping):
        out = []
        for name, v in inv.items():
            if isinstance(v, Mapping):
                out.append({"name": str(name), **dict(v)})
            else:
                out.append({"name": str(name), "soc": v})
        return out
    out, seen = [], set()
    for h in inv:  # hosts, or slots (several per host: the first one names the host)
        if isinstance(h, Mapping):
            d = dict(h)
            d["name"] = str(d.get("name") or d.get("host") or d.get("id") or "")
        else:
            d = {"name": str(h)}
        if d["name"] not in seen:
            seen.add(d["name"])
            out.append(d)
    return out


def planted_bug(run: Mapping[str, Any]) -> str:
    """The bug the run's operator was built with (`farm run --plant-bug`), from its archive's
    name (farm/pool/build.py archive_name): a run that tests the farm, never the operator: no
    baseline, nothing to bisect. "" for the real operator."""
    from farm.pool import build

    return build.bug_in_archive(str((run.get("package") or {}).get("file") or ""))
