"""The aclnn layer's planted bugs fail the smoke tier's cases through the acl backend
(`farm run --backend acl --plant-bug BUG`), each where the layer's job is: a rejection is judged by
its status and its reason, and the layer's copies go through the workspace it asked for.

* ``reason_wording`` writes the reason line in other words ("(why N)", no reason's name): every
  rejection of the smoke tier fails as reason_unreadable, none passes on its status alone.
* ``copy_back_skipped`` leaves a non-contiguous out unwritten: exactly the cases whose out the
  layer copies back fail (precision: NaN where the golden has numbers).
* ``workspace_short`` asks for a workspace one copy short: the emulated runtime refuses the copy
  or the kernel that reaches past the workspace it was given (op/acl_emu: a buffer's range is
  checked on every use), so exactly the cases with a view the layer copies fail, as a phase two
  that failed (crash, status 561000, launch_failed).
* ``executor_leak`` never releases phase one's executor of the generated entry when it copies a
  view: exactly those cases fail as resource_leak (the handle named, made by the op-api's code),
  their results right; none is the host's fault.

The runs hold the smoke tier's rejections and its cases with a view of their own (a case file),
not the whole tier: the rest have nothing of what these bugs break, and the correct operator
passes the same file.
"""

from __future__ import annotations

import pytest

from farm.pool import acl_sdk
from golden import layouts
from suites import casefile, matrix
from suites.casefile_write import dump
from tests.requirements import need

pytestmark = pytest.mark.build  # builds the planted packages, each with its ACL op-api
NAMES = ("dy", "y", "out")


def copied(case, name: str) -> bool:
    """Whether the aclnn layer copies this tensor through the workspace: a view that is not
    contiguous (dims of extent 1 aside), of some element (op/ascendc/op_api View::contiguous)."""
    shape = tuple(case.shape)
    view = layouts.resolve(getattr(case, f"{name}_layout"), shape)
    dense = layouts.dense_strides(shape)
    some = all(d > 0 for d in shape)
    strides = zip(shape, view.strides, dense, strict=True)
    return some and any(d != 1 and s != e for d, s, e in strides)


# bug: (which cases of the file it must fail, the category of each failure)
BREAKS = {
    "reason_wording": (lambda c: not c.accepted, "reason_unreadable"),
    "copy_back_skipped": (lambda c: c.accepted and copied(c, "out"), "precision"),
    "workspace_short": (lambda c: c.accepted and any(copied(c, n) for n in NAMES), "crash"),
    "executor_leak": (
        lambda c: c.accepted and any(copied(c, n) for n in NAMES),
        "resource_leak",
    ),
}


@pytest.fixture(scope="module", autouse=True)
def real_package_newest_afterwards():
    """Planted runs leave their archive as the newest in dist/op, which `farm.pool.deploy.
    find_op_package` (used by other tests) would take for the operator: rebuild the real one."""
    yield
    from farm.pool import build

    build.build_package()


@pytest.fixture(scope="module")
def case_file(tmp_path_factory):
    """The smoke tier's whole calls that are rejections or have a view of their own (its layer
    cases call the registration or the tiling function alone, not the aclnn layer)."""
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    smoke = matrix.expand("smoke")
    chosen = [
        c
        for c in smoke
        if not c.layer
        and (not c.accepted or any(getattr(c, f"{n}_layout") != "contiguous" for n in NAMES))
    ]
    path = dump(chosen, tmp_path_factory.mktemp("reason") / "rejections_and_views.json")
    return path, casefile.load(path)


def test_the_correct_aclnn_layer_passes_the_file(farm, case_file):
    path, cases = case_file
    result = farm.run(
        "run", "--cases", str(path), "--backend", "acl", "--no-report", "--no-progress"
    )
    assert result.code == 0, result.text
    records = result.assert_one_result_per_case(cases)
    assert all(r["outcome"] == "passed" for r in records.values())


@pytest.mark.parametrize("bug", sorted(BREAKS))
def test_a_planted_aclnn_layer_bug_fails_exactly_its_cases(farm, case_file, bug):
    path, cases = case_file
    breaks, category = BREAKS[bug]
    must_fail = {c.id for c in cases if breaks(c)}
    assert len(must_fail) >= 3 and len(must_fail) < len(cases)
    if bug == "reason_wording":  # every rejection of the smoke tier is in the file
        assert must_fail == {c.id for c in matrix.expand("smoke") if not c.accepted and not c.layer}

    result = farm.run(
        "run",
        "--cases",
        str(path),
        "--backend",
        "acl",
        "--plant-bug",
        bug,
        "--no-report",
        "--no-progress",
    )

    assert result.code == 1, result.text  # product failures, nothing degraded
    records = result.assert_one_result_per_case(cases)
    failed = {cid for cid, r in records.items() if r["outcome"] == "failed"}
    assert failed == must_fail
    for cid, r in records.items():
        assert (r["attempts"], r["infra_errors"]) == (1, []), cid  # never the hosts' fault
        if cid not in must_fail:
            assert r["outcome"] == "passed", r["message"]
            continue
        assert r["category"] == category, r["message"]
        if bug == "reason_wording":
            assert r["reason"] is None and "(why " in r["op_message"], r
            assert "no reason that can be read" in r["message"], r["message"]
        elif bug == "workspace_short":
            assert (r["status"], r["reason"]) == (561000, "launch_failed"), r
            assert "phase two failed" in r["message"], r["message"]
        elif bug == "executor_leak":  # the operator's leak: a product failure, never the host's
            assert r["status"] == 0 and "(the call itself: PASS" in r["message"], r
            assert r["leaked"].startswith(
                "the operator left 1 executor of aclnnLogSoftmaxGradCustom (made by code of "
                "libcust_opapi.so) alive after the call"
            ), r["leaked"]
