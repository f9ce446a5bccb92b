"""`farm hosts` over the SSH lab, true at a glance: a check that finds every host stopped exits 2,
and what it shows of them afterwards is what that check read (nothing: "-" in the table, null in
`--json`), never the chips and CANN a good check read before; `--json` validates against
docs/hosts.schema.json whatever the pool's state."""

from __future__ import annotations

import json
import subprocess

from farm.pool.health import hosts_schema
from tests.requirements import need

try:
    import jsonschema
except ImportError:  # a dev dependency (pyproject's [dev]): CI has it
    jsonschema = None

HOSTS = ("a2-01", "a2-02", "a200-01")


def _hosts(farm, inventory: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        farm.argv("hosts", "--inventory", inventory, *options),
        cwd=farm.root,
        env=farm.env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _valid(text: str) -> list[dict]:
    hosts = json.loads(text)
    jsonschema.Draft202012Validator(hosts_schema.schema()).validate(hosts)
    return hosts


def test_hosts_check_with_every_host_stopped_exits_2_and_shows_nothing_stale(
    farm, lab, lab_inventory, broken_hosts
):
    need(jsonschema is not None, "jsonschema (pip install -e '.[dev]')")
    for name in HOSTS:
        lab.set_chip(name, 0, health="OK")  # each host's npu-smi lists its chips
    good = _hosts(farm, lab_inventory, "--check", "--json")
    assert good.returncode == 0, good.stdout + good.stderr
    before = {h["host"]: h for h in _valid(good.stdout)}
    assert {h["state"] for h in before.values()} == {"good"}
    a2 = before["a2-01"]
    assert a2["arch"] and a2["checked"] and a2["devices"] == 2 and a2["quarantined"] is False
    assert [c["device"] for c in a2["chips"]] == [0, 1] and a2["chips"][0]["health"] == "OK"

    broken_hosts += list(HOSTS)
    for name in HOSTS:
        lab.kill_host(name)
    check = _hosts(farm, lab_inventory, "--check")
    assert check.returncode == 2, check.stdout + check.stderr
    header, *lines = check.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(HOSTS)  # no chip rows: none was read
    for line in lines:
        assert " bad " in line and " - " in line and "910B1 OK" not in line, line

    after = _hosts(farm, lab_inventory, "--json")  # without a check: the quarantine's word
    assert after.returncode == 0, after.stderr
    for host in _valid(after.stdout):
        assert (host["state"], host["quarantined"], host["chips"]) == ("bad", True, []), host
        assert host["arch"] is host["cann"] is host["machine"] is host["checked"] is None, host
        assert host["reason"] and host["since"]
