"""Faults over the SSH lab: each run ends with the right exit code, the bad host quarantined (and
shown so by `farm hosts`), and exactly one result per case.

The lab: a2-01 and a2-02 (Ascend910B1, 2 devices each), a200-01 (Ascend310B1, 1 device).
"""

from __future__ import annotations

from tests.e2e.conftest import select

# The Ascend910B fp32 cases: two hosts of the family, so a lost host's cases have somewhere to go.
# (fp32: no case gated by benchmark-ratio, whose first call imports torch in the agent, seconds
# that would count against the short case timeouts of these tests.)
A2_CASES = "910b_f32"
# Two workers: on a 2-core CI machine five would only add start-up time. Their cases still
# spread over all the family's slots.
LAB = ("--jobs", "2", "--inventory")


def assert_retried_elsewhere(records: dict, bad: str) -> list[dict]:
    """Records whose case first met the bad host: passed on the family's other host."""
    moved = [r for r in records.values() if r["infra_errors"]]
    for r in moved:
        assert r["outcome"] == "passed", r
        assert r["host"] != bad and r["attempts"] >= 2, r
        assert any(bad in e for e in r["infra_errors"]), r
    return moved


def start_with_slow_host(farm, lab, lab_inventory, broken_hosts, host: str):
    """Start the A2 cases with `host` answering every reply SLOW_REPLY_S late, and return once
    it has answered a case. The lanes run ahead of the records, so at full speed a host's first
    record can come after all its cases have run; slowed, it still has most of its lane to go."""
    broken_hosts.append(host)
    lab.declare(host, fault="slow-after:0")
    proc = farm.start_tier(*LAB, lab_inventory, "--case-timeout", "10", k=A2_CASES)
    farm.wait_for_records(proc, 1, where=lambda r: r["host"] == host)
    return proc


def test_host_killed_mid_run(farm, lab, lab_inventory, broken_hosts):
    cases = select(A2_CASES)
    proc = start_with_slow_host(farm, lab, lab_inventory, broken_hosts, "a2-02")
    lab.kill_host("a2-02")  # sshd, its sessions and the agents under them
    result = farm.finish(proc)

    assert result.code == 2, result.text  # degraded by infrastructure
    records = result.assert_one_result_per_case(cases)
    # No case is lost with the host: those that were going to a2-02 ran on a2-01.
    assert result.summary["outcomes"] == {"passed": len(cases)}, result.summary
    assert assert_retried_elsewhere(records, "a2-02")
    assert "a2-02" in result.summary["quarantined_during_run"]
    quarantine = result.quarantine()
    assert set(quarantine) == {"a2-02"}
    assert "infrastructure errors" in quarantine["a2-02"]["reason"]
    rows = farm.hosts(lab_inventory)
    assert rows["a2-02"]["state"] == "bad"
    assert "infrastructure errors" in rows["a2-02"]["reason"]
    assert rows["a2-01"]["state"] == rows["a200-01"]["state"] == "unknown"


def test_host_frozen_mid_run(farm, lab, lab_inventory, broken_hosts):
    cases = select(A2_CASES)
    proc = start_with_slow_host(farm, lab, lab_inventory, broken_hosts, "a2-01")
    lab.freeze_host("a2-01")  # SIGSTOP: connections stay open, nothing answers
    result = farm.finish(proc)

    assert result.code == 2, result.text
    records = result.assert_one_result_per_case(cases)
    assert result.summary["outcomes"] == {"passed": len(cases)}, result.summary
    moved = assert_retried_elsewhere(records, "a2-01")
    assert any("no reply" in e for r in moved for e in r["infra_errors"]), moved
    assert "a2-01" in result.summary["quarantined_during_run"]
    assert set(result.quarantine()) == {"a2-01"}
    assert farm.hosts(lab_inventory)["a2-01"]["state"] == "bad"


def test_soc_mismatch_quarantines_and_its_family_stops_cleanly(
    farm, lab, lab_inventory, broken_hosts
):
    """a200-01 declares an Ascend910B1 where the inventory says Ascend310B1: it is quarantined
    before any case, and the Ascend310B family, left without a healthy slot, stops its cases
    with one clear error each instead of hanging. The other family runs normally."""
    broken_hosts.append("a200-01")
    lab.declare("a200-01", soc="Ascend910B1")
    k = "bf16 and 1024"
    cases = select(k)
    assert {c.family for c in cases} == {"ascend910b", "ascend310b"}
    result = farm.run_tier(*LAB, lab_inventory, k=k)

    assert result.code == 2, result.text
    assert "no healthy slot of family ascend310b" in result.err
    records = result.assert_one_result_per_case(cases)
    reason = result.summary["unhealthy_hosts"]["a200-01"]
    assert "SoC mismatch" in reason and "Ascend910B1" in reason and "Ascend310B1" in reason
    for r in records.values():
        if r["family"] == "ascend310b":
            assert (r["outcome"], r["category"], r["attempts"]) == ("broken", "infrastructure", 0)
            assert r["message"].startswith("no healthy slot of family ascend310b"), r
            assert "failed the health check: a200-01: SoC mismatch" in r["message"], r
        else:
            assert r["outcome"] == "passed" and r["host"] in ("a2-01", "a2-02"), r
    assert set(result.quarantine()) == {"a200-01"}
    row = farm.hosts(lab_inventory)["a200-01"]
    assert row["state"] == "bad" and "SoC mismatch" in row["reason"]


def test_missing_dependency_quarantines_the_host(farm, lab, lab_inventory, broken_hosts):
    broken_hosts.append("a2-02")
    lab.hide_module("a2-02", "ml_dtypes")
    cases = select(A2_CASES)
    result = farm.run_tier(*LAB, lab_inventory, k=A2_CASES)

    assert result.code == 2, result.text
    records = result.assert_one_result_per_case(cases)
    assert result.summary["outcomes"] == {"passed": len(cases)}
    assert {r["host"] for r in records.values()} == {"a2-01"}
    reason = result.summary["unhealthy_hosts"]["a2-02"]
    assert "missing python module ml_dtypes on host a2-02" in reason
    assert "pip install ml_dtypes" in reason
    assert set(result.quarantine()) == {"a2-02"}
    row = farm.hosts(lab_inventory)["a2-02"]
    assert row["state"] == "bad" and "ml_dtypes" in row["reason"]


def test_corrupted_reply_is_an_infrastructure_error(farm, lab, lab_inventory, broken_hosts):
    """Every agent on a2-01 corrupts its 5th reply: the health check's agent (hello, identify,
    two canary cases) passes, and each run-time agent answers hello and three cases, then sends
    garbage. Each such case is retried on another slot and passes; the host is quarantined after
    repeated protocol errors; nothing is lost or doubled."""
    broken_hosts.append("a2-01")
    lab.declare("a2-01", fault="corrupt-reply-after:4")
    cases = select(A2_CASES)
    result = farm.run_tier(*LAB, lab_inventory, k=A2_CASES)

    assert result.code == 2, result.text
    records = result.assert_one_result_per_case(cases)
    assert result.summary["outcomes"] == {"passed": len(cases)}, result.summary
    moved = assert_retried_elsewhere(records, "a2-01")
    for r in moved:
        assert any("host a2-01" in e and "malformed JSON line" in e for e in r["infra_errors"]), r
    assert "malformed JSON line" in result.summary["quarantined_during_run"]["a2-01"]
    assert farm.hosts(lab_inventory)["a2-01"]["state"] == "bad"
