"""The CANN package built where CANN is (`farm run --target ascend`), over an SSH lab whose hosts
have a CANN of their own: the emulated ACL runtime and, where CANN keeps msopgen, the lab's
stand-in toolchain (farm/pool/lab/cann_toolchain.py), which checks what op/ascendc/build.sh gives
it (the operator description, the project's settings, the sources' layout) and packs the lab's
emulated op-api as the installer. The run builds the package once, on the inventory's build host
(role = "build": it runs no cases), ships it to the hosts of that architecture and CANN, each
installs it into its own version directory and the agent loads the operator from there; a second
run reuses it; a build that fails is a build failure with its log, and no host is blamed for it.
(Without a build host, the pool's own host with that CANN builds: tests/pool/test_cann_build.py.)"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

from farm import __version__
from farm.pool import acl_sdk
from farm.util.paths import DIST_DIR
from tests.archives import regular
from tests.e2e.conftest import select
from tests.requirements import need, need_sshd

K = "910b and f32 and strided"


def test_the_cann_package_is_built_on_a_cann_host_once_and_installed_per_version(farm, tmp_path):
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    need_sshd()
    from farm.pool.lab.core import Lab

    lab = Lab(tmp_path / "cann lab ü")  # CANN's home and the hosts' workdirs: a space, UTF-8
    built: list = []
    relative = f"lsg-farm-cann-{tmp_path.name}"
    try:
        hosts = [
            ("a2-c1", "Ascend910B1", 1),
            ("a2-c2", "Ascend910B1", 1),
            ("a2-c3", "Ascend910B1", 1),
        ]
        lab.up(layout=hosts, cann="emulated")
        text = lab.inventory_path.read_text()
        build_host = text.replace('name = "a2-c1"\n', 'name = "a2-c1"\nrole = "build"\n')
        # a2-c3's workdir is relative to its home, as the inventory's default is: the installer,
        # which runs from its own directory, and the agent, from its bundle's, find it there.
        build_host = build_host.replace(
            f"workdir = {json.dumps(str(lab.hosts['a2-c3'].path / 'work'))}",
            f'workdir = "{relative}"',
        )
        assert relative in build_host
        (tmp_path / "inventory.toml").write_text(build_host)
        inventory = str(tmp_path / "inventory.toml")
        run = ("--inventory", inventory, "--target", "ascend", "--backend", "acl")

        first = farm.run_tier(*run, k=K)
        assert first.code == 0, first.text
        records = first.assert_one_result_per_case(select(K))
        built = sorted(DIST_DIR.glob("logsoftmaxgrad-*-ascend-*-cannemulated-*.tar.gz"))
        assert len(built) == 1, built
        (package,) = built
        with tarfile.open(package) as tar:
            manifest = json.load(regular(tar, "manifest.json"))
            names = tar.getnames()
        assert (manifest["target"], manifest["cann"]) == ("ascend", f"emulated-{__version__}")
        assert manifest["built_on"] == "a2-c1" and manifest["source_sha256"]
        assert any(n.startswith("custom_opp_") and n.endswith(".run") for n in names)
        assert "build.log" in names and "[stand-in CANN] checked op_kernel/" in (
            regular(tarfile.open(package), "build.log").read().decode()
        )
        hosts_run = {r["host"] for r in records.values()}
        assert hosts_run == {"a2-c2", "a2-c3"}  # the build host runs none
        for r in records.values():
            assert r["outcome"] == "passed", r["message"]
            work = lab.hosts[r["host"]].path / "work" / "versions"
            if r["host"] == "a2-c3":
                work = Path.home() / relative / "versions"
            op_api = r["device_run"]["op_api"]
            # The host's own install, in the package's version directory: not CANN's vendors.
            assert op_api.startswith(str(work)) and "/opp/vendors/customize/op_api/" in op_api
        versions = lab.hosts["a2-c2"].path / "work" / "versions"
        assert len(list(versions.glob("*/opp/.lsg-installed"))) == 1

        stamp = package.stat().st_mtime_ns
        second = farm.run_tier(*run, k=K)
        assert second.code == 0, second.text
        assert package.stat().st_mtime_ns == stamp  # reused, not built again

        package.unlink()
        lab.fail_cann_build("a2-c1", "expected ';' before '}' token")
        failed = farm.run_tier(*run, k=K)
        assert failed.code == 2, failed.text
        text = " ".join(failed.text.split())
        assert "the CANN package for it did not build" in text
        assert "error: expected ';' before '}' token" in text and "the whole log:" in text
        assert not failed.quarantine(), failed.quarantine()  # a build failure blames no host
        assert not package.exists()
    finally:
        lab.down()
        shutil.rmtree(Path.home() / relative, ignore_errors=True)
        for p in built + sorted(DIST_DIR.glob("logsoftmaxgrad-*-ascend-*-cannemulated-*")):
            p.unlink(missing_ok=True)
