"""npu-smi tables of the products the farm runs on (our own fixtures in tests/agent/npu_smi, laid
out as npu-smi 23.x-25.x prints them on Atlas A2 servers and Atlas 200I/500 A2 boards): every
chip read with its name, health, memory, AI Core use, logical and ACL device ids and processes;
the SoC an npu-smi identity gives; a chip in Alarm refused in one line, or run where the
inventory accepts it; ACL device ids under ASCEND_RT_VISIBLE_DEVICES."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.agent import identity, machine
from farm.agent.machine import Chip, Machine, chip_problem, parse_npu_smi
from farm.pool.health import checks as health
from farm.pool.inventory import HostSpec
from golden import soc

TABLES = Path(__file__).parent / "npu_smi"


def table(name: str) -> str:
    return (TABLES / name).read_text()


# file -> (SoC, [(name, health, hbm used, hbm total, aicore)], {npu: [(pid, name, MB)]})
EXPECTED = {
    "atlas800t_a2_910b3.txt": (
        "Ascend910B3",
        [
            ("910B3", "Warning" if i == 6 else "OK", 61877 if i in (2, 5) else 3391 + i, 65536)
            for i in range(8)
        ],
        {
            2: [(3318825, "python3.10", 58368)],
            5: [(3318901, "python3.10", 55296), (3320117, "pt_main_thread", 2048)],
        },
    ),
    "atlas900_a2_910b1.txt": (
        "Ascend910B1",
        [("910B1", "OK", 3162 + 7 * i, 65536) for i in range(8)],
        {7: [(90211, "ray::Worker", 1536)]},
    ),
    "atlas800i_a2_910b4.txt": (
        "Ascend910B4",
        [("910B4", "OK", 2870 + i, 32768) for i in range(8)],
        {},
    ),
    "server_910b2c.txt": (
        "Ascend910B2C",
        [("910B2C", "OK", 20433, 65536), ("910B2C", "OK", 3302, 65536)],
        {0: [(124907, "python3.8", 17152)]},
    ),
    "server_910b4-1.txt": ("Ascend910B4-1", [("910B4-1", "OK", 2915, 65536)] * 4, {}),
    "atlas200i_a2_310b1.txt": ("Ascend310B1", [("310B1", "Alarm", 1843, 7545)], {}),
    "board_310b4.txt": ("Ascend310B4", [("310B4", "Alarm", 4012, 15609)], {}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_chip_of_every_table(name):
    want_soc, rows, processes = EXPECTED[name]
    chips = parse_npu_smi(table(name))
    assert [(c.name, c.health, c.memory_used_mb, c.memory_total_mb) for c in chips] == rows
    # One chip per NPU, listed in order: logical id = ACL device id = its place in the list.
    assert [(c.device, c.logical, c.npu, c.chip) for c in chips] == [
        (i, i, i, 0) for i in range(len(rows))
    ]
    assert {
        c.npu: [(p.pid, p.name, p.memory_mb) for p in c.others] for c in chips if c.others
    } == processes
    assert identity.parse_npu_smi(table(name)) == (want_soc, len(rows))
    # Each SoC npu-smi names is one the farm knows, with its family.
    assert soc.profile(want_soc).family == ("ascend310b" if "310B" in want_soc else "ascend910b")


def test_ai_core_use_and_a_busy_chip_is_not_the_farms():
    chips = parse_npu_smi(table("atlas800t_a2_910b3.txt"))
    assert [c.aicore_percent for c in chips] == [0, 0, 57, 0, 0, 57, 0, 0]
    assert chip_problem(chips[6]) is None  # Warning runs
    assert chip_problem(chips[5]) == (
        "chip 5 (910B3) has memory held by another process: pid 3318901 python3.10 55296 MB, "
        "pid 3320117 pt_main_thread 2048 MB"
    )
    # The agent's own processes are not another's.
    mine = parse_npu_smi(table("atlas800t_a2_910b3.txt"), frozenset({3318901, 3320117}))
    assert mine[5].others == ()
    assert parse_npu_smi(table("board_310b4.txt"))[0].aicore_percent == 3


@pytest.mark.parametrize(
    "name, npu_name", [("atlas200i_a2_310b1.txt", "310B1"), ("board_310b4.txt", "310B4")]
)
def test_a_chip_in_alarm_is_refused_in_one_line_unless_the_inventory_accepts_it(name, npu_name):
    (chip,) = parse_npu_smi(table(name))
    problem = chip_problem(chip)
    assert problem is not None and "\n" not in problem
    assert problem.startswith(f"chip 0 ({npu_name}) is in health Alarm (npu-smi: a major alarm)")
    assert "`npu-smi info -t health -i 0 -c 0`" in problem  # how to see the alarm
    assert 'accept_health = ["Alarm"]' in problem  # how to run on it anyway
    assert chip_problem(chip, ("Alarm",)) is None
    # Worse than Alarm is never accepted, and says how to look at it.
    critical = Chip(0, 0, 0, npu_name, "Critical")
    assert chip_problem(critical, ("Alarm",)) == (
        f"chip 0 ({npu_name}) is in health Critical (npu-smi); see what it is with "
        "`npu-smi info -t health -i 0 -c 0`"
    )


def _ident(chips, **machine_fields) -> dict:
    m = Machine(arch="aarch64", os="test", chips=tuple(chips), **machine_fields)
    return {"machine": m.to_wire()}


def test_the_health_check_sets_an_alarm_chip_aside_or_runs_it_as_the_inventory_says():
    chips = parse_npu_smi(table("board_310b4.txt"))
    strict = HostSpec("orange-01", "Ascend310B4", 1)
    accepting = HostSpec("orange-01", "Ascend310B4", 1, accept_health=("Alarm",))
    assert list(health.chip_set_aside(strict, _ident(chips))) == [0]
    assert "accept_health" in health.chip_set_aside(strict, _ident(chips))[0]
    assert health.chip_set_aside(accepting, _ident(chips)) == {}
    assert health.chip_notes(accepting, _ident(chips)) == [
        "host orange-01: chip 0 (310B4) runs in health Alarm, as the inventory's accept_health says"
    ]
    assert health.chip_notes(strict, _ident(chips)) == []


# -- ASCEND_RT_VISIBLE_DEVICES ---------------------------------------------------------------


def test_the_visible_devices_list_logical_ids_acl_device_0_first():
    assert machine.visible_logical_ids(None) is None  # unset: every chip, device = logical id
    assert machine.visible_logical_ids("2,3") == (2, 3)
    assert machine.visible_logical_ids(" 5, 1 ") == (5, 1)
    assert machine.visible_logical_ids("") == ()
    assert machine.visible_logical_ids("1,x,2") == (1,)  # up to the first that is not an id
    assert machine.visible_logical_ids("1,1,2") == (1,)


def test_acl_device_ids_follow_the_visible_devices():
    text = table("atlas800t_a2_910b3.txt")
    chips = parse_npu_smi(text, visible=(2, 3))
    # ACL device 0 is the chip of logical id 2, device 1 logical id 3; the rest are not ours.
    assert [(c.logical, c.device) for c in chips] == [
        (0, None),
        (1, None),
        (2, 0),
        (3, 1),
        (4, None),
        (5, None),
        (6, None),
        (7, None),
    ]
    assert chip_problem(chips[0]) == (
        "chip 0.0 (910B3, logical id 0) is not visible to the agent (ASCEND_RT_VISIBLE_DEVICES "
        "leaves it out): add its logical id there to use it"
    )
    # The order of the list is ACL's order.
    seen = [c for c in parse_npu_smi(text, visible=(6, 1)) if c.device is not None]
    assert [(c.logical, c.device) for c in seen] == [(1, 1), (6, 0)]


def test_a_310b_boards_device_column_is_its_logical_id():
    # The Atlas 200I/500 A2 table names the device: a board whose chip is device 1.
    text = table("board_310b4.txt").replace(
        "| 0       0                     | NA", "| 0       1                     | NA"
    )
    (chip,) = parse_npu_smi(text)
    assert (chip.logical, chip.device) == (1, 1)
    assert parse_npu_smi(text, visible=(1,))[0].device == 0
    assert parse_npu_smi(text, visible=(0,))[0].device is None


def _npu_smi(tmp_path, name) -> str:
    tool = tmp_path / "npu-smi"
    (tmp_path / "table").write_text(table(name))
    tool.write_text(f"#!/bin/sh\ncat {tmp_path / 'table'}\n")
    tool.chmod(0o755)
    return str(tool)


def test_an_agent_under_visible_devices_reports_and_uses_only_those(tmp_path, monkeypatch):
    tool = _npu_smi(tmp_path, "atlas800t_a2_910b3.txt")
    env = {machine.ENV_NPU_SMI: tool, machine.ENV_VISIBLE: "2,3"}
    got = machine.gather(env)
    assert got.visible_devices == "2,3"
    assert [c.logical for c in got.chips or () if c.device is not None] == [2, 3]
    # Its npu-smi identity counts the chips it may use.
    monkeypatch.setenv(machine.ENV_NPU_SMI, tool)
    monkeypatch.setenv(machine.ENV_VISIBLE, "2,3")
    assert identity.npu_smi_identity() == ("Ascend910B3", 2)
    # The health check maps the inventory's devices 0 and 1 to those chips, and says the rest
    # are not used, in one line.
    host = HostSpec("a2-01", "Ascend910B3", 2)
    ident = {"machine": got.to_wire()}
    # Logical id 2 runs someone's job: ACL device 0 is set aside, not chip 0.
    assert list(health.chip_set_aside(host, ident)) == [0]
    assert "pid 3318825 python3.10" in health.chip_set_aside(host, ident)[0]
    (note,) = health.chip_notes(host, ident)
    assert note.startswith("host a2-01: 6 chip(s) npu-smi lists are not visible to the agent")
    assert "0.0 (logical id 0)" in note and "ASCEND_RT_VISIBLE_DEVICES='2,3'" in note
    # The job on logical id 3 instead: device 1 is set aside.
    busy = table("atlas800t_a2_910b3.txt").replace(
        "| 2       0                 | 3318825 ", "| 3       0                 | 3318825 "
    )
    chips = parse_npu_smi(busy, visible=(2, 3))
    assert list(health.chip_set_aside(host, _ident(chips))) == [1]
    # An inventory that counts more devices than the agent sees: the rest are missing.
    wider = HostSpec("a2-01", "Ascend910B3", 3)
    assert health.chip_set_aside(wider, _ident(chips, visible_devices="2,3"))[2] == (
        "chip 2 is missing: npu-smi lists 2 chip(s) visible to the agent "
        "(ASCEND_RT_VISIBLE_DEVICES='2,3'), the inventory says 3; fix devices in the "
        "inventory, or the host's chips"
    )
