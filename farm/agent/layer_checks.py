"""One layer case on this host (suites/matrix_layers.py): the operator's OpDef registration judged
whole against the contract's table, its host tiling function alone judged by status and reason
against the contract, or its graph inference (InferShape, InferDataType) run on a node as GE runs
it and judged against the contract's inference (golden/inference.py). Its record says which layer
it checked (layer), for a tiling case which layer refused (checks.decided_by: "tiling"), for an
infer case what was inferred and what was due (inference).

Runs inside the agent, like farm/agent/execute.py, which hands it every case with a layer.
"""

from __future__ import annotations

import time
from typing import Any, cast

from farm.agent.backends import layers
from farm.agent.outcome import FAILED, PASSED, classify
from farm.agent.record import HostChecks, Inference, Outcome, Registration, ResultRecord
from farm.agent.request import CaseRequest
from golden import inference, registration

NOT_AVAILABLE = "not_available"
TILING_ALONE = "the tiling function alone (the registration out of the way)"
INFERENCE = "the graph inference (InferShape, InferDataType)"
WHAT = {"registration": "the OpDef registration", "tiling": TILING_ALONE, "infer": INFERENCE}


def run_layer_case(
    case: CaseRequest, backend: str, soc: str | None, started: float
) -> ResultRecord:
    """The record of a layer case, without host and timings (execute.py adds them)."""
    record: ResultRecord = {
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
        "layer": case["layer"],
    }
    try:
        if case["layer"] == "registration":
            outcome, category, message = _registration(case, backend, record)
        elif case["layer"] == "infer":
            outcome, category, message = _infer(case, backend, record)
        else:
            outcome, category, message = _tiling(case, backend, soc or "", record)
    except layers.NotAvailable as exc:
        # Never a pass: the layer was not checked. Broken, so that the run says it is incomplete.
        outcome, category = "broken", NOT_AVAILABLE
        message = (
            f"{WHAT[case['layer']]} is not available on this host with the {backend} backend: {exc}"
        )
    record.update({"outcome": outcome, "category": category, "message": message})
    record["timings"] = {"backend_s": time.perf_counter() - started}
    return record


def _registration(
    case: CaseRequest, backend: str, record: ResultRecord
) -> tuple[Outcome, str | None, str]:
    declared, source = layers.registration(backend)
    family = case["family"]
    found = registration.problems(declared, family)
    record["registration"] = cast(
        Registration,
        {
            "source": source,
            "family": family,
            "declared": (declared.get("socs") or {}).get(family) or {},
            "problems": found,
        },
    )
    if found:
        return (
            FAILED,
            "registration",
            f"the OpDef registration departs from the contract's table on {family} "
            f"(read from {source}): " + "; ".join(found),
        )
    dtypes = ", ".join(registration.supported(family))
    return (
        PASSED,
        None,
        f"the OpDef registration declares the contract's table on {family}: {dtypes} in "
        f"{registration.FORMAT} for gradOutput, output and out (read from {source})",
    )


def _tiling(
    case: CaseRequest, backend: str, soc: str, record: ResultRecord
) -> tuple[Outcome, str | None, str]:
    from farm.agent.backends.native import reason_name

    dtype, shape = case["dtype"], case["shape"]
    fields: dict[str, Any] = dict(case)
    tensors = [(dtype, shape)]
    for name in ("y", "out"):
        other = fields.get(f"{name}_shape")
        tensors.append((fields.get(f"{name}_dtype") or dtype, shape if other is None else other))
    status, rid, message = layers.tiling_alone(backend, tensors, case["axes"], soc)
    reason = reason_name(rid) if status else "ok"
    checks: HostChecks = {
        "decided_by": "tiling" if status else "",
        "host": reason,
        "host_status": status,
    }
    record.update(
        {
            "status": status,
            "reason": reason,
            "op_message": message,
            "checks": checks,
        }
    )
    outcome, category, said = classify(case["expect"], record)
    return outcome, category, f"{TILING_ALONE}: {said}"


def _infer(
    case: CaseRequest, backend: str, record: ResultRecord
) -> tuple[Outcome, str | None, str]:
    """The node of the case's gradOutput (dtype, shape) and output (y_dtype, y_shape), inputs 0
    and 1, and one output, inferred by the registered functions; judged against the contract's
    inference, which the case carries (expect: golden/inference.py expected)."""
    fields: dict[str, Any] = dict(case)
    dy = (case["dtype"], tuple(case["shape"]))
    y_shape = fields.get("y_shape")
    y = (fields.get("y_dtype") or dy[0], dy[1] if y_shape is None else tuple(y_shape))
    inferred, source = layers.infer(backend, [dy, y])
    want: dict[str, Any] = {k: v for k, v in case["expect"].items() if k != "kind"}
    missing = inferred.pop("missing")
    found = [missing] if missing else inference.problems(inferred, want)
    record["inference"] = cast(
        Inference,
        {
            "source": source,
            "node": [{"dtype": d, "shape": list(s)} for d, s in (dy, y)],
            "inferred": inferred,
            "expected": want,
            "problems": found,
        },
    )
    node = (
        f"gradOutput {dy[0]} {inference.shape_text(dy[1])}, output {y[0]} "
        f"{inference.shape_text(y[1])}"
    )
    if found:
        return (
            FAILED,
            "inference",
            f"{INFERENCE} departs from the contract on a node of {node} (run through {source}): "
            + "; ".join(found),
        )
    return (
        PASSED,
        None,
        f"{INFERENCE} gives out gradOutput's shape {inference.shape_text(want['shape'])} and "
        f"dtype {want['dtype']} on a node of {node} (run through {source})",
    )
