"""What a host is, beyond its SoC: CPU architecture, OS, C library, compiler, CANN, driver and
firmware, and each NPU chip's state as ``npu-smi info`` reports it.

Everything is read from the host itself, at the agent's ``identify``:

- ``arch`` from the kernel (``platform.machine()``); an *emulated* host (one that declares its
  SoC through ``LSG_EMULATED_SOC``) may declare another with ``LSG_EMULATED_ARCH``, so that a
  lab on one x86_64 machine can stand for an aarch64 board (test-only, like the emulated SoC);
- ``os`` from ``/etc/os-release`` (PRETTY_NAME), ``glibc`` from the C library itself, the
  ``compiler`` from ``g++ --version`` when the host has one;
- CANN from ``ASCEND_HOME_PATH`` (what CANN's ``set_env.sh`` exports): the version is the
  ``version=`` line of ``<home>/<arch>-linux/ascend_toolkit_install.info`` (of the one
  ``*-linux`` directory there is, when none is of the host's architecture);
- the driver and the firmware from ``driver/version.info`` and ``firmware/version.info``
  (``Version=`` lines) in the Ascend install root: the nearest directory above CANN's that has a
  ``driver`` directory, else ``/usr/local/Ascend``;
- the chips from ``npu-smi info`` (``LSG_NPU_SMI`` names another executable, for the SSH lab's
  stand-in): per chip its health, its memory in use and its AI Core use, and the processes on it
  that are not this agent's, whose memory keeps it from being ours. Each chip's ACL device id
  follows from its logical id (npu-smi's ``Device`` column where the table has one, as an Atlas
  200I/500 A2's has, else its place in the list) and ``ASCEND_RT_VISIBLE_DEVICES``: ACL device i
  is the i-th logical id listed there; a chip it leaves out has no device id here;
- the host's memory from ``/proc/meminfo`` (MemTotal, MemAvailable): the orchestrator bounds
  what one case may take on the host by it (suites/footprint.py).

:func:`chip_problem` says whether a chip may run cases; the orchestrator sets a chip aside alone
(farm/pool/health/identity.py). Standard library only.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from farm.agent import hostops
from farm.util import proc as procfs

ENV_ARCH = hostops.ENV_EMULATED_ARCH
ENV_NPU_SMI = "LSG_NPU_SMI"
ENV_VISIBLE = "ASCEND_RT_VISIBLE_DEVICES"
DEFAULT_ASCEND_ROOT = Path("/usr/local/Ascend")
MEMINFO = procfs.MEMINFO
COMMAND_TIMEOUT = 15.0
# npu-smi's health words; a chip in any other state does not run cases...
USABLE_HEALTH = ("OK", "Warning")
# ...unless the inventory accepts its state for the host (accept_health = ["Alarm"]): only these
# may be accepted. npu-smi documents Alarm as a major alarm: an Atlas 200I/500 A2 board often
# reports it for what does not stop the NPU (see docs/first-run-on-atlas.md, section 3).
ACCEPTABLE_HEALTH = ("Alarm",)


@dataclass(frozen=True)
class ChipProcess:
    pid: int
    name: str
    memory_mb: int | None


@dataclass(frozen=True)
class Chip:
    """One NPU chip: ``device`` is its ACL device id (None: not visible to this agent, see
    ``ASCEND_RT_VISIBLE_DEVICES``), ``logical`` its logical id (what that variable lists)."""

    device: int | None
    npu: int
    chip: int
    name: str
    health: str
    memory_used_mb: int | None = None
    memory_total_mb: int | None = None
    aicore_percent: int | None = None
    others: tuple[ChipProcess, ...] = ()  # processes on the chip that are not this agent's
    logical: int | None = None

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Chip:
        return cls(**{**d, "others": tuple(ChipProcess(**p) for p in d.get("others") or ())})


@dataclass(frozen=True)
class Machine:
    arch: str
    os: str
    glibc: str | None = None
    compiler: str | None = None
    cann_version: str | None = None
    cann_path: str | None = None
    driver: str | None = None
    firmware: str | None = None
    chips: tuple[Chip, ...] | None = None  # None: the host has no npu-smi
    npu_smi_problem: str | None = None  # why npu-smi said nothing usable
    declared: tuple[str, ...] = field(default=())  # fields an emulated host declared
    visible_devices: str | None = None  # ASCEND_RT_VISIBLE_DEVICES as the agent has it
    memory_total: int | None = None  # bytes: MemTotal of /proc/meminfo
    memory_available: int | None = None  # bytes: MemAvailable

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Machine:
        chips = d.get("chips")
        return cls(
            **{
                **d,
                "chips": None if chips is None else tuple(Chip.from_wire(c) for c in chips),
                "declared": tuple(d.get("declared") or ()),
            }
        )


# ELF e_machine -> the architecture (of the CPUs the farm knows).
ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def kernel_arch() -> str:
    """The architecture of the CPU this process runs on, whatever a host declares."""
    return hostops.normalise_arch(platform.machine())


def elf_arch_of(head: bytes) -> str | None:
    """The architecture of an ELF file from its first 20 bytes or more (its header's e_machine,
    as ELF_MACHINES names it; "ELF machine <n>" for another); None when they are not ELF."""
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    number = int.from_bytes(head[18:20], "big" if head[5] == 2 else "little")
    return ELF_MACHINES.get(number, f"ELF machine {number}")


def elf_arch(path: str) -> str | None:
    """The architecture an ELF file is built for, or None when it is not one (or unreadable)."""
    try:
        with open(path, "rb") as f:
            return elf_arch_of(f.read(64))
    except OSError:
        return None


def foreign_library(path: str) -> str | None:
    """Why a library failed to load where it is one of another architecture (the fix in the
    same line), else None: the one wording of the native and acl backends' loaders."""
    built_for, here = elf_arch(path), kernel_arch()
    if built_for and built_for != here:
        return (
            f"{path} is a library for {built_for}, and this machine runs {here}: the host "
            f"needs the package of its architecture (farm build --arch {here})"
        )
    return None


