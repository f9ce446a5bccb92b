"""Allure annotations for one case, and the run-level files of an allure-results directory.

`annotate(record)` is called from inside the running pytest test of a case (the farm's pytest
plugin calls it once per case, before asserting the verdict). It sets labels, parameters and
attachments through allure.dynamic / allure.attach.

Identity in Allure (ARCHITECTURE "Allure identity"): the SoC family is a *non-excluded* parameter,
so the same case on the two families never merges into one history entry; the case itself (the
suites' parametrize argument, hidden, see farm/run/allure_output.py) makes the rest of the
history id; host and seed are *excluded* parameters (shown, but not part of the history id). What
the case is (dtype, shape, axes, distributions, layout) is the description's first line
(`case_line`), not parameters: Allure 3 repeats every shown parameter of every case three times in
each of its search indexes (one per environment and one for all), ~1.7 KB a case in all. The slot,
the attempts and the timings are in the description's last line (`run_line`). The `family` label
selects the Allure 3 environment (reports/allurerc.mjs).

Severity (a property of the case, not of its outcome, so that it is stable in history):
  critical  rejection cases (the parameter-check contract, wrong acceptance is silent corruption)
            and cases with NaN/inf inputs (the positions must match exactly)
  normal    every other case

Failure messages: the plugin makes the failure message start with `failure_message(record)`'s
prefix "[<category>] " (CATEGORY_PREFIXES); Allure's categories match on that prefix, with or
without the exception type pytest/allure-pytest put in front ("AssertionError: ", "Failed: ").

Error-distribution plots: every failure and a deterministic 1 in PLOT_SAMPLE_ONE_IN of the passes
(`wants_plot`) get one. Inside the test item `annotate` only attaches the few numbers the plot is
drawn from (`plot_data`, a small JSON attachment named PLOT_DATA_NAME); `farm report` turns them
into the PNGs (farm/run/case_plots.py, which also caps the passes it draws per family and
dtype), so no test item imports matplotlib.

Attachments grow with failures, not with passes (a nightly run is thousands of passes):
  metrics.json         the metrics and the standards' verdicts, compact JSON, without what the
                       description, the parameters, the plot or the worst-elements table already
                       say; for every case that did not pass and for the sampled passes
                       (`wants_metrics`). Every precision case's description carries its headline
                       metrics (`metrics_line`).
  worst elements.csv   every case that did not pass and has worst or NaN/inf-mismatch elements.
  the plot's data      `wants_plot`, see above.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from farm.agent.outcome import CATEGORIES as OUTCOME_CATEGORIES
from suites.case import DEPARTS

# The category of a failed record -> the prefix its failure message must start with.
CATEGORY_PREFIXES = {category: f"[{category}] " for category in OUTCOME_CATEGORIES}

# Allure categories (Allure 2 categories.json format; Allure 3 reads the same keys as its
# compatibility form). reports/categories.json is this list written out (a test keeps them equal).
# The regex allows an exception-type prefix such as "AssertionError: " before the category prefix;
# [\s\S]* makes it work both as Allure 2's full match and Allure 3's search.
_TYPE = r"^(?:[\w.]+: )?"


def _rx(*cats: str) -> str:
    alts = "|".join(c for c in cats)
    return _TYPE + r"\[(?:" + alts + r")\] [\s\S]*"


CATEGORIES = [
    {"name": "Precision failure", "messageRegex": _rx("precision"), "matchedStatuses": ["failed"]},
    {
        "name": "Unexpected acceptance",
        "messageRegex": _rx("unexpected_acceptance"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Unexpected rejection or wrong status",
        "messageRegex": _rx("unexpected_rejection", "wrong_status"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Operator crash",
        "messageRegex": _rx("crash"),
        "matchedStatuses": ["failed", "broken"],
    },
    {
        "name": "Tiling differs from the design, or another suite check",
        "messageRegex": _rx("tiling", "check"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Hang (timed out on two hosts)",
        "messageRegex": _rx("hang"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Not run (devices held by another run)",
        "messageRegex": _rx("not_run"),
        "matchedStatuses": ["broken"],
    },
    {
        "name": "Out of memory (the case needs more than its host has)",
        "messageRegex": _rx("out_of_memory"),
        "matchedStatuses": ["broken"],
    },
    {
        "name": "Write outside the output",
        "messageRegex": _rx("out_of_bounds"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Tiling mismatch (host tiling function against the shared plan)",
        "messageRegex": _rx("tiling_mismatch"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Kernel fault (emulated device)",
        "messageRegex": _rx("kernel_fault"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Emulation policy (CANN accepts it, the emulation refuses it)",
        "messageRegex": _rx("emulation_policy"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Infrastructure",
        "messageRegex": _rx("infrastructure"),
        "matchedStatuses": ["broken", "failed"],
    },
]

EPIC = "LogSoftmaxGrad"
ENVIRONMENT_LABEL = "family"
PLOT_SAMPLE_ONE_IN = 20
# The attachment annotate() leaves for the report step, and what the report step makes of it.
PLOT_DATA_NAME = "error distribution data.json"
PLOT_NAME = "error distribution.png"
PLOT_ERROR_NAME = "plot error"
_NAN_INF_WORDS = ("nan", "inf")


def failure_message(record: Mapping) -> str:
    """The one-line failure message: the category prefix, then the record's message."""
    cat = record.get("category") or (
        "infrastructure" if record.get("outcome") == "broken" else "precision"
    )
    prefix = CATEGORY_PREFIXES.get(cat, f"[{cat}] ")
    msg = " ".join(str(record.get("message") or "").split())  # one line
    return prefix + (msg or f"{record.get('case_id', '?')} {record.get('outcome', '')}").strip()


