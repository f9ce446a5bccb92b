"""A pool of mixed CPU architectures over the SSH lab: a host that declares aarch64 gets the
aarch64 package (built for it by the run, cross-compiled; the deploy log and the package's
manifest say so); a host of an architecture the farm cannot build for is set aside with the line
that says so, and the run goes on without it.

The lab's hosts are processes of this x86_64 machine: the aarch64 one cannot load its aarch64
library, so its canary fails, with the loader's reason put in the farm's words (a library for
aarch64 on a machine that runs x86_64) — what a real host given the wrong package says."""

from __future__ import annotations

import json
import tarfile

from farm.agent import machine
from tests.archives import regular
from tests.e2e.conftest import select
from tests.requirements import need

K = "910b and f32 and strided"


def test_each_host_gets_the_package_of_its_architecture(farm, lab, lab_inventory, broken_hosts):
    from farm.pool import build
    from farm.util.errors import BuildError

    try:
        build.cross_compiler("aarch64")
        can_build = True
    except BuildError:
        can_build = build.HOST_ARCH == "aarch64"
    need(can_build, "the aarch64 cross compiler (g++-aarch64-linux-gnu)")
    broken_hosts += ["a2-02", "a200-01"]
    lab.declare("a2-02", arch="aarch64")
    lab.declare("a200-01", arch="riscv64")

    result = farm.run_tier("--inventory", lab_inventory, k=K)
    assert result.code == 2, result.text
    records = result.assert_one_result_per_case(select(K))
    assert {r["host"] for r in records.values()} == {"a2-01"}
    assert all(r["outcome"] == "passed" for r in records.values())

    here = machine.kernel_arch()
    text = " ".join(result.text.split())
    assert "package logsoftmaxgrad-" in text and "-ascendc-cpu-aarch64.tar.gz (aarch64)" in text
    assert "host a2-02 (Ascend910B1, 2 dev, aarch64, package logsoftmaxgrad-" in text
    assert f"is a library for aarch64, and this machine runs {here}" in text
    assert (
        "host a200-01 is riscv64: no ascendc-cpu package can be built for riscv64 (farm build "
        "--arch takes x86_64, aarch64)" in text
    )
    assert set(result.summary["unhealthy_hosts"]) == {"a2-02", "a200-01"}

    (deployed,) = (lab.hosts["a2-02"].path / "work" / "versions").glob("*/*-aarch64.tar.gz")
    with tarfile.open(deployed) as tar:
        manifest = json.load(regular(tar, "manifest.json"))
    assert manifest["arch"] == "aarch64"
    assert not list((lab.hosts["a2-01"].path / "work" / "versions").glob("*/*-aarch64.tar.gz"))
