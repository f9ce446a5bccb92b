"""Health checks name what is wrong with a host; the quarantine remembers it until a check
passes. A host that is not what its inventory pins is refused with one line per pin; a chip
that may not run cases (in alarm, missing, its memory held by another process) is set aside
alone while the host's other chips stay in the pool, and comes back when it is healthy."""

from __future__ import annotations

import dataclasses
import json
import platform
import shlex
import sys

from farm.pool import inventory as inv
from farm.pool.health.checks import (
    BAD,
    GOOD,
    HOST_COLUMNS,
    SET_ASIDE,
    HostHealth,
    Quarantine,
    canary_failure,
    canary_reason,
    check_host,
    check_pool,
    common_canary_failure,
    host_rows,
    identity_problems,
)
from farm.pool.inventory import default_inventory
from farm.pool.lab.npu_smi import default_chip
from farm.pool.lab.sshd import free_port as _free_port
from farm.pool.transport import open_transport
from tests.pool.conftest import ECHO


def test_good_local_host(local_host, agent_bundle):
    bundle, sha = agent_bundle
    health = check_host(local_host, open_transport, sha, bundle=bundle)
    assert (health.state, health.reasons) == (GOOD, [])
    assert health.identity is not None  # a good host has said who it is
    assert health.identity["soc"] == "Ascend910B1" and health.identity["bundle"] == sha


def test_mismatched_soc_and_devices_are_named(local_host, agent_bundle):
    bundle, sha = agent_bundle
    liar = dataclasses.replace(
        local_host, env=(("LSG_EMULATED_DEVICES", "1"), ("LSG_EMULATED_SOC", "Ascend310B1"))
    )
    health = check_host(liar, open_transport, sha, bundle=bundle)
    assert health.state == BAD
    assert health.reasons == [
        "SoC mismatch: host emu-t declares Ascend310B1 (from env) but the inventory says "
        "Ascend910B1; fix the inventory or the host's declaration",
        "device count mismatch: host emu-t declares 1 device(s) (from env) but the inventory "
        "says 2; fix the inventory or the host's declaration",
    ]


def test_undeclared_identity_and_wrong_bundle(local_host, agent_bundle):
    bundle, sha = agent_bundle
    anonymous = dataclasses.replace(local_host, env=())
    health = check_host(anonymous, open_transport, sha, bundle=bundle)
    assert health.state == BAD and "declares no SoC" in health.reasons[0]
    assert "LSG_EMULATED_SOC" in health.reasons[0]
    other = check_host(local_host, open_transport, "f" * 64)
    assert other.state == BAD and "not found" in other.reasons[0]  # that bundle is not deployed


def test_canary_decides_last(local_host, agent_bundle):
    bundle, sha = agent_bundle

    def canary_ok(channel, identity, device):
        result = channel.run_case({"id": "canary"}, "native", 0)
        return None if result["verdict"] == "pass" else "canary case failed"

    def canary_bad(channel, identity, device):
        raise RuntimeError("golden mismatch on the canary case")

    good = check_host(local_host, open_transport, sha, canary_ok, bundle=bundle, executor=ECHO)
    assert good.state == GOOD
    bad = check_host(local_host, open_transport, sha, canary_bad, bundle=bundle, executor=ECHO)
    assert bad.reasons == [
        "canary failed on host emu-t: RuntimeError: golden mismatch on the canary case"
    ]


def test_ssh_mismatched_soc_is_reported_by_name(deployed_lab, restore_lab_host, agent_bundle):
    lab, inventory, sha = deployed_lab
    host = inventory.host("a2-02")
    restore_lab_host.append(host.name)
    lab.declare(host.name, soc="Ascend310B1")  # its sshd now says so; the inventory does not
    health = check_host(host, open_transport, sha)
    assert health.state == BAD
    assert health.reasons == [
        "SoC mismatch: host a2-02 declares Ascend310B1 (from env) but the inventory says "
        "Ascend910B1; fix the inventory or the host's declaration"
    ]


def test_ssh_missing_dependency_is_reported_by_name(deployed_lab, restore_lab_host):
    lab, inventory, sha = deployed_lab
    host = inventory.host("a200-01")
    restore_lab_host.append(host.name)
    lab.hide_module(host.name, "ml_dtypes")  # emulated: the package is hidden from that python
    health = check_host(host, open_transport, sha)
    assert health.state == BAD
    assert health.identity is not None  # it said who it is, and what it lacks
    assert health.identity["missing"] == ["ml_dtypes"]
    assert health.reasons == [
        f"missing python module ml_dtypes on host a200-01: pip install ml_dtypes on host a200-01 "
        f"(for {lab.python})"
    ]
    lab.reset_host(host.name)
    assert check_host(host, open_transport, sha).state == GOOD


