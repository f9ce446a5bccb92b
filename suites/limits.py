"""How big an input may be: case files (suites/casefile.py) and the importers' inputs
(suites/importers/), each limit checked before the work it bounds.

    limits.read_bounded(path)                     # the file, measured before it is read
    limits.check_json_depth(text, source)         # before json parses (it recurses)
    limits.CASES.check(len(entries), source)      # before a case is made of an entry

A file over a limit is refused with one line (LimitExceeded, a UsageError: exit 2) naming the
file, what was measured and the limit, and, where a file may legitimately be that big, the
environment variable that raises it. The values are sized on the farm's own largest output,
`farm cases --tier full -o FILE` (31,831 cases: about 28 MB as JSON, 22 MB as YAML), with room
to spare; attacks (a billion-laughs YAML, a 100 MB file, nesting a million deep) are orders of
magnitude past them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from farm.util.errors import UsageError


class LimitExceeded(UsageError):
    """An input over one of the limits below: one line, the file, the measure, the limit."""


@dataclass(frozen=True)
class Limit:
    """One limit: what it measures (in words), its default, and the variable that raises it
    (None: no legitimate input comes near it, so it cannot be raised)."""

    what: str
    default: int
    env: str | None = None

    def value(self) -> int:
        if self.env is None or not os.environ.get(self.env, "").strip():
            return self.default
        text = os.environ[self.env].strip()
        if not text.isdigit() or int(text) < 1:
            raise UsageError(f"{self.env}={text!r}: use a whole number above 0")
        return int(text)

    def check(self, measured: int, source: str | Path, at_least: bool = False) -> None:
        """LimitExceeded when `measured` is over the limit; `at_least`: counting stopped at
        the first unit past it (the real measure is larger)."""
        limit = self.value()
        if measured <= limit:
            return
        fix = (
            f"; if it is meant to be this big, set {self.env} (e.g. {self.env}={limit * 4})"
            if self.env
            else "; no case file or suite input needs more: check how it was made"
        )
        if at_least:
            raise LimitExceeded(f"{source}: more than the limit of {limit:,} {self.what}{fix}")
        raise LimitExceeded(f"{source}: {measured:,} {self.what}, over the limit of {limit:,}{fix}")

    def check_file(self, path: Path, named: str | None = None) -> None:
        """The size of a file, from the file system: nothing of it is read. ``named``: how
        the message names it (default: its path)."""
        try:
            size = path.stat().st_size
        except OSError:
            return  # the read that follows names the problem (missing, a directory, ...)
        self.check(size, named or path)


FILE_BYTES = Limit("bytes", 64 * 2**20, "FARM_MAX_INPUT_BYTES")
"""64 MiB: twice the farm's own full tier as a JSON case file (28 MB). A case file is read and
parsed whole into memory (some ten times its size), so the size is the first thing checked; a
100 MB file is refused before a byte of it is read."""


def read_bounded(path: Path, named: str | None = None) -> bytes:
    """A file's bytes, within FILE_BYTES: a regular file is measured before a byte is read;
    anything whose size says nothing (a named pipe, /dev/zero behind a .json name) is read no
    further than one byte past the limit. OSError as ``open`` raises it."""
    FILE_BYTES.check_file(path, named)
    limit = FILE_BYTES.value()
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        FILE_BYTES.check(len(data), named or path, at_least=True)
    return data


def read_text(path: Path, keep_line_ends: bool = False) -> str:
    """A UTF-8 file's text, within FILE_BYTES (read_bounded): a byte order mark (a spreadsheet's
    "CSV UTF-8", some Windows editors) left out, its line ends made "\\n" as a text file is read
    unless ``keep_line_ends`` (CSV: a quoted cell may hold a "\\r"). UnicodeDecodeError and
    OSError as they come."""
    text = read_bounded(path).decode("utf-8-sig")
    return text if keep_line_ends else text.replace("\r\n", "\n").replace("\r", "\n")


CASES = Limit("cases", 100_000, "FARM_MAX_INPUT_CASES")
"""100,000 entries (source cases, for an importer) in one file: three times the full tier
(31,831). Reading, making and checking a case costs some 0.4 ms and 7 KB (the full tier's JSON
file: 13 s, 230 MB), so this bounds a file at under a minute and under 1 GB; counted before any
case is made. The case files of one run together are held to it too (casefile.load_many)."""

NESTING_DEPTH = Limit("levels of nesting", 64)
"""64 levels of lists, objects or (in C++) brackets. A case file nests at most 5 deep
(document, cases, case, layout, strides), an msopst or ATK file about 6, a UT's C++ brackets
seldom past 10. Python's JSON and YAML parsers recurse per level and fail past about 1,000 with a
RecursionError; this is checked before them, by a scan that does not recurse."""

YAML_NODES = Limit("YAML nodes (aliases expanded)", 5_000_000, "FARM_MAX_YAML_NODES")
"""5 million nodes, counting an alias as the nodes it stands for: a case is some 45 nodes, so
this is CASES' worth. An alias costs nothing to parse, but whatever walks the data (a message
quoting a value, `farm cases --json`) walks the expansion: nine levels of ten aliases ("billion
laughs") make 10^9 nodes from 1 KB. Counted while parsing, before the document is built."""


# A string as json's scanner reads one; an unterminated one runs to the end (json stops there
# too), and possessive repeats never backtrack, so the scan is linear whatever the text.
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.S)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]++")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # an opening bracket +1, a closing -1
_CHUNK = 1 << 20  # brackets summed at a time: memory stays a few MB whatever the text


