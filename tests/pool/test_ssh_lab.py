"""The SSH transport against a real lab of OpenSSH sshd instances on loopback."""

from __future__ import annotations

import dataclasses
import socket
import sys
import time

import pytest

from farm.pool.deploy import start_agent
from farm.pool.lab.sshd import _ed25519_pair, _write_private, free_port
from farm.pool.transport import open_transport
from farm.pool.transport.ssh import SSHTransport
from farm.run.requests import case_request
from farm.util.errors import (
    AuthError,
    ConnectionLost,
    HostKeyError,
    HostUnreachable,
    InfraError,
    ProtocolError,
)
from tests.pool.conftest import ECHO, fake_request


def test_lab_writes_an_inventory_with_strict_host_keys(ssh_lab, lab_inventory):
    hosts = lab_inventory.hosts
    assert [(h.name, h.soc, h.devices) for h in hosts] == [
        ("a2-01", "Ascend910B1", 2),
        ("a2-02", "Ascend910B1", 2),
        ("a200-01", "Ascend310B1", 1),
    ]
    assert len({(h.address, h.port) for h in hosts}) == 3
    assert all(h.address.startswith("127.") for h in hosts)
    assert all(h.host_key_policy == "strict" and h.transport == "ssh" for h in hosts)
    known = ssh_lab.known_hosts.read_text().splitlines()
    assert sorted(line.split()[0] for line in known) == sorted(
        f"[{h.address}]:{h.port}" for h in hosts
    )
    assert all(ssh_lab.running().values())
    # Each host's python is a wrapper running the farm's own interpreter.
    assert sys.executable in open(hosts[0].python).read()


def test_identify_each_host_and_run_a_fake_case(deployed_lab):
    _, inventory, sha = deployed_lab
    for host in inventory.hosts:
        with open_transport(host) as t:
            assert isinstance(t, SSHTransport)
            with start_agent(t, sha, executor=ECHO) as ch:
                ident = ch.identify()
                # From the host's own sshd SetEnv, and the agent runs from the deployed bundle.
                assert (ident["soc"], ident["devices"], ident["source"]) == (
                    host.soc,
                    host.devices,
                    "env",
                )
                assert ident["bundle"] == sha and ident["missing"] == []
                for device in range(host.devices):
                    case = fake_request(
                        id=f"{host.name}-{device}", dims=[-1], note="it's $(x); `y`"
                    )
                    result = ch.run_case(case, "native", device)
                    assert result["echo"] == case
                    assert (result["device"], result["soc"]) == (device, host.soc)


def test_commands_reach_the_host_exactly_as_argv(lab_inventory, tmp_path):
    host = lab_inventory.hosts[0]
    with open_transport(host) as t:
        words = ["a b", "$(id)", "'q'", "; echo pwned", "*", "\\n"]
        rc, out, err = t.run_argv(["printf", "%s|"] + words)
        assert (rc, out) == (0, "|".join(words) + "|")
        rc, out, _ = t.run_argv(["sh", "-c", "exit 7"])
        assert rc == 7
        rc, out, _ = t.run_argv(["pwd"], cwd=host.workdir)
        assert out.strip() == host.workdir


