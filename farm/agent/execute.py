"""One case on this host: make the inputs from the seed, run the operator, judge the result.

Runs inside the agent, so it imports only numpy, ml_dtypes, golden/ and the backends. What goes
back is one small record: metrics, verdicts, a histogram of errors, never the tensors.
"""

from __future__ import annotations

import math
import time
from typing import Any, cast

import numpy as np

from farm.agent import coverage_dump
from farm.agent.backends import BACKENDS
from farm.agent.backends.base import Backend
from farm.agent.histogram import HistogramAccumulator
from farm.agent.identity import Identity
from farm.agent.outcome import classify, is_allocation_failure, out_of_memory
from farm.agent.record import DeviceRun, HostChecks, ResultRecord, Verdict
from farm.agent.request import CaseRequest, Expectation
from farm.util.errors import HostLacks
from golden import dtypes, inputs, layouts
from golden.benchmark import TorchMissing
from golden.judge import judge_case
from golden.tolerance import Tolerance


def make_call_inputs(case: CaseRequest) -> tuple[np.ndarray | None, np.ndarray | None]:
    """dy and y as the case describes them (suites/case.py to_dict): values from the seed, with
    its value forms (range, fill) and special placement, its perturbations (other dtype, other
    shape), each placed in its layout over a NaN-filled storage (golden/layouts.py), so that a
    kernel reading outside its view reads NaN."""
    shape = tuple(case["shape"])
    given: dict[str, Any] = {
        "y_range": _pair(case.get("y_range")),
        "dy_range": _pair(case.get("dy_range")),
        "y_fill": _number(case.get("y_fill")),
        "dy_fill": _number(case.get("dy_fill")),
        "special_at": case.get("special_at") or "random",
    }
    dy, y = inputs.make_inputs(
        shape,
        case["dtype"],
        _generation_axes(case),
        case["y_dist"],
        case["dy_dist"],
        case["special"],
        case["seed"],
        **given,
    )
    y_extents = case.get("y_shape")
    if y_extents is not None:
        y_shape = tuple(y_extents)
        _, y = inputs.make_inputs(
            y_shape,
            case["dtype"],
            _generation_axes(case, y_shape),
            case["y_dist"],
            case["dy_dist"],
            "none",
            case["seed"],
            **given,
        )
    y_dtype = case.get("y_dtype")
    if y_dtype:
        y = dtypes.round_to(dtypes.to_float64(y), y_dtype)
    dy, y = layouts.place(dy, case_layout(case, "dy")), layouts.place(y, case_layout(case, "y"))
    missing = case.get("missing")
    return (None if missing == "dy" else dy), (None if missing == "y" else y)


def case_layout(case: CaseRequest, name: str) -> layouts.Layout:
    """The layout of tensor `name` ("dy", "y", "out"); a case dict from before per-tensor
    layouts ({"layout": "strided"}) means dy and y strided, out contiguous."""
    value = case.get(f"{name}_layout")
    if value is None:
        value = "strided" if case.get("layout") == "strided" and name != "out" else "contiguous"
    return layouts.parse(value)


def _pair(value) -> tuple[float, float] | None:
    return None if value is None else (float(value[0]), float(value[1]))


def _number(value) -> float | None:
    """A fill from its JSON form: a number, or "inf", "-inf", "nan"."""
    return None if value is None else float(value)