def json_depth(text: str) -> int:
    """How deep the text's lists and objects nest, strings skipped as json reads them; in one
    pass at C speed (regular expressions, then a running sum in numpy), without recursion.
    Brackets that never close (JSON that is not JSON) count as the levels a parser would open
    before it fails."""
    import numpy as np  # loaded already by every user of the limits (suites.case, golden)

    skeleton = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text)).encode("ascii")
    steps = np.frombuffer(skeleton.translate(_STEPS), dtype=np.int8)
    deepest = level = 0
    for at in range(0, len(steps), _CHUNK):
        levels = np.cumsum(steps[at : at + _CHUNK], dtype=np.int64) + level
        deepest = max(deepest, int(levels.max()))
        level = int(levels[-1])
    return deepest


class IntegerTooLong(ValueError):
    """A JSON integer past the digits Python converts (sys.get_int_max_str_digits)."""


INTEGER_DIGITS = 40  # an extent, axis, seed or offset is 20 digits at most


def json_integer(text: str) -> int:
    """json's parse_int: Python refuses an integer of more than 4,300 digits with a ValueError
    that says to raise its limit; no field takes one of a hundredth of that, so say so plainly."""
    if len(text) > INTEGER_DIGITS:
        raise IntegerTooLong(
            f"an integer of {len(text):,} digits; no field takes one past {INTEGER_DIGITS}"
        )
    return int(text)


def check_json_depth(text: str, source: str | Path) -> None:
    """LimitExceeded when the JSON text nests deeper than NESTING_DEPTH, before it is parsed."""
    NESTING_DEPTH.check(json_depth(text), source)


# -- one case's dimensions ----------------------------------------------------------------------
# Checked where every case is made (suites/case.py Case: case files, importers, tiers, explore,
# shrink alike), before any host is touched: a case past one of them is one line naming the field
# and the bound, never a host's fault. None can be raised: no legitimate case comes near them.

MAX_RANK = 32
"""Dimensions of a tensor (shape, y_shape, out_shape), and entries of its axes. The contract allows
rank 0 to 8 (golden.contract.MAX_RANK), and a rank past 8 is a rejection case the farm must still
send (rank_too_large: rank 9 or 10, as outside suites write them). The agent makes a rejection
case's inputs as numpy arrays, and numpy makes arrays of at most 32 dimensions before numpy 2 (64
from 2.0; the farm supports numpy >= 1.24): a rank past 32 would fail on the host, as the host's
error. CANN's own shape descriptor (gert::Shape) holds 25. Four times the contract's rank, and a
case of it stays a few KB on the wire (MAX_REQUEST_BYTES)."""

MAX_INT64 = 2**63 - 1
"""Extents, axes and a view's strides, offset and storage go to the operator's C ABI and to numpy
as int64: a value past it would fail in the agent's conversion, as the host's error."""

MAX_ELEMENTS = 2**48
"""Elements of one tensor, counted with its zero extents left out (an empty tensor's other
extents still make an array's size). Far above what a host holds (2^48 fp16 elements are 512 TiB;
memory_budget refuses a non-empty tensor long before, suites/footprint.py), far below where numpy
refuses to make an array, even an empty one: extents multiplying past 2^63 bytes (2^48 complex128
elements, in the doubled storage of a strided layout, are 2^53 bytes)."""

MAX_ID_CHARS = 1024
"""Characters of a case id (built from its fields). The farm's own ids are at most 124 (the full
tier). An id is a test's node id, which pytest puts into the environment the agents inherit
(PYTEST_CURRENT_TEST: Linux refuses one string over 128 KiB, "Argument list too long"), and a
key of the store's primary-key index (PostgreSQL refuses a b-tree entry over 2,704 bytes)."""

MAX_TEXT_CHARS = 4096
"""Characters of a case file's free text (note, name, origin; suites/casefile.py): a case file's or
an outside suite's words, shown in reports and sent to the agent with the case. Four times a
terminal screen's lines of text; an outside suite's case name is a line."""

MAX_CASE_TEXT_CHARS = 2 * MAX_TEXT_CHARS
"""Characters of a case's note and origin (suites/case.py), which the farm lengthens beyond what
the file said: the notes where the source departs from the contract (a few hundred characters),
and an import's farm case made from several source cases, which keeps every source's origin and
note up to MAX_TEXT_CHARS (suites/importers/common.py merged)."""

MAX_REQUEST_BYTES = 256 * 1024
"""What the bounds above keep a case's run-case request line under, with room: a quarter of the
agent protocol's 1 MiB line cap (farm/agent/protocol.py MAX_LINE_BYTES). The largest case within
them (every field at its bound, text of 4-byte characters that JSON escapes to 12) is some 200 KB;
tests/suites/test_case_bounds.py builds it and checks."""
