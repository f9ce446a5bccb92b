"""Precision over the last runs of a tier: the report's trend plot, each run with its kind (a
planted bug's, a shard, a merge of shards, a degraded run, a subset: `run_kind`), which the plot
keeps off the line of the tier's whole runs."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping

from farm.agent.record import METRIC_COLUMNS
from farm.results.store.base import StoreBase
from farm.results.store.rows import run_dict
from farm.run.finish import ExitCode
from farm.run.metadata import planted_bug

# What a run of the trend is, the first that applies: "planted" (farm run --plant-bug: the
# bug's numbers, never the operator's), "degraded" (exit 2: broken by the pool), "shard" (K/N of
# the tier), "merged" (farm merge of shards), "subset" (-k, -x or a case selection), "whole".
RUN_KINDS = ("planted", "degraded", "shard", "merged", "subset", "whole")


def run_kind(run: Mapping) -> str:
    """The kind (RUN_KINDS) of a run as the store gives it (run_dict)."""
    if planted_bug(run):
        return "planted"
    if run.get("exit_code") == ExitCode.INFRA:
        return "degraded"
    if run.get("shard"):
        return "shard"
    if run.get("shards") or run.get("merged_from"):
        return "merged"
    if run.get("subset"):
        return "subset"
    return "whole"


def kind_text(run: Mapping) -> str:
    """The kind as a person reads it beside the run: "shard 1/2", "planted bug <name>",
    "merged 2 shards", "degraded (exit 2)", "subset", "" for a whole run."""
    kind = run_kind(run)
    if kind == "planted":
        return f"planted bug {planted_bug(run)}"
    if kind == "degraded":
        return "degraded (exit 2)"
    if kind == "shard":
        return f"shard {run['shard']}"
    if kind == "merged":
        n = run.get("shards") or len(run.get("merged_from") or ())
        return f"merged {n} shards"
    return "" if kind == "whole" else kind


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _max(values: list[float]) -> float | None:
    return max(values) if values else None


class Trends(StoreBase):
    def metric_series(self, tier: str, n_runs: int = 20) -> list[dict]:
        """Per (run, family, dtype) precision summary for the last n finished runs, oldest first.

        Each point: run_id, started_at, kind (RUN_KINDS), kind_text ("shard 1/2", "" for a
        whole run), family, dtype, n, passed, failed, broken, pass_rate, mere_median, mere_max,
        mare_median, mare_max, rmse_max, max_abs_max (None where no case of that group had
        metrics).
        """
        run_rows = self.db.execute(
            "SELECT * FROM runs WHERE tier=? AND ended_at IS NOT NULL"
            " ORDER BY started_at DESC, seq DESC LIMIT ?",
            (tier, int(n_runs)),
        ).fetchall()
        points = []
        for row in reversed(run_rows):
            run = run_dict(row)
            run_id, started = run["run_id"], run["started_at"]
            kind, kind_shown = run_kind(run), kind_text(run)
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
                        "kind": kind,
                        "kind_text": kind_shown,
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