def test_ssh_unreachable_host_is_bad_with_the_reason(lab_inventory, agent_bundle):
    _, sha = agent_bundle
    port = _free_port("127.0.0.250")
    ghost = dataclasses.replace(
        lab_inventory.hosts[0], name="ghost", address="127.0.0.250", port=port
    )
    health = check_host(ghost, open_transport, sha)
    assert health.state == BAD and health.identity is None
    assert health.reasons == [
        f"host ghost (127.0.0.250:{port}): connection refused; is sshd "
        "running? check address/port in the inventory"
    ]


def test_a_host_that_is_not_what_the_inventory_pins_is_refused_one_line_a_pin(
    local_host, agent_bundle
):
    bundle, sha = agent_bundle
    here = platform.machine()
    pinned = dataclasses.replace(local_host, pins=(("arch", here[:3] + "*"),))
    assert check_host(pinned, open_transport, sha, bundle=bundle).reasons == []
    wrong = "riscv64" if here != "riscv64" else "aarch64"
    pinned = dataclasses.replace(local_host, pins=(("arch", wrong), ("cann", "8.2.*")))
    health = check_host(pinned, open_transport, sha, bundle=bundle)
    assert health.state == BAD
    assert health.reasons == [
        f"host emu-t: arch is pinned to '{wrong}' in the inventory, the host reports '{here}'; "
        "fix the pin or the host",
        "host emu-t: cann is pinned to '8.2.*' in the inventory, the host reports nothing; fix "
        "the pin or the host",
    ]


def _with_chips(host, tmp_path, chips):
    """``host`` with the lab's stand-in npu-smi reporting ``chips``."""
    state = tmp_path / "npu-state.json"
    state.write_text(json.dumps({"chips": chips}))
    tool = tmp_path / "npu-smi"
    python, state_file = shlex.quote(sys.executable), shlex.quote(str(state))
    tool.write_text(f'#!/bin/sh\nexec {python} -m farm.pool.lab.npu_smi {state_file} "$@"\n')
    tool.chmod(0o755)
    return dataclasses.replace(host, env=host.env + (("LSG_NPU_SMI", str(tool)),))


def test_a_chip_that_may_not_run_cases_is_set_aside_alone(local_host, agent_bundle, tmp_path):
    bundle, sha = agent_bundle
    ran_on = []

    def canary(channel, identity, device):
        ran_on.append(device)

    alarm = {**default_chip("910B1"), "health": "Alarm"}
    host = _with_chips(local_host, tmp_path, [alarm, default_chip("910B1")])
    health = check_host(host, open_transport, sha, canary, bundle=bundle)
    assert (health.state, health.reasons) == (GOOD, [])
    assert list(health.set_aside) == [0]
    assert health.set_aside[0].startswith("chip 0 (910B1) is in health Alarm (npu-smi: ")
    assert "`npu-smi info -t health -i 0 -c 0`" in health.set_aside[0]
    assert ran_on == [1]  # the canary runs on a chip that may run cases

    held = {**default_chip("910B1"), "processes": [{"pid": 4242, "name": "job", "memory": 900}]}
    host = _with_chips(local_host, tmp_path, [held])  # and the second chip is missing
    health = check_host(host, open_transport, sha, canary, bundle=bundle)
    assert health.state == BAD and ran_on == [1]
    assert health.reasons == [
        "host emu-t: every chip is set aside: chip 0 (910B1) has memory held by another "
        "process: pid 4242 job 900 MB; chip 1 is missing: npu-smi lists 1 chip(s), the "
        "inventory says 2; fix devices in the inventory, or the host's chips"
    ]


