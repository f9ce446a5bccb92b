"""Every rejection on both families, from both libraries of the C ABI (the emulated real kernel
and the twin): status code, reason id, a message that names the reason, and
the contract's check order (golden.contract.expected_outcome) when a call has several defects."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from farm.agent.backends import native
from golden import contract
from golden.soc import PROFILES

SOCS = ("Ascend910B1", "Ascend310B1")
# What each message must say (the reason in words, and where it names the fix).
NAMES = {
    "null_tensor": "null tensor",
    "dtype_unsupported": "is not supported: use float32, float16 or bfloat16",
    "dtype_mismatch": "must have the same dtype",
    "bf16_unsupported_on_soc": "bfloat16 is not supported on",
    "rank_too_large": "above the maximum of 8",
    "shape_mismatch": "must have the same shape",
    "axes_empty": "axes (dim) are empty",
    "dim_out_of_range": "is out of range",
    "axes_not_consecutive": "consecutive",
}
NP = {
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int32": np.int32,
    "float64": np.float64,
}


def arr(shape, dtype="float32"):
    return np.zeros(shape, dtype=NP[dtype])


def assert_rejected(result, reason, soc=None):
    # The binding names the C ABI's reason id through contract.REASON_BY_ID, so the name
    # matching is the id matching.
    status = contract.REASONS[reason][1]
    assert (result.status, result.reason) == (status, reason), result.message
    assert NAMES[reason] in result.message, result.message
    if soc and reason == "bf16_unsupported_on_soc":
        assert soc in result.message and "use float32 or float16" in result.message
    assert result.out is None and result.workspace == 0


REJECTIONS = [
    # (reason, kwargs of native.run beyond dy, y; dy/y as (shape, dtype))
    ("null_tensor", dict(missing="dy")),
    ("null_tensor", dict(missing="y")),
    ("null_tensor", dict(missing="out")),
    ("null_tensor", dict(missing=("dy", "out"))),
    ("dtype_unsupported", dict(dtype="int32")),
    ("dtype_unsupported", dict(dtype="float64")),
    ("dtype_mismatch", dict(y_dtype="float16")),
    ("dtype_mismatch", dict(out_dtype="float16")),
    ("dtype_mismatch", dict(dtype="float16", out_dtype="bfloat16")),
    ("rank_too_large", dict(shape=(1,) * 9)),
    ("rank_too_large", dict(shape=(2,) * 10, axes=(0,))),
    ("shape_mismatch", dict(y_shape=(6, 4))),
    ("shape_mismatch", dict(out_shape=(4, 6, 1))),
    ("shape_mismatch", dict(shape=(0, 6), y_shape=(0, 5))),  # empty, still a mismatch
    ("shape_mismatch", dict(shape=(0, 6), out_shape=(6, 0))),
    ("axes_empty", dict(axes=())),
    ("dim_out_of_range", dict(axes=(2,))),
    ("dim_out_of_range", dict(axes=(-3,))),
    ("dim_out_of_range", dict(shape=(), axes=(1,))),
    ("dim_out_of_range", dict(shape=(), axes=(-2,))),
    ("dim_out_of_range", dict(shape=(2, 3, 4), axes=(1, 3))),
    ("axes_not_consecutive", dict(shape=(2, 3, 4), axes=(0, 2))),
    ("axes_not_consecutive", dict(shape=(2, 3, 4), axes=(1, 1))),
    ("axes_not_consecutive", dict(shape=(2, 3, 4), axes=(1, -2))),
    ("axes_not_consecutive", dict(shape=(2, 3, 4, 5), axes=(3, 1))),
]


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("reason, kw", REJECTIONS)
def test_rejection(native_lib, soc, reason, kw):
    kw = dict(kw)
    shape = kw.pop("shape", (4, 6))
    dtype = kw.pop("dtype", "float32")
    axes = kw.pop("axes", (-1,))
    y = arr(kw.pop("y_shape", shape), kw.pop("y_dtype", dtype))
    if "out_dtype" in kw:
        kw["out_dtype"] = NP[kw["out_dtype"]]
    result = native.run(arr(shape, dtype), y, axes, soc, **kw)
    assert_rejected(result, reason, soc)


@pytest.mark.parametrize("shape", [(4, 6), (0, 6), (), (2, 0, 3)])
def test_bf16_rejected_on_310b_only(native_lib, shape):
    dy = arr(shape, "bfloat16")
    result = native.run(dy, dy.copy(), (-1,), "Ascend310B1")
    assert_rejected(result, "bf16_unsupported_on_soc", "Ascend310B1")
    for soc in PROFILES:
        if PROFILES[soc].bf16_cast:
            assert native.run(dy, dy.copy(), (-1,), soc).status == 0


def test_agent_entry_run_call(native_lib):
    # farm.agent.execute's form: None for a missing input, dtype names, the api and device.
    dy = arr((4, 6))
    got = native.run_call(None, dy, (-1,), "Ascend910B1", out_dtype="float32", missing="dy")
    assert (got.status, got.reason) == (161001, "null_tensor")
    got = native.run_call(dy, dy, (-1,), "Ascend310B1", out_dtype="float16", api="axes", device=3)
    assert (got.status, got.reason) == (161002, "dtype_mismatch")
    got = native.run_call(dy, dy, (-1,), "Ascend310B1", out_dtype="float32", out_shape=(4, 6))
    assert got.out is not None and got.tiling is not None
    assert (got.status, got.reason, got.out.shape, got.tiling["soc_name"]) == (
        0,
        "ok",
        (4, 6),
        "Ascend310B1",
    )
    assert got.seconds > 0


def test_unknown_soc(native_lib):
    result = native.plan(arr((2, 3)), arr((2, 3)), (-1,), arr((2, 3)), "Ascend999")
    assert (result.status, result.reason) == (561000, "unknown_soc")
    assert "Ascend999" in result.message and "Ascend910B1" in result.message


def test_malformed_descriptor(native_lib):
    bad = native.Spec((2, -3), "float32")
    result = native.plan(bad, bad, (-1,), bad, "Ascend910B1")
    assert (result.status, result.reason) == (161002, "invalid_argument")
    assert "negative extent" in result.message


# Every combination of up to three defects: each library's reason is the contract's first one.
DEFECTS: dict[str, list[Any]] = {
    "missing": [None, "y", "out"],
    "dtype": ["float32", "int32", "bfloat16"],
    "out_dtype": [None, "float16"],
    "rank": [2, 9],
    "y_shape": [None, "other"],
    "axes": [(-1,), (), (5,), (0, 2)],
}


def _calls() -> Iterator[dict[str, Any]]:
    for values in itertools.product(*DEFECTS.values()):
        d = dict(zip(DEFECTS, values, strict=True))
        defects = sum(v not in (None, "float32", 2, (-1,)) for v in values)
        if 2 <= defects <= 3:
            yield d


@pytest.mark.parametrize("soc", SOCS)
def test_check_order_matches_contract(native_lib, soc):
    checked = 0
    for d in _calls():
        shape: tuple[int, ...] = (2, 3) if d["rank"] == 2 else (1,) * 8 + (3,)
        if d["axes"] == (0, 2) and len(shape) == 2:
            shape = (2, 3, 4)
        y_shape = shape if d["y_shape"] is None else shape[::-1] + (1,)
        dtype, out_dtype = d["dtype"], d["out_dtype"] or d["dtype"]
        call = contract.Call(
            dy_shape=shape,
            dy_dtype=dtype,
            y_shape=None if d["missing"] == "y" else y_shape,
            y_dtype=dtype,
            out_shape=None if d["missing"] == "out" else shape,
            out_dtype=out_dtype,
            axes=d["axes"],
            bf16_cast=PROFILES[soc].bf16_cast,
        )
        want = contract.expected_outcome(call)
        spec: dict[str, native.Spec | None] = {
            "dy": native.Spec(shape, NP[dtype]),
            "y": native.Spec(y_shape, NP[dtype]),
            "out": native.Spec(shape, NP[out_dtype]),
        }
        if d["missing"]:
            spec[d["missing"]] = None
        got = native.plan(spec["dy"], spec["y"], d["axes"], spec["out"], soc)
        assert (got.reason, got.status) == (want.reason, want.status), (d, got.message)
        if not want.accepted:
            assert NAMES[want.reason] in got.message
        checked += 1
    assert checked > 100