def test_unknown_host_key_is_rejected_under_strict_policy(lab_inventory, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = dataclasses.replace(lab_inventory.hosts[0], known_hosts=empty)
    with open_transport(host) as t:
        with pytest.raises(HostKeyError) as info:
            t.run_argv(["true"])
    msg = str(info.value)
    assert isinstance(info.value, AuthError)
    assert msg.startswith(f"host {host.name} ({host.address}:{host.port}): host key ssh-ed25519 ")
    assert "SHA256:" in msg and "strict" in msg and "accept-new" in msg and "ssh-keyscan" in msg
    assert empty.read_text() == ""  # nothing recorded


def test_accept_new_records_unknown_keys_only_when_opted_in(ssh_lab, lab_inventory, tmp_path):
    host = lab_inventory.hosts[1]
    recorded = tmp_path / "sub" / "known_hosts"
    opted_in = dataclasses.replace(host, host_key_policy="accept-new", known_hosts=recorded)
    with open_transport(opted_in) as t:
        assert t.run_argv(["true"])[0] == 0
    line = recorded.read_text()
    lab_line = next(
        x
        for x in ssh_lab.known_hosts.read_text().splitlines()
        if x.startswith(f"[{host.address}]:{host.port} ")
    )
    assert line.split()[:3] == lab_line.split()[:3]
    # The recorded key now satisfies the strict policy.
    strict = dataclasses.replace(host, known_hosts=recorded)
    with open_transport(strict) as t:
        assert t.run_argv(["true"])[0] == 0


def test_changed_host_key_is_refused_even_with_accept_new(ssh_lab, lab_inventory, tmp_path):
    a, b = lab_inventory.hosts[0], lab_inventory.hosts[1]
    b_key = next(
        x
        for x in ssh_lab.known_hosts.read_text().splitlines()
        if x.startswith(f"[{b.address}]:{b.port} ")
    )
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[{a.address}]:{a.port} " + " ".join(b_key.split()[1:]) + "\n")
    host = dataclasses.replace(a, host_key_policy="accept-new", known_hosts=wrong)
    with open_transport(host) as t:
        with pytest.raises(HostKeyError, match="host key CHANGED"):
            t.run_argv(["true"])


def test_wrong_user_key_is_an_auth_error(lab_inventory, tmp_path):
    private, _ = _ed25519_pair()
    _write_private(tmp_path / "other_ed25519", private)
    host = dataclasses.replace(lab_inventory.hosts[0], key=tmp_path / "other_ed25519")
    with open_transport(host) as t:
        with pytest.raises(AuthError, match=r"user '.+' was refused with key .*authorized_keys"):
            t.run_argv(["true"])


def test_unreachable_address_fails_fast(lab_inventory):
    port = free_port("127.0.0.250")  # bound, then closed: nothing listens there
    host = dataclasses.replace(
        lab_inventory.hosts[0], name="ghost", address="127.0.0.250", port=port, connect_timeout=60.0
    )
    start = time.monotonic()
    with open_transport(host) as t:
        with pytest.raises(HostUnreachable) as info:
            start_agent(t, "0" * 64)
    assert time.monotonic() - start < 30  # refused at once, not after the connect timeout
    assert str(info.value) == (
        f"host ghost (127.0.0.250:{port}): connection refused; is sshd running? check "
        "address/port in the inventory"
    )


def test_killed_host_gives_connection_lost(deployed_lab, restore_lab_host):
    lab, inventory, sha = deployed_lab
    host = inventory.host("a2-02")
    restore_lab_host.append(host.name)
    with open_transport(host) as t:
        ch = start_agent(t, sha, executor=ECHO)
        assert ch.run_case(fake_request(id=1), "native", 0)["device"] == 0
        lab.kill_host(host.name)
        start = time.monotonic()
        with pytest.raises(ConnectionLost) as info:
            ch.run_case(fake_request(id=2), "native", 0, timeout=120)
        assert time.monotonic() - start < 60  # the loss is seen, not waited out
        assert str(info.value).startswith(f"host a2-02 ({host.address}:{host.port}): ")
        assert info.value.host == "a2-02"
        # A new connection finds nobody listening.
        with pytest.raises(HostUnreachable, match="connection refused"):
            start_agent(t, sha, executor=ECHO)
        # The host comes back; the same transport reconnects.
        lab.start_host(host.name)
        with start_agent(t, sha, executor=ECHO) as ch2:
            assert ch2.identify()["soc"] == host.soc


def test_frozen_host_gives_agent_timeout_within_the_timeout(deployed_lab, restore_lab_host):
    lab, inventory, sha = deployed_lab
    host = inventory.host("a2-02")
    restore_lab_host.append(host.name)
    with open_transport(host) as t:
        ch = start_agent(t, sha, executor=ECHO)
        lab.freeze_host(host.name)
        start = time.monotonic()
        with pytest.raises(InfraError) as info:
            ch.run_case(fake_request(id=1), "native", 0, timeout=1.5)
        elapsed = time.monotonic() - start
        assert type(info.value).__name__ == "AgentTimeout", info.value
        assert 1.4 <= elapsed < 30, elapsed  # the timeout, not an SSH keep-alive or worse
        assert "no reply to run-case" in str(info.value)
    # A new connection to the frozen host: TCP connects, no SSH banner comes.
    quick = dataclasses.replace(host, connect_timeout=1.0)
    start = time.monotonic()
    with open_transport(quick) as t:
        with pytest.raises(HostUnreachable, match="no SSH banner"):
            t.run_argv(["true"])
    assert time.monotonic() - start < 12  # the connect timeout, not paramiko's 15 s default
    lab.thaw_host(host.name)
    with open_transport(host) as t:
        assert t.run_argv(["true"])[0] == 0


@pytest.mark.parametrize(
    "fault, error, needle",
    [
        ("corrupt-reply-after:2", ProtocolError, "malformed JSON"),
        ("crash-after:2", ConnectionLost, "exit status 70"),
    ],
)
def test_declared_agent_fault_over_ssh(deployed_lab, restore_lab_host, fault, error, needle):
    lab, inventory, sha = deployed_lab
    host = inventory.host("a200-01")
    restore_lab_host.append(host.name)
    lab.declare(host.name, fault=fault)
    with open_transport(host) as t:
        ch = start_agent(t, sha, executor=ECHO)
        ch.identify()
        with pytest.raises(error, match=needle):
            ch.run_case(fake_request(id=1), "native", 0, timeout=120)  # faults that answer: no hang


def test_lab_refuses_to_start_when_a_port_is_taken(ssh_lab, tmp_path, monkeypatch):
    """sshd failing to start is reported with its log, not as a hang."""
    import farm.pool.lab.core as lab_mod

    with socket.socket() as blocker:
        blocker.bind(("127.0.0.2", 0))
        blocker.listen(1)
        taken = blocker.getsockname()[1]
        monkeypatch.setattr(lab_mod, "free_port", lambda address: taken)
        monkeypatch.setattr(lab_mod, "START_TIMEOUT", 1.0)
        with pytest.raises(lab_mod.ConfigError, match=r"lab host a2-01: sshd did not come up"):
            lab_mod.Lab(tmp_path / "lab2").up(1)


def test_lab_cli_up_status_down(sshd, tmp_path, capsys):
    from farm.pool.lab.command import main
    from farm.pool.lab.core import Lab, lab_down, lab_up

    root = tmp_path / "cli-lab"
    assert main(["up", "--hosts", "1", "--root", str(root)]) == 0
    assert f"inventory {root / 'inventory.toml'}" in capsys.readouterr().out
    assert Lab(root).running() == {"a2-01": True}
    assert main(["status", "--root", str(root)]) == 0
    assert "running=yes" in capsys.readouterr().out
    assert main(["down", "--root", str(root)]) == 0
    assert Lab(root).running() == {"a2-01": False}
    inv = lab_up(root, hosts=4)  # the default layout cycles
    assert [(h.name, h.soc) for h in inv.hosts] == [
        ("a2-01", "Ascend910B1"),
        ("a2-02", "Ascend910B1"),
        ("a200-01", "Ascend310B1"),
        ("a2-03", "Ascend910B1"),
    ]
    lab_down(root)
    assert not any(Lab(root).running().values())


@pytest.mark.parametrize("hosts", ["0", "65", "100000"])
def test_the_lab_size_is_bounded_before_any_sshd_starts(sshd, tmp_path, capsys, hosts):
    """Each host is an sshd on this machine: --hosts 100000 would have started them all."""
    from farm.pool.lab.command import main
    from farm.pool.lab.core import MAX_HOSTS

    assert main(["up", "--hosts", hosts, "--root", str(tmp_path / "lab")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: lab: --hosts {hosts}; ")
    assert ("at least 1 host" if hosts == "0" else f"at most {MAX_HOSTS}") in err
    assert not (tmp_path / "lab" / "hosts").exists()


def test_a_lab_root_that_cannot_be_made_is_one_line(tmp_path):
    from farm.pool.lab.command import main
    from farm.util.errors import UsageError

    (tmp_path / "a-file").write_text("")
    with pytest.raises(UsageError, match=r"--root .*a-file/lab: cannot make the directory"):
        main(["up", "--hosts", "1", "--root", str(tmp_path / "a-file" / "lab")])  # a traceback


@pytest.mark.parametrize("required, outcome", [("1", "error"), ("", "skipped")])
def test_missing_sshd_skips_unless_required(tmp_path, required, outcome):
    """CI sets FARM_REQUIRE_SSH=1: then a machine without sshd fails the SSH tests."""
    import os
    import subprocess

    from tests.pool.conftest import REPO

    env = {
        **os.environ,
        "FARM_SSHD": str(tmp_path / "no-sshd"),
        "FARM_REQUIRE_SSH": required,
        "FARM_REQUIRE_ALL": "",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "tests/pool/test_ssh_lab.py::test_lab_writes_an_inventory_with_strict_host_keys",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"1 {outcome}" in proc.stdout, proc.stdout[-1500:]
    if required:
        assert proc.returncode != 0 and "FARM_REQUIRE_SSH is set" in proc.stdout
    else:
        assert proc.returncode == 0


@pytest.fixture
def op_package():
    """The operator package of the default target (dist/op), or the test skipped (failed in CI)
    for want of it."""
    from farm.pool.deploy import find_op_package
    from farm.util.errors import ConfigError
    from tests.requirements import need

    try:
        return find_op_package()
    except ConfigError as exc:
        need(False, str(exc))


def test_real_case_over_ssh_with_the_deployed_op_package(deployed_lab, agent_bundle, op_package):
    """The whole path: bundle + op package deployed over SFTP (the default target's, the
    emulated real kernel), the agent told where its library is, the real executor
    (farm.agent.execute) judging one smoke case per family."""
    from farm.pool.deploy import deploy_all
    from suites.matrix import expand

    package = op_package
    _, inventory, sha = deployed_lab
    cases = expand("smoke")
    for name in ("a2-01", "a200-01"):
        host = inventory.host(name)
        case = next(c for c in cases if c.family == host.family and c.accepted)
        with open_transport(host) as t:
            _, native = deploy_all(t, bundle=agent_bundle[0], op_package=package)
            with start_agent(t, sha, native_lib=native) as ch:
                assert "native" in ch.identify()["backends"]
                record = ch.run_case(case_request(case), "native", 0, timeout=60)
        assert record["case_id"] == case.id and record["soc"] == host.soc
        assert record["outcome"] == "passed", record.get("message")


def test_a_workdir_relative_to_the_home_is_the_agents_too(deployed_lab, agent_bundle, op_package):
    """An inventory's relative workdir (the default, lsg-farm) is relative to the remote home,
    where SFTP and the SSH session start; the agent runs in its bundle's directory. It loaded
    the operator's library from there, and kept its device locks there (one bundle's), not in
    the host's workdir."""
    import shutil
    import uuid
    from pathlib import Path

    from farm.pool.deploy import deploy_all
    from suites.matrix import expand

    package = op_package
    _, inventory, sha = deployed_lab
    workdir = f"lsg-farm-relative-{uuid.uuid4().hex[:8]}"
    home = Path.home() / workdir  # the lab's hosts log in as this user
    host = dataclasses.replace(inventory.host("a2-01"), workdir=workdir)
    case = next(c for c in expand("smoke") if c.family == host.family and c.accepted)
    try:
        with open_transport(host) as t:
            _, native = deploy_all(t, bundle=agent_bundle[0], op_package=package)
            assert native is not None and not native.startswith("/")
            with start_agent(t, sha, native_lib=native) as ch:
                record = ch.run_case(case_request(case), "native", 1, timeout=60)
                assert list((home / "agents").glob("*.json"))  # its pid file, while it runs
        assert record["outcome"] == "passed", record.get("message")
        assert (home / "locks" / "device-1.json").exists()
        assert not list((home / "versions").glob("*/lsg-farm-relative-*"))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_the_labs_default_hosts_make_every_family_once_there_are_enough():
    from farm.pool.lab.layout import default_layout, families_line

    assert default_layout(2) == [("a2-01", "Ascend910B1", 2), ("a200-01", "Ascend310B1", 1)]
    assert [n for n, _, _ in default_layout(3)] == ["a2-01", "a2-02", "a200-01"]
    one = families_line([soc for _, soc, _ in default_layout(1)])
    assert one == (
        "Atlas A2 (Ascend910B) x1 (Ascend910B1); no Atlas 200I/500 A2 (Ascend310B) host: its "
        "cases do not run (--hosts 2 or more makes every family)"
    )
    assert "no " not in families_line([soc for _, soc, _ in default_layout(2)])
