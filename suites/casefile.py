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
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import functools
import io
import json
import math
import re
import reprlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from farm.util import heap
from farm.util.errors import UsageError
from farm.util.visible import CONTROL
from golden import contract, soc

from . import limits
from .case import DEPARTS, TENSORS, Case, MalformedCase

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
_CASE_FIELDS = {f.name for f in fields(Case)}
_ENTRY_ONLY = {"name", "expect", "id", "seed", "schedule", "layout"}
_STRING_FIELDS = (
    "dtype",
    "api",
    "y_dist",
    "dy_dist",
    "special",
    "special_at",
    "standard",
    "explore",
    "origin",
    "note",
    "name",
)
_OPTIONAL_STRINGS = ("level", "y_dtype", "out_dtype", "missing")
FREE_TEXT = ("note", "name", "origin")  # a case file's own words, not one of named values


LinesOf = list[int | None] | Callable[[], list[int | None]]
"""The line of each entry of a parsed file, or how to find them when a message needs them."""


class CaseFileError(UsageError):
    """A case file that cannot be run: every bad field, one per line."""


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 100
_REPR.maxlist = _REPR.maxdict = 10
_REPR.maxlevel = 4


def _shown(value: Any) -> str:
    """A value as a message quotes it: repr, cut short. Quoting never walks more than a few
    dozen items, however big the value (an alias can make a small file's value huge)."""
    return _REPR.repr(value)


# -- reading ----------------------------------------------------------------------------


def load(path: str | Path) -> list[Case]:
    """The cases of one file, in file order; CaseFileError lists every problem."""
    with heap.paused():  # parsing and making the cases leave no garbage
        entries, lines = _entries(Path(path))
        return entries_to_cases(entries, str(path), lines)


def _entries(path: Path) -> tuple[list, LinesOf]:
    """A file's entries, parsed and counted (the input limits), no case made of them yet."""
    kind = file_kind(path)
    try:
        # Measured before it is read: the parse holds it whole.
        text = limits.read_text(path, keep_line_ends=kind == "csv")
    except FileNotFoundError:
        raise CaseFileError(f"{path}: no such case file (check the path)") from None
    except UnicodeDecodeError as exc:
        # PowerShell 5's > writes UTF-16, whose byte order mark fails the first byte.
        utf16 = exc.start == 0 and exc.object[:2] in (b"\xff\xfe", b"\xfe\xff")
        what = "UTF-16 text" if utf16 else "not UTF-8 text"
        raise CaseFileError(f"{path}: {what}; save it as UTF-8") from None
    except OSError as exc:
        raise CaseFileError(f"{path}: cannot read it ({exc})") from None
    entries, lines = _PARSERS[kind](path, text)
    limits.CASES.check(len(entries), path)  # before any case is made
    return entries, lines


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
                entries, lines = _entries(path)
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


def file_kind(path: Path) -> str:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise CaseFileError(
            f"{path}: unknown case file format {path.suffix or '(no suffix)'!r} (use .json, "
            ".yaml, .yml or .csv; to convert an outside suite's file, `farm cases import`)"
        )
    return kind


def _parse_json(path: Path, text: str) -> tuple[list, LinesOf]:
    limits.check_json_depth(text, path)  # json recurses per level
    try:
        data = JSON_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    except limits.IntegerTooLong as exc:
        raise CaseFileError(f"{path}: not JSON the farm can read ({exc})") from None
    entries = _document_entries(path, data)
    return entries, lambda: _json_entry_lines(text, len(entries))


def _json_entry_lines(text: str, n: int) -> list[int | None]:
    """The line of each of the n entries: the text read again, only when a message needs them
    (json.loads knows no lines; reading with them costs a tenth of a load)."""
    _, starts = _json_with_starts(text)
    if len(starts) != n:
        return [None] * n
    return _lines_at(text, starts)