# --------------------------------------------------------------------------- classification


def is_rejection(record: Mapping) -> bool:
    return (record.get("expect") or {}).get("kind") == "reject"


def has_special_values(record: Mapping) -> bool:
    special = str(record.get("special") or "").lower()
    dists = f"{record.get('y_dist') or ''} {record.get('dy_dist') or ''}".lower()
    return special not in ("", "none") or any(w in dists for w in _NAN_INF_WORDS)


def handles_nan_inf(record: Mapping) -> bool:
    text = " ".join(str(record.get(k) or "") for k in ("special", "y_dist", "dy_dist")).lower()
    return any(w in text for w in _NAN_INF_WORDS) or "mask" in text


def features(record: Mapping) -> list[str]:
    """Allure features of a case, most specific last. Every case has at least one."""
    out = ["rejection" if is_rejection(record) else "precision"]
    suite = str(record.get("suite") or "")
    case_id = str(record.get("case_id") or "")
    if suite == "tiling" or case_id.startswith("tiling") or record.get("feature") == "tiling":
        out.append("tiling")
    if has_special_values(record):
        out.append("special values")
    if record.get("layout") == "strided":
        out.append("strided")
    if record.get("schedule") == "EMPTY" or 0 in (record.get("shape") or []):
        out.append("empty")
    return out


def story(record: Mapping) -> str:
    if is_rejection(record):
        return str((record.get("expect") or {}).get("reason") or "rejection")
    return str(record.get("schedule") or "unknown schedule")


def severity(record: Mapping) -> str:
    if is_rejection(record) or handles_nan_inf(record):
        return "critical"
    return "normal"


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


# The metrics farm.run.plots.error_histogram_png reads ("worst" only without a histogram).
_PLOT_METRICS = ("hist", "mere", "mare", "n", "nonfinite_mismatch")


def plot_data(record: Mapping) -> dict:
    """What `farm.run.plots.error_histogram_png` draws a case's plot from, and nothing more:
    the histogram of relative errors (or, without one, the worst elements' relative errors),
    MERE/MARE, the element count, the NaN/inf mismatches, the dtype (its threshold T) and the
    title (case id, family). The PNG drawn from it equals the one drawn from the whole record."""
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
    return out


# --------------------------------------------------------------------------- attachments


def _json_default(o):
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


# In metrics.json, the metrics a person does not read there: the histogram is the plot's, and
# the worst and NaN/inf-mismatch elements of a case that did not pass are its worst-elements table.
_NOT_IN_METRICS_JSON: tuple[str, ...] = ("hist",)
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
    return json.dumps(out, separators=(",", ":"), default=_json_default, allow_nan=True)


# The headline metrics of a precision case, in its description: (key, label, format).
_HEADLINE = (
    ("mere", "MERE", ".3g"),
    ("mare", "MARE", ".3g"),
    ("rmse", "RMSE", ".3g"),
    ("max_abs", "max abs", ".3g"),
    ("ulp_max", "max ULP", "g"),
    ("bias_ulp", "bias", "+.3f"),
    ("n", "elements", ","),
)


