"""What every part of the RunStore shares: its location and its database connection."""

from __future__ import annotations

from farm.results.store.dialects import Database
from farm.results.store.location import StoreLocation


class StoreBase:
    location: StoreLocation
    db: Database

    def _tx(self):
        return self.db.transaction()
