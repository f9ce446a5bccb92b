"""What `farm shrink` found (a failing case's smallest failing form, per package) and what
`farm bisect` did (each search, and every commit it built and judged)."""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Iterable, Mapping

from farm.results.store.base import StoreBase
from farm.results.store.rows import dumps
from farm.results.store.timestamps import now, stamp

BISECT_STATUSES = ("running", "found", "inconclusive", "failed", "interrupted")
BISECT_VERDICTS = ("good", "bad", "skip")
_SHRINK_COLUMNS = (
    "case_id",
    "package_sha256",
    "shrunk_id",
    "category",
    "target",
    "case_json",
    "numel_before",
    "numel_after",
    "tried",
    "created_at",
)


class Investigations(StoreBase):
    # ---- shrinks

    def add_shrink(
        self,
        case_id: str,
        package_sha256: str,
        shrunk: Mapping,
        category: str | None,
        target: str = "",
        numel_before: int | None = None,
        tried: int | None = None,
    ) -> None:
        """Record the smallest failing form of a case (`shrunk`: its Case.to_dict()) for the
        package it failed on; a later shrink of the same case and package replaces it."""
        updates = ", ".join(f"{c}=excluded.{c}" for c in _SHRINK_COLUMNS[2:])
        with self._tx():
            self.db.execute(
                f"INSERT INTO shrinks ({', '.join(_SHRINK_COLUMNS)})"
                f" VALUES ({', '.join('?' for _ in _SHRINK_COLUMNS)})"
                f" ON CONFLICT (case_id, package_sha256) DO UPDATE SET {updates}",
                (
                    case_id,
                    package_sha256,
                    shrunk["id"],
                    category,
                    target,
                    dumps(dict(shrunk)),
                    numel_before,
                    math.prod(shrunk.get("shape") or ()),
                    tried,
                    now(),
                ),
            )

    def shrinks_for(self, case_ids: Iterable[str], package_sha256: str | None = None) -> dict:
        """case id -> its newest shrink record (for this package when given)."""
        wanted = set(case_ids)
        sql = "SELECT * FROM shrinks"
        args: list = []
        if package_sha256:
            sql += " WHERE package_sha256=?"
            args.append(package_sha256)
        out: dict[str, dict] = {}
        for row in self.db.execute(sql + " ORDER BY created_at, package_sha256", args):
            if row["case_id"] in wanted:
                data = dict(row)
                data["case"] = json.loads(data.pop("case_json"))
                out[row["case_id"]] = data
        return out

    # ---- bisects

    def begin_bisect(self, good: str, bad: str, selection: Mapping) -> str:
        bisect_id = f"{stamp()}-bisect-{secrets.token_hex(2)}"
        with self._tx():
            self.db.execute(
                "INSERT INTO bisects (bisect_id, good, bad, selection_json, status, started_at)"
                " VALUES (?,?,?,?,'running',?)",
                (bisect_id, good, bad, dumps(dict(selection)), now()),
            )
        return bisect_id

    def add_bisect_step(
        self, bisect_id: str, commit_sha: str, subject: str, verdict: str, detail: Mapping
    ) -> int:
        if verdict not in BISECT_VERDICTS:
            raise ValueError(f"verdict {verdict!r}: use one of {', '.join(BISECT_VERDICTS)}")
        with self._tx():
            (step,) = self.db.execute(
                "SELECT COUNT(*) FROM bisect_steps WHERE bisect_id=?", (bisect_id,)
            ).fetchone()
            self.db.execute(
                "INSERT INTO bisect_steps VALUES (?,?,?,?,?,?,?)",
                (bisect_id, step, commit_sha, subject, verdict, dumps(dict(detail)), now()),
            )
        return int(step)

    def finish_bisect(
        self, bisect_id: str, status: str, first_bad: str | None = None, message: str = ""
    ) -> None:
        if status not in BISECT_STATUSES[1:]:
            raise ValueError(f"status {status!r}: use one of {', '.join(BISECT_STATUSES[1:])}")
        with self._tx():
            self.db.execute(
                "UPDATE bisects SET status=?, first_bad=?, message=?, ended_at=? WHERE bisect_id=?",
                (status, first_bad, message, now(), bisect_id),
            )

    def bisects(self, limit: int | None = 20) -> list[dict]:
        # A bisect's id begins with its start time: it breaks a tie of the same second.
        sql = "SELECT * FROM bisects ORDER BY started_at DESC, bisect_id DESC"
        rows = self.db.execute(sql + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        return [dict(r, selection=json.loads(r["selection_json"])) for r in rows]

    def bisect_steps(self, bisect_id: str) -> list[dict]:
        rows = self.db.execute(
            "SELECT * FROM bisect_steps WHERE bisect_id=? ORDER BY step", (bisect_id,)
        )
        return [dict(r, detail=json.loads(r["detail_json"])) for r in rows]
