"""The pool plan of one run: what the controller decided before the workers start.

Written once as JSON into the run directory; every xdist worker loads the same file, so all of
them agree on the healthy slots, where the bundle was deployed on each host, and the timeouts.
"""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from farm.pool.health.checks import QUARANTINE_AFTER
from farm.run.slots import SlotInfo

if TYPE_CHECKING:
    from suites.case import Case

# The run's cases as `farm run` expanded them, for its pytest processes (see Plan.cases).
CASES_FILE = "cases.pickle"
# In the run directory of a `pytest suites/` run without `farm run` (farm/run/plugin.py), which no
# store records: `farm runs` lists it as not stored and `farm runs prune --older-than` removes it.
UNSTORED_MARK = "not-stored.txt"
UNSTORED_TEXT = (
    "made by pytest suites/ without farm run: in no run store; farm runs lists this directory "
    "and farm runs prune --older-than removes it\n"
)


@dataclass
class Plan:
    run_id: str
    run_dir: Path
    tier: str  # the suite key (suites.caseset.Selection.key): a tier name, or cases:<files>
    backend: str
    inventory: dict  # how to reach hosts again: {"source": path | "embedded", "workroot": ...}
    slots: list[SlotInfo]  # healthy slots only (in plan.json: id, host, family, soc, device, torch)
    hosts: dict[str, dict]  # per healthy host: deployed directories and agent environment
    unhealthy: dict[str, str] = field(default_factory=dict)  # host -> why
    # The chips of healthy hosts set aside alone: slot id ("host:device") -> why.
    set_aside: dict[str, str] = field(default_factory=dict)
    case_timeout: float = 60.0
    quarantine_after: int = QUARANTINE_AFTER
    package: dict = field(default_factory=dict)  # version, sha256, target, file, arch
    # The package of each CPU architecture the pool's hosts have: arch -> {file, sha256}.
    packages: dict[str, dict] = field(default_factory=dict)
    git_commit: str = ""
    # What the run runs (suites.caseset.Selection.to_json); empty: the tier alone.
    selection: dict = field(default_factory=dict)
    # At most this many slots of a lane run at once in one worker (farm/run/pipeline.py);
    # 0: all of them. Pools of this machine cap it at its cores.
    window: int = 0
    # One shard of a sharded run ("K/N", farm/run/shard.py) of the logical run `run_group`;
    # empty: the whole selection, a run of its own.
    shard: str = ""
    run_group: str = ""

    def __post_init__(self) -> None:
        # Slots given in their JSON form (a plan rebuilt from a run's metadata) are read as slots.
        self.slots = [s if isinstance(s, SlotInfo) else SlotInfo.from_json(s) for s in self.slots]

    @property
    def path(self) -> Path:
        return self.run_dir / "plan.json"

    @property
    def state_path(self) -> Path:
        return self.run_dir / "state.json"

    def slot_infos(self) -> list[SlotInfo]:
        return list(self.slots)

    def slots_by_family(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for s in self.slots:
            out.setdefault(s.family, []).append(s.id)
        return out

    def save(self) -> Path:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        data = asdict(self)  # the slots as SlotInfo.to_json writes them
        data["run_dir"] = str(self.run_dir)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(self.path)
        return self.path

    def save_cases(self, cases: list[Case]) -> None:
        """Keep the run's expanded cases beside the plan (see :meth:`cases`). Their ids and
        expectations are computed first, so that the copies carry them."""
        for case in cases:
            case.id, case.expected  # noqa: B018  (cached properties, pickled with the case)
        tmp = self.run_dir / f".{CASES_FILE}.{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:
                pickle.dump((self.run_id, self.selection, cases), fh, pickle.HIGHEST_PROTOCOL)
            tmp.replace(self.run_dir / CASES_FILE)
        except OSError:  # a full disk, say: each process expands the selection itself
            tmp.unlink(missing_ok=True)

    def cases(self) -> list[Case]:
        """The run's cases (its selection expanded), in every process of the run.

        Expanding the full tier takes each process ~2 s (every case validated, its expectation
        derived); the controller and each pytest worker need the list, the controller's on the
        way to the first case. So `farm run` keeps the list it expanded (:meth:`save_cases`),
        and the others load it (~0.3 s). The file is the run's own, written by this farm for
        this plan; one that is missing or of another plan is ignored and the selection expanded
        again."""
        from suites.caseset import Selection

        try:
            with open(self.run_dir / CASES_FILE, "rb") as fh:
                run_id, selection, cases = pickle.load(fh)
            if run_id == self.run_id and selection == self.selection:
                return cases
        except Exception:  # noqa: BLE001 - a damaged or stale pickle can raise almost anything
            pass
        from farm.run import shard

        cases = Selection.from_json(self.selection, self.tier).cases()
        return shard.pick(cases, shard.parse(self.shard) if self.shard else None)

    @classmethod
    def load(cls, path: Path) -> Plan:
        data = json.loads(Path(path).read_text())
        data["run_dir"] = Path(data["run_dir"])
        data["slots"] = [SlotInfo.from_json(s) for s in data["slots"]]
        return cls(**data)
