"""One case's description in its Allure result: what the case is (`case_line`), what it expected
and got, its note and origin, its headline metrics (`metrics_line`), what the host checks and the
device said, where and how long it ran (`run_line`). What the case is goes here rather than into
parameters: Allure 3 repeats every shown parameter of every case three times in each of its search
indexes (one per environment and one for all), ~1.7 KB a case in all. A case that passed outside
the plot sample gets the short form (farm/run/allure/attachments.py detailed).
"""

from __future__ import annotations

from collections.abc import Mapping

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


def description(record: Mapping, detailed: bool = True, repro: str = "") -> str:
    """The case's description: what it is, expectation and outcome, note and origin, the headline
    metrics, where and how long it ran; ``detailed`` (farm/run/allure/attachments.py detailed),
    also the standards' verdict, the operator's message, the tiling and every timing; ``repro``
    (farm/run/allure/repro_line.py), of a case that did not pass, the command that reruns it."""
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
        repro and record.get("outcome") != "passed" and f"rerun it alone: `{repro}`",
    ]
    return "\n\n".join(p for p in paragraphs if p)
