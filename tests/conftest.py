"""Markers by what a test needs, derived from its fixtures so that they cannot lie.

* ``e2e``     every test under tests/e2e (whole farm runs; minutes);
* ``ssh``     a test that uses the ``sshd`` fixture, directly or through another (the SSH lab);
* ``browser`` a test that uses the ``chromium`` fixture;
* ``build``   a test that builds variants of the operator (marked where it does: packages, planted
  bugs, sanitizers, compile checks).

``bash .ci/test.sh -m "not e2e and not ssh and not browser and not build"`` (``tox -e unit``)
is the fast unit run (about 45 s on 2 cores once the operator is built); ``.ci/run`` runs
everything. The markers are registered in pyproject.toml and
``--strict-markers`` refuses any other.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from farm.pool.lab.core import Lab
from tests.requirements import need_chromium, need_sshd

# A test process loads dozens of emulated-device libraries, each with 64 bytes of initial-exec TLS
# (op/ascendc_cpu/src/device.cpp), beyond glibc's default static TLS surplus (512 bytes): the
# processes this session starts (xdist's workers, farm's agents) get a larger one. .ci/test.sh
# sets it for the session's own process too (a process reads it when it starts).
if "optional_static_tls" not in os.environ.get("GLIBC_TUNABLES", ""):
    _tunables = os.environ.get("GLIBC_TUNABLES")
    os.environ["GLIBC_TUNABLES"] = (
        f"{_tunables}:" if _tunables else ""
    ) + "glibc.rtld.optional_static_tls=16384"

E2E_DIR = Path(__file__).resolve().parent / "e2e"
MARKER_BY_FIXTURE = {"sshd": "ssh", "chromium": "browser"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
        for fixture, marker in MARKER_BY_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
    # The longest first: modules that build the operator, then whole farm runs, then the rest,
    # each module's tests together and in their order. pytest-xdist (--dist loadfile:
    # .ci/test.sh) hands files out in this order (with --no-loadscope-reorder, which .ci/test.sh
    # passes), so its workers finish together on short files instead of one waiting for the
    # other's last build.
    rank: dict[Path, int] = {}
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        here = 0 if "build" in marks else 1 if "e2e" in marks else 2
        rank[item.path] = min(rank.get(item.path, 2), here)
    items.sort(key=lambda item: rank[item.path])


@pytest.fixture(scope="session")
def sshd() -> None:
    """OpenSSH's sshd is installed (else skip, or fail where CI requires it)."""
    need_sshd()


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of a headless-capable Chromium (else skip, or fail where CI requires it)."""
    return need_chromium()


@pytest.fixture(scope="session")
def ssh_lab(sshd, tmp_path_factory):
    """A real SSH lab on loopback (three sshd hosts on 127.0.0.2-4), one per test process. Its
    root has a space and a non-ASCII letter, as a checkout under "~/My Projects" does: its paths
    reach sshd's config, the hosts' environment, workdirs and commands."""
    lab = Lab(tmp_path_factory.mktemp("lab") / "lab ü")
    lab.up(3)
    try:
        yield lab
    finally:
        lab.down()


@pytest.fixture
def restore_lab_host(ssh_lab):
    """Names registered here are reset (running, declared identity = inventory) after the test."""
    names: list[str] = []
    yield names
    for name in names:
        ssh_lab.thaw_host(name)
        ssh_lab.reset_host(name)
