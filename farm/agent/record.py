"""The result record: what every case yields exactly once, whoever makes it.

One typed definition for a record's whole journey: the agent makes it (farm/agent/execute.py),
the dispatcher adds where it ran (farm/run/dispatch.py), the pytest plugin appends it to
``<run>/records/<worker>.jsonl``, the runner writes the summary, the store keeps it as JSON with a
few indexed columns (farm/results/store.py), and compare and the Allure glue read it back. The
column lists below are derived from these types, so a field is named in one place.

Standard library only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from typing import (
    Any,
    Literal,
    TypedDict,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from farm.util.errors import ProtocolError

# The JSON form of a record in the store and in each line of a run's records files
# (farm/run/records_file.py RecordWriter), so that a record read from its line is stored as the
# line is.
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
    layer: str  # the layer checked on its own: "" the whole call, "registration", "tiling", "infer"


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

    decided_by: str  # the layer that refused the call: front (the aclnn layer), registration,
    # tiling; "" accepted (a tiling case: "tiling", or "" where the tiling function accepted it)
    host: str  # the operator's verdict (a golden.contract reason name, "ok" when accepted)
    host_status: int
    shared: str  # the shared checks' verdict (lsg::validate, the twin's), when the call was read
    shared_status: int
    shared_message: str  # only where the shared checks disagree with the operator
    tiling_mismatch: str  # what the host tiling gave the kernel that the shared plan did not plan


class Registration(TypedDict, total=False):
    """What a registration case read of the operator's registration (farm/agent/backends/layers.py)
    and how it differs from the contract's table (golden/registration.py)."""

    source: str  # where it was read: the emulated OpDef of a library, or an ops-info JSON file
    family: str
    declared: dict[str, Any]  # the family's configuration, golden/registration.py's form
    problems: list[str]  # every departure from the contract's table; [] when it matches


class Inference(TypedDict, total=False):
    """What an infer case's node was, what the registered inference functions said of it
    (farm/agent/backends/layers.py infer) and what the contract's inference is
    (golden/inference.py: {"shape_status", "shape", "dtype_status", "dtype"} both)."""

    source: str  # the entry that ran them, and its library
    node: list[dict[str, Any]]  # the node's inputs by index: {"dtype", "shape"}
    inferred: dict[str, Any]
    expected: dict[str, Any]
    problems: list[str]  # every departure, or the registration missing; [] when it matches


class DeviceRun(TypedDict, total=False):
    """Where and how the operator ran on the device path (the acl backend)."""

    runtime: str  # "lsg emulated ACL runtime ...; soc=...; devices=N", or
    # "CANN <version>; driver <version>; soc=..." on a device
    emulated: bool  # the emulated ACL runtime (op/acl_emu), where the suite's checks are exact
    op_api: str  # the custom operator's op-api library the entry came from
    device_id: int
    entry: str  # the op-api entry called: aclnnLogSoftmaxBackward, or ...Dims for several dims
    device_s: float | None  # between ACL events around phase two on the device's stream
    # How far into the workspace the call's device tasks reached (emulated runtime only): what
    # the aclnn layer used of what it asked for (suites/workspace.py checks the two agree).
    workspace_reached: int


class Hang(TypedDict, total=False):
    """Why a case is said to hang (farm/run/dispatch.py): where it timed out, and the canary
    its host answered right after, when that is what decided it."""

    hosts: list[str]
    timeouts: list[float]  # each host's timeout, seconds
    canary: str  # the canary's cases, answered right after the timeout


class ErrorHistogram(TypedDict, total=False):
    """metrics["hist"]: log10(relative error) of every element (farm/agent/histogram.py)."""

    edges: list[float]
    counts: list[int]
    zeros: int
    nonfinite: int
    n: int


class BoundHistogram(TypedDict, total=False):
    """metrics["bound_hist"]: every compared element's error over its bound, by powers of two
    (golden/ratio_hist.py): bin i holds 2^(log2_lo + i - 1) < error / bound <= 2^(log2_lo + i),
    the end bins all beyond; an error of 0 counted in zeros."""

    log2_lo: int
    counts: list[int]
    zeros: int


