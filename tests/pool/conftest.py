"""Fixtures for the farm's plumbing tests: the agent bundle and a real SSH lab on loopback.

SSH tests need OpenSSH's sshd. Without it they skip, unless FARM_REQUIRE_SSH is set (CI sets it):
then a missing sshd is a failure, not a skip.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

import pytest

from farm.agent.request import CaseRequest
from farm.pool.deploy import deploy, make_agent_bundle
from farm.pool.transport import open_transport
from farm.pool.transport.base import Channel
from farm.pool.transport.local import LocalChannel

REPO = Path(__file__).resolve().parents[2]
ECHO = "farm.agent.stand_ins:echo_executor"
FAKE = "tests.pool.fake_executor:run"


def fake_request(**fields: Any) -> CaseRequest:
    """A run-case request for a fake executor (FAKE, ECHO): what it reads (fail, sleep, segv,
    child, print, ...), not a case; the channel passes it on as it would a case."""
    return cast(CaseRequest, fields)


def said_pid(pid: int | None) -> int:
    """A pid an agent said in its hello (a channel's agent_pid, agent_pgid): there, or the
    test fails."""
    assert pid is not None, "the agent has not said hello"
    return pid


def local_channel(channel: Channel) -> LocalChannel:
    """A channel of the local transport, with its agent's process (``proc``)."""
    assert isinstance(channel, LocalChannel), channel
    return channel


@pytest.fixture(scope="session")
def agent_bundle(tmp_path_factory) -> tuple[Path, str]:
    return make_agent_bundle(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def lab_inventory(ssh_lab):
    return ssh_lab.inventory()


@pytest.fixture(scope="session")
def deployed_lab(ssh_lab, lab_inventory, agent_bundle):
    """The lab with the agent bundle deployed on every host; yields (lab, inventory, sha)."""
    path, sha = agent_bundle
    for host in lab_inventory.hosts:
        with open_transport(host) as t:
            deploy(t, host, [path])
    return ssh_lab, lab_inventory, sha


@pytest.fixture
def local_host(tmp_path):
    """A local-transport emulated host (Ascend910B1 x2) running this interpreter."""
    from farm.pool.inventory import HostSpec

    return HostSpec(
        name="emu-t",
        soc="Ascend910B1",
        devices=2,
        transport="local",
        python=sys.executable,
        workdir=str(tmp_path / "emu-t"),
        env=(("LSG_EMULATED_DEVICES", "2"), ("LSG_EMULATED_SOC", "Ascend910B1")),
    )
