"""Health per chip over the SSH lab: a chip in alarm, or with its memory held by another process
(the lab's stand-in npu-smi reports it so), is set aside alone while its host's other chip runs
the cases; the run says so (exit 2: the pool was not all there) and `farm hosts` shows each
chip's state and why; once healthy again it is back at the next check. And `farm hosts` says
what each host is: its architecture, CANN and driver."""

from __future__ import annotations

import json
import platform
import subprocess

from tests.e2e.conftest import select

K = "910b and f32 and strided"


def _hosts_json(farm, inventory: str, *options: str) -> dict[str, dict]:
    proc = subprocess.run(
        farm.argv("hosts", "--inventory", inventory, "--json", *options),
        cwd=farm.root,
        env=farm.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {row["host"]: row for row in json.loads(proc.stdout)}


def test_a_chip_that_may_not_run_is_set_aside_alone_and_comes_back(
    farm, lab, lab_inventory, broken_hosts
):
    broken_hosts += ["a2-01", "a2-02"]
    lab.set_chip("a2-01", 1, health="Alarm")
    lab.set_chip("a2-02", 0, held_mb=2048)

    result = farm.run_tier("--inventory", lab_inventory, k=K)
    assert result.code == 2, result.text  # every case ran; the pool was not all there
    records = result.assert_one_result_per_case(select(K))
    assert all(r["outcome"] == "passed" for r in records.values())
    used = {r["slot"] for r in records.values()}
    assert used <= {"a2-01:0", "a2-02:1"} and {"a2-01:0", "a2-02:1"} & used, used
    aside = result.summary["set_aside_chips"]
    assert set(aside) == {"a2-01:1", "a2-02:0"}, aside
    assert "health Alarm" in aside["a2-01:1"]
    assert (
        "memory held by another process: pid 999999 someone-elses-job 2048 MB" in aside["a2-02:0"]
    )
    assert "chip     a2-01:1 set aside: chip 1 (910B1) is in health Alarm" in result.text

    rows = _hosts_json(farm, lab_inventory)
    assert rows["a2-01"]["state"] != "bad" and rows["a2-01"]["chip"] == "1 set aside"
    assert (rows["a2-01:1"]["state"], rows["a2-01:0"]["chip"]) == (
        "set aside",
        "910B1 OK, 3150/65536 MB, AI Core 0%",
    )
    assert rows["a2-01:1"]["since"] and "Alarm" in rows["a2-01:1"]["reason"]
    assert rows["a2-01"]["arch"] == platform.machine()
    assert rows["a2-01"]["machine"]["chips"][1]["health"] == "Alarm"

    lab.set_chip("a2-01", 1, health="OK")
    lab.set_chip("a2-02", 0, held_mb=0)
    rows = _hosts_json(farm, lab_inventory, "--check")
    assert rows["a2-01:1"]["state"] == "good" and rows["a2-02:0"]["state"] == "good", rows
    assert rows["a2-01"]["chip"] == "" and rows["a2-01:1"]["reason"] == ""
