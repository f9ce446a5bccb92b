"""`farm hosts` is true at a glance: a value read from a host is shown only where the check that
gave the host its state read it ("-" in the table, null in JSON, never what a good check said
before), and `farm hosts --json` is typed, its chips under their host, valid against the
committed docs/hosts.schema.json (farm/pool/health/hosts_schema.py makes it)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from farm.agent.machine import Chip, Machine
from farm.pool.health import hosts_schema
from farm.pool.health.checks import BAD, GOOD, HostHealth, Quarantine, host_rows, pool_health
from farm.pool.inventory import HostSpec, Inventory, default_inventory
from tests.requirements import need

try:
    import jsonschema
except ImportError:  # a dev dependency (pyproject's [dev]): CI has it
    jsonschema = None

HOST = "a2-01"


def _machine() -> dict[str, Any]:
    chips = tuple(Chip(d, d, 0, "910B1", "OK", 3150, 65536, 0) for d in range(2))
    return Machine(
        "aarch64", "EulerOS", cann_version="8.2.RC1", driver="24.1", chips=chips
    ).to_wire()


def _pool(tmp_path) -> Inventory:
    host = HostSpec(HOST, "Ascend910B1", 2, transport="local", workdir=str(tmp_path))
    return dataclasses.replace(default_inventory(tmp_path / "h"), hosts=[host])


def _good_check(state, at: float) -> None:
    identity = {"machine": _machine(), "judging": "fused (numba)"}
    Quarantine(state).record(HostHealth(HOST, GOOD, [], identity=identity, checked_at=at))


def test_a_host_found_bad_without_being_read_shows_nothing_it_said_before(tmp_path):
    state = tmp_path / "state"
    _good_check(state, time.time() - 3600)  # an hour ago, good: its chips and CANN were read
    now = time.time()
    unreachable = HostHealth(HOST, BAD, ["host a2-01: connection refused"], checked_at=now)
    Quarantine(state).record(unreachable)

    rows = {r["host"]: r for r in host_rows(_pool(tmp_path), state, {HOST: unreachable})}
    assert list(rows) == [HOST]  # no chip rows: this check read no chip
    row = rows[HOST]
    assert (row["state"], row["arch"], row["cann"], row["driver"], row["judging"]) == (
        "bad",
        "-",
        "-",
        "-",
        "-",
    )
    (host,) = pool_health(_pool(tmp_path), state, {HOST: unreachable})
    assert host["chips"] == [] and host["machine"] is None and host["checked"] is None
    assert (host["arch"], host["cann"], host["quarantined"]) == (None, None, True)

    # Without a check: the quarantined host shows nothing it said before it was put there.
    (host,) = pool_health(_pool(tmp_path), state)
    assert (host["state"], host["arch"], host["chips"]) == ("bad", None, [])
    assert host_rows(_pool(tmp_path), state)[0]["cann"] == "-"


def test_a_good_check_in_the_same_second_is_not_what_an_unreachable_check_read(tmp_path):
    """The e2e lab test's case: a good check, then the hosts killed and checked again within the
    same second (the record's time is in whole seconds): still nothing of the good check shown."""
    state = tmp_path / "state"
    at = float(int(time.time()))  # the start of a second: both checks in it
    _good_check(state, at + 0.2)
    unreachable = HostHealth(HOST, BAD, ["host a2-01: connection refused"], checked_at=at + 0.1)
    (host,) = pool_health(_pool(tmp_path), state, {HOST: unreachable})
    assert (host["state"], host["arch"], host["chips"], host["machine"]) == ("bad", None, [], None)


def test_a_host_quarantined_mid_run_shows_nothing_it_said_at_the_check_before(tmp_path):
    state = tmp_path / "state"
    _good_check(state, time.time() - 60)
    Quarantine(state).add(HOST, "3 infrastructure errors in run X")
    rows = host_rows(_pool(tmp_path), state)
    assert [(r["host"], r["state"], r["arch"]) for r in rows] == [(HOST, "bad", "-")]


def test_what_this_check_read_is_shown_good_or_bad(tmp_path):
    state = tmp_path / "state"
    at = time.time()
    _good_check(state, at)
    good = HostHealth(HOST, GOOD, [], checked_at=at - 1)  # as `farm hosts --check` makes it
    rows = host_rows(_pool(tmp_path), state, {HOST: good})
    assert [(r["host"], r["state"], r["arch"], r["chip"]) for r in rows] == [
        (HOST, "good", "aarch64", ""),
        (f"{HOST}:0", "good", "", "910B1 OK, 3150/65536 MB, AI Core 0%"),
        (f"{HOST}:1", "good", "", "910B1 OK, 3150/65536 MB, AI Core 0%"),
    ]
    # A check that found the host bad after reading it (its SoC, say) shows what it read.
    identity = {"machine": _machine(), "judging": "numpy (no numba)"}
    Quarantine(state).record(HostHealth(HOST, BAD, ["SoC mismatch: ..."], identity=identity))
    (host,) = pool_health(_pool(tmp_path), state)
    assert (host["state"], host["cann"], host["judging"]) == ("bad", "8.2.RC1", "numpy (no numba)")
    assert [c["health"] for c in host["chips"]] == ["OK", "OK"]


def test_json_is_typed_with_chips_under_their_host(tmp_path):
    need(jsonschema is not None, "jsonschema (pip install -e '.[dev]')")
    state = tmp_path / "state"
    _good_check(state, time.time())
    Quarantine(state).record(
        HostHealth(HOST, GOOD, [], identity={"machine": _machine()}, set_aside={1: "in Alarm"})
    )
    hosts = pool_health(_pool(tmp_path), state)
    (host,) = hosts
    assert (host["devices"], host["quarantined"], host["set_aside"], host["tags"]) == (
        2,
        False,
        1,
        [],
    )
    assert [
        (c["device"], c["listed"], c["set_aside"], c["memory_total_mb"]) for c in host["chips"]
    ] == [
        (0, True, False, 65536),
        (1, True, True, 65536),
    ]
    assert host["chips"][1]["state"] == "set aside" and host["chips"][1]["reason"] == "in Alarm"
    assert host["reason"] is None and host["since"] is None
    jsonschema.Draft202012Validator(hosts_schema.schema()).validate(hosts)
    unchecked = pool_health(default_inventory(tmp_path / "emu"))
    jsonschema.Draft202012Validator(hosts_schema.schema()).validate(unchecked)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**host, "devices": "2"}], hosts_schema.schema())


def test_the_committed_schema_is_the_one_the_code_makes():
    assert hosts_schema.PATH.read_text(encoding="utf-8") == hosts_schema.text(), (
        "docs/hosts.schema.json is stale: run python -m farm.pool.health.hosts_schema --write"
    )