def metrics_line(record: Mapping) -> str | None:
    """One line of the headline metrics ("metrics: MERE 0.00139, MARE 0.0209, ..."), for the
    description: what a person reads of a passed case that has no metrics.json."""
    metrics = record.get("metrics")
    if not isinstance(metrics, Mapping):
        return None
    parts = []
    for key, label, fmt in _HEADLINE:
        v = metrics.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        try:
            text = format(int(v) if fmt in (",", "g") and float(v).is_integer() else v, fmt)
        except (TypeError, ValueError):
            continue
        parts.append(f"{label} {text}" + (" ulp" if key == "bias_ulp" else ""))
    mismatch = metrics.get("nonfinite_mismatch")
    if isinstance(mismatch, (int, float)) and not isinstance(mismatch, bool) and mismatch:
        parts.append(f"NaN/inf mismatches {int(mismatch):,}")
    return "metrics: " + ", ".join(parts) if parts else None


def worst_csv(record: Mapping) -> str | None:
    """The worst elements as CSV: first the positions whose NaN/inf class differs from the
    golden's (metrics["nonfinite"]; their errors are blank, being undefined), then the finite
    elements with the largest relative errors (metrics["worst"]). None when there is neither.

    A kernel that leaves a whole row unwritten has only the first kind: without them the table
    of such a failure would be empty."""
    metrics = record.get("metrics") or {}
    nonfinite = [e for e in (metrics.get("nonfinite") or []) if isinstance(e, Mapping)]
    worst = [e for e in (metrics.get("worst") or []) if isinstance(e, Mapping)]
    if not nonfinite and not worst:
        return None
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["rank", "index", "actual", "golden", "abs_err", "rel_err"])
    rows: list[tuple[Mapping, tuple[str, ...]]] = [(e, ("actual", "golden")) for e in nonfinite]
    rows += [(e, ("actual", "golden", "abs_err", "rel_err")) for e in worst]
    for i, (e, keys) in enumerate(rows, 1):
        idx = e.get("index")
        idx_s = "(" + ", ".join(str(int(x)) for x in idx) + ")" if idx is not None else ""
        values = [
            _fmt(e.get(k)) if k in keys else "" for k in ("actual", "golden", "abs_err", "rel_err")
        ]
        w.writerow([i, idx_s, *values])
    return buf.getvalue()


def _fmt(v) -> str:
    if v is None:
        return ""
    try:
        return f"{float(v):.9g}"
    except (TypeError, ValueError):
        return str(v)


DEPARTS_TAG = "departs from its source"


@dataclass(frozen=True)
class Annotations:
    """What `annotate` says of a case in its running Allure test: labels as (type, value) and
    parameters as (name, value, excluded), in the order allure.dynamic is given them."""

    title: str
    labels: list[tuple[str, str]]
    parameters: list[tuple[str, str, bool]]
    description: str


def departs(record: Mapping) -> bool:
    """Whether an outside source expected other than the contract: its note says so. A note that
    only says what the farm could not express (an importer's) is shown, not tagged."""
    return DEPARTS in str(record.get("note") or "")


def case_annotations(record: Mapping, *, plot_one_in: int = PLOT_SAMPLE_ONE_IN) -> Annotations:
    """The title, labels, parameters and description of one case's Allure result."""
    case_id = str(record.get("case_id", ""))
    family = str(record.get("family", ""))
    labels = [("epic", EPIC)] + [("feature", f) for f in features(record)]
    labels += [("story", story(record)), ("severity", severity(record))]
    labels.append((ENVIRONMENT_LABEL, family))
    if record.get("soc"):
        labels.append(("soc", str(record["soc"])))
    # No tag repeats the family (the environment), the dtype (the case id and the description)
    # or the schedule (the story): the report repeats every tag of every case in its trees and
    # search indexes.
    if departs(record):
        labels.append(("tag", DEPARTS_TAG))

    # Identity: the family and the case (below) make the history id.
    parameters = [("family", family, False)]
    # The suites parametrize on the Case object: allure-pytest adds it as a non-excluded "case"
    # parameter showing the Case repr, and the history id takes its original value. Show the case
    # id instead: allure-pytest then changes only the displayed value, never the history id nor
    # `excluded`. (A test without that argument gets "case" as a new, excluded parameter.)
    # It is hidden as it is written (farm/run/allure_output.py): the case id is the title.
    parameters.append(("case", case_id, True))
    # Shown, but not identity.
    parameters.append(("host", host_name(record), True))
    hostname = record.get("hostname") or record.get("host")
    if hostname and str(hostname) != host_name(record):
        parameters.append(("hostname", str(hostname), True))
    parameters.append(("seed", str(record.get("seed", "")), True))
    # The slot, the attempts and the timings are in the description's last line (run_line), not
    # parameters: the report repeats every parameter of every case in its search indexes.
    description = _description(record, detailed=detailed(record, plot_one_in))
    return Annotations(case_id, labels, parameters, description)


