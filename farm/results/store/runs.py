"""Runs and their results: begin, write, finish, list, read; and the orphans' recovery.

Run metadata (`begin_run(meta)`): a farm/run/metadata.py RunMetadata (what farm run and farm
merge begin), or its dict form, all keys optional except `tier`:

    run_id          "20261129-151200-smoke-ab12" (farm/run/metadata.py new_run_id if absent)
    tier            "smoke" | "nightly" | "full" | ...
    package_version, package_sha256   the operator package under test
                    (a nested {"package": {"version", "sha256"}} is accepted too)
    target          what the package was built for ("ascendc-cpu", "twin"; or package.target)
    git_commit
    inventory       [{"name": host, "soc": "Ascend910B3", "family": "ascend910b"}, ...]
                    or {host: soc}, or the plan's slots ({"host", "soc", "family", ...}; one
                    entry per host is kept)
    run_dir         where the run writes (farm report looks for <run_dir>/allure-results)
    run_group       the logical run a shard belongs to (farm run --run-group, farm merge)
    backend         "native" | "torch" | ...
    farm_version
    started_at      ISO 8601 (now if absent); ended_at / exit_code are set by finish_run
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from farm.results.store.base import StoreBase
from farm.results.store.rows import (
    INSERT_RESULT,
    RESULT_COLUMNS,
    RUN_STATUSES,
    dumps,
    inventory_list,
    refresh_counts,
    result_row,
    run_dict,
)
from farm.results.store.timestamps import now
from farm.run.metadata import RunMetadata, new_run_id
from farm.run.owners import owner_alive, process_owner
from farm.run.records_file import read_records
from farm.util.errors import UsageError

_NEWEST_FIRST = " ORDER BY started_at DESC, seq DESC"
# A running run's owner marks it alive this often (farm/results/store/heartbeat.py); a run of
# another machine silent for STALE_AFTER is taken for dead (its runner killed with its job).
HEARTBEAT_S = 60.0
STALE_AFTER = _dt.timedelta(minutes=15)


class Runs(StoreBase):
    def begin_run(self, meta: RunMetadata | Mapping) -> str:
        """Record the start of a run and return its run_id."""
        with self._tx():
            return self._insert_run(meta)

    def begin_run_unless(
        self, meta: RunMetadata | Mapping, claim: str, holder: Callable[[], dict | None]
    ) -> tuple[str | None, dict | None]:
        """Record the start of a run unless another holds ``claim`` (a name: one run a claim,
        whatever begins at once): ``holder()``, asked under the claim's lock in the same write
        transaction, returns the run that holds it, or None. (the new run id, None) when this
        run begins; (None, the holder) when another holds the claim, and nothing is written."""
        with self._tx():
            self.db.lock(claim)
            held = holder()
            if held is not None:
                return None, held
            return self._insert_run(meta), None

    def _insert_run(self, given: RunMetadata | Mapping) -> str:
        meta = given.as_dict() if isinstance(given, RunMetadata) else dict(given)
        tier = str(meta.get("tier") or "adhoc")
        started = str(meta.get("started_at") or meta.get("start") or now())
        run_id = meta.get("run_id") or new_run_id(tier)
        pkg = meta.get("package") or {}
        meta.update(run_id=run_id, tier=tier, started_at=started)
        group = meta.get("run_group")
        self.db.execute(
            "INSERT INTO runs (run_id, tier, package_version, package_sha256, target,"
            " git_commit, backend, farm_version, started_at, meta_json, inventory_json,"
            " status, subset, owner, run_group, heartbeat_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,'running',?,?,?,?)",
            (
                run_id,
                tier,
                meta.get("package_version") or pkg.get("version"),
                meta.get("package_sha256") or pkg.get("sha256"),
                meta.get("target") or pkg.get("target"),
                meta.get("git_commit"),
                meta.get("backend"),
                meta.get("farm_version"),
                started,
                dumps(meta),
                dumps(inventory_list(meta.get("inventory"))),
                int(bool(meta.get("subset"))),
                meta.get("owner") or process_owner(),
                str(group) if group else None,
                self._store_now(),  # its first sign of life, by the store's clock
            ),
        )
        return run_id

    def add_results(
        self, run_id: str, records: Iterable[Mapping], texts: Mapping[str, str] | None = None
    ) -> int:
        """Write records in one transaction. A case written again replaces its earlier row.
        `texts`: case id -> the JSON a record was read from, stored as it is (RecordFiles.texts)."""
        texts = texts or {}
        rows = [result_row(run_id, r, texts.get(r["case_id"])) for r in records]
        with self._tx():
            if not self.db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone():
                raise KeyError(f"unknown run {run_id!r}: call begin_run first")
            if rows:
                self.db.executemany(INSERT_RESULT, rows)
            refresh_counts(self.db, run_id)
        return len(rows)

    def finish_run(
        self,
        run_id: str,
        exit_code: int,
        ended_at: str | None = None,
        status: str = "finished",
        subset: bool | None = None,
    ) -> None:
        """End a run as what it was: finished, interrupted (a signal stopped it) or aborted
        (its process died; found and closed by recover_orphans)."""
        if status not in RUN_STATUSES[1:]:
            raise ValueError(f"status {status!r}: use one of {', '.join(RUN_STATUSES[1:])}")
        with self._tx():
            cur = self.db.execute(
                "UPDATE runs SET ended_at=?, exit_code=?, status=?,"
                " subset=COALESCE(?, subset) WHERE run_id=?",
                (
                    ended_at or now(),
                    int(exit_code),
                    status,
                    None if subset is None else int(bool(subset)),
                    run_id,
                ),
            )
            if cur.rowcount != 1:
                raise KeyError(f"unknown run {run_id!r}")
            refresh_counts(self.db, run_id)

    def note_run(self, run_id: str, fields: Mapping) -> None:
        """Add ``fields`` to a run's metadata (what it says of itself once done with it)."""
        with self._tx():
            row = self.db.execute("SELECT meta_json FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is None:
                raise KeyError(f"unknown run {run_id!r}")
            meta = {**json.loads(row["meta_json"]), **fields}
            self.db.execute("UPDATE runs SET meta_json=? WHERE run_id=?", (dumps(meta), run_id))

    def runs(self, limit: int | None = 20, tier: str | None = None) -> list[dict]:
        """Newest first."""
        sql = "SELECT * FROM runs"
        args: list = []
        if tier is not None:
            sql += " WHERE tier=?"
            args.append(tier)
        sql += _NEWEST_FIRST
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [run_dict(r) for r in self.db.execute(sql, args)]

    def group_runs(self, run_group: str) -> list[dict]:
        """The runs recorded under one run group (a CI pipeline's shards and their merge),
        oldest first."""
        rows = self.db.execute(
            "SELECT * FROM runs WHERE run_group=? ORDER BY started_at, seq", (run_group,)
        )
        return [run_dict(r) for r in rows]

    def get_run(self, run_id: str) -> dict | None:
        row = self.db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return run_dict(row) if row else None

    def run_or_latest(self, run_id: str | None) -> dict:
        """The run a command was asked about (``run_id``), or the latest run when none is named;
        a UsageError when there is no such run."""
        run = self.get_run(run_id) if run_id else self.latest_run()
        if run is None:
            raise UsageError(
                f"no run {run_id!r} in the store (list them with `farm runs`)"
                if run_id
                else "the store has no runs yet: run something first"
            )
        return run

    def latest_run(self, tier: str | None = None, finished: bool = False) -> dict | None:
        sql = "SELECT * FROM runs WHERE 1=1"
        args: list = []
        if tier is not None:
            sql += " AND tier=?"
            args.append(tier)
        if finished:
            sql += " AND status='finished'"
        row = self.db.execute(sql + _NEWEST_FIRST + " LIMIT 1", args).fetchone()
        return run_dict(row) if row else None

    def results(self, run_id: str) -> list[dict]:
        """Full records of a run, ordered by case_id."""
        return [
            json.loads(r[0])
            for r in self.db.execute(
                "SELECT record_json FROM results WHERE run_id=? ORDER BY case_id", (run_id,)
            )
        ]

    def result_rows(self, run_id: str) -> list[dict]:
        """The queried columns only (no record JSON): fast for comparisons of large runs."""
        cols = [c for c in RESULT_COLUMNS if c != "record_json"]
        return [
            dict(r)
            for r in self.db.execute(
                f"SELECT {', '.join(cols)} FROM results WHERE run_id=? ORDER BY case_id",
                (run_id,),
            )
        ]

    def beat(self, run_id: str) -> None:
        """The run's owner is alive (see HEARTBEAT_S)."""
        with self._tx():
            self.db.execute(
                "UPDATE runs SET heartbeat_at=? WHERE run_id=? AND status='running'",
                (self._store_now(), run_id),
            )

    def _store_now(self) -> str:
        """Now by the store's clock (dialects.clock): a runner's heartbeat and the check of it
        on another runner read one clock, where a runner whose clock was 15 minutes behind had
        its live runs closed as dead by the others."""
        return self.db.clock().isoformat()

    def recover_orphans(self, at: _dt.datetime | None = None) -> list[tuple[str, int]]:
        """Close the runs whose process died without ending them (SIGKILL, a crash, a power
        cut, a CI job cancelled): import the records they wrote (runs/<run>/records/*.jsonl,
        where they are on this machine) and mark them aborted with exit 2. A run of this machine
        is dead when its owner's process is; a run of another machine when it has given no sign
        of life (heartbeat) for STALE_AFTER before `at` (now, by the store's clock). Returns
        (run id, records imported) of each run closed."""
        closed = []
        rows = self.db.execute(
            "SELECT * FROM runs WHERE status='running'" + _NEWEST_FIRST
        ).fetchall()
        for run in map(run_dict, rows):
            alive = owner_alive(run["owner"])
            if alive is None:  # another machine's: only its heartbeat can tell
                at = at or self.db.clock()
                alive = not _silent_since(run, at - STALE_AFTER)
            if alive:
                continue
            records, _ = read_records(Path(run.get("run_dir") or ""))
            if records:
                self.add_results(run["run_id"], records.values())
            self.finish_run(run["run_id"], 2, status="aborted")
            closed.append((run["run_id"], len(records)))
        return closed


def _silent_since(run: Mapping, cutoff: _dt.datetime) -> bool:
    """Whether a running run's last sign of life (its heartbeat, else its start) is before
    `cutoff`; a time that cannot be read is no sign of life."""
    last = run.get("heartbeat_at") or run.get("started_at") or ""
    try:
        when = _dt.datetime.fromisoformat(str(last))
    except ValueError:
        return True
    if when.tzinfo is None:
        when = when.astimezone()
    return when < cutoff