# A key given twice in one object or mapping: JSON and YAML parsers keep the last silently, so
# a copied line, or a second `cases:`, would drop what came first without a word. The parsers
# here mark such an object (TWICE) for keys_twice to name; the importers' JSON is read alike.
TWICE = "\0twice"


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        data[TWICE] = _repeated([key for key, _ in pairs])
    return data


def _repeated(keys: list) -> list:
    counts = Counter(keys)
    return sorted((k for k, n in counts.items() if n > 1), key=str)


JSON_DECODER = json.JSONDecoder(parse_int=limits.json_integer, object_pairs_hook=_object)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _json_with_starts(text: str) -> tuple[Any, list[int]]:
    """json.loads(text), and where each entry of its case list starts (the list itself, or
    the document's "cases"): json's own scanner reads every value, this reads only the
    brackets and commas around the entries."""
    at = _JSON_SPACE.match(text).end()  # type: ignore[union-attr]
    starts: list[int] = []
    data: Any
    if text.startswith("[", at):
        data, end = _json_list(text, at, starts)
    elif text.startswith("{", at):
        data, end = _json_document(text, at, starts)
    else:
        data, end = JSON_DECODER.raw_decode(text, at)
    end = _JSON_SPACE.match(text, end).end()  # type: ignore[union-attr]
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return data, starts


def _json_next(text: str, at: int) -> int:
    return _JSON_SPACE.match(text, at).end()  # type: ignore[union-attr]


def _json_list(text: str, at: int, starts: list[int]) -> tuple[list, int]:
    """The list whose "[" is at `at`, the index after it; `starts` gets each item's index."""
    items: list = []
    at = _json_next(text, at + 1)
    if text.startswith("]", at):
        return items, at + 1
    while True:
        starts.append(at)
        item, at = JSON_DECODER.raw_decode(text, at)
        items.append(item)
        at = _json_next(text, at)
        if text.startswith("]", at):
            return items, at + 1
        if not text.startswith(",", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        at = _json_next(text, at + 1)


def _json_document(text: str, at: int, starts: list[int]) -> tuple[dict, int]:
    """The object whose "{" is at `at`; the starts of the items of its "cases" list."""
    data: dict[str, Any] = {}
    at = _json_next(text, at + 1)
    if text.startswith("}", at):
        return data, at + 1
    while True:
        if not text.startswith('"', at):
            raise json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, at
            )
        key, at = JSON_DECODER.raw_decode(text, at)
        at = _json_next(text, at)
        if not text.startswith(":", at):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
        at = _json_next(text, at + 1)
        if key == "cases" and text.startswith("[", at):
            starts.clear()
            data[key], at = _json_list(text, at, starts)
        else:
            data[key], at = JSON_DECODER.raw_decode(text, at)
        at = _json_next(text, at)
        if text.startswith("}", at):
            return data, at + 1
        if not text.startswith(",", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        at = _json_next(text, at + 1)


def _lines_at(text: str, starts: list[int]) -> list[int | None]:
    """The line of each index (ascending), counting newlines once."""
    lines: list[int | None] = []
    line, last = 1, 0
    for at in starts:
        line += text.count("\n", last, at)
        last = at
        lines.append(line)
    return lines


def _parse_yaml(path: Path, text: str) -> tuple[list, LinesOf]:
    import yaml

    loader_class = _yaml_loader()
    try:
        _check_yaml_events(path, loader_class(text))
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if problem == "exceeded maximum nesting depth":  # libyaml's own stop, at 1,000
            limit = limits.NESTING_DEPTH.value()
            limits.NESTING_DEPTH.check(limit + 1, path, at_least=True)
        raise CaseFileError(f"{path}: {where}not YAML ({problem})") from None
    except ValueError as exc:  # an integer past the 4,300 digits Python converts
        problem = str(exc).split(";")[0]
        raise CaseFileError(f"{path}: not YAML the farm can read ({problem})") from None
    entries = _document_entries(path, data)
    # The lines now, from the nodes (a few ms): the nodes, with two marks each, are several
    # times the data; they are let go before the cases are made.
    return entries, _node_lines(node, len(entries))


@functools.cache
def _yaml_loader() -> type:
    """libyaml's safe loader (where PyYAML was built with it) with two memos: a case file says
    the same few hundred scalars ("float32", "contiguous", null) a hundred thousand times, and
    PyYAML resolves each one's tag by regular expressions and constructs it afresh. Both
    depend on the scalar's text alone (no path resolvers; a plain scalar's tag on its text, a
    constructed str, int, float, bool or None is immutable), so each is done once per text."""
    import yaml
    from yaml.nodes import ScalarNode

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    immutable = (str, int, float, bool, type(None))

    class Loader(base):  # type: ignore[misc, valid-type]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.tags: dict[str, str] = {}
            self.scalars: dict[tuple[str, str], Any] = {}

        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            if kind is not ScalarNode or not implicit[0]:
                return super().resolve(kind, value, implicit)
            tag = self.tags.get(value)
            if tag is None:
                tag = self.tags[value] = super().resolve(kind, value, implicit)
            return tag

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            if node.__class__ is not ScalarNode:
                return super().construct_object(node, deep)
            key = (node.tag, node.value)
            try:
                return self.scalars[key]
            except KeyError:
                value = super().construct_object(node, deep)
            if type(value) in immutable:
                self.scalars[key] = value
            return value

        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            own = [k.value for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"]
            data = super().construct_mapping(node, deep)
            if len(set(own)) != len(own):  # a merged key given again is an override, not this
                data[TWICE] = _repeated(own)
            return data

        def construct_yaml_int(self, node: Any) -> int:
            text = self.construct_scalar(node)
            return int(text, 0) if _PREFIXED_INT.match(text) else int(text, 10)

    # YAML 1.2's core schema, as JSON and the editors checking a case file against its schema
    # read it, not PyYAML's YAML 1.1: there 1e-3 is text (a float needs a dot and a signed
    # exponent), 010 is 8, yes is True, 12:30 is 750 and 2024-01-01 a date.
    Loader.yaml_implicit_resolvers = {}
    for tag, pattern, first in _YAML_1_2_CORE:
        Loader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first))
    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


