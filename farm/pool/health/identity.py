"""What a host says it is against what the inventory says of it (SoC, devices, the pins), and
which of its chips may not run cases, grouped for one line each (farm/pool/health/checks.py).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import Any

from farm.agent.machine import Machine, chip_problem, hidden_chips
from farm.pool.inventory import PIN_FIELDS, HostSpec


def identity_problems(
    host: HostSpec, ident: Mapping[str, Any], expected_bundle_sha: str | None = None
) -> list[str]:
    """What is wrong with a host's reported identity, one fix-naming line each."""
    name = host.name
    reasons: list[str] = []
    source = ident.get("source", "?")
    soc = ident.get("soc")
    if soc is None:
        detail = "; ".join(ident.get("problems") or []) or "no declaration found"
        reasons.append(f"host {name} declares no SoC ({detail})")
    elif soc != host.soc:
        reasons.append(
            f"SoC mismatch: host {name} declares {soc} (from {source}) but the inventory says "
            f"{host.soc}; fix the inventory or the host's declaration"
        )
    devices = ident.get("devices")
    if soc is not None and devices != host.devices:
        reasons.append(
            f"device count mismatch: host {name} declares {devices} device(s) (from {source}) but "
            f"the inventory says {host.devices}; fix the inventory or the host's declaration"
        )
    for problem in ident.get("problems") or []:
        if soc is not None:
            reasons.append(f"host {name}: {problem}")
    # The agent says "<executable> <version>"; the executable's path may hold spaces.
    python = ident["python"].rsplit(" ", 1)[0] if ident.get("python") else host.python
    for module in ident.get("missing") or []:
        reasons.append(
            f"missing python module {module} on host {name}: pip install {module} on host {name} "
            f"(for {python})"
        )
    reasons += pin_problems(host, ident)
    got = ident.get("bundle")
    if expected_bundle_sha and got != expected_bundle_sha:
        reasons.append(
            f"host {name} runs agent bundle {str(got)[:12]} but {expected_bundle_sha[:12]} is "
            "expected; redeploy the agent"
        )
    return reasons


def _machine(ident: Mapping[str, Any]) -> Machine | None:
    raw = ident.get("machine")
    return Machine.from_wire(raw) if isinstance(raw, dict) else None


def pin_problems(host: HostSpec, ident: Mapping[str, Any]) -> list[str]:
    """One line per inventory pin (arch = "aarch64", cann = "8.2.*", ...) the host does not
    match, naming the field, the pin and what the host reports."""
    if not host.pins:
        return []
    machine = _machine(ident)
    reasons = []
    for pin, pattern in host.pins:
        found = getattr(machine, PIN_FIELDS[pin]) if machine is not None else None
        if found is None or not fnmatch.fnmatchcase(found, pattern):
            said = "nothing" if found is None else repr(found)
            reasons.append(
                f"host {host.name}: {pin} is pinned to {pattern!r} in the inventory, the host "
                f"reports {said}; fix the pin or the host"
            )
    return reasons


def chip_set_aside(host: HostSpec, ident: Mapping[str, Any]) -> dict[int, str]:
    """The host's devices that may not run cases, each with its reason, from the chips the host
    reports (npu-smi) as its agent sees them (ASCEND_RT_VISIBLE_DEVICES): a chip missing, in
    alarm (unless the inventory's accept_health accepts it), or with memory another process
    holds. A host that reports no chips (no npu-smi: an emulated host) sets none aside."""
    machine = _machine(ident)
    if machine is None or machine.chips is None:
        return {}
    chips = {c.device: c for c in machine.chips if c.device is not None}
    seen = (
        ""
        if machine.visible_devices is None
        else f" visible to the agent (ASCEND_RT_VISIBLE_DEVICES={machine.visible_devices!r})"
    )
    aside = {}
    missing = [device for device in range(host.devices) if device not in chips]
    if missing:  # one reason for them all: said once, however many (devices = 64 for 2 chips)
        which = f"chip {missing[0]} is" if len(missing) == 1 else f"chips {ranges(missing)} are"
        why = (
            f"{which} missing: npu-smi lists {len(chips)} chip(s){seen}, the inventory says "
            f"{host.devices}; fix devices in the inventory, or the host's chips"
        )
        aside = dict.fromkeys(missing, why)
    for device, chip in chips.items():
        if device < host.devices and (problem := chip_problem(chip, host.accept_health)):
            aside[device] = problem
    return dict(sorted(aside.items()))


def ranges(devices: Iterable[int]) -> str:
    """Device numbers as a person reads them: "2-63", "0, 3, 5-7"."""
    parts: list[str] = []
    run: list[int] = []
    for d in sorted(set(devices)):
        if run and d != run[-1] + 1:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = []
        run.append(d)
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(parts)


def grouped(set_aside: Mapping[int, str]) -> list[tuple[str, str]]:
    """(devices, why) of chips set aside, the devices that share a reason together ("2-63"), in
    the order of their first device: what is said of them, once a reason."""
    by_reason: dict[str, list[int]] = {}
    for device in sorted(set_aside):
        by_reason.setdefault(set_aside[device], []).append(device)
    return [(ranges(devices), why) for why, devices in by_reason.items()]


def chip_notes(host: HostSpec, ident: Mapping[str, Any]) -> list[str]:
    """What the check says of the host's chips beyond those set aside: chips npu-smi lists that
    the agent cannot see, and chips that run although their health is one the inventory
    accepts (accept_health)."""
    machine = _machine(ident)
    if machine is None or machine.chips is None:
        return []
    notes = [f"host {host.name}: {hidden}"] if (hidden := hidden_chips(machine)) else []
    for chip in machine.chips:
        if chip.device is not None and chip.device < host.devices:
            if chip.health in host.accept_health:
                notes.append(
                    f"host {host.name}: chip {chip.device} ({chip.name}) runs in health "
                    f"{chip.health}, as the inventory's accept_health says"
                )
    return notes
