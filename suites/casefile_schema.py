"""The case file format as a JSON Schema (draft 2020-12), made from the code that reads the files,
so that an editor checks a JSON or YAML case file as it is typed (docs/case-files.md).

    .venv/bin/python -m suites.casefile_schema --write    # docs/case-file.schema.json, again

Every field's type is suites/casefile.py's (FIELD_KINDS, FIELD_TYPES for the words); every list
of names is the one the farm checks against (dtypes, families and SoCs, layouts, distributions,
specials, standards, rejection reasons). tests/suites/test_casefile_schema.py fails when the
committed file is not what this makes. What a schema cannot say (an id that must match its
fields, a layout that must fit its shape, the contract's verdict) the farm still checks: the
schema accepts no file the farm refuses for a field's type or name, and the farm has the last
word.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from farm.util import schema_file
from golden import contract, layouts
from golden.inputs import ALL_DY_DISTS, ALL_SPECIALS, SPECIAL_PLACEMENTS, VALUE_FORMS, Y_DISTS
from golden.standards import LEVELS
from golden.tolerance import TOLERANCE_KEYS

from . import casefile, limits
from .case import APIS, CASE_STANDARDS, DTYPE_SHORT, EXPLORE_TAG, LAYERS, TENSORS

PATH = Path(__file__).resolve().parents[1] / "docs" / "case-file.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

_NULL = {"type": "null"}
# suites/limits.py's bounds of one case: its lists' lengths, int64 values, its text.
_INT64 = {"type": "integer", "minimum": -limits.MAX_INT64 - 1, "maximum": limits.MAX_INT64}
_INTS = {"type": "array", "items": _INT64, "maxItems": limits.MAX_RANK}


def _any_case(words: list[str]) -> str:
    """A pattern matching any of the words in any case, with spaces around (the farm reads
    them stripped and lower-cased; JSON Schema's patterns have no flag for case)."""

    def letters(word: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else _escaped(c) for c in word)

    return r"^\s*(?:" + "|".join(letters(w) for w in words) + r")\s*$"


def _escaped(c: str) -> str:
    return "\\" + c if c in r"\^$.|?*+()[]{}-" else c


def _kind(kind: str) -> dict[str, Any]:
    """The schema of one kind of field (casefile.FIELD_KINDS)."""
    number = {"type": "number"}
    kinds: dict[str, dict[str, Any]] = {
        "text": {"type": "string"},
        "optional_text": {"type": ["string", "null"]},
        "int_list": _INTS,
        "optional_int_list": {"anyOf": [_INTS, _NULL]},
        "axes": {"anyOf": [_INT64, _INTS]},
        "range": {
            "anyOf": [
                {"type": "array", "prefixItems": [number, number], "minItems": 2, "maxItems": 2},
                _NULL,
            ]
        },
        "fill": {"anyOf": [number, {"enum": ["inf", "-inf", "nan"]}, _NULL]},
        "tolerance": {"anyOf": [_tolerance(), _NULL]},
        "layout": {"anyOf": [{"enum": list(layouts.NAMES)}, _view()]},
        "int": {"type": "integer"},
    }
    return kinds[kind]


def _tolerance() -> dict[str, Any]:
    share = {"type": "number", "minimum": 0}
    return {
        "type": "object",
        "properties": {
            key: dict(share, maximum=1) if key == "max_fail_fraction" else share
            for key in TOLERANCE_KEYS
        },
        "additionalProperties": False,
    }


def _view() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "strides": _INTS,
            "storage": dict(_INT64, minimum=0),
            "offset": dict(_INT64, minimum=0),
        },
        "required": ["strides", "storage"],
        "additionalProperties": False,
    }


def _names(names: list[str], optional: bool) -> dict[str, Any]:
    """A text field that takes one of `names` (or null when `optional`)."""
    return {"enum": [*names, None] if optional else list(names)}


def _expectation() -> dict[str, Any]:
    reasons = [f"reject:{r}" for r in contract.REJECTION_REASONS]
    words = {
        "type": "string",
        "pattern": _any_case([*casefile.ACCEPT_WORDS, *casefile.REJECT_WORDS, *reasons]),
    }
    derived = {  # what `farm cases -o` writes: the contract's verdict, read as the source's
        "type": "object",
        "properties": {"kind": {"enum": ["precision", "reject", "registration", "infer"]}},
        "required": ["kind"],
    }
    per_family = {
        "type": "object",
        "not": {"required": ["kind"]},
        "propertyNames": {"pattern": _family_pattern()},
        "additionalProperties": {"anyOf": [words, derived]},
    }
    return {"anyOf": [words, derived, per_family]}


