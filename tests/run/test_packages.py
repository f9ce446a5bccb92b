"""Each host gets the operator package of its CPU architecture (farm/run/packages.py): the run's
own for its architecture, one built from the same sources for another (once, whatever the number
of hosts), and for an architecture that cannot have one a line naming the host, the architecture
and the `farm build` to run."""

from __future__ import annotations

import io
import json
import tarfile
import threading
from pathlib import Path

import pytest

from farm.pool import deploy
from farm.run.packages import NoPackage, Packages
from farm.util.errors import BuildError


def package(path: Path, arch: str | None) -> Path:
    manifest = {"name": "logsoftmaxgrad", "target": "ascendc-cpu", "files": []}
    if arch:
        manifest["arch"] = arch
    data = json.dumps(manifest).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def test_each_architecture_gets_its_own_package_built_once(tmp_path):
    built: list[str] = []
    lock = threading.Lock()

    def build_for(arch: str, cann: str | None, host: str) -> Path:
        with lock:
            built.append(arch)
        return package(tmp_path / f"pkg-{arch}.tar.gz", arch)

    first = package(tmp_path / "pkg.tar.gz", "x86_64")
    packages = Packages(first, build_for)
    assert packages.for_host({"arch": "x86_64"}, "a2-01") == first
    threads = [
        threading.Thread(target=packages.for_host, args=({"arch": "aarch64"}, f"h{i}"))
        for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == ["aarch64"]
    assert deploy.package_arch(packages.for_host({"arch": "aarch64"}, "h9")) == "aarch64"
    assert set(packages.by_arch) == {"x86_64", "aarch64"}


def test_an_architecture_without_a_package_is_one_line_with_the_fix(tmp_path):
    def cannot(arch: str, cann: str | None, host: str) -> Path:
        raise BuildError("cmake configure failed (exit 1): aarch64-linux-gnu-g++ not found\nmore")

    packages = Packages(package(tmp_path / "pkg.tar.gz", "x86_64"), cannot)
    with pytest.raises(NoPackage) as info:
        packages.for_host({"arch": "aarch64"}, "a200-01")
    assert str(info.value) == (
        "host a200-01 is aarch64: there is no ascendc-cpu package for aarch64: farm build "
        "--target ascendc-cpu --arch aarch64 failed: cmake configure failed (exit 1): "
        "aarch64-linux-gnu-g++ not found"
    )
    assert info.value.host == "a200-01"
    with pytest.raises(NoPackage) as info:
        packages.for_host({"arch": "riscv64"}, "rv-01")
    assert str(info.value) == (
        "host rv-01 is riscv64: no ascendc-cpu package can be built for riscv64 (farm build "
        "--arch takes x86_64, aarch64)"
    )
    # A run given a package and no way to build serves only hosts of its architecture.
    given = Packages(package(tmp_path / "given.tar.gz", "x86_64"))
    with pytest.raises(NoPackage, match=r"the run's package is given.tar.gz; give the run one "):
        given.for_host({"arch": "aarch64"}, "a2-09")


def test_a_package_from_before_architectures_is_this_machines(tmp_path):
    from farm.agent import machine

    assert deploy.package_arch(package(tmp_path / "old.tar.gz", None)) == machine.kernel_arch()