def test_many_missing_chips_are_said_once(local_host, agent_bundle, tmp_path):
    """devices = 64 for a host whose npu-smi lists 2: one reason for the 62 missing chips, one
    line where it is said (the run's chip line, the first-contact check, the hosts table)."""
    from farm.pool import first_contact
    from farm.pool.health import checks as health_mod

    bundle, sha = agent_bundle
    wide = dataclasses.replace(
        local_host, devices=64, env=(("LSG_EMULATED_DEVICES", "64"), local_host.env[1])
    )
    host = _with_chips(wide, tmp_path, [default_chip("910B1"), default_chip("910B1")])
    health = check_host(host, open_transport, sha, bundle=bundle)
    assert (health.state, health.reasons) == (GOOD, [])
    assert sorted(health.set_aside) == list(range(2, 64))
    why = (
        "chips 2-63 are missing: npu-smi lists 2 chip(s), the inventory says 64; fix devices in "
        "the inventory, or the host's chips"
    )
    assert set(health.set_aside.values()) == {why}
    assert health_mod.grouped(health.set_aside) == [("2-63", why)]
    inventory = dataclasses.replace(default_inventory(tmp_path / "h"), hosts=[host])
    rows = [r["host"] for r in host_rows(inventory, tmp_path / "state", {host.name: health})]
    assert rows == ["emu-t", "emu-t:0", "emu-t:1", "emu-t:2-63"]
    slots = {f"emu-t:{d}": r for d, r in health.set_aside.items()}
    (checked,) = first_contact.check_pool(
        inventory,
        {"emu-t": {}},
        {},
        slots,
        run=lambda spec, plan: first_contact.HostChecks(spec.name, ()),
    )
    assert [c.detail for c in checked.checks] == [why]


def test_a_chip_set_aside_is_kept_until_a_check_finds_it_healthy(tmp_path):
    from farm.pool.inventory import HostSpec

    q = Quarantine(tmp_path / "state")
    q.record(HostHealth("a2-01", GOOD, [], set_aside={1: "chip 1 (910B1) is in health Alarm"}))
    since = q.chip_entries()["a2-01:1"]["since"]
    q.record(HostHealth("a2-01", GOOD, [], set_aside={1: "still in alarm"}))
    assert q.chip_entries() == {
        "a2-01:1": {
            "reason": "still in alarm",
            "since": since,
            "updated": q.chip_entries()["a2-01:1"]["updated"],
        }
    }
    assert q.entries() == {}  # the host itself is not quarantined

    host = HostSpec("a2-01", "Ascend910B1", 2, transport="local", workdir=str(tmp_path))
    inventory = dataclasses.replace(default_inventory(tmp_path / "h"), hosts=[host])
    rows = {r["host"]: r for r in host_rows(inventory, tmp_path / "state")}
    assert rows["a2-01"]["chip"] == "1 set aside"
    assert rows["a2-01:1"]["state"] == SET_ASIDE and rows["a2-01:1"]["reason"] == "still in alarm"
    assert rows["a2-01:1"]["since"] == since and rows["a2-01:0"]["state"] == "unknown"

    q.record(HostHealth("a2-01", GOOD, []))  # healthy again: back in the pool
    assert q.chip_entries() == {}


def test_quarantine_until_a_check_passes(tmp_path):
    q = Quarantine(tmp_path / "state")
    assert q.entries() == {} and q.reason("a2-01") is None
    q.record(HostHealth("a2-01", BAD, ["SoC mismatch: ..."]))
    assert q.reason("a2-01") == "SoC mismatch: ..."
    since = q.entries()["a2-01"]["since"]
    q.record(HostHealth("a2-01", BAD, ["still wrong"]))
    assert q.entries()["a2-01"]["since"] == since and q.reason("a2-01") == "still wrong"
    # Survives a new process (it is a file) ...
    assert "a2-01" in Quarantine(tmp_path / "state").entries()
    # ... until a check passes.
    q.record(HostHealth("a2-01", GOOD, []))
    assert q.entries() == {}


def test_damaged_quarantine_file_does_not_crash(tmp_path):
    (tmp_path / "quarantine.json").write_text("{not json")
    q = Quarantine(tmp_path)
    assert q.entries() == {}
    q.add("h", "r")
    assert json.loads((tmp_path / "quarantine.json").read_text())["hosts"]["h"]["reason"] == "r"