def chip_problem(chip: Chip, accept_health: tuple[str, ...] = ()) -> str | None:
    """Why a chip may not run cases, or None: not visible to the agent, a health other than OK or
    Warning (or one the inventory accepts for the host: ``accept_health``), or memory held by a
    process that is not the farm's."""
    if chip.device is None:
        return (
            f"chip {chip.npu}.{chip.chip} ({chip.name}, logical id {chip.logical}) is not "
            f"visible to the agent ({ENV_VISIBLE} leaves it out): add its logical id there to "
            "use it"
        )
    if chip.health not in USABLE_HEALTH and chip.health not in accept_health:
        check = f"npu-smi info -t health -i {chip.npu} -c {chip.chip}"
        said = f"chip {chip.device} ({chip.name}) is in health {chip.health}"
        if chip.health in ACCEPTABLE_HEALTH:
            return (
                f"{said} (npu-smi: a major alarm); see what it is with `{check}` and clear it, "
                f'or run on it anyway with accept_health = ["{chip.health}"] for the host in '
                "the inventory"
            )
        return f"{said} (npu-smi); see what it is with `{check}`"
    if chip.others:
        held = ", ".join(
            f"pid {p.pid} {p.name}" + (f" {p.memory_mb} MB" if p.memory_mb is not None else "")
            for p in chip.others
        )
        return f"chip {chip.device} ({chip.name}) has memory held by another process: {held}"
    return None


def visible_logical_ids(value: str | None) -> tuple[int, ...] | None:
    """The logical ids ``ASCEND_RT_VISIBLE_DEVICES`` lists, ACL device 0 first; None: unset (every
    chip visible, ACL device = logical id). An empty value lists none; entries are taken up to the
    first that is not a new logical id (a word, a negative number, a repeat)."""
    if value is None:
        return None
    ids: list[int] = []
    for word in value.split(","):
        word = word.strip()
        if not word.isdigit() or int(word) in ids:
            break
        ids.append(int(word))
    return tuple(ids)


def hidden_chips(machine: Machine) -> str | None:
    """One line on the chips npu-smi lists that this agent cannot use (not visible), or None."""
    hidden = [c for c in machine.chips or () if c.device is None]
    if not hidden:
        return None
    names = ", ".join(f"{c.npu}.{c.chip} (logical id {c.logical})" for c in hidden)
    return (
        f"{len(hidden)} chip(s) npu-smi lists are not visible to the agent and not used: {names} "
        f"({ENV_VISIBLE}={machine.visible_devices!r}); list their logical ids there to use them"
    )


