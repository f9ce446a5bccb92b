"""The device path end to end: `farm run --backend acl` on the embedded pool and over the SSH lab
runs the operator package's aclnn entry through ACL — here the emulated ACL runtime the package
carries — with the health canaries through the same path, and every record says which runtime
and which device ran it."""

from __future__ import annotations

from farm.pool import acl_sdk
from tests.e2e.conftest import SMOKE, select
from tests.requirements import need


def _check_device_path(records: dict[str, dict]) -> None:
    for r in records.values():
        assert r["outcome"] == "passed", r["message"]
        run = r.get("device_run")
        if r["status"] is None or run is None:
            continue
        assert run["runtime"].startswith("lsg emulated ACL runtime"), run
        assert f"soc={r['soc']}" in run["runtime"], (run, r["soc"])
        assert run["device_id"] == int(r["slot"].split(":")[1]), (run, r["slot"])
        assert run["entry"] == (
            "aclnnLogSoftmaxBackward" if r["api"] == "dim" else "aclnnLogSoftmaxBackwardDims"
        )
    ran = [r for r in records.values() if r.get("device_run")]
    # Every whole call; a layer case asks the registration or the tiling function alone.
    whole = [r for r in records.values() if not r.get("layer")]
    assert len(ran) == len(whole), "a case did not take the device path"
    timed = [r for r in ran if r["expect"]["kind"] == "precision" and r["status"] == 0]
    assert timed and all(r["device_run"]["device_s"] is not None for r in timed)
    # Every rejection with its reason, read back from aclGetRecentErrMsg (nnopbase's channel).
    refused = [r for r in ran if r["expect"]["kind"] == "reject"]
    for r in refused:
        assert (r["status"], r["reason"]) == (r["expect"]["status"], r["expect"]["reason"]), r
        assert r["op_message"].startswith("EZ"), r["op_message"]


def test_the_device_path_on_the_embedded_pool_and_over_the_ssh_lab(farm, lab, lab_inventory):
    """The whole smoke tier through acl on the embedded pool; then the bf16 cases (accepted on
    Ascend910B, refused on Ascend310B) over the SSH lab, which must give the same numbers. (That
    acl gives native's bits on every smoke case is tests/op/test_acl_backend.py.)"""
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    result = farm.run_tier("--backend", "acl")
    assert result.code == 0, result.text
    embedded = result.assert_one_result_per_case(SMOKE)
    _check_device_path(embedded)
    rejected = [  # the whole calls (a layer case of the same dtype judges one layer alone)
        r
        for r in embedded.values()
        if r["family"] == "ascend310b" and r["dtype"] == "bfloat16" and not r.get("layer")
    ]
    assert rejected and all(r["reason"] == "bf16_unsupported_on_soc" for r in rejected)

    k = "bf16"
    over_ssh = farm.run_tier("--inventory", lab_inventory, "--backend", "acl", k=k)
    assert over_ssh.code == 0, over_ssh.text
    records = over_ssh.assert_one_result_per_case(select(k))
    _check_device_path(records)
    assert {r["host"] for r in records.values()} == {"a2-01", "a2-02", "a200-01"}
    for case_id, r in records.items():
        here = embedded[case_id]
        assert (r["status"], r["reason"]) == (here["status"], here["reason"]), case_id
        assert r["metrics"] == here["metrics"], case_id


def test_a_host_with_cann_runs_a_cpu_package_on_the_runtime_it_carries(farm, tmp_path):
    """A lab host whose CANN is the emulated runtime (`farm lab up --cann emulated`): a run of the
    CPU target's package (the default) goes through that package's aclnn layer on the emulated ACL
    runtime the package carries, never CANN's installed libraries; `--target ascend` runs CANN's
    (tests/e2e/test_cann_build.py). The host is neither refused nor blamed for having CANN."""
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    from farm.pool.lab.core import Lab
    from tests.requirements import need_sshd

    need_sshd()
    lab = Lab(tmp_path / "lab")
    try:
        lab.up(layout=[("a2-cann", "Ascend910B1", 1)], cann="emulated")
        k = "910b and f32 and strided"
        result = farm.run_tier("--inventory", str(lab.inventory_path), k=k)
        assert result.code == 0, result.text
        records = [r for rs in result.records_by_worker().values() for r in rs]
        ran = [r for r in records if r.get("device_run")]
        assert ran and len(ran) == len(records), records
        for r in ran:
            op_api = r["device_run"]["op_api"]
            # The deployed package's own acl/lib (versions/<sha256>/), not the lab's CANN home.
            assert "/versions/" in op_api and "/acl/lib/" in op_api and "/Ascend/" not in op_api, (
                op_api
            )
        assert not result.quarantine(), result.quarantine()
    finally:
        lab.down()
