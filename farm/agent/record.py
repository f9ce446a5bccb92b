"""The result record: what every case yields exactly once, whoever makes it.

One typed definition for a record's whole journey: the agent makes it (farm/agent/execute.py),
the dispatcher adds where it ran (farm/run/dispatch.py), the pytest plugin appends it to
``<run>/records/<worker>.jsonl``, the runner writes the summary, the store keeps it as JSON with a
few indexed columns (farm/results/store.py), and compare and the Allure glue read it back. The
column lists below are derived from these types, so a field is named in one place.

Standard library only: this module ships to hosts with the agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

# The JSON form of a record in the store and in each line of a run's records files
# (farm/run/plugin.py RecordWriter), so that a record read from its line is stored as the line is.
JSON_FORM: dict[str, Any] = {"separators": (",", ":"), "sort_keys": True}

Outcome = Literal["passed", "failed", "broken"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "broken")


class CaseFields(TypedDict, total=False):
    """The case's own description, copied into every record so that a record stands alone."""

    family: str
    dtype: str
    shape: list[int]
    axes: list[int]
    api: str
    schedule: str
    y_dist: str
    dy_dist: str
    special: str
    layout: str
    seed: int
    expect: dict[str, Any]  # suites/case.py: kind (precision | reject), standard, level, status
    origin: str  # the matrix section or case file (and entry) it came from
    note: str  # where an outside source's expectation departs from the contract


class HeadlineMetrics(TypedDict, total=False):
    """The metrics that regressions are measured on (golden/metrics.py computes many more)."""

    mere: float
    mare: float
    rmse: float
    max_abs: float


class Timings(TypedDict, total=False):
    backend_s: float  # the operator call alone (agent)
    golden_s: float  # golden, metrics and standards (agent)
    total_s: float  # the whole case in the agent
    wall_s: float  # the whole case seen from the dispatcher, retries included


class StandardVerdict(TypedDict, total=False):
    passed: bool
    reason: str
    gated: bool  # whether the case's verdict depends on it
    applicable: str  # why it is (or is not) a standard every correct kernel passes here


class Verdict(TypedDict, total=False):
    standard: str | None  # the standard the case asked for (golden.judge: gated if applicable)
    level: str | None  # benchmark-ratio's L0/L1/L2
    passed: bool
    reason: str
    gates: list[str]  # every standard the verdict depends on (error-bound first)


class HostChecks(TypedDict, total=False):
    """What each layer of phase one said of the call, where the library can say (the emulated
    real operator, op/ascendc_cpu/abi: lsg_acpu_last_checks)."""

    decided_by: str  # the layer that refused the call: front, registration, tiling; "" accepted
    host: str  # the operator's verdict (a golden.contract reason name, "ok" when accepted)
    host_status: int
    shared: str  # the shared checks' verdict (lsg::validate, the twin's), when the call was read
    shared_status: int
    shared_message: str  # only where the shared checks disagree with the operator
    tiling_mismatch: str  # what the host tiling gave the kernel that the shared plan did not plan


class DeviceRun(TypedDict, total=False):
    """Where and how the operator ran on the device path (the acl backend)."""

    runtime: str  # "lsg emulated ACL runtime ...; soc=...; devices=N", or
    # "CANN <version>; driver <version>; soc=..." on a device
    op_api: str  # the custom operator's op-api library the entry came from
    device_id: int
    entry: str  # the op-api entry called: aclnnLogSoftmaxBackward, or ...Dims for several dims
    device_s: float | None  # between ACL events around phase two on the device's stream


class ResultRecord(CaseFields, total=False):
    case_id: str
    # What the operator did (agent).
    status: int | None  # aclnn status; None where the operator never ran
    reason: str | None  # golden.contract reason name of a rejection
    op_message: str
    workspace: int
    tiling: dict[str, Any] | None
    out_guard_ok: bool | None  # the storage around a strided out untouched (None: not checked)
    checks: HostChecks  # what each layer of the operator's checks said (emulated real operator)
    device_run: DeviceRun  # the acl backend's runtime and device
    inputs_sha256: str
    # How it was judged (agent): every standard's verdict, the gate's, all metrics (JSON-safe:
    # NaN and inf as strings) and the error histogram under metrics["hist"].
    metrics: dict[str, Any] | None
    standards: dict[str, StandardVerdict]
    verdict: Verdict | None
    # The one outcome of the case.
    outcome: Outcome
    category: str | None  # farm/agent/outcome.py CATEGORIES; None when passed
    message: str
    # Where and how it ran (dispatcher).
    host: str | None  # the inventory host
    machine: str | None  # the hostname the agent reported
    soc: str | None
    slot: str | None
    attempts: int
    infra_errors: list[str]
    attempts_log: list[dict[str, Any]]  # one entry per attempt when more than one was made
    notes: list[str]  # what happened on the way (a crash before a pass, a wait for a device)
    hang: dict[str, Any]  # the case timed out on two hosts: hosts, timeouts (and the canary)
    not_run: str  # why it never ran ("busy": another run held every device of its family)
    busy: dict[str, Any]  # the busy devices and their holder
    timings: Timings


CASE_FIELDS: tuple[str, ...] = tuple(CaseFields.__annotations__)
METRIC_COLUMNS: tuple[str, ...] = tuple(HeadlineMetrics.__annotations__)
TIMING_COLUMNS: tuple[str, ...] = tuple(Timings.__annotations__)
# What the run summary lists of each case that did not pass.
FAILURE_FIELDS: tuple[str, ...] = ("case_id", "outcome", "category", "message", "host")


def with_case(
    record: ResultRecord, case: Any, data: Mapping[str, object] | None = None
) -> ResultRecord:
    """Every record carries the case's own description. `case` is a suites.case.Case (not
    imported: the agent does not ship suites/); `data` is case.to_dict() when the caller already
    has it."""
    data = data or case.to_dict()
    record["case_id"] = case.id
    record.update({k: data[k] for k in CASE_FIELDS if k in data})  # type: ignore[typeddict-item]
    return record


def broken_record(case: Any, message: str, **fields: Any) -> ResultRecord:
    """The record of a case the pool could not run (an infrastructure outcome)."""
    record: ResultRecord = {
        "outcome": "broken",
        "category": "infrastructure",
        "message": message,
        "status": None,
        "reason": None,
        "op_message": "",
        "metrics": None,
        "standards": {},
        "verdict": None,
        "tiling": None,
        "host": None,
        "soc": None,
        "slot": None,
        "attempts": 0,
        "timings": {},
    }
    record.update(fields)  # type: ignore[typeddict-item]
    return with_case(record, case)