@functools.cache
def _yaml_dumper() -> type:
    """PyYAML's safe dumper, quoting text that YAML 1.1 or 1.2 would read as anything else (a
    note "1e5", "yes" or "010"): the file reads back the same in the farm and in PyYAML."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    for tag, pattern, first in _YAML_1_2_CORE:
        Dumper.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first))
    return Dumper


_YAML_1_2_CORE = (  # the plain scalars that are not text: (tag, pattern, first characters)
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("merge", r"^<<$", "<"),  # YAML 1.1's merge key, which a case file may use to share fields
)
_PREFIXED_INT = re.compile(r"^[-+]?0[oOxXbB]")


def _check_yaml_events(path: Path, loader: Any) -> None:
    """LimitExceeded when the document nests deeper than NESTING_DEPTH or has more than
    YAML_NODES nodes, an alias counted as the nodes it stands for; from the parser's events,
    before anything is composed (the composer recurses per level, and nothing here expands
    an alias: its size was counted when its anchor closed). One test of the event's class per
    event, the commonest first: this pass is run on every YAML file."""
    from yaml.events import (
        AliasEvent,
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        SequenceStartEvent,
        StreamEndEvent,
    )

    max_depth, max_nodes = limits.NESTING_DEPTH.value(), limits.YAML_NODES.value()
    sizes: dict[str, int] = {}  # anchor -> the nodes its node stands for
    open_: list[list[Any]] = []  # per open collection: [its nodes so far, its anchor]
    total = 0
    try:
        while True:
            event = loader.get_event()
            kind = event.__class__
            if kind is ScalarEvent:
                size = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                open_.append([1, event.anchor])
                total += 1
                if len(open_) > max_depth:
                    limits.NESTING_DEPTH.check(len(open_), path, at_least=True)
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                size, anchor = open_.pop()
                if anchor is not None:
                    sizes[anchor] = size
                if open_:
                    open_[-1][0] += size
                continue  # counted in total when it opened and as its items came
            elif kind is AliasEvent:
                size = _alias_size(path, event, sizes, open_)
            elif kind is StreamEndEvent or event is None:
                return
            else:
                continue
            total += size
            if open_:
                open_[-1][0] += size
            if total > max_nodes:
                limits.YAML_NODES.check(total, path, at_least=True)
    finally:
        loader.dispose()


def _alias_size(path: Path, event: Any, sizes: dict[str, int], open_: list[list[Any]]) -> int:
    anchor = event.anchor or ""
    if anchor not in sizes and any(a == anchor for _, a in open_):
        mark = event.start_mark
        raise CaseFileError(
            f"{path}: line {mark.line + 1 if mark else '?'}: alias *{event.anchor} inside "
            f"its own anchor &{event.anchor} (a structure that contains itself)"
        )
    return sizes.get(anchor, 1)  # an unknown alias: the composer names it


def _node_lines(node, n: int) -> list[int | None]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "cases":
                node = value
                break
    if not isinstance(node, yaml.SequenceNode) or len(node.value) != n:
        return [None] * n
    return [item.start_mark.line + 1 for item in node.value]


def _parse_csv(path: Path, text: str) -> tuple[list, list[int | None]]:
    """One case per row; a header row names the fields. Cells: empty is absent; lists and
    objects as JSON ([2, 3], {"rtol": 0.001}); a shape also as 2x3 or scalar; axes also as
    one integer."""
    reader = csv.reader(io.StringIO(text), delimiter=_csv_delimiter(text))
    rows: list[tuple[int, list[str]]] = []
    most = limits.CASES.value() + 1  # and the header
    try:
        for row in reader:
            if any(cell.strip() for cell in row) and not _comment(row):
                rows.append((reader.line_num, row))
                if len(rows) > most:  # before the rest is read
                    limits.CASES.check(len(rows) - 1, path, at_least=True)
    except csv.Error as exc:
        raise CaseFileError(f"{path}: line {reader.line_num}: not CSV ({exc})") from None
    if not rows:
        raise CaseFileError(f"{path}: no header row (the first row names the fields)")
    header_line, header = rows[0]
    header = [h.strip() for h in header]
    problems = [
        f"{path}: line {header_line}: column {name!r}: {_unknown(name)}"
        for name in header
        if name not in FIELD_TYPES
    ] + [
        f"{path}: line {header_line}: column {name!r} is there twice (keep one)"
        for name in _repeated(header)
        if name in FIELD_TYPES
    ]
    if problems:
        raise CaseFileError("\n".join(problems))
    entries: list = []
    lines: list[int | None] = []
    for line, row in rows[1:]:
        entry: dict[str, Any] = {}
        for name, cell in zip(header, row, strict=False):
            if cell.strip():
                entry[name] = _csv_cell(name, cell.strip(), f"{path}: line {line}")
        if len(row) > len(header):
            entry["\0extra"] = row[len(header) :]
        entries.append(entry)
        lines.append(line)
    return entries, lines


def _csv_delimiter(text: str) -> str:
    """The header row's separator: a comma, or where it has none, the semicolon or tab that a
    spreadsheet of a locale with decimal commas writes. Field names hold none of them."""
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            if "," not in line:
                for other in ";\t":
                    if other in line:
                        return other
            break
    return ","


def _comment(row: list[str]) -> bool:
    return bool(row) and row[0].lstrip().startswith("#")


def _csv_cell(name: str, cell: str, where: str = "") -> Any:
    cell = _csv_unescaped(cell)
    if cell[0] in "[{":
        if cell.count("[") + cell.count("{") > limits.NESTING_DEPTH.value():  # else too shallow
            limits.check_json_depth(cell, f"{where}: column {name!r}")
        try:
            return json.loads(cell)
        except json.JSONDecodeError:
            return cell
    if name in ("shape", "y_shape", "out_shape"):
        if cell == "scalar":
            return []
        parts = cell.split("x")
        if all(p.strip().lstrip("-").isdigit() for p in parts):
            return [int(p) for p in parts]
    if name in ("axes", "seed"):
        try:
            return int(cell)
        except ValueError:
            return cell
    if name in ("y_fill", "dy_fill"):
        try:
            return float(cell) if cell not in ("inf", "-inf", "nan") else cell
        except ValueError:
            return cell
    return cell


_PARSERS = {"json": _parse_json, "yaml": _parse_yaml, "csv": _parse_csv}


def _document_entries(path: Path, data: Any) -> list:
    """The entries of a parsed document: a list (a bare `farm cases --json` list), or the
    versioned form {"format", "version", "cases"}."""
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        raise CaseFileError(
            f"{path}: expected a list of cases or {{'format': '{FORMAT}', 'version': {VERSION}, "
            f"'cases': [...]}}, got {type(data).__name__}"
        )
    problems = []
    if data.get("format") != FORMAT:
        problems.append(f"{path}: format {_shown(data.get('format'))} (use {FORMAT!r})")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        problems.append(f"{path}: version {_shown(version)} (use {VERSION})")
    elif version > VERSION:
        problems.append(
            f"{path}: version {version} was written by a newer farm (this one reads up to "
            f"{VERSION}): upgrade the farm"
        )
    for key in data.get(TWICE, ()):
        problems.append(f"{path}: top-level key {key!r} is there twice (keep one; merge lists)")
    unknown = sorted(set(data) - set(TOP_LEVEL) - {TWICE})
    for key in unknown:
        problems.append(f"{path}: top-level key {key!r} is unknown (use format, version, cases)")
    cases = data.get("cases")
    if not isinstance(cases, list):
        problems.append(f"{path}: 'cases' must be a list of cases")
    if problems:
        raise CaseFileError("\n".join(problems))
    return list(cases or ())


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
            _extra(value) if key == "\0extra" else _unknown(key)
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
        if k in _CASE_FIELDS and k != "family" and k not in badly_typed
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
    return f"id {_shown(given)} does not match its fields, which make {case.id}{which}; {fix}"


def _unknown(key: Any) -> str:
    # A YAML key may be a number or null: no field's name, and no spelling to suggest.
    near = difflib.get_close_matches(key, list(FIELD_TYPES), n=1) if isinstance(key, str) else []
    hint = f"did you mean {near[0]!r}?" if near else "see docs/case-files.md for the fields"
    return f"unknown field {_shown(key)} ({hint})"


def keys_twice(value: Any, where: str = "") -> list[str]:
    """A problem per object of ``value`` (an entry, or an object inside one of its fields) that
    gave a key twice; the parser's marker of it taken out."""
    problems = []
    if type(value) is dict:
        keys = value.pop(TWICE, ())
        if keys:
            named = ", ".join(_shown(k) for k in keys)
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


