"""The survivors of `farm mutate` that no case can kill, and why: the reviewed entries of
op/mutants_explained.toml, each matched with a surviving mutant by its file and its source line's
text (without indentation, so that edits elsewhere in the file do not move it), and optionally
by the edits of that line it explains (`rules`: ids' last part, e.g. "relational.0"; default:
every edit of the line). An explained survivor is counted apart: the score over the mutants a
case could kill leaves it out (docs/mutate.md).

    [[survivor]]
    file = "tiling/tiling.cpp"              # under op/
    text = "if (n <= 0) return w;"          # the source line, as it reads without indentation
    rules = ["relational.0"]                # optional
    why = "..."                             # why no case can tell the mutant from the operator
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.results.coverage_unreachable import raw_entries
from farm.util.errors import UsageError


@dataclass(frozen=True)
class Entry:
    file: str
    text: str
    rules: tuple[str, ...]  # empty: every edit of the line
    why: str

    def explains(self, mutant: Mapping[str, Any]) -> bool:
        if (mutant["file"], str(mutant.get("source_line", "")).strip()) != (self.file, self.text):
            return False
        return not self.rules or mutant["id"].rsplit(":", 1)[-1] in self.rules


def load(path: Path) -> list[Entry]:
    """The entries of an explanations file (none when it is missing); a bad one is a UsageError
    naming the entry."""
    entries: list[Entry] = []
    for n, raw in enumerate(raw_entries(path, "survivor"), 1):
        rules = raw.get("rules", [])
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise UsageError(f"{path}: entry {n}'s rules must be a list of ids like 'constant.0'")
        entries.append(Entry(raw["file"], raw["text"].strip(), tuple(rules), raw["why"].strip()))
    return entries


def explain(outcomes: Iterable[dict[str, Any]], entries: Iterable[Entry]) -> int:
    """Give each surviving outcome its entry's `explained` words (in place); the count."""
    entries = list(entries)
    count = 0
    for o in outcomes:
        if o.get("status") != "survived":
            continue
        entry = next((e for e in entries if e.explains(o)), None)
        if entry is not None:
            o["explained"] = entry.why
            count += 1
    return count
