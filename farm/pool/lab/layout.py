"""Which hosts a lab of N hosts has (farm/pool/lab/core.py): the default layout cycles the families,
so that every family is there once there are hosts enough; a lab host as the lab keeps it (LabHost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# (name prefix, SoC, devices) of the default layout, cycled for N > 3.
LAYOUT = (("a2", "Ascend910B1", 2), ("a2", "Ascend910B1", 2), ("a200", "Ascend310B1", 1))
# Each lab host is an sshd, its keys and a work directory on this machine: the lab is for trying
# the farm over SSH, not for its scale (benchmarks/scale.py emulates hundreds of slots locally).
MAX_HOSTS = 64


def default_layout(hosts: int) -> list[tuple[str, str, int]]:
    """(name, soc, devices) of ``hosts`` lab hosts: LAYOUT's cycle, its last host given to a
    family the cycle left out once there are hosts enough for every family (2 hosts: one
    Ascend910B1, one Ascend310B1, where the cycle alone makes two of the first)."""
    chosen = [LAYOUT[i % len(LAYOUT)] for i in range(hosts)]
    families = list(dict.fromkeys(soc for _, soc, _ in LAYOUT))
    if hosts >= len(families):
        for entry in LAYOUT:
            if entry[1] not in {soc for _, soc, _ in chosen}:
                chosen[-1] = entry
    counts: dict[str, int] = {}
    layout = []
    for prefix, soc, devices in chosen:
        counts[prefix] = counts.get(prefix, 0) + 1
        layout.append((f"{prefix}-{counts[prefix]:02d}", soc, devices))
    return layout


def families_line(socs: list[str]) -> str:
    """What a lab's hosts emulate, by family, and what a run there leaves out."""
    from golden.soc import FAMILIES, family_of

    made: dict[str, list[str]] = {}
    for soc in socs:
        made.setdefault(family_of(soc), []).append(soc)
    said = ", ".join(f"{FAMILIES[f]} x{len(s)} ({s[0]})" for f, s in made.items())
    absent = [name for f, name in FAMILIES.items() if f not in made]
    if absent:
        said += (
            f"; no {' nor '.join(absent)} host: its cases do not run (--hosts "
            f"{len(FAMILIES)} or more makes every family)"
        )
    return said


@dataclass
class LabHost:
    name: str
    soc: str  # what the inventory says
    devices: int
    address: str
    port: int
    dir: str
    declared_soc: str = ""  # what the host itself declares (SetEnv); = soc unless changed
    declared_devices: int = 0
    fault: str | None = None
    hidden: list[str] = field(default_factory=list)
    pid: int | None = None
    cann_home: str = ""  # the host's CANN (ASCEND_HOME_PATH): here the emulated ACL runtime
    arch: str = ""  # the CPU architecture it declares (LSG_EMULATED_ARCH); "" = this machine's
    chips: list[dict] = field(default_factory=list)  # what its npu-smi reports (lab_npu_smi)

    def __post_init__(self) -> None:
        self.declared_soc = self.declared_soc or self.soc
        self.declared_devices = self.declared_devices or self.devices

    @property
    def path(self) -> Path:
        return Path(self.dir)