def _family_pattern() -> str:
    return _any_case(sorted(casefile.FAMILY_NAMES))


def _family() -> dict[str, Any]:
    one = {"type": "string", "pattern": _family_pattern()}
    return {
        "anyOf": [
            {"const": "all"},
            one,
            {"type": "array", "items": one, "minItems": 1},
            _NULL,
        ]
    }


def _choices() -> dict[str, list[str]]:
    """The fields whose text is one of a list, and the list (the farm's own)."""
    dtypes = list(DTYPE_SHORT)
    return {
        "dtype": dtypes,
        "y_dtype": dtypes,
        "out_dtype": dtypes,
        "api": list(APIS),
        "y_dist": [*Y_DISTS, *VALUE_FORMS],
        "dy_dist": [*ALL_DY_DISTS, *VALUE_FORMS],
        "special": list(ALL_SPECIALS),
        "special_at": list(SPECIAL_PLACEMENTS),
        "standard": list(CASE_STANDARDS),
        "level": list(LEVELS),
        "missing": list(TENSORS),
        "layer": list(LAYERS),
    }


def _case() -> dict[str, Any]:
    properties: dict[str, Any] = {}
    choices = _choices()
    for name, words in casefile.FIELD_TYPES.items():
        kind = casefile.FIELD_KINDS.get(name)
        if name in choices and kind is not None:
            schema = _names(choices[name], optional=kind == "optional_text")
        elif kind is not None:
            schema = _kind(kind)
        else:
            schema = _unchecked(name)
        properties[name] = {"description": words, **schema}
    properties["shape"]["items"] = dict(_INT64, minimum=0)
    for name in casefile.FREE_TEXT:
        properties[name]["maxLength"] = limits.MAX_TEXT_CHARS
    properties["explore"]["pattern"] = "^(?:" + EXPLORE_TAG.pattern + ")?$"  # "": not explored
    return {
        "type": "object",
        "description": "One case, or one per family the entry names (docs/case-files.md).",
        "properties": properties,
        "required": list(casefile.REQUIRED),
        "additionalProperties": False,
    }


def _unchecked(name: str) -> dict[str, Any]:
    """The fields casefile checks where it reads them, not by kind."""
    return {
        "family": _family,
        "expect": _expectation,
        "id": lambda: {"type": "string"},
        "seed": lambda: {"type": "integer"},
        "schedule": lambda: {"type": "string"},
        "layout": lambda: {"enum": list(layouts.NAMES)},
    }[name]()


def schema() -> dict[str, Any]:
    """The JSON Schema of a case file: a list of cases, or the versioned document."""
    cases = {"type": "array", "items": {"$ref": "#/$defs/case"}, "minItems": 1}
    top = {
        "format": {"const": casefile.FORMAT},
        "version": {"type": "integer", "minimum": 1, "maximum": casefile.VERSION},
        "source": {"type": "string"},
        "description": {"type": "string"},
        "$schema": {"type": "string", "description": "for editors; the farm reads past it"},
        "cases": cases,
    }
    return {
        "$schema": DIALECT,
        "title": "LogSoftmaxGrad test farm case file",
        "description": (
            "Cases for `farm run --cases FILE` (JSON or YAML; docs/case-files.md). Made by "
            "`python -m suites.casefile_schema --write`: do not edit by hand."
        ),
        "anyOf": [cases, {"$ref": "#/$defs/document"}],
        "$defs": {
            "document": {
                "type": "object",
                # A key casefile reads that is not described above fails here (KeyError).
                "properties": {key: top[key] for key in casefile.TOP_LEVEL},
                "required": ["format", "version", "cases"],
                "additionalProperties": False,
            },
            "case": _case(),
        },
    }


def text() -> str:
    """The schema as the committed file holds it."""
    return schema_file.schema_text(schema())


def main(argv: list[str] | None = None) -> int:
    return schema_file.main("python -m suites.casefile_schema", __doc__, PATH, schema, argv)


if __name__ == "__main__":
    sys.exit(main())
