"""The contract's graph inference (golden/inference.py): out is gradOutput's shape and dtype
whatever the node's output (y) is, both functions GRAPH_SUCCESS; every departure is named by the
function, what it gave and what was due."""

from __future__ import annotations

from golden import inference


def test_the_contracts_inference_reads_gradoutput_alone() -> None:
    assert inference.expected((2, 3, 4), "float16") == {
        "shape_status": 0,
        "shape": [2, 3, 4],
        "dtype_status": 0,
        "dtype": "float16",
    }
    assert inference.expected((), "bfloat16")["shape"] == []


def test_the_contracts_own_inference_has_no_problem() -> None:
    want = inference.expected((2, 3, 4), "float16")
    assert inference.problems(dict(want), want) == []


def test_each_departure_is_named() -> None:
    want = inference.expected((2, 3, 4), "float16")
    # Input 1 (y) read for input 0: y's shape and dtype.
    wrong = dict(want, shape=[5, 6], dtype="float32")
    assert inference.problems(wrong, want) == [
        "InferShape gave out the shape (5, 6); gradOutput's is (2, 3, 4)",
        "InferDataType gave out the dtype float32; gradOutput's is float16",
    ]
    # No output 1: InferShape refuses; a dtype never set stays undefined.
    failed = dict(want, shape_status=inference.GRAPH_FAILED, shape=[], dtype="undefined")
    assert inference.problems(failed, want) == [
        "InferShape returned GRAPH_FAILED, not GRAPH_SUCCESS",
        "InferShape gave out the shape (); gradOutput's is (2, 3, 4)",
        "InferDataType gave out the dtype undefined; gradOutput's is float16",
    ]
    assert inference.problems(dict(want, dtype_status=7), want) == [
        "InferDataType returned status 7, not GRAPH_SUCCESS"
    ]
    one = inference.expected((7,), "float32")
    assert "gradOutput's is (7,)" in inference.problems(dict(one, shape=[]), one)[0]