# The parts of a record's metrics (otherwise a free dict: golden/metrics.py) that the report
# draws, checked by parse_record as the record's own fields are.
METRIC_PARTS: dict[str, type] = {"hist": ErrorHistogram, "bound_hist": BoundHistogram}


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
    registration: Registration  # a registration case's reading of the registration
    inference: Inference  # an infer case's node, what was inferred and what was due
    device_run: DeviceRun  # the acl backend's runtime and device
    # What the operator's code left alive after the call (the acl backend on the emulated
    # runtime: farm/agent/backends/acl_handles.py), in words: a product failure, resource_leak.
    leaked: str
    # What its aclnn layer answered wrongly on the error paths tried after a good call
    # (farm/agent/backends/acl_probes.py), in words: a product failure, wrong_status.
    error_paths: str
    inputs_sha256: str
    # How it was judged (agent): every standard's verdict, the gate's, all metrics (JSON-safe:
    # NaN and inf as strings), the error histogram under metrics["hist"] and every element's
    # error over its bound under metrics["bound_hist"] (METRIC_PARTS).
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
    hang: Hang  # the case hangs: it timed out on two hosts, or on one that then ran its canary
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
    fields = cast(dict[str, object], record)  # the case's fields, copied by name
    fields.update({k: data[k] for k in CASE_FIELDS if k in data})
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
    cast(dict[str, object], record).update(fields)  # ResultRecord's fields, by name
    return with_case(record, case)


def parse_record(data: object, where: str) -> ResultRecord:
    """The record an agent sent (the ``result`` of its run-case reply), checked against
    :class:`ResultRecord`: every field it declares has the declared type (nested records too;
    an int passes for a float, as JSON writes 0.0 as 0), and ``outcome`` is there. Fields this
    orchestrator does not declare are kept as they came (an agent's extras: the store keeps a
    record whole). A malformed record is a one-line ProtocolError naming ``where`` and the field.
    """
    if not isinstance(data, dict):
        raise _malformed(where, "the record", data, "a JSON object")
    if "outcome" not in data:
        raise ProtocolError(
            f"{where}: the record has no outcome; the agent and the orchestrator disagree on "
            "the record's form: redeploy the agent (farm deploy)"
        )
    _check_fields(data, ResultRecord, where, "")
    metrics = data.get("metrics")
    if isinstance(metrics, dict):
        for name, kind in METRIC_PARTS.items():
            if name in metrics and not _conforms(metrics[name], kind, where, f"metrics.{name}"):
                raise _malformed(where, f"field metrics.{name}", metrics[name], "an object")
    return cast(ResultRecord, data)  # checked against ResultRecord just above


def _check_fields(data: Mapping[str, object], kind: type, where: str, prefix: str) -> None:
    for name, hint in _hints(kind).items():
        if name in data and not _conforms(data[name], hint, where, f"{prefix}{name}"):
            raise _malformed(where, f"field {prefix}{name}", data[name], _describe(hint))


def _conforms(value: object, hint: Any, where: str, path: str) -> bool:
    """Whether ``value`` (decoded JSON) is of type ``hint``; a nested record's own fields are
    checked here too (raising for the first wrong one, by its full path)."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    origin, args = get_origin(hint), get_args(hint)
    if origin is Union or origin is types.UnionType:
        return any(_conforms(value, option, where, path) for option in args)
    if origin is Literal:
        return value in args
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return False
        _check_fields(value, hint, where, f"{path}.")
        return True
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0], where, path) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            isinstance(k, str) and _conforms(v, args[1], where, f"{path}.{k}")
            for k, v in value.items()
        )
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return get_type_hints(kind)


def _describe(hint: Any) -> str:
    if hint is type(None):
        return "null"
    origin, args = get_origin(hint), get_args(hint)
    if origin is Union or origin is types.UnionType:
        return " or ".join(_describe(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if is_typeddict(hint):
        return "an object"
    if origin is list:
        return "a list"
    if origin is dict:
        return "an object"
    return getattr(hint, "__name__", str(hint))


def _malformed(where: str, what: str, value: object, expected: str) -> ProtocolError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ProtocolError(
        f"{where}: {what} is {shown}, not {expected}; the agent and the orchestrator disagree "
        "on the record's form: redeploy the agent (farm deploy)"
    )
