"""Baselines (what a run is compared with) and retention (what a prune may remove)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from farm.results.store.rows import GREEN_SQL, planted_bug
from farm.results.store.runs import Runs
from farm.results.store.schema import RUN_ROWS
from farm.results.store.timestamps import now
from farm.util.errors import UsageError

_PAGE = 16  # runs read at a time when looking for the newest baseline


def baseline_objections(run: Mapping[str, Any]) -> list[str]:
    """Why a stored run is no baseline, each a few words (empty: it is one). A baseline is a
    finished run that exited 0 with results and none failed or broken, of the whole tier (no
    -k, -x, case selection or shard) and of the real operator (no planted bug): compared with
    anything less, a later run's broken->passed counts as fixed, another shard's cases as
    missing, the planted bug's numbers as the operator's."""
    why = []
    if run.get("status") != "finished":
        why.append(f"it is {run.get('status')}")
    counts = run.get("counts") or {}
    bad = [f"{counts[k]:,} {k}" for k in ("failed", "broken") if counts.get(k)]
    if run.get("exit_code") != 0:
        code = run.get("exit_code")
        why.append(
            ("it has no exit code" if code is None else f"it exited {code}")
            + (f" ({', '.join(bad)})" if bad else "")
        )
    elif bad:
        why.append(f"it has {', '.join(bad)} cases")
    if not counts.get("total"):
        why.append("it holds no results")
    if run.get("shard"):
        why.append(f"it is shard {run['shard']} of run group {run.get('run_group')}")
    elif run.get("subset"):
        why.append(f"it ran a subset of tier {run.get('tier')} (-k, -x or a case selection)")
    bug = planted_bug(run)
    if bug:
        why.append(
            f"it ran the operator with the planted bug {bug} (--plant-bug: a test of the farm)"
        )
    return why


class Baselines(Runs):
    def set_baseline(self, tier: str, run_id: str, force: bool = False) -> list[str]:
        """Make ``run_id`` the explicit baseline of ``tier``. A run with objections
        (baseline_objections) is refused in one line naming them and --force; with ``force``
        it is set, and the objections are returned for the command to say."""
        run = self.get_run(run_id)
        if run is None:
            raise KeyError(f"unknown run {run_id!r}")
        if run["tier"] != tier:
            raise UsageError(f"run {run_id} is of tier {run['tier']}, not {tier}")
        why = baseline_objections(run)
        if why and not force:
            raise UsageError(
                f"run {run_id} is no baseline: {'; '.join(why)}; a baseline must be a finished, "
                "green, whole run of the real operator (pick one from farm runs, or set this "
                f"one anyway with `farm baseline set {run_id} --force`)"
            )
        with self._tx():
            self.db.execute(
                "INSERT INTO baselines(tier, run_id, set_at) VALUES (?,?,?)"
                " ON CONFLICT (tier) DO UPDATE SET run_id=excluded.run_id, set_at=excluded.set_at",
                (tier, run_id, now()),
            )
        return why

    def clear_baseline(self, tier: str) -> None:
        with self._tx():
            self.db.execute("DELETE FROM baselines WHERE tier=?", (tier,))

    def explicit_baseline(self, tier: str) -> str | None:
        row = self.db.execute("SELECT run_id FROM baselines WHERE tier=?", (tier,)).fetchone()
        return row[0] if row else None

    def baseline_for(self, tier: str, exclude_run_id: str | None = None) -> str | None:
        """The baseline run of a tier.

        The explicit baseline (set_baseline) when there is one and it is not the run being
        compared; else the newest fully green finished run of the same tier (exit code 0, at least
        one result, none failed or broken) of the real operator, excluding `exclude_run_id`
        and, when that run is known, anything that started after it. A run of the whole tier
        is only ever compared with a run of the whole tier: a subset run (-k, -x) is never its
        implicit baseline; a subset run may be compared with either, a shard with a whole run
        or the same shard (K/N) of another group, never with another shard's slice.
        """
        explicit = self.explicit_baseline(tier)
        if explicit and explicit != exclude_run_id:
            return explicit
        sql = f"SELECT run_id, meta_json FROM runs WHERE tier=? AND {GREEN_SQL}"
        args: list = [tier]
        ref = None
        if exclude_run_id:
            sql += " AND run_id<>?"
            args.append(exclude_run_id)
            ref = self.db.execute(
                "SELECT started_at, seq, subset, meta_json FROM runs WHERE run_id=?",
                (exclude_run_id,),
            ).fetchone()
            if ref:
                sql += " AND (started_at < ? OR (started_at = ? AND seq < ?))"
                args += [ref[0], ref[0], ref[1]]
        if ref is None or not ref[2]:
            sql += " AND subset=0"
        shard = json.loads(ref[3]).get("shard") if ref is not None else None
        return self._newest_of_the_real_operator(sql, args, shard or "")

    def _newest_green(self, tier: str) -> str | None:
        """What baseline_for gives a new subset run (which may be compared with a subset run)."""
        explicit = self.explicit_baseline(tier)
        if explicit:
            return explicit
        sql = f"SELECT run_id, meta_json FROM runs WHERE tier=? AND {GREEN_SQL}"
        return self._newest_of_the_real_operator(sql, [tier])

    def _newest_of_the_real_operator(self, sql: str, args: list, shard: str = "") -> str | None:
        """The newest run `sql` (run_id, meta_json) selects that ran the real operator: a run
        of a planted bug the tier did not catch (a bias under what is judged, a case file that
        misses it) held later runs to the planted bug's numbers. ``shard``: the run compared is
        that shard, so another shard is passed over. Read a page at a time: such runs are few,
        and a store's green runs many."""
        sql += " ORDER BY started_at DESC, seq DESC LIMIT ? OFFSET ?"
        offset = 0
        while True:
            rows = self.db.execute(sql, [*args, _PAGE, offset]).fetchall()
            for run_id, meta_json in rows:
                meta = json.loads(meta_json)
                if planted_bug(meta):
                    continue
                if shard and meta.get("shard") not in (None, "", shard):
                    continue  # another shard's slice: nothing of this shard's to compare
                return run_id
            if len(rows) < _PAGE:
                return None
            offset += _PAGE

    # ---- retention

    def protected_runs(self) -> dict[str, str]:
        """The runs no prune may remove, each with why: a running run (its process may be alive
        and writing); each suite's explicit baseline; the run each suite's next run would be
        compared with (whole or subset); each suite's newest finished run, which `farm compare`
        and `farm report` default to, and the run it is compared with; the run each running run
        will be compared with when it ends."""
        keep: dict[str, str] = {}

        def hold(run_id: str | None, why: str) -> None:
            if run_id:
                keep.setdefault(run_id, why)

        running = self.db.execute("SELECT run_id, tier FROM runs WHERE status='running'")
        for run_id, tier in running.fetchall():
            hold(run_id, "running (its process may be alive)")
            hold(self.baseline_for(tier, exclude_run_id=run_id), f"the baseline of {run_id}")
        for tier, run_id in self.db.execute("SELECT tier, run_id FROM baselines").fetchall():
            hold(run_id, f"the explicit baseline of {tier}")
        for (tier,) in self.db.execute("SELECT DISTINCT tier FROM runs").fetchall():
            hold(self.baseline_for(tier), f"the baseline of the next run of {tier}")
            hold(self._newest_green(tier), f"the baseline of the next subset run of {tier}")
            newest = self.latest_run(tier, finished=True)
            if newest:
                hold(newest["run_id"], f"the newest finished run of {tier}")
                base = self.baseline_for(tier, exclude_run_id=newest["run_id"])
                hold(base, f"the baseline of {newest['run_id']}")
        return keep

    def prune(
        self,
        choose: Callable[[list[dict]], Iterable[str]],
        dry_run: bool = False,
        before_delete: Callable[[list[dict]], None] | None = None,
    ) -> tuple[list[dict], dict[str, str]]:
        """Delete the runs `choose(runs)` picks (runs newest first) with every row that refers
        to them, in one transaction, so that a concurrent `farm run` sees the store before or
        after, never half pruned; the runs protected_runs names stay. Returns the runs deleted
        (dry_run: that would be) and, of the picked runs that stay, why each stays.
        ``before_delete(doomed)``: called in the transaction before it deletes (what the rest of
        the prune is to do is written down there, farm/results/retention.py); an exception
        there deletes nothing."""
        with self._tx():
            runs = self.runs(limit=None)
            picked = set(choose(runs))
            protected = self.protected_runs()
            doomed = [r for r in runs if r["run_id"] in picked and r["run_id"] not in protected]
            spared = {run_id: why for run_id, why in protected.items() if run_id in picked}
            if not dry_run and doomed and before_delete is not None:
                before_delete(doomed)
            if not dry_run and doomed:
                ids = [(r["run_id"],) for r in doomed]
                for table in RUN_ROWS:
                    self.db.executemany(f"DELETE FROM {table} WHERE run_id=?", ids)
                self.db.executemany("DELETE FROM runs WHERE run_id=?", ids)
        return doomed, spared

    def reclaim_space(self) -> None:
        """Give the pages of deleted rows back (SQLite's VACUUM; PostgreSQL's autovacuum does it
        by itself)."""
        self.db.reclaim_space()
