"""A case file's text into its entries (JSON, YAML or CSV; suites/casefile.py reads it), held to
the input limits (suites/limits.py) before anything big is built, and the line of each entry for
the messages that name one.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from suites import limits
from suites.casefile_fields import (
    FIELD_TYPES,
    FORMAT,
    TOP_LEVEL,
    TWICE,
    VERSION,
    CaseFileError,
    LinesOf,
    csv_unescaped,
    file_kind,
    shown,
    unknown_field,
)


def read_entries(path: Path) -> tuple[list, LinesOf]:
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


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        data[TWICE] = repeated([key for key, _ in pairs])
    return data


def repeated(keys: list) -> list:
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
                data[TWICE] = repeated(own)
            return data

        def construct_yaml_int(self, node: Any) -> int:
            text = self.construct_scalar(node)
            return int(text, 0) if _PREFIXED_INT.match(text) else int(text, 10)

    # YAML 1.2's core schema, as JSON and the editors checking a case file against its schema
    # read it, not PyYAML's YAML 1.1: there 1e-3 is text (a float needs a dot and a signed
    # exponent), 010 is 8, yes is True, 12:30 is 750 and 2024-01-01 a date.
    Loader.yaml_implicit_resolvers = {}
    for tag, pattern, first in YAML_1_2_CORE:
        Loader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first))
    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


YAML_1_2_CORE = (  # the plain scalars that are not text: (tag, pattern, first characters)
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
        f"{path}: line {header_line}: column {name!r}: {unknown_field(name)}"
        for name in header
        if name not in FIELD_TYPES
    ] + [
        f"{path}: line {header_line}: column {name!r} is there twice (keep one)"
        for name in repeated(header)
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
    cell = csv_unescaped(cell)
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
        problems.append(f"{path}: format {shown(data.get('format'))} (use {FORMAT!r})")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        problems.append(f"{path}: version {shown(version)} (use {VERSION})")
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
