"""Importers: an operator team's existing test cases, in a public format, as farm case entries.

    result = FORMATS["msopst"](text, "cases.json")     # ImportResult: entries, skipped, notes
    made = result.convert("cases.json")                # farm Cases via suites.casefile

Each format has one parser, a pure function `parse(text, source) -> ImportResult` (text in,
entries out; `source` only names the file in messages):

- ``msopst``   the op system-test JSON case file (suites/importers/msopst.py);
- ``atk``      ATK (Ascend test kit) JSON case descriptions (atk.py);
- ``ttk``      TTK (ops-test-kit) CSV, kernel and ACLNN modes (ttk.py);
- ``aclnn-ut`` aclnn operator unit tests in C++ (gtest, OP_API_UT) (aclnn_ut.py).

Every source case is accounted for: it gives one or more entries (a note in an entry says what
the farm could not express and how the entry differs), or it is listed in `skipped` with the
reason. A file that cannot be read at all raises `Unreadable` (one line: what is wrong and the
fix). The field lists each parser relies on, and what it cannot express, are in
docs/importers.md.
"""

from __future__ import annotations

from . import aclnn_ut, atk, msopst, ttk
from .common import Conversion, Imported, ImportResult, NotExpressible, Parser, Unreadable

FORMATS: dict[str, Parser] = {
    "ttk": ttk.parse,
    "atk": atk.parse,
    "msopst": msopst.parse,
    "aclnn-ut": aclnn_ut.parse,
}

__all__ = [
    "FORMATS",
    "Conversion",
    "ImportResult",
    "Imported",
    "NotExpressible",
    "Parser",
    "Unreadable",
]