def annotate(record: Mapping, *, plot_one_in: int = PLOT_SAMPLE_ONE_IN) -> None:
    """Label, parametrise and attach one case's result in the running Allure test."""
    import allure

    from farm.run.allure_output import apply_annotations

    apply_annotations(case_annotations(record, plot_one_in=plot_one_in))

    if wants_metrics(record, plot_one_in):
        text = metrics_json(record)
        if text:
            allure.attach(text, name="metrics.json", attachment_type=allure.attachment_type.JSON)
    if record.get("outcome") != "passed":
        table = worst_csv(record)
        if table:
            allure.attach(
                table, name="worst elements.csv", attachment_type=allure.attachment_type.CSV
            )
    if wants_plot(record, plot_one_in):
        # The PNG is drawn by the report step (farm/run/case_plots.py), not here.
        try:
            data = json.dumps(plot_data(record), separators=(",", ":"), default=_json_default)
        except Exception as exc:  # noqa: BLE001 - a plot must never change a case's verdict
            allure.attach(
                plot_error_text(exc),
                name=PLOT_ERROR_NAME,
                attachment_type=allure.attachment_type.TEXT,
            )
        else:
            allure.attach(data, name=PLOT_DATA_NAME, attachment_type=allure.attachment_type.JSON)


def run_line(record: Mapping, every_timing: bool = True) -> str:
    """Where and how long the case ran, for the last line of its description:
    "ran on emu-a2-01:1; time (s): backend 0.0476, golden 0.00102, total 0.0741, wall 0.521"
    (the slot, or else the host; the attempts when more than one; seconds, 3 significant digits,
    the timings' keys without their "_s"; without ``every_timing``, the wall time only)."""
    parts = []
    where = record.get("slot") or host_name(record)
    if where:
        attempts = record.get("attempts")
        more = isinstance(attempts, int) and not isinstance(attempts, bool) and attempts > 1
        parts.append(f"ran on {where}" + (f", attempts {attempts}" if more else ""))
    timings = record.get("timings")
    if isinstance(timings, Mapping) and not every_timing:
        timings = {k: v for k, v in timings.items() if k == "wall_s"}
    if isinstance(timings, Mapping) and timings:
        shown = []
        for k, v in timings.items():
            name = str(k)[:-2] if str(k).endswith("_s") else str(k)
            try:
                shown.append(f"{name} {float(v):.3g}")
            except (TypeError, ValueError):
                shown.append(f"{name} {v}")
        parts.append("time (s): " + ", ".join(shown))
    return "; ".join(parts)


def plot_error_text(exc: BaseException) -> str:
    """The text of the "plot error" attachment that stands in for a plot that failed."""
    return f"plot failed: {type(exc).__name__}: {exc}"


def host_name(record: Mapping) -> str:
    """The pool host that ran the case, by its inventory name (as in environment.properties).

    The slot ("<host>:<device>") names it; the record's "host" is what the agent reported, which
    for emulated hosts sharing one machine is that machine's hostname for all of them."""
    slot = str(record.get("slot") or "")
    if ":" in slot:
        return slot.rsplit(":", 1)[0]
    return str(record.get("host") or "")


def _tuple_str(x) -> str:
    if x is None:
        return ""
    return "(" + ", ".join(str(v) for v in x) + ("," if len(x) == 1 else "") + ")"


