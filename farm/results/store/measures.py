"""Measurements of the operator's sources: what `farm mutate` and `farm coverage` measured of a
tier (records: farm/results/store/measure_rows.py), written once at the end of the command and
read by `farm runs` (the listing, `show`, `trend`)."""

from __future__ import annotations

from farm.results.store.base import StoreBase
from farm.results.store.measure_rows import INSERT_MEASURE, INSERT_MUTANT, Measure, MutantNote

_NEWEST_FIRST = " ORDER BY started_at DESC, measure_id DESC"


class Measures(StoreBase):
    def add_measure(self, measure: Measure) -> None:
        """Keep a measurement and its mutants' notes, in one transaction; one of the same id
        (stored again from its files: `farm runs import`) is replaced whole."""
        with self._tx():
            self.db.execute("DELETE FROM measure_mutants WHERE measure_id=?", (measure.measure_id,))
            self.db.execute("DELETE FROM measures WHERE measure_id=?", (measure.measure_id,))
            self.db.execute(INSERT_MEASURE, measure.row())
            if measure.mutants:
                self.db.executemany(
                    INSERT_MUTANT, [m.row(measure.measure_id) for m in measure.mutants]
                )

    def get_measure(self, measure_id: str) -> Measure | None:
        """A measurement with its mutants' notes (survivors first, then by id)."""
        row = self.db.execute("SELECT * FROM measures WHERE measure_id=?", (measure_id,)).fetchone()
        if row is None:
            return None
        notes = self.db.execute(
            "SELECT * FROM measure_mutants WHERE measure_id=?"
            " ORDER BY CASE WHEN status='survived' THEN 0 ELSE 1 END, mutant_id",
            (measure_id,),
        ).fetchall()
        return Measure.from_row(row, [MutantNote.from_row(n) for n in notes])

    def measures(
        self, limit: int | None = 20, tier: str | None = None, kind: str | None = None
    ) -> list[Measure]:
        """Newest first, without their mutants' notes."""
        sql = "SELECT * FROM measures WHERE 1=1"
        args: list = []
        for column, value in (("tier", tier), ("kind", kind)):
            if value is not None:
                sql += f" AND {column}=?"
                args.append(value)
        sql += _NEWEST_FIRST
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [Measure.from_row(r) for r in self.db.execute(sql, args).fetchall()]

    def measure_trend(
        self, kind: str, tier: str, backend: str | None = None, n: int = 20
    ) -> list[Measure]:
        """The last ``n`` measurements of a kind and tier (and backend, where given) of the whole
        tier, oldest first: a subset's figures (-k, --only) are not the tier's."""
        sql = "SELECT * FROM measures WHERE kind=? AND tier=? AND subset=0"
        args: list = [kind, tier]
        if backend is not None:
            sql += " AND backend=?"
            args.append(backend)
        rows = self.db.execute(sql + _NEWEST_FIRST + " LIMIT ?", [*args, int(n)]).fetchall()
        return [Measure.from_row(r) for r in reversed(rows)]