def _generation_axes(case: CaseRequest, shape: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The reduce axes for generating y; an invalid axis list falls back to the last axis so
    that rejection cases still get well-formed data."""
    shape = tuple(case["shape"]) if shape is None else shape
    n = max(len(shape), 1)
    axes = tuple(a + n if a < 0 else a for a in case["axes"])
    if (
        axes
        and all(0 <= a < n for a in axes)
        and sorted(axes) == list(range(min(axes), max(axes) + 1))
    ):
        return axes
    return (n - 1,)


def strided_view(a: np.ndarray) -> np.ndarray:
    """The same values as a non-contiguous view: every other element along the last axis of
    extent > 1 of a NaN-filled wider buffer (golden/layouts.py "strided")."""
    return layouts.place(a, "strided")


def descriptor_only(case: CaseRequest) -> bool:
    """Whether the case names a dtype that exists only as a descriptor (a complex tensor)."""
    return any(case.get(key) in dtypes.DESCRIPTOR_ONLY for key in ("dtype", "y_dtype", "out_dtype"))


def run_case(case: CaseRequest, backend: str, device: int, identity: Identity) -> ResultRecord:
    """The case's one record; under `farm coverage`, the coverage build's counters of the case
    written into its own directory (farm/agent/coverage_dump.py)."""
    try:
        return _run_case_record(case, backend, device, identity)
    finally:
        coverage_dump.after_case(case["id"])


def _run_case_record(
    case: CaseRequest, backend: str, device: int, identity: Identity
) -> ResultRecord:
    """The case's one record. An allocation that fails (numpy's MemoryError, the library's
    std::bad_alloc) is the case's outcome, never an exception: an exception is the host's
    infrastructure error, and would quarantine every host the case is tried on."""
    started = time.perf_counter()
    try:
        return _run_case(case, backend, device, identity, started)
    except TorchMissing as exc:  # PyTorch there but not importable: another host may have it
        raise HostLacks(str(exc)) from None
    except Exception as exc:
        if not is_allocation_failure(exc):
            raise
        outcome, category, message = out_of_memory(exc)
    # Out of the handler: the traceback's frames, and the arrays they held, are released.
    return {
        "case_id": case["id"],
        "status": None,
        "reason": None,
        "op_message": "",
        "workspace": 0,
        "tiling": None,
        "out_guard_ok": None,
        "metrics": None,
        "standards": {},
        "verdict": None,
        "outcome": outcome,
        "category": category,
        "message": message,
        "host": identity.host,
        "soc": identity.soc,
        "timings": {"total_s": time.perf_counter() - started},
    }


def _run_case(
    case: CaseRequest, backend: str, device: int, identity: Identity, started: float
) -> ResultRecord:
    if backend == "acl":
        from farm.agent.backends.acl import declare_host

        declare_host(identity.soc, identity.devices)  # one agent may serve several hosts
    if case.get("layer"):  # one layer of the operator on its own (suites/matrix_layers.py)
        from farm.agent.layer_checks import run_layer_case

        layered = run_layer_case(case, backend, identity.soc, started)
        layered.update({"host": identity.host, "soc": identity.soc})
        timings = layered.setdefault("timings", {})
        timings["total_s"] = time.perf_counter() - started
        return layered
    if descriptor_only(case):
        dy = y = None
        result = _describe_only(case, backend, identity, device)
    else:
        dy, y = make_call_inputs(case)
        result = call_operator(case, dy, y, backend, identity.soc, device)
    backend_s = result.seconds

    record: ResultRecord = {
        "case_id": case["id"],
        "status": result.status,
        "reason": result.reason,
        "op_message": result.message,
        "workspace": result.workspace,
        "tiling": result.tiling,
        "out_guard_ok": result.out_guard_ok,
        "metrics": None,
        "standards": {},
        "verdict": None,
        # The same case gives the same bytes on every host: the canary checks it, repro shows it.
        "inputs_sha256": inputs.sha256_of(*(t for t in (dy, y) if t is not None)),
    }
    if result.checks is not None:
        record["checks"] = cast(HostChecks, result.checks)
    if result.device_run is not None:
        record["device_run"] = cast(DeviceRun, result.device_run)
    if result.leaked:
        record["leaked"] = result.leaked
    if result.error_paths:
        record["error_paths"] = result.error_paths
    golden_s = 0.0
    expect = case["expect"]
    judgeable = expect["kind"] == "precision" and dy is not None and y is not None
    if result.status == 0 and result.out is not None and judgeable:
        golden_started = time.perf_counter()
        record.update(_judge(case, dy, y, result.out, expect))
        golden_s = time.perf_counter() - golden_started
    outcome, category, message = classify(expect, record)
    record.update(
        {
            "outcome": outcome,
            "category": category,
            "message": message,
            "host": identity.host,
            "soc": identity.soc,
            "timings": {
                "backend_s": backend_s,
                "golden_s": golden_s,
                "total_s": time.perf_counter() - started,
            },
        }
    )
    return record


def call_operator(case: CaseRequest, dy, y, backend: str, soc: str | None, device: int = 0):
    """The operator on a case's inputs through ``backend``, as the case asks for it (its axes,
    output dtype and shape, missing operands, API and output layout); the backend's result."""
    out_extents = case.get("out_shape")
    return _backend(backend)(
        dy,
        y,
        tuple(case["axes"]),
        soc,
        out_dtype=case.get("out_dtype") or case["dtype"],
        out_shape=tuple(out_extents) if out_extents is not None else None,
        missing=case.get("missing"),
        api=case["api"],
        device=device,
        out_layout=case_layout(case, "out"),
    )


