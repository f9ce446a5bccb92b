"""What one case attaches to its Allure result, beside its description: the error-distribution
plot's data, metrics.json and the worst elements' table; and which cases attach them.

Error-distribution plots: every failure and a deterministic 1 in PLOT_SAMPLE_ONE_IN of the passes
(`wants_plot`) get one. Inside the test item `annotate` (farm/run/allure/glue.py) only attaches
the few numbers the plot is drawn from (`plot_data`, a small JSON attachment named
PLOT_DATA_NAME); `farm report` turns them into the PNGs (farm/run/case_plots.py, which also caps
the passes it draws per family and dtype), so no test item imports matplotlib.

Attachments grow with failures, not with passes (a nightly run is thousands of passes):
  metrics.json         the metrics and the standards' verdicts, compact JSON, without what the
                       description, the parameters, the plot or the worst-elements table already
                       say; for every case that did not pass and for the sampled passes
                       (`wants_metrics`). Every precision case's description carries its headline
                       metrics (farm/run/allure/description.py metrics_line).
  worst elements.csv   every case that did not pass and has worst or NaN/inf-mismatch elements.
  the plot's data      `wants_plot`, see above.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping

from farm.run.allure.criterion import failing_criterion

PLOT_SAMPLE_ONE_IN = 20
# The attachment annotate() leaves for the report step, and what the report step makes of it.
PLOT_DATA_NAME = "error distribution data.json"
PLOT_NAME = "error distribution.png"
PLOT_ERROR_NAME = "plot error"


def sample_hash(case_id: str) -> int:
    """The hash of a case id that the plot sample is drawn by (stable across runs and hosts)."""
    h = hashlib.sha256(str(case_id).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


def plot_sampled(case_id: str, one_in: int = PLOT_SAMPLE_ONE_IN) -> bool:
    """Deterministic 1-in-N sample of cases by a hash of the id (stable across runs and hosts)."""
    return sample_hash(case_id) % max(1, one_in) == 0


def wants_plot(record: Mapping, one_in: int = PLOT_SAMPLE_ONE_IN) -> bool:
    if not record.get("metrics"):
        return False
    return record.get("outcome") != "passed" or plot_sampled(record.get("case_id", ""), one_in)


def detailed(record: Mapping, one_in: int = PLOT_SAMPLE_ONE_IN) -> bool:
    """Whether a case's description says everything (the standards' verdict, the tiling, every
    timing): for a case that did not pass and for the passes of the plot sample. Another pass
    says what it expected and got, its headline metrics, and where and how long it ran; the rest
    is in the store (`farm compare`, `farm repro`)."""
    return record.get("outcome") != "passed" or plot_sampled(record.get("case_id", ""), one_in)


def wants_metrics(record: Mapping, one_in: int = PLOT_SAMPLE_ONE_IN) -> bool:
    """metrics.json: for a case that did not pass, and for the passes of the plot sample; and only
    when there is something to say beyond the description (metrics or standards' verdicts)."""
    if not (record.get("metrics") or record.get("standards")):
        return False
    return detailed(record, one_in)


# The metrics farm.run.plots.error_histogram_png reads ("worst" only without a histogram;
# "bound_hist": every element's error over its bound, golden/ratio_hist.py).
_PLOT_METRICS = ("hist", "bound_hist", "mere", "mare", "n", "nonfinite_mismatch")


def plot_data(record: Mapping) -> dict:
    """What `farm.run.plots.error_histogram_png` draws a case's plot from, and nothing more:
    the histogram of relative errors (or, without one, the worst elements' relative errors), the
    histogram of every element's error over its bound, MERE/MARE, the element count, the NaN/inf
    mismatches, the dtype (its threshold T) and the title (case id, family); of a case a gate
    failed, also "criterion": that gate, its worst elements' scores against it and the case's
    (farm/run/allure/criterion.py failing_criterion; 1 is the limit). The PNG drawn from it
    equals the one drawn from the whole record."""
    metrics = record.get("metrics") or {}
    keep = {k: metrics[k] for k in _PLOT_METRICS if metrics.get(k) is not None}
    hist = keep.get("hist")
    has_hist = isinstance(hist, Mapping) and hist.get("edges") and hist.get("counts")
    if not has_hist and metrics.get("worst"):
        keep["worst"] = [
            {"rel_err": w.get("rel_err")} for w in metrics["worst"] if isinstance(w, Mapping)
        ]
    out = {"case_id": record.get("case_id", ""), "metrics": keep}
    for k in ("family", "dtype"):
        if record.get(k):
            out[k] = record[k]
    # The gate that failed the case, each worst element's score against it and the case's
    # (farm/run/allure/criterion.py): the plot draws them against their limit, 1.
    criterion = failing_criterion(record) if record.get("outcome") == "failed" else None
    if criterion is not None:
        # Of each element, what the plot draws: where it is and its score (the worst-elements
        # table has the rest).
        elements = [{"index": e.get("index"), "score": e["score"]} for e in criterion["elements"]]
        out["criterion"] = {**criterion, "elements": elements}
    return out


# --------------------------------------------------------------------------- attachments


def json_default(o):
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


# In metrics.json, the metrics a person does not read there: the histogram is the plot's, and
# the worst and NaN/inf-mismatch elements of a case that did not pass are its worst-elements table.
_NOT_IN_METRICS_JSON: tuple[str, ...] = ("hist", "bound_hist")
_IN_WORST_TABLE = ("worst", "nonfinite")


def metrics_json(record: Mapping) -> str | None:
    """metrics.json of a case, compact: its id and outcome (so that the file says what it is when
    saved on its own), the metrics and the standards' verdicts. None when it has neither.

    Left out, because the report shows them elsewhere: what the description and the parameters
    say (expectation, status, message, tiling, host, seed, timings), the histogram (the plot) and,
    for a case that did not pass, the worst and NaN/inf-mismatch elements (its worst-elements
    table)."""
    metrics = record.get("metrics")
    standards = record.get("standards")
    if not metrics and not standards:
        return None
    drop = _NOT_IN_METRICS_JSON
    if record.get("outcome") != "passed":
        drop += _IN_WORST_TABLE
    out: dict = {"case_id": record.get("case_id"), "outcome": record.get("outcome")}
    if metrics:
        out["metrics"] = (
            {k: v for k, v in metrics.items() if k not in drop}
            if isinstance(metrics, Mapping)
            else metrics
        )
    if standards:
        out["standards"] = standards
    return json.dumps(out, separators=(",", ":"), default=json_default, allow_nan=True)


def worst_csv(record: Mapping) -> str | None:
    """The worst elements as CSV: first the positions whose NaN/inf class differs from the
    golden's (metrics["nonfinite"]; their errors are blank, being undefined), then the finite
    elements with the largest relative errors (metrics["worst"]). None when there is neither.

    Of a case a gate failed (farm/run/allure/criterion.py), the finite elements are that gate's
    worst, ranked by their score against it (for the error bound: error over bound), in a last
    column named after it: the first is the element the failure message names.

    A kernel that leaves a whole row unwritten has only the first kind: without them the table
    of such a failure would be empty."""
    metrics = record.get("metrics") or {}
    nonfinite = [e for e in (metrics.get("nonfinite") or []) if isinstance(e, Mapping)]
    worst = [e for e in (metrics.get("worst") or []) if isinstance(e, Mapping)]
    criterion = failing_criterion(record) if record.get("outcome") != "passed" else None
    columns = ["actual", "golden", "abs_err", "rel_err"]
    if criterion is not None and criterion["elements"]:
        worst = criterion["elements"]
        columns += ["bound"] if criterion["standard"] == "error-bound" else []
        columns += ["score"]
    if not nonfinite and not worst:
        return None
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = [criterion["measure"] if c == "score" and criterion else c for c in columns]
    w.writerow(["rank", "index", *header])
    rows: list[tuple[Mapping, tuple[str, ...]]] = [(e, ("actual", "golden")) for e in nonfinite]
    rows += [(e, tuple(columns)) for e in worst]
    for i, (e, keys) in enumerate(rows, 1):
        idx = e.get("index")
        idx_s = "(" + ", ".join(str(int(x)) for x in idx) + ")" if idx is not None else ""
        values = [_fmt(e.get(k)) if k in keys else "" for k in columns]
        w.writerow([i, idx_s, *values])
    return buf.getvalue()


def _fmt(v) -> str:
    if v is None:
        return ""
    try:
        return f"{float(v):.9g}"
    except (TypeError, ValueError):
        return str(v)


def plot_error_text(exc: BaseException) -> str:
    """The text of the "plot error" attachment that stands in for a plot that failed."""
    return f"plot failed: {type(exc).__name__}: {exc}"
