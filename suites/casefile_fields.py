"""What a case file may say (docs/case-files.md): its document's format and keys, the fields of
an entry and the words for their types, the names of a family, the words of an expectation; the
error that names every bad field (CaseFileError); a CSV cell's escape of what a spreadsheet would
read as a formula (written by casefile_write.py, read back by casefile_parse.py).
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from farm.util.errors import UsageError
from golden import soc
from suites.case import TENSORS, Case

FORMAT = "logsoftmaxgrad-cases"
VERSION = 1
# The document's keys; "$schema" is an editor's (docs/case-file.schema.json), read past.
TOP_LEVEL = ("format", "version", "cases", "source", "description", "$schema")
SUFFIXES = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".csv": "csv"}
MAX_MESSAGES = 40  # lines of one error; the rest are counted

# What each field of an entry may be (checked before a Case is made, so that a wrong type is
# named as such rather than as a Python error).
_INT_LIST = "a list of integers"
FIELD_TYPES: dict[str, str] = {
    "family": "a family, a list of families, or 'all'",
    "dtype": "a dtype name",
    "shape": _INT_LIST,
    "axes": "an integer or a list of integers",
    "api": "'dim' or 'axes'",
    "y_dist": "a distribution name",
    "dy_dist": "a distribution name",
    "special": "a special-value name",
    "special_at": "a placement name",
    "standard": "a standard name",
    "level": "'L0', 'L1' or 'L2'",
    "y_dtype": "a dtype name",
    "out_dtype": "a dtype name",
    "y_shape": _INT_LIST,
    "out_shape": _INT_LIST,
    "missing": "'dy', 'y' or 'out'",
    "y_range": "[lo, hi]",
    "dy_range": "[lo, hi]",
    "y_fill": "a number, or 'inf', '-inf', 'nan'",
    "dy_fill": "a number, or 'inf', '-inf', 'nan'",
    "tolerance": "{'rtol': .., 'atol': .., 'max_fail_fraction': ..}",
    "explore": "'<salt>.<n>'",
    "layer": "'', 'registration', 'tiling' or 'infer'",
    "origin": "text",
    "note": "text",
    "name": "text",
    "expect": "'accept', 'reject', 'reject:<reason>', or {family: one of those}",
    "id": "the case id",
    "seed": "an integer",
    "schedule": "a schedule name",
    "layout": "'contiguous' or 'strided'",
    **{f"{t}_layout": "'contiguous', 'strided' or {strides, storage, offset}" for t in TENSORS},
}
CASE_FIELDS = {f.name for f in fields(Case)}
_ENTRY_ONLY = {"name", "expect", "id", "seed", "schedule", "layout"}
STRING_FIELDS = (
    "dtype",
    "api",
    "y_dist",
    "dy_dist",
    "special",
    "special_at",
    "standard",
    "explore",
    "layer",
    "origin",
    "note",
    "name",
)
OPTIONAL_STRINGS = ("level", "y_dtype", "out_dtype", "missing")
FREE_TEXT = ("note", "name", "origin")  # a case file's own words, not one of named values


LinesOf = list[int | None] | Callable[[], list[int | None]]
"""The line of each entry of a parsed file, or how to find them when a message needs them."""


class CaseFileError(UsageError):
    """A case file that cannot be run: every bad field, one per line."""


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 100
_REPR.maxlist = _REPR.maxdict = 10
_REPR.maxlevel = 4


def shown(value: Any) -> str:
    """A value as a message quotes it: repr, cut short. Quoting never walks more than a few
    dozen items, however big the value (an alias can make a small file's value huge)."""
    return _REPR.repr(value)


def file_kind(path: Path) -> str:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise CaseFileError(
            f"{path}: unknown case file format {path.suffix or '(no suffix)'!r} (use .json, "
            ".yaml, .yml or .csv; to convert an outside suite's file, `farm cases import`)"
        )
    return kind


# A key given twice in one object or mapping: JSON and YAML parsers keep the last silently, so
# a copied line, or a second `cases:`, would drop what came first without a word. The parsers
# here mark such an object (TWICE) for keys_twice to name; the importers' JSON is read alike.
TWICE = "\0twice"


REQUIRED = ("dtype", "shape", "axes")


def unknown_field(key: Any) -> str:
    # A YAML key may be a number or null: no field's name, and no spelling to suggest.
    near = difflib.get_close_matches(key, list(FIELD_TYPES), n=1) if isinstance(key, str) else []
    hint = f"did you mean {near[0]!r}?" if near else "see docs/case-files.md for the fields"
    return f"unknown field {shown(key)} ({hint})"


FAMILY_NAMES: dict[str, str] = {
    **{profile.lower(): p.family for profile, p in soc.PROFILES.items()},
    **{f"ascend{short}": family for family, short in soc.FAMILY_SHORT.items()},
    **{short: family for family, short in soc.FAMILY_SHORT.items()},
    **{family: family for family in soc.FAMILIES},
}
"""Every name of a family a case file may use, in lower case (read in any case): the family, its
short id, "ascend" and the short id, or one of its SoCs."""


def family_named(name: Any) -> str | None:
    """The family a name means: a family, its short id, or a SoC of it (any case)."""
    if not isinstance(name, str):
        return None
    return FAMILY_NAMES.get(name.strip().lower())


# reason, "reject:<reason>" (golden.contract.REJECTION_REASONS).
ACCEPT_WORDS = ("accept", "pass", "precision", "success")
REJECT_WORDS = ("reject", "fail", "error")


# A cell a spreadsheet would read as a formula (OWASP, "CSV Injection"): one starting with
# = + - @, a tab or a carriage return. Written after a single quote, which spreadsheets show
# as text and this reader drops again; a cell that itself starts with the quote gets another,
# so every text reads back as written. Numbers (-1, -inf) are not formulas and stay bare.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"


def csv_escaped(text: str) -> str:
    if not text.startswith((*FORMULA_STARTS, ESCAPE)) or is_numeral(text):
        return text
    return ESCAPE + text


def csv_unescaped(cell: str) -> str:
    if cell.startswith(ESCAPE) and cell[1:].startswith((*FORMULA_STARTS, ESCAPE)):
        return cell[1:]
    return cell


def is_numeral(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
