"""An infer case's record (farm/agent/layer_checks.py): the node's inferred out judged against
the contract's inference that the case carries; a departure or an inference function the OpDef
did not register fails (category inference), a backend that cannot run the inference is broken
(not_available), never a pass. The inference itself is stubbed here: tests/op runs the real one."""

from __future__ import annotations

from typing import Any

import pytest

from farm.agent import layer_checks
from farm.agent.backends import layers
from farm.run.requests import case_request
from suites.case import Case

NODE = Case(
    "ascend910b", "float16", (2, 3, 4), (-1,), y_dtype="float32", y_shape=(5, 6), layer="infer"
)
SOURCE = "lsg_acpu_infer of liblsg_ascendc_cpu.so"


def run(monkeypatch, inferred: dict[str, Any] | Exception, backend: str = "native") -> dict:
    seen = []

    def infer(backend, inputs):
        seen.append(list(inputs))
        if isinstance(inferred, Exception):
            raise inferred
        return dict(inferred), SOURCE

    monkeypatch.setattr(layers, "infer", infer)
    record = dict(layer_checks.run_layer_case(case_request(NODE), backend, "Ascend910B1", 0.0))
    if seen:  # the node: gradOutput, then output, by index
        assert seen == [[("float16", (2, 3, 4)), ("float32", (5, 6))]]
    return record


def inferred(**changes) -> dict[str, Any]:
    good = {"shape_status": 0, "shape": [2, 3, 4], "dtype_status": 0, "dtype": "float16"}
    return {**good, "missing": "", **changes}


def test_the_contracts_inference_passes(monkeypatch):
    record = run(monkeypatch, inferred())
    assert (record["outcome"], record["category"], record["layer"]) == ("passed", None, "infer")
    assert record["message"].startswith(
        "the graph inference (InferShape, InferDataType) gives out gradOutput's shape (2, 3, 4) "
        "and dtype float16 on a node of gradOutput float16 (2, 3, 4), output float32 (5, 6)"
    )
    info = record["inference"]
    assert info["problems"] == [] and info["inferred"] == info["expected"]
    assert info["node"] == [
        {"dtype": "float16", "shape": [2, 3, 4]},
        {"dtype": "float32", "shape": [5, 6]},
    ]


def test_the_output_read_for_gradoutput_fails(monkeypatch):
    record = run(monkeypatch, inferred(shape=[5, 6], dtype="float32"))
    assert (record["outcome"], record["category"]) == ("failed", "inference")
    assert "InferShape gave out the shape (5, 6); gradOutput's is (2, 3, 4)" in record["message"]
    assert "InferDataType gave out the dtype float32" in record["message"]
    assert record["inference"]["inferred"]["shape"] == [5, 6]


def test_an_unregistered_inference_fails_and_says_so(monkeypatch):
    missing = "LogSoftmaxGradCustom's OpDef registers no shape inference (SetInferShape)"
    record = run(monkeypatch, inferred(shape_status=0xFFFFFFFF, shape=[], missing=missing))
    assert (record["outcome"], record["category"]) == ("failed", "inference")
    assert record["message"].endswith(missing)
    assert record["inference"]["problems"] == [missing]


@pytest.mark.parametrize("backend", ["twin", "acl"])
def test_an_inference_the_backend_cannot_run_is_broken(monkeypatch, backend):
    why = layers.NotAvailable("the inference functions live in libcust_opmaster*.so")
    record = run(monkeypatch, why, backend)
    assert (record["outcome"], record["category"]) == ("broken", "not_available")
    assert record["message"].startswith(
        f"the graph inference (InferShape, InferDataType) is not available on this host with "
        f"the {backend} backend: the inference functions live in"
    )


def test_on_cann_the_inference_is_not_available_never_faked(monkeypatch):
    """A CANN package's InferShape lives in its op_host library, run by GE on contexts it builds
    from a graph: the acl backend on CANN does not run it (docs/judging.md)."""
    from types import SimpleNamespace

    from farm.agent.backends import acl_api

    cann = SimpleNamespace(emulated=False, op_api=object(), op_api_path="/vendor/libcust_opapi.so")
    monkeypatch.setattr(acl_api, "load", lambda: cann)
    with pytest.raises(layers.NotAvailable, match=r"libcust_opmaster\*\.so\), which only GE calls"):
        layers.infer("acl", [("float16", (2, 3)), ("float16", (2, 3))])
