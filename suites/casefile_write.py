"""Cases written as a case file (JSON, YAML or CSV by the suffix), atomically; what `farm cases
--json` writes (document). Each format reads back the same (suites/casefile.py load).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import math
import re
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from suites.case import Case
from suites.casefile_fields import FORMAT, VERSION, CaseFileError, csv_escaped, file_kind
from suites.casefile_parse import YAML_1_2_CORE


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

        text = yaml.dump(document(cases, source), Dumper=yaml_dumper(), sort_keys=False, width=100)
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
    return csv_escaped(str(value))


@functools.cache
def yaml_dumper() -> type:
    """PyYAML's safe dumper, quoting text that YAML 1.1 or 1.2 would read as anything else (a
    note "1e5", "yes" or "010"): the file reads back the same in the farm and in PyYAML."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    for tag, pattern, first in YAML_1_2_CORE:
        Dumper.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first))
    return Dumper
