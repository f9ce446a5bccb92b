"""Each tier's Allure history in the store, so that every runner of a team shares it.

Allure 3 reads a history JSONL before it generates a report and appends the report's line to
it. `farm report` writes the tier's newest lines from the store to a file of its own, lets Allure
read and append, and keeps the appended line in the store (StoredHistory, in
farm/results/store/stored_history.py). Two reports of one tier at once each keep their line.
**One line a run**, however many reports of it: a report of a run reads the history without that
run's own line, and its line replaces the one kept before (in its place: the history stays in the
order the runs were first reported). A SQLite store's history file from before v7
(allure-history-<tier>.jsonl beside the store) is taken in on the tier's first report.
"""

from __future__ import annotations

import contextlib
import os
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
    def history_lines(
        self, tier: str, limit: int | None = None, but_run: str | None = None
    ) -> list[str]:
        """The tier's history lines, oldest first: the newest `limit` of them (``but_run``:
        without the line of that run, which its report is about to make again)."""
        self._take_in_legacy_history(tier)
        sql = "SELECT entry_json FROM allure_history WHERE tier=?"
        args: list = [tier]
        if but_run is not None:
            sql += " AND (run_id IS NULL OR run_id <> ?)"
            args.append(but_run)
        sql += " ORDER BY position DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [r[0] for r in reversed(self.db.execute(sql, args).fetchall())]

    def add_history_line(self, tier: str, line: str, run_id: str | None = None) -> None:
        """Keep a report's line: it replaces the line of the same run kept before, in its place
        (one line a run); a line of no run is added."""
        with self._tx():
            self.db.lock(f"history:{tier}")
            if run_id is not None:
                kept = [
                    int(r[0])
                    for r in self.db.execute(
                        "SELECT position FROM allure_history WHERE tier=? AND run_id=?"
                        " ORDER BY position",
                        (tier, run_id),
                    ).fetchall()
                ]
                if kept:
                    self.db.execute(
                        "UPDATE allure_history SET entry_json=?, added_at=?"
                        " WHERE tier=? AND position=?",
                        (line, now(), tier, kept[0]),
                    )
                    if kept[1:]:  # more than one: kept by a farm before this rule
                        self.db.executemany(
                            "DELETE FROM allure_history WHERE tier=? AND position=?",
                            [(tier, p) for p in kept[1:]],
                        )
                    return
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
