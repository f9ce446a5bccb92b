"""A case file's entries checked and made cases: every bad field of every entry one line (type,
value, family, the same case twice), and where a source expects other than the contract a note on
the case (DEPARTS).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from farm.util.visible import CONTROL
from golden import contract, soc
from suites import limits
from suites.case import DEPARTS, TENSORS, Case, MalformedCase
from suites.casefile_fields import (
    ACCEPT_WORDS,
    CASE_FIELDS,
    FIELD_TYPES,
    FREE_TEXT,
    MAX_MESSAGES,
    OPTIONAL_STRINGS,
    REJECT_WORDS,
    REQUIRED,
    STRING_FIELDS,
    TWICE,
    CaseFileError,
    LinesOf,
    family_named,
    shown,
    unknown_field,
)


def entries_to_cases(entries: list, source: str, lines: LinesOf | None = None) -> list[Case]:
    """Cases from parsed entries, or CaseFileError with one line per bad field, naming the
    entry's line where `lines` gives it (a list, or a function that finds them: called only
    when there is a problem to report)."""
    cases: list[Case] = []
    problems: list[tuple[int, str]] = []  # (entry index, problem)
    made_by: dict[str, tuple[int, Case]] = {}  # case id -> the entry that made it, the case
    stem = Path(source).name
    for index, entry in enumerate(entries):
        made, wrong = entry_cases(entry, origin=f"{stem}#{index}")
        problems += [(index, w) for w in wrong]
        if wrong:
            continue
        named: set[int] = set()  # the earlier entries this one conflicts with, named once
        for case in made:
            if case.id not in made_by:
                made_by[case.id] = (index, case)
                cases.append(case)
                continue
            # The same case again is kept once; one that says something else of it (a note,
            # an expectation) would lose that: named, as is a case file's every problem.
            earlier, first = made_by[case.id]
            differ = _differing(first, case)
            if differ and earlier not in named:
                named.add(earlier)
                problems.append((index, _again(case, earlier, differ)))
    if problems:
        at = lines() if callable(lines) else lines or [None] * len(entries)
        shown = [
            f"{source}: case {index}" + (f" (line {at[index]})" if at[index] else "") + f": {w}"
            for index, w in problems[:MAX_MESSAGES]
        ]
        if len(problems) > MAX_MESSAGES:
            shown.append(f"... and {len(problems) - MAX_MESSAGES} more problems")
        raise CaseFileError("\n".join(shown))
    if not cases:
        raise CaseFileError(f"{source}: no cases in it (a case file needs at least one case)")
    return cases


def entry_cases(entry: Any, origin: str = "") -> tuple[list[Case], list[str]]:
    """The cases of one entry (one per family) and its problems, one per bad field."""
    if not isinstance(entry, dict):
        return [], [f"expected an object of case fields, got {type(entry).__name__}"]
    problems = keys_twice(entry)
    if not entry.keys() <= FIELD_TYPES.keys():  # the common case in one test
        problems += [
            _extra(value) if key == "\0extra" else unknown_field(key)
            for key, value in entry.items()
            if key not in FIELD_TYPES
        ]
    typed, badly_typed = _type_problems(entry)
    problems += typed
    families, wrong = _families(entry.get("family"))
    problems += wrong
    if not families or any(key not in entry or key in badly_typed for key in REQUIRED):
        return [], problems
    # The fields of the right type still make a case, so that its other problems (a layout
    # that does not fit its shape, say) are named now too, not after the first fix.
    given = {
        k: v
        for k, v in entry.items()
        if k in CASE_FIELDS and k != "family" and k not in badly_typed
    }
    if isinstance(given.get("axes"), int):
        given["axes"] = [given["axes"]]
    given.setdefault("api", "dim" if len(given.get("axes") or ()) == 1 else "axes")
    if entry.get("name") and "name" not in badly_typed:
        origin = f"{origin.split('#')[0]}:{entry['name']}"
    # Where the case comes from: what the entry says (an import names the source's case), else
    # this file and entry.
    given["origin"] = given.get("origin") or origin
    if "layout" in entry and not any(f"{t}_layout" in entry for t in TENSORS):
        if entry["layout"] == "strided":
            given.update(dy_layout="strided", y_layout="strided")
    cases: list[Case] = []
    for family in families:
        try:
            case = Case(family=family, **given)
        except MalformedCase as exc:
            problems += [
                p
                for p in exc.problems
                if p not in problems and not any(key in p for key in badly_typed)
            ]
            continue
        except TypeError as exc:  # a field of a type no check above foresaw
            problems.append(str(exc))
            continue
        if problems:
            continue
        if "id" in entry and entry["id"] != case.id:
            problems.append(_wrong_id(entry["id"], case, len(families)))
            continue
        stated = _stated_expectation(entry.get("expect"), family)
        if isinstance(stated, str) and stated.startswith("\0"):
            problems.append(stated[1:])
            continue
        note = _departure(case, stated)
        if note:
            case = _with_note(case, note)
        cases.append(case)
    return cases, problems


def _wrong_id(given: Any, case: Case, families: int) -> str:
    """An entry's id that is not the id of the case its fields make (for every family the entry
    names: an id is one case's)."""
    which = f" on {case.family}" if families > 1 else ""
    fix = "fix the fields or drop the id"
    if families > 1:
        fix = "an id names one case: give the entry its family, or drop the id"
    return f"id {shown(given)} does not match its fields, which make {case.id}{which}; {fix}"


