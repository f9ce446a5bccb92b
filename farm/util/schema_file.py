"""A JSON Schema the farm writes from its code into docs/ (the case file's, `farm hosts
--json`'s): its committed text, and the command that prints it or, with --write, writes it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as the committed file holds it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(
    prog: str, doc: str | None, path: Path, schema: Callable[[], dict[str, Any]], argv=None
) -> int:
    """`python -m PROG [--write]`: print the schema, or write it to ``path``."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--write", action="store_true", help=f"write {path.name} in docs/")
    args = parser.parse_args(argv)
    if args.write:
        path.write_text(schema_text(schema()), encoding="utf-8")
        print(f"wrote {path}")
    else:
        sys.stdout.write(schema_text(schema()))
    return 0
