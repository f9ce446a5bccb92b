"""What no case reaches, and why: the uncovered lines and branches of gcovr's JSON, each matched
with the reviewed explanations of op/coverage_unreachable.toml (an entry per source line, matched
by its text, so that edits elsewhere in the file do not move it) or left unexplained; and the
entries that explain nothing (their text is not in the file, or only on lines every case covers):
stale, to be removed.

    [[unreachable]]
    file = "tiling/views.cpp"          # under op/
    text = "if (rank == 0) {"          # the source line, as it reads without its indentation
    why = "..."                        # why no call can reach it (or its other branch)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from farm.util.errors import UsageError


@dataclass(frozen=True)
class Entry:
    file: str
    text: str
    why: str


@dataclass(frozen=True)
class Uncovered:
    """A line of a real source that no case ran (`line`), or ran without taking some of its
    branches (`branches` of `of`)."""

    file: str
    line: int
    text: str
    line_missed: bool
    branches: int
    of: int

    def describe(self) -> str:
        if self.line_missed:
            return "line never runs"
        return f"{self.branches} of {self.of} branches never taken"


@dataclass
class Accounting:
    explained: list[tuple[Uncovered, Entry]] = field(default_factory=list)
    unexplained: list[Uncovered] = field(default_factory=list)
    # Entries whose text no line of their file has, or only lines that are fully covered.
    stale: list[tuple[Entry, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.stale


def raw_entries(path: Path, table: str) -> list[dict]:
    """The ``table`` entries of a reviewed explanations file (op/coverage_unreachable.toml,
    op/mutants_explained.toml), each with its file, text and why; none when the file is missing.
    A bad file or entry is a UsageError naming it."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not TOML ({exc}): fix the file") from None
    entries = doc.get(table, [])
    for n, raw in enumerate(entries, 1):
        missing = [k for k in ("file", "text", "why") if not str(raw.get(k, "")).strip()]
        if missing:
            raise UsageError(f"{path}: entry {n} lacks {', '.join(missing)}: give each entry all")
    return entries


def load(path: Path) -> list[Entry]:
    """The entries of an explanations file; a bad one is a UsageError naming the entry."""
    entries: list[Entry] = []
    for n, raw in enumerate(raw_entries(path, "unreachable"), 1):
        entry = Entry(raw["file"], raw["text"].strip(), raw["why"].strip())
        if any((e.file, e.text) == (entry.file, entry.text) for e in entries):
            raise UsageError(f"{path}: entry {n} repeats {entry.file}: {entry.text!r}: merge them")
        entries.append(entry)
    return entries


def uncovered(gcovr: Mapping, source: Mapping[str, list[str]]) -> list[Uncovered]:
    """The uncovered lines and partly covered branches of gcovr's JSON (its per-function entries
    of one line taken together: a branch is taken when any instance of it is); `source`: each
    file's lines."""
    found = []
    for f in gcovr.get("files", ()):
        name = f["file"]
        counts: dict[int, int] = defaultdict(int)
        branches: dict[int, dict[int, int]] = defaultdict(dict)
        for ln in f.get("lines", ()):
            if ln.get("gcovr/excluded"):
                continue
            number = ln["line_number"]
            counts[number] += ln.get("count", 0)
            for br in ln.get("branches", ()):
                key = br.get("branchno", len(branches[number]))
                branches[number][key] = branches[number].get(key, 0) + br.get("count", 0)
        lines = source.get(name, [])
        for number in sorted(counts):
            taken = branches.get(number, {})
            missed = sum(1 for c in taken.values() if c == 0)
            if counts[number] and not missed:
                continue
            text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
            found.append(Uncovered(name, number, text, counts[number] == 0, missed, len(taken)))
    return found


def account(
    items: Iterable[Uncovered], entries: Iterable[Entry], source: Mapping[str, list[str]]
) -> Accounting:
    """Each uncovered item with the entry of its file and text, or unexplained; stale entries."""
    entries = list(entries)
    by_key = {(e.file, e.text): e for e in entries}
    out = Accounting()
    used: set[tuple[str, str]] = set()
    for item in items:
        entry = by_key.get((item.file, item.text))
        if entry is None:
            out.unexplained.append(item)
        else:
            out.explained.append((item, entry))
            used.add((entry.file, entry.text))
    for e in entries:
        if (e.file, e.text) in used:
            continue
        lines = [ln.strip() for ln in source.get(e.file, [])]
        if e.file not in source:
            out.stale.append((e, "its file is not among the measured sources"))
        elif e.text not in lines:
            out.stale.append((e, "no line of its file reads so"))
        else:
            out.stale.append((e, "every line that reads so is covered: remove the entry"))
    return out


def read_sources(root: Path, names: Iterable[str]) -> dict[str, list[str]]:
    return {n: (root / n).read_text(encoding="utf-8").splitlines() for n in names}
