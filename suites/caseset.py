"""What one run runs: a tier, case files and explored cases, resolved into one list of cases.

    selection = Selection(tier="nightly", files=("shapes.yaml",), explore="20261130")
    cases = selection.cases()          # tier cases, then file cases, then explored ones
    selection.key                      # the store's suite key: baselines and history group by it
    selection.label                    # what people read: "nightly + 2 case files + explore ..."

The selection travels in the run's plan; every xdist worker resolves it the same way. Case
files are copied into the run directory first (`freeze`), so that a run, and its repro, keep
the cases they ran even when the file changes later.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from farm.util.errors import ConfigError, UsageError

from . import casefile, limits, matrix
from . import explore as exploration
from .case import Case


@dataclass(frozen=True)
class Selection:
    tier: str | None = "smoke"
    files: tuple[str, ...] = ()
    explore: str | None = None  # the salt; None: no exploration
    explore_count: int = exploration.DEFAULT_COUNT
    names: tuple[str, ...] = field(default=(), compare=False)  # the files as the user named them

    def __post_init__(self):
        # One file named twice (`--cases a.json --cases ./a.json`) is run once, and its suite is
        # the file's alone ("cases:a", not "cases:a+a", which no run of a.json compares with).
        unique: dict[str, str] = {}
        for name in self.files:
            unique.setdefault(os.path.realpath(name), name)
        if len(unique) < len(self.files):
            object.__setattr__(self, "files", tuple(unique.values()))
        if self.tier is None and not self.files:
            raise UsageError("nothing to run: name a tier (--tier) or case files (--cases)")
        if self.tier is not None and self.tier not in matrix.TIERS:
            raise matrix.UnknownTierError(
                f"unknown tier {self.tier!r}; use one of: {', '.join(matrix.TIERS)}"
            )
        if self.explore is not None:
            exploration.check_salt(self.explore)
            if self.tier is None:
                raise UsageError("--explore draws on top of a tier: add --tier")
            if self.explore_count < 1:
                raise UsageError(f"--explore-count must be at least 1, not {self.explore_count}")
            limits.CASES.check(self.explore_count, "--explore-count")  # drawn before they run

    def cases(self) -> list[Case]:
        """Every case once, in a stable order: the tier's, then the files', then explored."""
        out: dict[str, Case] = {}
        if self.tier is not None:
            out.update((c.id, c) for c in matrix.expand(self.tier))
        if self.files:
            for case in casefile.load_many(self.files):
                out.setdefault(case.id, case)
        if self.explore is not None:
            for case in exploration.draw(self.explore, self.explore_count):
                out.setdefault(case.id, case)
        return list(out.values())

    @property
    def file_names(self) -> list[str]:
        return [Path(n).name for n in (self.names or self.files)]

    @property
    def key(self) -> str:
        """The suite key runs are grouped by (the store's tier column): runs of one key have
        the same fixed cases, so one can be the baseline of another. Explored cases do not
        change it: they are extra cases, new in every comparison."""
        if not self.files:
            return str(self.tier)
        stems = "+".join(sorted(Path(n).stem for n in self.file_names))
        return f"cases:{stems}" if self.tier is None else f"{self.tier}+cases:{stems}"

    @property
    def label(self) -> str:
        parts = [f"tier {self.tier}"] if self.tier else []
        if self.files:
            parts.append("cases from " + ", ".join(self.file_names))
        if self.explore is not None:
            parts.append(f"{self.explore_count} explored (salt {self.explore})")
        return " + ".join(parts)

    def freeze(self, run_dir: Path) -> Selection:
        """The same selection with its case files copied into run_dir/cases/ (numbered, so
        that two files of one name do not collide)."""
        if not self.files:
            return self
        where = Path(run_dir) / "cases"
        where.mkdir(parents=True, exist_ok=True)
        copies = []
        for i, name in enumerate(self.files):
            copy = where / f"{i}-{Path(name).name}"
            try:
                shutil.copyfile(name, copy)
            except OSError as exc:
                raise ConfigError(
                    f"case file {name}: cannot copy it into the run ({exc})"
                ) from None
            copies.append(str(copy))
        return Selection(
            self.tier,
            tuple(copies),
            self.explore,
            self.explore_count,
            names=tuple(self.names or self.files),
        )

    def to_json(self) -> dict:
        data = asdict(self)
        data["files"], data["names"] = list(self.files), list(self.names)
        return data

    @classmethod
    def from_json(cls, data: dict | None, tier: str = "smoke") -> Selection:
        if not data:
            return cls(tier=tier)
        return cls(
            data.get("tier"),
            tuple(data.get("files") or ()),
            data.get("explore"),
            int(data.get("explore_count") or exploration.DEFAULT_COUNT),
            names=tuple(data.get("names") or ()),
        )


def find_case(case_id: str, files: tuple[str, ...] | list[str] = ()) -> Case:
    """A case by id: from the case files given, an explored case (redrawn from the salt in its
    id), or any tier's."""
    if not case_id.strip():  # said before any tier is expanded: no case has an empty id
        raise ConfigError(
            f"case id {case_id!r} is empty: pass the id of a case, as `farm cases --tier "
            "nightly` or a run's report names it"
        )
    for case in casefile.load_many(files) if files else ():
        if case.id == case_id:
            return case
    found = exploration.find(case_id)
    if found is not None:
        return found
    for tier in matrix.TIERS:
        for case in matrix.expand(tier):
            if case.id == case_id:
                return case
    where = f"in {', '.join(map(str, files))}, " if files else ""
    raise ConfigError(
        f"no case {case_id!r} {where}in any tier or exploration; list them with "
        "`farm cases --tier nightly` (or `farm cases --cases FILE`), or pass the case file "
        "it came from with --cases"
    )