def keys_twice(value: Any, where: str = "") -> list[str]:
    """A problem per object of ``value`` (an entry, or an object inside one of its fields) that
    gave a key twice; the parser's marker of it taken out."""
    problems = []
    if type(value) is dict:
        keys = value.pop(TWICE, ())
        if keys:
            named = ", ".join(shown(k) for k in keys)
            what = f"field {where}: key" if where else "field"
            problems.append(f"{what} {named} given twice (only the last would count; keep one)")
        for key, inner in value.items():
            if type(inner) is dict or (type(inner) is list and _holds_objects(inner)):
                problems += keys_twice(inner, f"{where}.{key}" if where else repr(key))
    elif type(value) is list:
        for inner in value:
            problems += keys_twice(inner, where)
    return problems


def _holds_objects(items: list) -> bool:
    return any(type(item) is dict or type(item) is list for item in items)


def _differing(first: Case, again: Case) -> list[str]:
    """What ``again`` says of the case that ``first`` does not (an empty note says nothing)."""
    a: dict[str, Any] = dict(first.to_dict())
    b: dict[str, Any] = dict(again.to_dict())
    return [k for k in b if k != "origin" and b[k] not in (None, "", [], {}) and a.get(k) != b[k]]


def _again(case: Case, earlier: int, differ: list[str]) -> str:
    return (
        f"the same case as case {earlier} ({case.id}) with another {', '.join(differ)}: one "
        "entry of it would be lost; merge them, or change the field that was meant to differ"
    )


def _extra(cells: list[str]) -> str:
    return f"{len(cells)} cell(s) beyond the header: {cells} (add a column name or remove them)"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int_list(v: Any) -> bool:
    return isinstance(v, list) and all(_is_int(d) for d in v)


# What a field's value may be, by the kind of field (suites/casefile_schema.py makes the JSON
# Schema of the same kinds); a field not named here is checked where it is read.
_KIND_OK: dict[str, Callable[[Any], bool]] = {
    "text": lambda v: isinstance(v, str),
    "optional_text": lambda v: v is None or isinstance(v, str),
    "int_list": _int_list,
    "optional_int_list": lambda v: v is None or _int_list(v),
    "axes": lambda v: _is_int(v) or _int_list(v),
    "range": lambda v: (
        v is None or (isinstance(v, list) and len(v) == 2 and all(map(_is_number, v)))
    ),
    "fill": lambda v: v is None or _is_number(v) or v in ("inf", "-inf", "nan"),
    "tolerance": lambda v: v is None or isinstance(v, dict),
    "layout": lambda v: isinstance(v, (str, dict)),
    "int": _is_int,
}
FIELD_KINDS: dict[str, str] = {
    **{key: "text" for key in STRING_FIELDS},
    **{key: "optional_text" for key in OPTIONAL_STRINGS},
    "shape": "int_list",
    "y_shape": "optional_int_list",
    "out_shape": "optional_int_list",
    "axes": "axes",
    "y_range": "range",
    "dy_range": "range",
    "y_fill": "fill",
    "dy_fill": "fill",
    "tolerance": "tolerance",
    **{f"{t}_layout": "layout" for t in TENSORS},
    "seed": "int",
}
_FIELD_OK = {key: _KIND_OK[kind] for key, kind in FIELD_KINDS.items()}