def _describe_only(case: CaseRequest, backend: str, identity: Identity, device: int):
    """Plan the call from descriptors alone (no data): the operator must refuse it there. A
    call it would accept is never run (there is nothing to compute on). Through ACL the
    descriptors are tensors of zeros on the device, which phase one must refuse alike."""
    from farm.agent.backends.result import BackendResult

    started = time.perf_counter()
    soc = identity.soc or ""
    if backend == "acl":
        return _describe_through_acl(case, device)
    if backend != "native":
        why = f"the {backend} backend cannot pass a tensor descriptor without data"
        return BackendResult(-1, "backend_error", why, None, 0, None, 0.0)
    from farm.agent.backends.native import Spec, plan

    fields: dict[str, Any] = dict(case)  # looked up by the tensor's own key names

    def spec(name: str, dtype_key: str, shape_key: str | None):
        if case.get("missing") == name:
            return None
        dtype = fields.get(dtype_key) or case["dtype"]
        code = dtypes.DESCRIPTOR_ONLY.get(dtype, dtype)
        shape = fields.get(shape_key) if shape_key else None
        return Spec(tuple(case["shape"] if shape is None else shape), code)

    planned = plan(
        spec("dy", "dtype", None),
        spec("y", "y_dtype", "y_shape"),
        tuple(case["axes"]),
        spec("out", "out_dtype", "out_shape"),
        soc,
    )
    seconds = time.perf_counter() - started
    return BackendResult(
        planned.status,
        planned.reason,
        planned.message,
        None,
        planned.workspace,
        planned.tiling,
        seconds,
        checks=planned.checks,
    )


def _describe_through_acl(case: CaseRequest, device: int):
    from farm.agent.backends import acl

    fields: dict[str, Any] = dict(case)

    def numpy_dtype(name: str) -> np.dtype:  # complex too: numpy has it, the golden does not
        return np.dtype(name) if name in dtypes.DESCRIPTOR_ONLY else dtypes.numpy_dtype(name)

    def zeros(dtype_key: str, shape_key: str | None) -> np.ndarray:
        dtype = fields.get(dtype_key) or case["dtype"]
        shape = fields.get(shape_key) if shape_key else None
        return np.zeros(tuple(case["shape"] if shape is None else shape), numpy_dtype(dtype))

    missing = case.get("missing")
    dy = None if missing == "dy" else zeros("dtype", None)
    y = None if missing == "y" else zeros("y_dtype", "y_shape")
    out_shape = case.get("out_shape")
    return acl.run(
        dy,
        y,
        tuple(case["axes"]),
        out_dtype=numpy_dtype(case.get("out_dtype") or case["dtype"]),
        out_shape=None if out_shape is None else tuple(out_shape),
        missing=missing,
        device=device,
        api=case.get("api", "dim"),
    )


def _judge(case: CaseRequest, dy, y, out, expect: Expectation) -> ResultRecord:
    dtype = case["dtype"]
    if out.dtype != dtypes.numpy_dtype(dtype) or out.shape != dy.shape:
        # The contract says out has dy's dtype and shape; anything else cannot be judged.
        return {
            "verdict": {
                "standard": expect.get("standard"),
                "passed": False,
                "reason": f"output is {out.dtype}{list(out.shape)}, expected "
                f"{dtype}{list(dy.shape)}",
            }
        }
    requested = expect.get("standard")
    level = expect.get("level") or "L0"
    benchmark = None
    if requested == "benchmark-ratio":
        from farm.agent.benchmark_cache import torch_benchmark

        benchmark = torch_benchmark(dy, y, case["axes"], dtype)
    hist = HistogramAccumulator()
    j = judge_case(
        dy,
        y,
        out,
        case["axes"],
        dtype,
        requested=requested,
        level=level,
        benchmark=benchmark,
        on_errors=hist.add,
        tolerance=None if expect.get("tolerance") is None else Tolerance.parse(expect["tolerance"]),
    )
    # The histogram is plain already (Python ints and finite floats): _plain walks the rest.
    metrics = _plain(j.metrics)
    metrics["hist"] = hist.result(metrics["n"])
    return {
        "metrics": metrics,
        "standards": {
            name: {
                "passed": v.passed,
                "reason": v.reason,
                "gated": name in j.gates,
                "applicable": j.applicability.get(name, (True, ""))[1] or "always",
            }
            for name, v in j.verdicts.items()
        },
        "verdict": Verdict(
            standard=requested,
            level=level if requested == "benchmark-ratio" else None,
            passed=j.passed,
            reason=j.reason,
            gates=j.gates,
        ),
    }


def _plain(value):
    """JSON-safe: NaN and inf become strings, numpy scalars become Python numbers."""
    kind = type(value)
    # The exact built-in types first: a record's metrics are a few hundred of them a case.
    if kind is int or kind is str or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _backend(name: str) -> Backend:
    """The backend's entry, its module imported only now (torch takes seconds)."""
    if name == "native":
        from farm.agent.backends import native

        return native.run_call
    if name == "torch":
        from farm.agent.backends import torch_backend

        return torch_backend.run_call
    if name == "acl":
        from farm.agent.backends import acl

        return acl.run_call
    raise ValueError(f"unknown backend {name!r}; use one of: {', '.join(BACKENDS)}")
