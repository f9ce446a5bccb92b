"""Precision over the last runs of a tier: the report's trend plot."""

from __future__ import annotations

import statistics
from collections import defaultdict

from farm.agent.record import METRIC_COLUMNS
from farm.results.store.base import StoreBase


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _max(values: list[float]) -> float | None:
    return max(values) if values else None


class Trends(StoreBase):
    def metric_series(self, tier: str, n_runs: int = 20) -> list[dict]:
        """Per (run, family, dtype) precision summary for the last n finished runs, oldest first.

        Each point: run_id, started_at, family, dtype, n, passed, failed, broken, pass_rate,
        mere_median, mere_max, mare_median, mare_max, rmse_max, max_abs_max (None where no case
        of that group had metrics).
        """
        run_rows = self.db.execute(
            "SELECT run_id, started_at FROM runs WHERE tier=? AND ended_at IS NOT NULL"
            " ORDER BY started_at DESC, seq DESC LIMIT ?",
            (tier, int(n_runs)),
        ).fetchall()
        points = []
        for run_id, started in reversed(run_rows):
            groups: dict[tuple, dict] = defaultdict(
                lambda: {
                    "n": 0,
                    "passed": 0,
                    "failed": 0,
                    "broken": 0,
                    **{m: [] for m in METRIC_COLUMNS},
                }
            )
            for fam, dt, outcome, *vals in self.db.execute(
                "SELECT family, dtype, outcome, mere, mare, rmse, max_abs FROM results"
                " WHERE run_id=?",
                (run_id,),
            ):
                g = groups[(fam, dt)]
                g["n"] += 1
                if outcome in ("passed", "failed", "broken"):
                    g[outcome] += 1
                for m, v in zip(METRIC_COLUMNS, vals, strict=True):
                    if v is not None:
                        g[m].append(v)
            for (fam, dt), g in sorted(
                groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))
            ):
                points.append(
                    {
                        "run_id": run_id,
                        "started_at": started,
                        "family": fam,
                        "dtype": dt,
                        "n": g["n"],
                        "passed": g["passed"],
                        "failed": g["failed"],
                        "broken": g["broken"],
                        "pass_rate": g["passed"] / g["n"] if g["n"] else None,
                        "mere_median": _median(g["mere"]),
                        "mere_max": _max(g["mere"]),
                        "mare_median": _median(g["mare"]),
                        "mare_max": _max(g["mare"]),
                        "rmse_max": _max(g["rmse"]),
                        "max_abs_max": _max(g["max_abs"]),
                    }
                )
        return points
