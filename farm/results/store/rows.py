"""Records and runs as the store's rows, both ways: pure functions, no database."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from farm.agent.record import JSON_FORM, METRIC_COLUMNS, OUTCOMES, TIMING_COLUMNS

# The readings of a run's metadata, made with it (farm/run/metadata.py); named here too for
# the store's modules and the commands that read runs from it.
from farm.run.metadata import inventory_list as inventory_list
from farm.run.metadata import planted_bug as planted_bug

# A green run, which an implicit baseline must be (the SQL of run_dict's "green").
GREEN_SQL = "status='finished' AND exit_code=0 AND n_total>0 AND n_failed=0 AND n_broken=0"
RUN_STATUSES = ("running", "finished", "interrupted", "aborted")


def _jsonable(obj):
    """json.dumps default: numpy scalars and arrays, tuples, sets, paths."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps(obj) -> str:
    return json.dumps(obj, default=_jsonable, **JSON_FORM)


def num(x) -> float | None:
    """A finite float for a metric column, else None (NaN and inf are stored as NULL)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def has_measurement(metrics: Mapping) -> bool:
    """Whether the error metrics measured anything: golden/metrics says how many elements it
    compared (n_compared); 0 compared elements give MERE = MARE = 0.0, which is no result."""
    n = metrics.get("n_compared") if isinstance(metrics, Mapping) else None
    return n is None or (num(n) or 0) > 0


def refresh_counts(db, run_id: str) -> None:
    row = db.execute(
        "SELECT COUNT(*),"
        " SUM(CASE WHEN outcome='passed' THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN outcome='failed' THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN outcome='broken' THEN 1 ELSE 0 END)"
        " FROM results WHERE run_id=?",
        (run_id,),
    ).fetchone()
    db.execute(
        "UPDATE runs SET n_total=?, n_passed=?, n_failed=?, n_broken=? WHERE run_id=?",
        (row[0] or 0, row[1] or 0, row[2] or 0, row[3] or 0, run_id),
    )


RESULT_COLUMNS = (
    "run_id",
    "case_id",
    "family",
    "dtype",
    "schedule",
    "api",
    "layout",
    "expect_kind",
    "outcome",
    "category",
    "status",
    *METRIC_COLUMNS,
    "host",
    "soc",
    "slot",
    "attempts",
    *TIMING_COLUMNS,
    "record_json",
)
_KEY = ("run_id", "case_id")
# A case written again replaces its row (an upsert: the same statement on both databases).
INSERT_RESULT = (
    f"INSERT INTO results ({', '.join(RESULT_COLUMNS)})"
    f" VALUES ({', '.join('?' for _ in RESULT_COLUMNS)})"
    f" ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET "
    + ", ".join(f"{c}=excluded.{c}" for c in RESULT_COLUMNS if c not in _KEY)
)


def result_row(run_id: str, rec: Mapping, text: str | None = None) -> tuple:
    """The results row of a record. `text`: the record's JSON as it was read (a line of the
    run's records files, written in JSON_FORM), kept as it is; else the record is encoded."""
    if not rec.get("case_id"):
        raise ValueError("a result record needs a case_id")
    if rec.get("outcome") not in OUTCOMES:
        raise ValueError(
            f"{rec.get('case_id')}: outcome must be passed|failed|broken, "
            f"not {rec.get('outcome')!r}"
        )
    m = rec.get("metrics") or {}
    if not has_measurement(m):
        m = {}
    t = rec.get("timings") or {}
    attempts = rec.get("attempts")
    status = rec.get("status")
    return (
        run_id,
        str(rec["case_id"]),
        rec.get("family"),
        rec.get("dtype"),
        rec.get("schedule"),
        rec.get("api"),
        rec.get("layout"),
        (rec.get("expect") or {}).get("kind"),
        rec["outcome"],
        rec.get("category"),
        int(status) if isinstance(status, (int, float)) and not isinstance(status, bool) else None,
        *(num(m.get(c)) for c in METRIC_COLUMNS),
        rec.get("host"),
        rec.get("soc"),
        rec.get("slot"),
        int(attempts) if attempts is not None else None,
        *(num(t.get(c)) for c in TIMING_COLUMNS),
        dumps(rec) if text is None else text,
    )


def run_dict(row: Any) -> dict:
    """A runs row as the dict every command reads: the run's metadata, its columns over it."""
    meta = json.loads(row["meta_json"])
    d = dict(meta)
    d.update(
        run_id=row["run_id"],
        tier=row["tier"],
        package_version=row["package_version"],
        package_sha256=row["package_sha256"],
        target=row["target"],
        git_commit=row["git_commit"],
        backend=row["backend"],
        farm_version=row["farm_version"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        exit_code=row["exit_code"],
        inventory=json.loads(row["inventory_json"]),
        counts={
            "total": row["n_total"],
            "passed": row["n_passed"],
            "failed": row["n_failed"],
            "broken": row["n_broken"],
        },
    )
    d["status"] = row["status"]
    d["subset"] = bool(row["subset"])
    d["owner"] = row["owner"]
    d["run_group"] = row["run_group"]
    d["heartbeat_at"] = row["heartbeat_at"]
    d["finished"] = row["status"] == "finished"
    d["green"] = bool(
        d["finished"]
        and row["exit_code"] == 0
        and row["n_total"] > 0
        and row["n_failed"] == 0
        and row["n_broken"] == 0
    )
    return d
