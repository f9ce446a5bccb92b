"""Case files: cases from outside the tiers, in JSON, YAML or CSV (docs/case-files.md).

    cases = casefile.load("shapes.yaml")       # list[Case], or CaseFileError naming every bad field
    casefile.dump(cases, "cases.json")          # the format `farm cases --json` writes

A file is read whole and validated whole before anything runs: every bad field of every entry is
one line (file, entry index and line, field, the fix), and a file with any bad field gives no
cases at all.

Beyond the fields of suites.case.Case, an entry may carry:

- family: one family, a list of them, or "all" (absent: every family), each given as a family
  ("ascend910b"), its short id ("910b") or a SoC ("Ascend910B3"); one case per family;
- expect: what the source expects, "accept" | "reject" | "reject:<reason>", or per family
  {"ascend310b": "reject", ...}. The contract (SPEC section 2) decides the verdict; where the
  source departs from it, the case carries a note that the report shows;
- name: the source's name of the case (kept in the case's origin);
- origin: where the case came from (default "<file>#<index>", or "<file>:<name>");
- id, seed, schedule, layout: derived; an id that does not match the fields is refused.

One module a job; this one reads files whole (load, load_many) and re-exports the others' names:
    suites/casefile_fields.py    what a case file may say: its format, fields, family names; the
                                 one-line error (CaseFileError)
    suites/casefile_parse.py     JSON, YAML and CSV text into entries, within the input limits
    suites/casefile_entries.py   entries checked and made cases (every bad field one line); what
                                 a source expects against the contract
    suites/casefile_write.py     cases written as JSON, YAML or CSV (dump, document)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from farm.util import heap
from farm.util.errors import UsageError  # casefile.UsageError: CaseFileError's base
from suites import limits
from suites.case import Case
from suites.casefile_entries import FIELD_KINDS, entries_to_cases, entry_cases, keys_twice
from suites.casefile_fields import (
    ACCEPT_WORDS,
    FAMILY_NAMES,
    FIELD_TYPES,
    FORMAT,
    FREE_TEXT,
    MAX_MESSAGES,
    REJECT_WORDS,
    REQUIRED,
    SUFFIXES,
    TOP_LEVEL,
    TWICE,
    VERSION,
    CaseFileError,
    LinesOf,
    family_named,
    file_kind,
)
from suites.casefile_parse import JSON_DECODER, read_entries
from suites.casefile_write import CSV_COLUMNS, document, dump


def load(path: str | Path) -> list[Case]:
    """The cases of one file, in file order; CaseFileError lists every problem."""
    with heap.paused():  # parsing and making the cases leave no garbage
        entries, lines = read_entries(Path(path))
        return entries_to_cases(entries, str(path), lines)


def load_many(paths: Iterable[str | Path]) -> list[Case]:
    """The cases of several files; the same case twice (by id) is kept once. Every file is
    checked before any case is returned."""
    problems: list[str] = []
    seen: dict[str, Case] = {}
    files = [Path(p) for p in paths]
    counted = 0
    for path in files:
        try:
            with heap.paused():
                entries, lines = read_entries(path)
                # The files of one run together are held to one file's limit, counted before
                # any case of this file is made.
                counted += len(entries)
                if len(files) > 1:
                    limits.CASES.check(counted, f"the {len(files)} case files together")
                cases = entries_to_cases(entries, str(path), lines)
        except CaseFileError as exc:
            problems += str(exc).splitlines()
            continue
        for case in cases:
            seen.setdefault(case.id, case)
    if problems:
        raise CaseFileError("\n".join(problems))
    return list(seen.values())


__all__ = [
    "ACCEPT_WORDS",
    "CSV_COLUMNS",
    "CaseFileError",
    "FAMILY_NAMES",
    "FIELD_KINDS",
    "FIELD_TYPES",
    "FORMAT",
    "FREE_TEXT",
    "JSON_DECODER",
    "LinesOf",
    "MAX_MESSAGES",
    "REJECT_WORDS",
    "REQUIRED",
    "SUFFIXES",
    "TOP_LEVEL",
    "TWICE",
    "UsageError",
    "VERSION",
    "document",
    "dump",
    "entries_to_cases",
    "entry_cases",
    "family_named",
    "file_kind",
    "keys_twice",
    "load",
    "load_many",
]
