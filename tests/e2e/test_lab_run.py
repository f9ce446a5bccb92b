"""The whole smoke tier over the SSH lab: two Ascend910B hosts (a2-01, a2-02, 2 devices each) and
one Ascend310B host (a200-01, 1 device), every case through real sshd, SFTP deploy and agents."""

from __future__ import annotations

from collections import defaultdict

from tests.e2e.conftest import SMOKE

HOSTS = {"ascend910b": {"a2-01", "a2-02"}, "ascend310b": {"a200-01"}}


def test_smoke_tier_over_the_ssh_lab(farm, lab, lab_inventory):
    result = farm.run_tier("--inventory", lab_inventory)

    assert result.code == 0, result.text
    for name in ("a2-01", "a2-02", "a200-01"):
        assert f"host     {name} " in result.err and "quarantined" not in result.err
    records = result.assert_one_result_per_case(SMOKE)
    assert result.summary["outcomes"] == {"passed": len(SMOKE)}
    assert result.summary["unhealthy_hosts"] == {} == result.summary["quarantined_during_run"]

    for r in records.values():
        # Each case ran once, on a host of its own family, named as the inventory names it.
        assert r["host"] in HOSTS[r["family"]], r
        assert r["slot"].split(":")[0] == r["host"]
        assert (r["attempts"], r["infra_errors"]) == (1, []), r

    # The whole calls (a layer case of the same dtype judges one layer alone).
    bf16 = [r for r in records.values() if r["dtype"] == "bfloat16" and not r.get("layer")]
    rejected = [r for r in bf16 if r["family"] == "ascend310b"]
    accepted = [r for r in bf16 if r["family"] == "ascend910b"]
    assert rejected and accepted
    for r in rejected:
        # Ascend310B has no bf16 -> fp32 Cast: refused in the parameter check, before any kernel.
        assert r["expect"] == {
            "kind": "reject",
            "status": 161002,
            "reason": "bf16_unsupported_on_soc",
        }
        assert (r["status"], r["reason"], r["outcome"]) == (
            161002,
            "bf16_unsupported_on_soc",
            "passed",
        )
        # In the words of the layer that refused (the OpDef registration names the family).
        assert "bfloat16 is not supported on Ascend310B" in r["op_message"]
        assert r["tiling"] is None and r["metrics"] is None
    for r in (r for r in accepted if r["expect"]["kind"] == "precision"):
        assert (r["status"], r["outcome"], r["soc"]) == (0, "passed", "Ascend910B1"), r
        assert r["verdict"]["passed"] is True and r["metrics"] is not None

    # The farm's xdist scheduling keeps each slot's cases on one worker (no queueing on leases).
    workers_of_slot = defaultdict(set)
    for worker, recs in result.records_by_worker().items():
        for r in recs:
            workers_of_slot[r["slot"]].add(worker)
    assert set(workers_of_slot) == {"a2-01:0", "a2-01:1", "a2-02:0", "a2-02:1", "a200-01:0"}
    assert all(len(w) == 1 for w in workers_of_slot.values()), dict(workers_of_slot)

    assert {row["state"] for row in farm.hosts(lab_inventory).values()} == {"unknown"}
