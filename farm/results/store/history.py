"""Each tier's Allure history in the store, so that every runner of a team shares it.

Allure 3 reads a history JSONL before it generates a report and appends the report's line to
it. `farm report` writes the tier's newest lines from the store to a file of its own, lets Allure
read and append, and keeps the appended line in the store (StoredHistory). Two reports of one tier
at once each keep their line. A SQLite store's history file from before v7
(allure-history-<tier>.jsonl beside the store) is taken in on the tier's first report.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from farm.results.store.base import StoreBase
from farm.results.store.location import SQLITE, StoreLocation
from farm.results.store.timestamps import now

LEGACY_SUFFIX = ".imported"


def legacy_history_file(location: StoreLocation, tier: str) -> Path | None:
    """Where a SQLite store kept a tier's history before v7."""
    if location.kind != SQLITE or location.path is None or str(location.path) == ":memory:":
        return None
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(tier)) or "default"
    return location.path.resolve().parent / f"allure-history-{safe}.jsonl"


class AllureHistory(StoreBase):
    def history_lines(self, tier: str, limit: int | None = None) -> list[str]:
        """The tier's history lines, oldest first: the newest `limit` of them."""
        self._take_in_legacy_history(tier)
        sql = "SELECT entry_json FROM allure_history WHERE tier=? ORDER BY position DESC"
        args: list = [tier]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [r[0] for r in reversed(self.db.execute(sql, args).fetchall())]

    def add_history_line(self, tier: str, line: str, run_id: str | None = None) -> None:
        with self._tx():
            self.db.lock(f"history:{tier}")
            (last,) = self.db.execute(
                "SELECT COALESCE(MAX(position), 0) FROM allure_history WHERE tier=?", (tier,)
            ).fetchone()
            self.db.execute(
                "INSERT INTO allure_history (tier, position, run_id, entry_json, added_at)"
                " VALUES (?,?,?,?,?)",
                (tier, int(last) + 1, run_id, line, now()),
            )

    def _take_in_legacy_history(self, tier: str) -> None:
        path = legacy_history_file(self.location, tier)
        if path is None or not path.is_file():
            return
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        with self._tx():
            self.db.lock(f"history:{tier}")
            if self.db.execute("SELECT 1 FROM allure_history WHERE tier=?", (tier,)).fetchone():
                return
            self.db.executemany(
                "INSERT INTO allure_history (tier, position, run_id, entry_json, added_at)"
                " VALUES (?,?,NULL,?,?)",
                [(tier, i, line, now()) for i, line in enumerate(lines, 1)],
            )
        with contextlib.suppress(OSError):  # taken in: the file is not read again
            os.replace(path, path.with_name(path.name + LEGACY_SUFFIX))


@dataclass(frozen=True)
class StoredHistory:
    """One report's view of its tier's history in the store (opened when read and written, so
    that no connection stays open while Allure runs)."""

    location: StoreLocation
    tier: str
    run_id: str | None = None

    def lines(self, limit: int | None) -> list[str]:
        from farm.results.store.runstore import RunStore

        with RunStore(self.location, create=False) as store:
            return store.history_lines(self.tier, limit)

    def keep(self, line: str) -> None:
        from farm.results.store.runstore import RunStore

        with RunStore(self.location, create=False) as store:
            store.add_history_line(self.tier, line, self.run_id)
