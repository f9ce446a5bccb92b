"""The JSON Schema (draft 2020-12) of `farm hosts --json` (farm/pool/health/table.py
pool_health): a list of hosts, each typed (ints, bools, null where the check read nothing),
its chips nested under it.

    .venv/bin/python -m farm.pool.health.hosts_schema --write   # docs/hosts.schema.json, again

tests/pool/test_hosts_schema.py fails when the committed file is not what this makes, or when
what `farm hosts --json` prints does not validate against it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from farm.pool.health.states import BAD, GOOD, UNKNOWN
from farm.pool.health.table import SET_ASIDE
from farm.util import schema_file

PATH = Path(__file__).resolve().parents[3] / "docs" / "hosts.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

_TEXT = {"type": "string"}
_TEXT_OR_NULL = {"type": ["string", "null"]}
_COUNT = {"type": "integer", "minimum": 0}
_COUNT_OR_NULL = {"type": ["integer", "null"], "minimum": 0}
_STATES = [GOOD, BAD, UNKNOWN]


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _described(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**schema, "description": description}


def chip() -> dict[str, Any]:
    return _object(
        {
            "device": _described(_COUNT, "the ACL device id"),
            "listed": _described(
                {"type": ["boolean", "null"]},
                "npu-smi listed the chip at the check; null: the check read nothing",
            ),
            "name": _TEXT_OR_NULL,
            "health": _described(_TEXT_OR_NULL, "npu-smi's health word (OK, Warning, Alarm...)"),
            "memory_used_mb": _COUNT_OR_NULL,
            "memory_total_mb": _COUNT_OR_NULL,
            "aicore_percent": _COUNT_OR_NULL,
            "state": {"enum": [*_STATES, SET_ASIDE]},
            "set_aside": _described({"type": "boolean"}, "set aside alone, its host good"),
            "reason": _TEXT_OR_NULL,
            "since": _described(_TEXT_OR_NULL, "set aside since (ISO 8601, UTC)"),
        }
    )


def host() -> dict[str, Any]:
    return _object(
        {
            "host": _TEXT,
            "transport": _TEXT,
            "address": _TEXT,
            "soc": _TEXT,
            "family": _TEXT,
            "devices": _described(_COUNT, "the inventory's device count"),
            "tags": {"type": "array", "items": _TEXT},
            "state": _described(
                {"enum": _STATES},
                "this check's outcome; without --check: bad when quarantined, else unknown",
            ),
            "quarantined": {"type": "boolean"},
            "reason": _TEXT_OR_NULL,
            "since": _described(_TEXT_OR_NULL, "quarantined since (ISO 8601, UTC)"),
            "checked": _described(
                _TEXT_OR_NULL,
                "when the values below were read (ISO 8601, UTC); null: the check that gave the "
                "state read nothing, and they are null",
            ),
            "arch": _TEXT_OR_NULL,
            "cann": _TEXT_OR_NULL,
            "driver": _TEXT_OR_NULL,
            "judging": _described(_TEXT_OR_NULL, "which path judges there (golden/fused.py)"),
            "set_aside": _described(_COUNT, "how many of its chips are set aside"),
            "machine": _described(
                {"type": ["object", "null"]},
                "all the host said it is (farm/agent/machine.py Machine)",
            ),
            "chips": {"type": "array", "items": {"$ref": "#/$defs/chip"}},
        }
    )


def schema() -> dict[str, Any]:
    return {
        "$schema": DIALECT,
        "title": "LogSoftmaxGrad test farm: farm hosts --json",
        "description": "The pool and its health as `farm hosts --json` prints it (docs/hosts.md). "
        "Made by `python -m farm.pool.health.hosts_schema --write`: do not edit by hand.",
        "type": "array",
        "items": {"$ref": "#/$defs/host"},
        "$defs": {"host": host(), "chip": chip()},
    }


def text() -> str:
    """The schema as the committed file holds it."""
    return schema_file.schema_text(schema())


def main(argv: list[str] | None = None) -> int:
    return schema_file.main("python -m farm.pool.health.hosts_schema", __doc__, PATH, schema, argv)


if __name__ == "__main__":
    sys.exit(main())
