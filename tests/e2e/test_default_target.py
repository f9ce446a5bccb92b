"""The default operator package is the emulated real kernel: `farm run` with no --target builds
`--target ascendc-cpu` (the Ascend C kernel source and host tiling of op/ascendc on the CPU
emulation), deploys it to the embedded pool and runs the whole smoke tier on it; every case
passes, and the run says which target ran."""

from __future__ import annotations

import json

from tests.e2e.conftest import SMOKE

REAL_KERNEL = "ascendc-cpu (the real Ascend C kernel on the CPU emulation)"


def test_smoke_tier_on_the_embedded_pool_runs_the_real_kernel(farm):
    result = farm.run_tier("--jobs", "2")

    assert result.code == 0, result.text
    assert f"target   {REAL_KERNEL}" in result.err
    records = result.assert_one_result_per_case(SMOKE)
    assert result.summary["outcomes"] == {"passed": len(SMOKE)}
    assert result.summary["target"] == "ascendc-cpu"
    plan = json.loads((result.run_dir / "plan.json").read_text())
    assert plan["package"]["target"] == "ascendc-cpu"
    assert plan["package"]["file"].endswith("-ascendc-cpu.tar.gz")
    assert all(
        info["native_lib"].endswith("/lib/liblsg_ascendc_cpu.so") for info in plan["hosts"].values()
    )
    accepted = [r for r in records.values() if r["expect"]["kind"] == "precision"]
    assert accepted and all(r["status"] == 0 and r["tiling"] for r in accepted)