def test_check_pool_and_host_rows(tmp_path, agent_bundle):
    bundle, sha = agent_bundle
    inv = default_inventory(tmp_path / "hosts")
    state = tmp_path / "state"
    Quarantine(state).add("emu-a2-02", "was bad yesterday")
    results = check_pool(inv.hosts, open_transport, sha, bundle=bundle, state_dir=state)
    assert {name: h.state for name, h in results.items()} == {
        "emu-a2-01": GOOD,
        "emu-a2-02": GOOD,
        "emu-310b-01": GOOD,
    }
    assert Quarantine(state).entries() == {}  # released by the passing check

    Quarantine(state).add("emu-310b-01", "SoC mismatch: ...")
    rows = host_rows(inv, state)
    assert [tuple(r) for r in rows] == [HOST_COLUMNS] * 3
    by = {r["host"]: r for r in rows}
    assert by["emu-310b-01"]["state"] == "bad" and by["emu-310b-01"]["quarantined"] == "yes"
    assert by["emu-310b-01"]["reason"] == "SoC mismatch: ..." and by["emu-310b-01"]["since"]
    assert by["emu-a2-01"]["state"] == "unknown" and by["emu-a2-01"]["family"] == "ascend910b"
    assert by["emu-a2-01"]["devices"] == "2" and by["emu-a2-01"]["address"] == "local"
    # Which path judges on each host, as its agent said at the check (golden/fused.py status);
    # none for the host quarantined since: what it said at that good check may be so no more.
    assert all(by[h]["judging"].startswith(("fused (", "numpy (")) for h in by if "a2" in h), by
    assert (by["emu-310b-01"]["judging"], by["emu-310b-01"]["arch"]) == ("-", "-")
    fresh = host_rows(inv, state, results)
    assert {r["host"]: r["state"] for r in fresh} == {
        "emu-a2-01": "good",
        "emu-a2-02": "good",
        "emu-310b-01": "good",
    }