REQUIRED = ("dtype", "shape", "axes")


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
    **{key: "text" for key in _STRING_FIELDS},
    **{key: "optional_text" for key in _OPTIONAL_STRINGS},
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
            problems.append(f"field {key!r}: {_shown(value)} is not {FIELD_TYPES[key]}")
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
                f"field {key!r}: {_shown(value)} holds the control character "
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
                f"field 'family': {_shown(name)} is not a family or SoC (use one of "
                f"{', '.join(soc.FAMILIES)}, their short ids, a SoC such as Ascend910B3, or 'all')"
            )
        elif family not in out:
            out.append(family)
    if not names:
        problems.append("field 'family': an empty list (name at least one family, or 'all')")
    return out, problems


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


# -- expectations -----------------------------------------------------------------------


# The words a source may use for its expectation (in any case); a rejection may also name its
# reason, "reject:<reason>" (golden.contract.REJECTION_REASONS).
ACCEPT_WORDS = ("accept", "pass", "precision", "success")
REJECT_WORDS = ("reject", "fail", "error")


def _stated_expectation(value: Any, family: str) -> str | None:
    """The source's expectation for `family`: "accept", "reject" or "reject:<reason>"; None
    when it says nothing; "\\0<problem>" when it cannot be read."""
    if value is None:
        return None
    if isinstance(value, dict) and "kind" in value:  # the derived form `farm cases` writes
        if value["kind"] == "precision":
            return "accept"
        return f"reject:{value.get('reason')}" if value.get("reason") else "reject"
    if isinstance(value, dict):
        for key, each in value.items():
            named = family_named(key)
            if named is None:
                return f"\0field 'expect': {_shown(key)} is not a family or SoC"
            if named == family:
                return _stated_expectation(each, family)
        return None
    if not isinstance(value, str):
        return f"\0field 'expect': {_shown(value)} is not {FIELD_TYPES['expect']}"
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
    return f"\0field 'expect': {_shown(value)} is not {FIELD_TYPES['expect']}"


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