# -- npu-smi -------------------------------------------------------------------------------

# "| 0     910B3               | OK            | 93.9        41                0    / 0  |"
# (names such as 910B4-1 or Ascend910 too)
_NPU_ROW = re.compile(
    r"^\|\s*(\d+)\s+((?:Ascend)?\d{3}[0-9A-Za-z]*(?:-[0-9A-Za-z]+)*)\s*\|\s*([A-Za-z]+)\s*\|"
)
# "| 0                         | 0000:C1:00.0  | 0           0    / 0          3162 / 65536 |"
# "| 0       0                 | NA            | 0            957   / 10810                 |"
# (the second number: the Device or Phy-ID column, where the header has one)
_CHIP_ROW = re.compile(r"^\|\s*(\d+)(?:\s+(\d+))?\s*\|\s*(\S+)\s*\|\s*(\d+|NA)\s+(.*)\|\s*$")
# "| Chip    Device                | Bus-Id          | AICore(%) ..." (or "Chip  Phy-ID")
_CHIP_HEADER = re.compile(r"^\|\s*Chip\s+([A-Za-z-]+)\s*\|")
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
# "| 0       0                 | 1712733       | python3            | 48954             | ..."
_PROCESS_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s*\|\s*(\d+)\s*\|\s*([^|]*?)\s*\|\s*(\d+|NA)\s*\|")


def parse_npu_smi(
    text: str, own_pids: frozenset[int] = frozenset(), visible: tuple[int, ...] | None = None
) -> tuple[Chip, ...]:
    """The chips of an ``npu-smi info`` table, in its order; processes in ``own_pids`` (this
    agent's) are not counted as others'. A chip's logical id is its ``Device`` column where the
    header has one (an Atlas 200I/500 A2), else its place in the list (a ``Phy-ID`` is physical);
    its ACL device id is its logical id, or, given ``visible`` (the logical ids of
    ASCEND_RT_VISIBLE_DEVICES, :func:`visible_logical_ids`), its place there (None: not there)."""
    lines = text.splitlines()
    rows: list[tuple[int, str, str, int, int | None, str]] = []  # npu, name, health, chip, id, rest
    logical_column = False
    in_processes = False
    processes: dict[tuple[int, int], list[ChipProcess]] = {}
    pending: tuple[int, str, str] | None = None
    for line in lines:
        if "Process id" in line:
            in_processes = True
            continue
        if in_processes:
            m = _PROCESS_ROW.match(line)
            if m:
                npu, chip, pid = int(m[1]), int(m[2]), int(m[3])
                memory = None if m[5] == "NA" else int(m[5])
                if pid not in own_pids:
                    processes.setdefault((npu, chip), []).append(ChipProcess(pid, m[4], memory))
            continue
        m = _CHIP_HEADER.match(line)
        if m:
            logical_column = m[1] == "Device"
            continue
        m = _NPU_ROW.match(line)
        if m:
            pending = (int(m[1]), m[2], m[3])
            continue
        m = _CHIP_ROW.match(line)
        if m and pending is not None:
            second = int(m[2]) if m[2] is not None and logical_column else None
            rows.append((*pending, int(m[1]), second, m[4] + " " + m[5]))
            pending = None
    chips = []
    for position, (npu, name, health, chip, said, rest) in enumerate(rows):
        logical = position if said is None else said
        if visible is None:
            device: int | None = logical
        else:
            device = visible.index(logical) if logical in visible else None
        aicore, _, usage = rest.partition(" ")
        pairs = _PAIR.findall(usage)
        used, total = (int(pairs[-1][0]), int(pairs[-1][1])) if pairs else (None, None)
        chips.append(
            Chip(
                device=device,
                npu=npu,
                chip=chip,
                name=name,
                health=health,
                memory_used_mb=used,
                memory_total_mb=total,
                aicore_percent=int(aicore) if aicore.isdigit() else None,
                others=tuple(processes.get((npu, chip), ())),
                logical=logical,
            )
        )
    return tuple(chips)


