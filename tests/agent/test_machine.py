"""What a host says it is (farm/agent/machine.py): npu-smi's table read chip by chip, as the
genuine tool prints it; the chips that may not run cases; CANN, driver and firmware from their
version files; an architecture only an emulated host may declare."""

from __future__ import annotations

import platform

from farm.agent import machine
from farm.agent.machine import Chip, ChipProcess, Machine, chip_problem, parse_npu_smi
from farm.pool.lab import npu_smi as lab_npu_smi

# npu-smi 24.1 on an Atlas A2 server with two chips, the second running someone's job.
A2_TABLE = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc1                 Version: 24.1.rc1                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 101.8       43                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3318 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | Warning       | 92.0        39                0    / 0             |
| 0                         | 0000:C2:00.0  | 42          0    / 0          52314/ 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
| 1       0                 | 1712733       | sglangschedul            | 48954                   |
+===========================+===============+====================================================+
"""


def test_each_chip_of_the_table_with_its_state_and_the_processes_on_it():
    chips = parse_npu_smi(A2_TABLE)
    assert chips == (
        Chip(0, 0, 0, "910B3", "OK", 3318, 65536, 0, (), logical=0),
        Chip(
            1,
            1,
            0,
            "910B3",
            "Warning",
            52314,
            65536,
            42,
            (ChipProcess(1712733, "sglangschedul", 48954),),
            logical=1,
        ),
    )
    assert chip_problem(chips[0]) is None
    assert chip_problem(chips[1]) == (
        "chip 1 (910B3) has memory held by another process: pid 1712733 sglangschedul 48954 MB"
    )
    # The agent's own process on a chip is not another's.
    assert parse_npu_smi(A2_TABLE, frozenset({1712733}))[1].others == ()


def test_a_chip_in_alarm_or_worse_may_not_run_cases():
    for health, usable in (("OK", True), ("Warning", True), ("Alarm", False), ("Critical", False)):
        chip = Chip(0, 0, 0, "910B1", health)
        assert (chip_problem(chip) is None) == usable, health
    problem = chip_problem(Chip(0, 0, 0, "910B1", "Alarm"))
    assert problem is not None and "is in health Alarm" in problem


def test_the_labs_stand_in_prints_what_the_parser_reads():
    chips = [lab_npu_smi.default_chip("910B1") for _ in range(3)]
    chips[1].update(health="Critical")
    chips[2].update(processes=[{"pid": 77, "name": "train.py", "memory": 1024}])
    got = parse_npu_smi(lab_npu_smi.render({"version": "emulated", "chips": chips}))
    assert [(c.device, c.health, c.others) for c in got] == [
        (0, "OK", ()),
        (1, "Critical", ()),
        (2, "OK", (ChipProcess(77, "train.py", 1024),)),
    ]
    chips[0]["missing"] = True  # a chip the driver lost is not listed: the others move up
    assert len(parse_npu_smi(lab_npu_smi.render({"chips": chips}))) == 2


def test_nothing_parsed_from_what_is_not_the_table():
    assert parse_npu_smi("npu-smi: command not found\n") == ()
    assert parse_npu_smi("") == ()


def _ascend_tree(root, version="8.2.RC1", arch="aarch64"):
    home = root / "ascend-toolkit" / "latest"
    (home / f"{arch}-linux").mkdir(parents=True)
    (home / f"{arch}-linux" / "ascend_toolkit_install.info").write_text(
        f"package_name=Ascend-cann-toolkit\nversion={version}\n"
    )
    for part, v in (("driver", "24.1.rc3"), ("firmware", "7.5.0.3.220")):
        (root / part).mkdir()
        (root / part / "version.info").write_text(f"Version={v}\n")
    return home


def test_cann_driver_and_firmware_come_from_their_version_files(tmp_path):
    home = _ascend_tree(tmp_path / "Ascend")
    env = {"ASCEND_HOME_PATH": str(home), machine.ENV_NPU_SMI: str(tmp_path / "no-npu-smi")}
    got = machine.gather(env)
    # The toolkit of the host's architecture, or the one there is.
    assert (got.cann_version, got.cann_path) == ("8.2.RC1", str(home))
    assert (got.driver, got.firmware) == ("24.1.rc3", "7.5.0.3.220")
    assert machine.ascend_root(home) == (tmp_path / "Ascend").resolve()
    assert machine.gather({}).cann_version is None
    # A missing npu-smi is a problem to say, not no chips.
    assert got.chips is None and "no-npu-smi" in (got.npu_smi_problem or "")


def test_only_an_emulated_host_declares_another_architecture(tmp_path):
    env = {machine.ENV_ARCH: "aarch64", machine.ENV_NPU_SMI: str(tmp_path / "none")}
    emulated = {**env, "LSG_EMULATED_SOC": "Ascend910B1"}
    assert machine.gather(emulated).arch == "aarch64"
    assert machine.gather(emulated).declared == ("arch",)
    assert machine.gather(env).arch == platform.machine() and machine.gather(env).declared == ()


def test_the_machine_crosses_the_wire_both_ways(tmp_path):
    tool = tmp_path / "npu-smi"
    tool.write_text(f"#!/bin/sh\ncat {tmp_path / 'table'}\n")
    tool.chmod(0o755)
    (tmp_path / "table").write_text(A2_TABLE)
    got = machine.gather({machine.ENV_NPU_SMI: str(tool)})
    assert got.chips is not None and len(got.chips) == 2 and got.npu_smi_problem is None
    assert Machine.from_wire(got.to_wire()) == got
    assert got.glibc and got.os and got.arch == platform.machine()