# -- writing ----------------------------------------------------------------------------


def document(cases: Iterable[Case], source: str = "") -> dict:
    """The versioned document of a list of cases (what `farm cases --json` writes)."""
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION}
    if source:
        doc["source"] = source
    doc["cases"] = [c.to_dict() for c in cases]
    return doc


CSV_COLUMNS = [
    f.name
    for f in fields(Case)
    if f.name not in ("origin", "note")  # written after the identity
] + ["origin", "note", "id"]


def dump(cases: Iterable[Case], path: str | Path, source: str = "") -> Path:
    """Write cases in the format the suffix names; atomically (a reader never sees half)."""
    path = Path(path)
    kind = file_kind(path)
    cases = list(cases)
    if kind == "json":
        text = json.dumps(document(cases, source), indent=1, allow_nan=False) + "\n"
    elif kind == "yaml":
        import yaml

        text = yaml.dump(document(cases, source), Dumper=_yaml_dumper(), sort_keys=False, width=100)
    else:
        text = _csv_text(cases)
    if path.is_dir():
        raise CaseFileError(f"{path}: a directory; name the case file to write in it")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # nothing half-written is left beside it
            tmp.unlink(missing_ok=True)
        raise CaseFileError(
            f"{path}: cannot write the case file ({exc.strerror or exc}); choose another path"
        ) from None
    return path