def case_line(record: Mapping) -> str | None:
    """What the case is, in one line ("case: float16, shape (4, 1024), dim -1, y uniform, dy
    normal"): the case id says it only for the suites' own cases, not for imported ones."""
    parts = []
    if record.get("dtype"):
        parts.append(str(record["dtype"]))
    if record.get("shape") is not None:
        parts.append(f"shape {_tuple_str(record['shape'])}")
    axes = record.get("axes")
    if record.get("api") == "dim" and axes is not None and len(axes) == 1:
        parts.append(f"dim {axes[0]}")
    elif axes is not None:
        parts.append(f"axes {_tuple_str(axes)}")
    for key, name in (("y_dist", "y"), ("dy_dist", "dy")):
        if record.get(key):
            parts.append(f"{name} {record[key]}")
    if record.get("special") not in (None, "", "none"):
        parts.append(f"special {record['special']}")
    if record.get("layout") not in (None, "", "contiguous"):
        parts.append(f"layout {record['layout']}")
    return "case: " + ", ".join(parts) if parts else None


def checks_line(record: Mapping) -> str | None:
    """Which layer of the operator's host code decided the call (farm/agent/record.py
    HostChecks), where there is more to say than "accepted": a refusal, the shared checks
    disagreeing, a tiling mismatch."""
    checks = record.get("checks") or {}
    layer, host, shared = checks.get("decided_by"), checks.get("host"), checks.get("shared")
    if not checks or (not layer and host == shared and not checks.get("tiling_mismatch")):
        return None
    parts = [f"decided by the {layer} ({host})" if layer else "accepted by every layer"]
    if shared is not None:
        parts.append(f"the shared checks: {shared}")
    if checks.get("tiling_mismatch"):
        parts.append(f"tiling mismatch: {checks['tiling_mismatch']}")
    return "host checks: " + "; ".join(parts)


def device_line(record: Mapping) -> str | None:
    """Where the device path ran the case (farm/agent/record.py DeviceRun): the runtime (the
    emulated ACL runtime, or CANN's version), the device id, the entry and the device's time."""
    run = record.get("device_run")
    if not run:
        return None
    took = run.get("device_s")
    timed = f"; {took * 1e3:.3f} ms on the device (ACL events)" if took is not None else ""
    return (
        f"device: {run.get('entry')} on device {run.get('device_id')} of "
        f"{run.get('runtime')}{timed}"
    )


def _description(record: Mapping, detailed: bool = True) -> str:
    """The case's description: what it is, expectation and outcome, note and origin, the headline
    metrics, where and how long it ran; ``detailed`` (see :func:`detailed`), also the standards'
    verdict, the operator's message, the tiling and every timing."""
    exp = record.get("expect") or {}
    if exp.get("kind") == "reject":
        want = f"expect rejection: {exp.get('reason')} (status {exp.get('status')})"
    else:
        want = f"expect precision: {exp.get('standard')}" + (
            f" {exp['level']}" if exp.get("level") else ""
        )
    got = f"got status {record.get('status')}"
    if record.get("reason"):
        got += f", reason {record['reason']}"
    t = record.get("tiling")
    paragraphs = [
        case_line(record),
        f"**{want}**; {got}.",
        record.get("note") and f"**note:** {record['note']}",
        record.get("origin") and f"from: {record['origin']}",
        detailed and record.get("message") and str(record["message"]),
        metrics_line(record),
        detailed and record.get("op_message") and f"operator message: `{record['op_message']}`",
        detailed and checks_line(record),
        device_line(record),
        detailed and t and "tiling: " + ", ".join(f"{k}={v}" for k, v in t.items()),
        run_line(record, every_timing=detailed),
    ]
    return "\n\n".join(p for p in paragraphs if p)


# --------------------------------------------------------------------------- run-level files


def properties_text(props: Mapping[str, str]) -> str:
    """environment.properties: one `key=value` line each, in order (the report's Metadata)."""
    return "".join(f"{_props_escape(k, key=True)}={_props_escape(v)}\n" for k, v in props.items())


