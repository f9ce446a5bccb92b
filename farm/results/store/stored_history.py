"""One report's view of its tier's Allure history in the store (StoredHistory): the lines
it reads and the line it keeps, each through a RunStore opened for it (farm/results/store/
history.py is the part of the RunStore that holds them)."""

from __future__ import annotations

from dataclasses import dataclass

from farm.results.store.location import StoreLocation
from farm.results.store.runstore import RunStore


@dataclass(frozen=True)
class StoredHistory:
    """One report's view of its tier's history in the store (opened when read and written, so
    that no connection stays open while Allure runs)."""

    location: StoreLocation
    tier: str
    run_id: str | None = None

    def lines(self, limit: int | None) -> list[str]:
        with RunStore(self.location, create=False) as store:
            return store.history_lines(self.tier, limit, but_run=self.run_id)

    def keep(self, line: str) -> None:
        with RunStore(self.location, create=False) as store:
            store.add_history_line(self.tier, line, self.run_id)