def _type_problems(entry: dict) -> tuple[list[str], set[str]]:
    """One line per field of the wrong type or missing, and the names of the bad fields."""
    problems = []
    bad: set[str] = set()
    for key, value in entry.items():
        ok = _FIELD_OK.get(key)
        if ok is not None and not ok(value):
            bad.add(key)
            problems.append(f"field {key!r}: {shown(value)} is not {FIELD_TYPES[key]}")
    for key in FREE_TEXT:  # shown on terminals (the other text fields take named values only)
        value = entry.get(key)
        if isinstance(value, str) and len(value) > limits.MAX_TEXT_CHARS:
            bad.add(key)
            problems.append(
                f"field {key!r}: {len(value):,} characters, over the bound of "
                f"{limits.MAX_TEXT_CHARS:,} (it is shown in reports and sent with the case); "
                "shorten it"
            )
        elif isinstance(value, str) and (control := CONTROL.search(value)):
            bad.add(key)
            problems.append(
                f"field {key!r}: {shown(value)} holds the control character "
                f"{control.group()!r}, which a terminal would act on; remove it"
            )
    for key in REQUIRED:
        if key not in entry:
            problems.append(f"field {key!r} is missing (every case needs dtype, shape, axes)")
    return problems, bad


def _families(value: Any) -> tuple[list[str], list[str]]:
    if value is None or value == "all":
        return list(soc.FAMILIES), []
    names = value if isinstance(value, list) else [value]
    out, problems = [], []
    for name in names:
        family = family_named(name)
        if family is None:
            problems.append(
                f"field 'family': {shown(name)} is not a family or SoC (use one of "
                f"{', '.join(soc.FAMILIES)}, their short ids, a SoC such as Ascend910B3, or 'all')"
            )
        elif family not in out:
            out.append(family)
    if not names:
        problems.append("field 'family': an empty list (name at least one family, or 'all')")
    return out, problems


def _stated_expectation(value: Any, family: str) -> str | None:
    """The source's expectation for `family`: "accept", "reject" or "reject:<reason>"; None
    when it says nothing; "\\0<problem>" when it cannot be read."""
    if value is None:
        return None
    if isinstance(value, dict) and "kind" in value:  # the derived form `farm cases` writes
        if value["kind"] == "precision":
            return "accept"
        if value["kind"] in ("registration", "infer"):  # a layer case that makes no call
            return None
        return f"reject:{value.get('reason')}" if value.get("reason") else "reject"
    if isinstance(value, dict):
        for key, each in value.items():
            named = family_named(key)
            if named is None:
                return f"\0field 'expect': {shown(key)} is not a family or SoC"
            if named == family:
                return _stated_expectation(each, family)
        return None
    if not isinstance(value, str):
        return f"\0field 'expect': {shown(value)} is not {FIELD_TYPES['expect']}"
    text = value.strip().lower()
    if text in ACCEPT_WORDS:
        return "accept"
    if text in REJECT_WORDS:
        return "reject"
    if text.startswith("reject:"):
        reason = text.split(":", 1)[1]
        if reason not in contract.REJECTION_REASONS:
            return (
                f"\0field 'expect': reason {reason!r} is unknown (use one of "
                f"{', '.join(contract.REJECTION_REASONS)})"
            )
        return text
    return f"\0field 'expect': {shown(value)} is not {FIELD_TYPES['expect']}"


def _departure(case: Case, stated: str | None) -> str:
    """A note when the source expects other than the contract; empty when they agree."""
    if stated is None:
        return ""
    contract_says = "accept" if case.accepted else f"reject:{case.expected.reason}"
    if stated == contract_says or (stated == "reject" and not case.accepted):
        return ""
    said = {"accept": "acceptance"}.get(stated, stated.replace("reject:", "rejection: "))
    if stated == "reject":
        said = "a rejection"
    by_contract = "accepts it" if case.accepted else f"rejects it ({case.expected.reason})"
    return (
        f"the source expects {said} on {case.family}; the contract (SPEC section 2) "
        f"{by_contract}: {DEPARTS}"
    )


def _with_note(case: Case, note: str) -> Case:
    return replace(case, note=f"{case.note}; {note}" if case.note else note)