def _csv_text(cases: list[Case]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    # csv quotes a cell holding the line end ("\n") but not a lone carriage return, which a
    # reader takes for one: a row with one is written with every cell quoted.
    quoting = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_COLUMNS)
    for case in cases:
        data = case.to_dict()
        data["note"] = case.note
        row = [_csv_value(data.get(col)) for col in CSV_COLUMNS]
        (quoting if any("\r" in cell for cell in row) else writer).writerow(row)
    return out.getvalue()


def _csv_value(value: Any) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, allow_nan=False)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return _csv_escaped(str(value))


# A cell a spreadsheet would read as a formula (OWASP, "CSV Injection"): one starting with
# = + - @, a tab or a carriage return. Written after a single quote, which spreadsheets show
# as text and this reader drops again; a cell that itself starts with the quote gets another,
# so every text reads back as written. Numbers (-1, -inf) are not formulas and stay bare.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_ESCAPE = "'"


def _csv_escaped(text: str) -> str:
    if not text.startswith((*_FORMULA_STARTS, _ESCAPE)) or _is_numeral(text):
        return text
    return _ESCAPE + text


def _csv_unescaped(cell: str) -> str:
    if cell.startswith(_ESCAPE) and cell[1:].startswith((*_FORMULA_STARTS, _ESCAPE)):
        return cell[1:]
    return cell


def _is_numeral(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
