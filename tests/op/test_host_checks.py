"""Rejections of the emulated real operator come from its real source: the package's aclnn layer
(op/ascendc/op_api) over the host code (op/ascendc/op_host): the OpDef registration per SoC, as
CANN's generated aclnn layer enforces it, then the tiling function's own checks. The shared
checks (lsg::validate, the twin's) are a second opinion only, and the record says which layer
decided and where the two disagree (farm/agent/record.py HostChecks).

- every rejection of the contract, on both families, is decided by the layer that owns it;
- a host change that lets bf16 through on Ascend310B (registered for ascend310b and let through
  by the tiling's SoC check: the planted bug bf16_cast_310b) fails every bf16 case of the smoke
  tier on Ascend310B as an unexpected acceptance, and the message says the shared checks refuse;
- half of that change alone (bf16 registered for ascend310b, a copy of op_host edited here) is
  still refused, by the tiling function, and the record says that the registration let it by;
- the library's refusals are the package's aclnn layer's (op/ascendc/op_api): its checks edited
  in a copy of the sources, the library refuses as edited;
- a tiling function that gives the kernel what the shared plan did not plan (host_half_blocks)
  fails as tiling_mismatch, naming the fields, and still runs as the host code tiled it.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from farm.agent.backends import native
from farm.agent.outcome import classify
from farm.agent.record import HostChecks, ResultRecord
from farm.pool import build
from suites import matrix
from suites.case import Case
from tests.op.conftest import acpu_planted, judged, need_emulation


def zeros(shape, dtype=np.float32):
    return np.zeros(shape, dtype=dtype)


# (what the call gets wrong, SoC, kwargs of native.run) -> the layer that must decide it.
LAYERS = [
    ("null_tensor", "Ascend910B1", dict(missing="y"), "front"),
    ("dtype_unsupported", "Ascend910B1", dict(dtype=np.int32), "registration"),
    ("dtype_mismatch", "Ascend310B1", dict(y_dtype=np.float16), "registration"),
    ("dtype_mismatch", "Ascend910B1", dict(out_dtype=np.float16), "registration"),
    ("bf16_unsupported_on_soc", "Ascend310B1", dict(dtype="bfloat16"), "registration"),
    ("rank_too_large", "Ascend910B1", dict(shape=(1,) * 9), "tiling"),
    ("shape_mismatch", "Ascend310B1", dict(y_shape=(6, 4)), "tiling"),
    ("axes_empty", "Ascend910B1", dict(axes=()), "tiling"),
    ("dim_out_of_range", "Ascend310B1", dict(axes=(2,)), "tiling"),
    ("axes_not_consecutive", "Ascend910B1", dict(shape=(2, 3, 4), axes=(0, 2)), "tiling"),
    ("axes_not_consecutive", "Ascend310B1", dict(shape=(2, 3, 4), axes=(1, 1)), "tiling"),
]


@pytest.mark.parametrize("reason, socname, kw, layer", LAYERS)
def test_each_rejection_is_decided_by_the_layer_that_owns_it(acpu_lib, reason, socname, kw, layer):
    import ml_dtypes

    kw = dict(kw)
    dtype = kw.pop("dtype", np.float32)
    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    shape, axes = kw.pop("shape", (4, 6)), kw.pop("axes", (-1,))
    y = zeros(kw.pop("y_shape", shape), kw.pop("y_dtype", dtype))
    result = native.run(zeros(shape, dtype), y, axes, socname, **kw)
    checks = result.checks
    assert checks is not None, result.message  # the emulated kernel's host code says
    assert (result.reason, checks["decided_by"]) == (reason, layer), result.message
    assert checks["host"] == reason
    # The shared checks are asked once the call could be read (not of a missing tensor).
    assert checks.get("shared") == (None if layer == "front" else reason)
    if layer == "registration":
        assert "OpDef registration" in result.message or "OpDef registers" in result.message
    # The message names the refusing layer too (the aclnn layer's reading of the generated
    # entry's status, lsg::op_api::after_refusal), as the acl backend's record needs it.
    ending = {"registration": "; refused by the OpDef registration",
              "tiling": "; refused by the tiling function"}  # fmt: skip
    if layer in ending:
        assert result.message.endswith(ending[layer]), result.message
    else:
        assert "refused by the" not in result.message, result.message


def test_an_accepted_call_says_every_layer_accepted_it(acpu_lib, twin_lib):
    dy = zeros((4, 6))
    result = native.run(dy, dy, (-1,), "Ascend310B1", library=acpu_lib)
    assert result.status == 0
    assert result.checks == {
        "decided_by": "",
        "host": "ok",
        "host_status": 0,
        "shared": "ok",
        "shared_status": 0,
        "tiling_mismatch": "",
    }
    assert native.run(dy, dy, (-1,), "Ascend310B1", library=twin_lib).checks is None


@pytest.mark.build
def test_a_host_that_lets_bf16_through_on_310b_fails_the_smoke_tier(monkeypatch):
    library = acpu_planted("bf16_cast_310b")
    cases = [
        c
        for c in matrix.expand("smoke")
        if c.family == "ascend310b" and c.dtype == "bfloat16" and not c.layer  # whole calls
    ]
    caught = [
        r for r in (judged(c, library, monkeypatch) for c in cases) if r["outcome"] != "passed"
    ]
    # Every bf16 case of Ascend310B that is not refused for an earlier reason of the contract.
    bf16_refusals = [c for c in cases if c.expected.reason == "bf16_unsupported_on_soc"]
    assert len(bf16_refusals) >= 3
    assert len(caught) == len(bf16_refusals)
    for record in caught:
        assert record["category"] == "unexpected_acceptance", record["message"]
        assert "the shared checks say bf16_unsupported_on_soc" in record["message"]
        assert record["checks"]["host"] == "ok"


# Edits of the package's aclnn layer checks (op/ascendc/op_api), which the CPU library runs.
OP_API_EDITS = [
    (
        "return check_present(call);",
        'Verdict v = check_present(call); v.message = "edited: " + v.message; return v;',
    ),
    ("contract.message = own;", 'contract.message = "edited: " + own;'),
]


def _edit(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {path}"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def edited_library(tmp_path_factory):
    """The CPU library of a copy of the real sources with half of bf16_cast_310b (bf16 registered
    for ascend310b while the tiling function's own SoC check still refuses it) and OP_API_EDITS."""
    need_emulation()
    root = tmp_path_factory.mktemp("edited")
    source = root / "op"
    shutil.copytree(build.OP_DIR, source, ignore=shutil.ignore_patterns("build_out"))
    registration = build.planted_bugs()["bf16_cast_310b"][0]
    assert "DT_BF16" in registration["new"] and registration["file"].startswith("ascendc/op_host")
    _edit(source / registration["file"], registration["old"], registration["new"])
    for old, new in OP_API_EDITS:
        _edit(source / "ascendc/op_api/log_softmax_backward_checks.cpp", old, new)
    return build.build_native("ascendc-cpu", root / "build", source_dir=source)


@pytest.mark.build
def test_the_cpu_library_refuses_as_the_packages_aclnn_layer_does(edited_library):
    # A missing tensor (the layer's own check) and a dtype the registration refuses (the layer's
    # reading of a refusal of the generated entry) both say what the edited op_api source says.
    missing = native.run(
        zeros((4, 6)), zeros((4, 6)), (-1,), "Ascend910B1", missing="y", library=edited_library
    )
    assert (missing.reason, missing.status) == ("null_tensor", 161001)
    assert missing.message.startswith("edited: null tensor"), missing.message
    wrong = native.run(
        zeros((4, 6), np.int32),
        zeros((4, 6), np.int32),
        (-1,),
        "Ascend910B1",
        library=edited_library,
    )
    assert wrong.checks is not None, wrong.message
    assert (wrong.reason, wrong.checks["decided_by"]) == ("dtype_unsupported", "registration")
    assert wrong.message.startswith("edited: gradOutput (dy) dtype int32"), wrong.message


@pytest.mark.build
def test_a_bf16_registration_refused_by_the_tiling_alone_fails_the_registration(
    edited_library, monkeypatch
):
    """The right status and reason from the wrong layer: the registration let bf16 through on
    Ascend310B, and on CANN that compiles kernels for it (farm/agent/outcome.py classify)."""
    library = edited_library
    record = judged(Case("ascend310b", "bfloat16", (4, 37), (-1,)), library, monkeypatch)
    assert (record["outcome"], record["category"]) == ("failed", "registration")
    assert record["reason"] == "bf16_unsupported_on_soc"
    assert record["checks"]["decided_by"] == "tiling"
    assert "as expected, but by the tiling function" in record["message"]


@pytest.mark.build
def test_a_tiling_function_that_departs_from_the_plan_is_a_tiling_mismatch(acpu_lib, monkeypatch):
    library = acpu_planted("host_half_blocks")
    case = Case("ascend910b", "float16", (4, 37), (-1,))
    record = judged(case, library, monkeypatch)
    assert (record["outcome"], record["category"]) == ("failed", "tiling_mismatch")
    assert "blockElems 4912 (planned 9824)" in record["message"], record["message"]
    # What ran is what the host code tiled (the kernel is right with smaller blocks too).
    tiling, verdict = record["tiling"], record["verdict"]
    assert tiling is not None and tiling["block_elems"] == 4912 and record["status"] == 0
    assert verdict is not None and verdict["passed"]
    assert judged(case, acpu_lib, monkeypatch)["outcome"] == "passed"


def test_classify_says_which_layer_said_what():
    expect = {"kind": "reject", "reason": "bf16_unsupported_on_soc", "status": 161002}
    base: ResultRecord = {"status": 161002, "reason": "bf16_unsupported_on_soc", "op_message": "m"}
    agreeing: HostChecks = {
        "decided_by": "registration",
        "host": "bf16_unsupported_on_soc",
        "shared": "bf16_unsupported_on_soc",
    }
    assert classify(expect, {**base, "checks": agreeing}) == (
        "passed",
        None,
        "rejected as expected: bf16_unsupported_on_soc (161002) "
        "(refused by the OpDef registration)",
    )
    # The layer alone, where the shared checks are not known (a tiling case, the acl backend).
    alone: HostChecks = {"decided_by": "tiling", "host": "bf16_unsupported_on_soc"}
    assert classify(expect, {**base, "checks": alone, "layer": "tiling"})[2] == (
        "rejected as expected: bf16_unsupported_on_soc (161002) (refused by the tiling function)"
    )
    late: HostChecks = {**agreeing, "decided_by": "tiling"}
    said = classify(expect, {**base, "checks": late, "layer": "tiling"})[2]
    assert "registration accepted it" in said
    accepted: HostChecks = {"decided_by": "", "host": "ok", "shared": "bf16_unsupported_on_soc"}
    record: ResultRecord = {"status": 0, "reason": "ok", "op_message": "", "checks": accepted}
    outcome, category, message = classify(expect, record)
    assert (outcome, category) == ("failed", "unexpected_acceptance")
    assert "every layer of the host code accepted it; the shared checks say" in message
    # Without the layers (the twin, the torch backend) nothing is added.
    assert classify(expect, base)[2] == "rejected as expected: bf16_unsupported_on_soc (161002)"
