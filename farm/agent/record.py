"""Result records: what every case yields exactly once, whoever makes it."""

from __future__ import annotations

CASE_FIELDS = (
    "family",
    "dtype",
    "shape",
    "axes",
    "api",
    "schedule",
    "y_dist",
    "dy_dist",
    "special",
    "layout",
    "seed",
    "expect",
    "origin",
)


def with_case(record: dict, case, data: dict | None = None) -> dict:
    """Every record carries the case's own description, so a record stands alone. `data` is
    case.to_dict() when the caller already has it."""
    data = data or case.to_dict()
    record.update(case_id=case.id, **{k: data[k] for k in CASE_FIELDS})
    return record


def broken_record(case, message: str, **fields) -> dict:
    """The record of a case the pool could not run (an infrastructure outcome)."""
    record = {
        "outcome": "broken",
        "category": "infrastructure",
        "message": message,
        "status": None,
        "reason": None,
        "op_message": "",
        "metrics": None,
        "standards": {},
        "verdict": None,
        "tiling": None,
        "host": None,
        "soc": None,
        "slot": None,
        "attempts": 0,
        "timings": {},
    }
    record.update(fields)
    return with_case(record, case)