def _props_escape(s: str, key: bool = False) -> str:
    out = []
    for ch in str(s):
        if ch in "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif key and ch in " =:#!":
            out.append("\\" + ch)
        elif ord(ch) > 0x7E or ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def environment_properties(run_meta: Mapping) -> dict[str, str]:
    from farm.pool.build import describe
    from farm.run.metadata import inventory_list, planted_bug

    pkg = run_meta.get("package") or {}
    target = run_meta.get("target") or pkg.get("target")
    props = {
        "operator": EPIC,
        "run.id": run_meta.get("run_id"),
        "run.tier": run_meta.get("tier"),
        "run.cases": run_meta.get("label"),
        "package.version": run_meta.get("package_version") or pkg.get("version"),
        "package.sha256": run_meta.get("package_sha256") or pkg.get("sha256"),
        # farm run --plant-bug: its failures are the bug's, a test of the farm
        "package.planted_bug": planted_bug(run_meta),
        # e.g. "ascendc-cpu (the real Ascend C kernel on the CPU emulation)"
        "target": describe(target) if target else None,
        "backend": run_meta.get("backend"),
        "git.commit": run_meta.get("git_commit"),
        "farm.version": run_meta.get("farm_version"),
    }

    for h in inventory_list(run_meta.get("inventory")):
        desc = str(h.get("soc") or "?")
        if h.get("family"):
            desc += f" ({h['family']})"
        props[f"host.{h.get('name')}"] = desc
    return {k: str(v) for k, v in props.items() if v not in (None, "")}


def executor_info(run_meta: Mapping | None = None, env: Mapping | None = None) -> dict:
    """executor.json from the CI's variables (GitHub Actions, GitLab, Jenkins), else local."""
    env = os.environ if env is None else env
    run_meta = run_meta or {}
    name = run_meta.get("run_id") or "farm run"
    if env.get("GITHUB_ACTIONS") or env.get("GITHUB_RUN_ID"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        repo = env.get("GITHUB_REPOSITORY", "")
        run_url = f"{server}/{repo}/actions/runs/{env.get('GITHUB_RUN_ID', '')}"
        return {
            "name": "GitHub Actions",
            "type": "github",
            "url": f"{server}/{repo}",
            "buildOrder": _int(env.get("GITHUB_RUN_NUMBER")),
            "buildName": f"{env.get('GITHUB_WORKFLOW', 'workflow')} #"
            f"{env.get('GITHUB_RUN_NUMBER', '')} ({name})",
            "buildUrl": run_url,
            "reportName": f"LogSoftmaxGrad farm {name}",
        }
    if env.get("GITLAB_CI") or env.get("CI_JOB_URL") or env.get("CI_PIPELINE_ID"):
        return {
            "name": "GitLab CI",
            "type": "gitlab",
            "url": env.get("CI_PROJECT_URL", ""),
            "buildOrder": _int(env.get("CI_PIPELINE_IID") or env.get("CI_PIPELINE_ID")),
            "buildName": f"{env.get('CI_JOB_NAME', 'job')} #{env.get('CI_JOB_ID', '')} ({name})",
            "buildUrl": env.get("CI_JOB_URL") or env.get("CI_PIPELINE_URL", ""),
            "reportName": f"LogSoftmaxGrad farm {name}",
        }
    if env.get("BUILD_URL") or env.get("JENKINS_URL"):
        return {
            "name": "Jenkins",
            "type": "jenkins",
            "url": env.get("JENKINS_URL", ""),
            "buildOrder": _int(env.get("BUILD_NUMBER")),
            "buildName": f"{env.get('JOB_NAME', 'job')} #{env.get('BUILD_NUMBER', '')} ({name})",
            "buildUrl": env.get("BUILD_URL", ""),
            "reportName": f"LogSoftmaxGrad farm {name}",
        }
    ci = "CI" if env.get("CI") else "local"
    return {
        "name": ci,
        "type": ci.lower(),
        "buildName": str(name),
        "reportName": f"LogSoftmaxGrad farm {name}",
    }


def _int(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def write_results_extras(results_dir: str | os.PathLike, run_meta: Mapping) -> list[Path]:
    """Write categories.json, environment.properties and executor.json into results_dir."""
    d = Path(results_dir)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    p = d / "categories.json"
    p.write_text(json.dumps(CATEGORIES, indent=2) + "\n", encoding="utf-8")
    written.append(p)
    p = d / "environment.properties"
    p.write_text(properties_text(environment_properties(run_meta)), encoding="utf-8")
    written.append(p)
    p = d / "executor.json"
    info = {k: v for k, v in executor_info(run_meta).items() if v not in (None, "")}
    p.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    written.append(p)
    return written