def _unusable_credentials(lab, inventory, tmp_path):
    """Three lab hosts (renamed *-bad) whose credentials cannot be used, one way each: a key
    readable by others, a passphrase-protected key, a known_hosts with a malformed line."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    a2_01, a2_02, a200 = inventory.hosts
    loose = tmp_path / "loose_ed25519"
    loose.write_bytes(lab.user_key.read_bytes())
    loose.chmod(0o644)
    locked = tmp_path / "locked_ed25519"
    locked.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            ser.Encoding.PEM, ser.PrivateFormat.OpenSSH, ser.BestAvailableEncryption(b"secret")
        )
    )
    locked.chmod(0o600)
    known = tmp_path / "known_hosts"
    known.write_text(lab.known_hosts.read_text() + "[127.0.0.9]:22 ssh-ed25519 AAAA!!notbase64\n")
    line = len(known.read_text().splitlines())
    bad = [
        dataclasses.replace(a2_01, name="a2-01-bad", key=loose),
        dataclasses.replace(a2_02, name="a2-02-bad", key=locked),
        dataclasses.replace(a200, name="a200-01-bad", known_hosts=known),
    ]
    expected = {
        "a2-01-bad": [f"key {loose} has mode 0644", "OpenSSH refuses too", f"chmod 600 {loose}"],
        "a2-02-bad": [f"key {locked} is passphrase-protected", "no SSH agent", "ssh-keygen -p"],
        "a200-01-bad": [
            f"known_hosts {known} line {line} is malformed",
            "delete or fix that line",
            f"ssh-keyscan -p {a200.port} {a200.address}",
        ],
    }
    return bad, expected


def test_ssh_unusable_key_or_known_hosts_is_bad_for_that_host_only(deployed_lab, tmp_path):
    lab, inventory, sha = deployed_lab
    bad, expected = _unusable_credentials(lab, inventory, tmp_path)
    results = check_pool([*bad, *inventory.hosts], open_transport, sha, state_dir=tmp_path / "s")
    assert {n: h.state for n, h in results.items()} == {
        "a2-01-bad": BAD,
        "a2-02-bad": BAD,
        "a200-01-bad": BAD,
        "a2-01": GOOD,
        "a2-02": GOOD,
        "a200-01": GOOD,
    }
    quarantined = Quarantine(tmp_path / "s").entries()
    assert sorted(quarantined) == sorted(expected)
    for name, needles in expected.items():
        (reason,) = results[name].reasons
        assert "\n" not in reason and reason.startswith(f"host {name}"), reason
        for needle in needles:
            assert needle in reason, (needle, reason)
        assert quarantined[name]["reason"] == reason


def test_an_unexpected_exception_is_a_reason_not_a_crash(local_host):
    def broken_factory(host):
        raise KeyError("surprise")

    health = check_host(local_host, broken_factory, "f" * 64)
    assert health.state == BAD
    assert health.reasons == [
        "host emu-t: the check failed unexpectedly (KeyError: 'surprise'); fix what it names, "
        "then rerun farm hosts --check"
    ]


def _canary_failed(host: str, verdict: str, machine: str | None = None) -> HostHealth:
    identity = {"host": machine} if machine else None
    return HostHealth(host, BAD, [canary_reason(host, verdict)], identity=identity)


def test_a_canary_failing_the_same_way_on_every_host_is_the_farms_fault():
    checks = [
        _canary_failed("a2-01", "AgentError: no module farm.x in /w/a2-01/versions", "node-7"),
        _canary_failed("a2-02", "AgentError: no module farm.x in /w/a2-02/versions"),
        HostHealth("a200-01", BAD, ["host a200-01 is unreachable"]),  # never reached it
    ]
    assert common_canary_failure(checks) == "AgentError: no module farm.x in <path>/versions"
    assert canary_failure(checks[2]) is None


def test_a_canary_failing_alike_up_to_each_hosts_address_path_and_soc_is_the_farms_fault():
    """The same planted failure on three hosts of two families, over SSH and through a shared
    agent: the messages differ only by what is each host's own (its address and port, the deploy
    path its agent runs from, its SoC and the family in the canary case's id). Said once, with
    placeholders; a host failing otherwise still stands alone."""

    def said(where: str, path: str, family: str) -> str:
        return (
            f"AgentError: agent on host {where}: executor: RuntimeError: planted in "
            f"{family}_f16_3x33_d-1_y.uniform_dy.normal | File "
            f'"{path}/versions/ab12/agent/farm/agent/execute.py", line 332, in _judge'
        )

    def failed(host: str, soc: str, verdict: str) -> HostHealth:
        return HostHealth(host, BAD, [canary_reason(host, verdict)], identity={"soc": soc})

    specs = {
        "a2-01": inv.HostSpec("a2-01", "Ascend910B1", 2, address="127.0.0.2", port=2201),
        "a2-02": inv.HostSpec("a2-02", "Ascend910B1", 2, address="127.0.0.3", port=2202),
        "a200-01": inv.HostSpec("a200-01", "Ascend310B1", 1, address="lab-c.example", port=22),
    }
    checks = [
        failed("a2-01", "Ascend910B1", said("a2-01 (127.0.0.2:2201)", "/srv/lab/a2-01", "910b")),
        failed("a2-02", "Ascend910B1", said("a2-02 (127.0.0.3:2202)", "/srv/lab/a2-01", "910b")),
        failed("a200-01", "Ascend310B1", said("a200-01 (lab-c.example:22)", "/home/f/.w", "310b")),
    ]
    common = common_canary_failure(checks, specs)
    assert common == (
        "AgentError: agent on host <host> (<address>): executor: RuntimeError: planted in "
        '<family>_f16_3x33_d-1_y.uniform_dy.normal | File "<path>/execute.py", line 332, '
        "in _judge"
    )
    assert common_canary_failure(checks) == common  # the addresses are known without the specs
    other = failed("a2-02", "Ascend910B1", said("a2-02 (127.0.0.3:2202)", "/srv/x", "910b") + "!")
    assert common_canary_failure([checks[0], other, checks[2]], specs) is None


def test_a_canary_failing_on_one_host_alone_is_that_hosts():
    alone = [_canary_failed("a2-01", "the host made other inputs"), HostHealth("a2-02", GOOD)]
    assert common_canary_failure(alone) is None
    assert common_canary_failure([_canary_failed("a2-01", "x")]) is None  # one host: cannot tell
    differ = [_canary_failed("a2-01", "x"), _canary_failed("a2-02", "y")]
    assert common_canary_failure(differ) is None


def test_a_missing_module_names_the_hosts_python_whole_with_a_space_in_its_path():
    """The agent says its python as "<executable> <version>": the fix named "/opt/my" of
    "/opt/my venv/bin/python3 3.11.7" (the path cut at its first space)."""
    host = inv.HostSpec("a2-01", "Ascend910B1", 1, transport="local")
    ident = {"soc": "Ascend910B1", "devices": 1, "missing": ["ml_dtypes"]}
    ident["python"] = "/opt/my venv/bin/python3 3.11.7"
    assert identity_problems(host, ident) == [
        "missing python module ml_dtypes on host a2-01: pip install ml_dtypes on host a2-01 "
        "(for /opt/my venv/bin/python3)"
    ]
