"""The survivors of `farm mutate` that no case kills, and why: the reviewed entries of
op/mutants_explained.toml, each matched with a surviving mutant by its file and its source line's
text (without indentation, so that edits elsewhere in the file do not move it), and optionally
by the edits of that line it explains (`rules`: ids' last part, e.g. "relational.0"; default:
every edit of the line).

Each entry says which of two kinds its mutants are (docs/mutate.md):

- `equivalent`: no call the contract allows can tell the mutant from the operator, on CANN's
  device as on ours (a value written over before it is read, an extra iteration over nothing, a
  barrier CANN's compiler inserts itself); its why is the argument. Such a mutant is equivalent
  (reviewed), counted apart from the score like the equivalents the library comparison finds.
- `unreached`: the mutant does differ, but no case of the farm reaches the difference here (code
  only the twin's kernel runs, a guard no host input can fail). It stays a survivor in the
  score; the killable score leaves it out.

    [[survivor]]
    file = "tiling/tiling.cpp"              # under op/
    text = "if (n <= 0) return w;"          # the source line, as it reads without indentation
    rules = ["relational.0"]                # optional
    kind = "equivalent"                     # or "unreached"
    why = "..."                             # why no case can tell the mutant from the operator
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.results.coverage_unreachable import raw_entries
from farm.util.errors import UsageError

EQUIVALENT = "equivalent"  # reviewed: no call can tell it from the operator
UNREACHED = "unreached"  # a real difference no case of the farm reaches
KINDS = (EQUIVALENT, UNREACHED)


@dataclass(frozen=True)
class Entry:
    file: str
    text: str
    rules: tuple[str, ...]  # empty: every edit of the line
    kind: str  # one of KINDS
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
        kind = raw.get("kind")
        if kind not in KINDS:
            raise UsageError(
                f"{path}: entry {n}'s kind must be one of {', '.join(KINDS)} (got {kind!r}): "
                "equivalent when no call can tell the mutant from the operator, unreached when "
                "it differs but no case reaches the difference"
            )
        entries.append(
            Entry(raw["file"], raw["text"].strip(), tuple(rules), kind, raw["why"].strip())
        )
    return entries


def explain(outcomes: Iterable[dict[str, Any]], entries: Iterable[Entry]) -> int:
    """Give each surviving outcome its entry's `explained` words and kind (in place): a reviewed
    equivalent becomes status "equivalent" (`equivalent_by` "review"); the count explained."""
    entries = list(entries)
    count = 0
    for o in outcomes:
        if o.get("status") != "survived":
            continue
        entry = next((e for e in entries if e.explains(o)), None)
        if entry is not None:
            o["explained"] = entry.why
            o["explained_kind"] = entry.kind
            if entry.kind == EQUIVALENT:
                o["status"] = "equivalent"
                o["equivalent_by"] = "review"
            count += 1
    return count