def npu_smi_path(environ: dict[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    if env.get(ENV_NPU_SMI):
        return env[ENV_NPU_SMI]
    return shutil.which("npu-smi") or next(
        (p for p in ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi") if os.access(p, os.X_OK)),
        None,
    )


def read_npu_smi(
    environ: dict[str, str] | None = None,
) -> tuple[tuple[Chip, ...] | None, str | None]:
    """(npu-smi's chips, the problem): (None, None) without npu-smi."""
    exe = npu_smi_path(environ)
    if exe is None:
        return None, None
    try:
        proc = subprocess.run(
            [exe, "info"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{exe} info failed: {exc}"
    if proc.returncode != 0:
        said = " ".join((proc.stderr or proc.stdout).split())[:300]
        return None, f"{exe} info exited {proc.returncode}: {said}"
    env = os.environ if environ is None else environ
    chips = parse_npu_smi(proc.stdout, _own_pids(), visible_logical_ids(env.get(ENV_VISIBLE)))
    return chips, None if chips else f"{exe} info listed no chip"


def _own_pids() -> frozenset[int]:
    """This agent's process and its process group's live members (/proc where there is one)."""
    return frozenset({os.getpid(), *procfs.members(os.getpgrp())})


# -- the rest of the machine ----------------------------------------------------------------


@cache  # what does not change while the agent lives is read once
def _os_name() -> str:
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.platform()
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.MULTILINE)
    return m[1] if m else platform.platform()


@cache
def _glibc() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        text = None
    if text:
        return text.split()[-1]
    name, version = platform.libc_ver()
    return version or None


@cache
def _compiler() -> str | None:
    exe = shutil.which("g++") or shutil.which("c++")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = proc.stdout.splitlines()[0].strip() if proc.stdout else ""
    return first or None


read_meminfo = procfs.meminfo  # (MemTotal, MemAvailable) in bytes


def info_value(path: Path, key: str) -> str | None:
    return hostops.info_value(str(path), key)


def ascend_root(cann_home: Path | None) -> Path:
    """The Ascend install root: the nearest directory above CANN's with a ``driver`` directory,
    else /usr/local/Ascend."""
    if cann_home is not None:
        for parent in cann_home.resolve().parents:
            if (parent / "driver").is_dir():
                return parent
    return DEFAULT_ASCEND_ROOT


def driver_info(environ: dict[str, str] | None = None) -> Path:
    """The driver's version.info, in the Ascend install root of the host's CANN."""
    env = os.environ if environ is None else environ
    home = Path(env["ASCEND_HOME_PATH"]) if env.get("ASCEND_HOME_PATH") else None
    return ascend_root(home) / "driver" / "version.info"


def gather(environ: dict[str, str] | None = None, meminfo: str = MEMINFO) -> Machine:
    """What the machine is. Its architecture and CANN version are hostops ``platform``'s, what
    deploy picked the host's package by: the same rule on both sides."""
    env = dict(os.environ if environ is None else environ)
    platform_ = hostops.host_platform(env)
    home = Path(env["ASCEND_HOME_PATH"]) if env.get("ASCEND_HOME_PATH") else None
    root = ascend_root(home)
    chips, problem = read_npu_smi(env)
    total, available = read_meminfo(meminfo)
    return Machine(
        arch=platform_["arch"],
        os=_os_name(),
        glibc=_glibc(),
        compiler=_compiler(),
        cann_version=platform_["cann"],
        cann_path=str(home) if home else None,
        driver=info_value(root / "driver" / "version.info", "version"),
        firmware=info_value(root / "firmware" / "version.info", "version"),
        chips=chips,
        npu_smi_problem=problem,
        declared=("arch",) if platform_["declared"] else (),
        visible_devices=env.get(ENV_VISIBLE),
        memory_total=total,
        memory_available=available,
    )


__all__ = [
    "ACCEPTABLE_HEALTH",
    "Chip",
    "ChipProcess",
    "Machine",
    "USABLE_HEALTH",
    "ascend_root",
    "chip_problem",
    "gather",
    "hidden_chips",
    "parse_npu_smi",
    "read_meminfo",
    "read_npu_smi",
    "visible_logical_ids",
]
