"""The table of `farm hosts` (host_rows): one row per host, then one per chip of a host whose
chips were reported, each with its health and whether the quarantine holds it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from farm.agent.machine import Chip, Machine
from farm.pool.health.quarantine import Quarantine, devices_of
from farm.pool.health.states import BAD, UNKNOWN, HostHealth
from farm.pool.inventory import Inventory

HOST_COLUMNS = (
    "host",
    "transport",
    "address",
    "arch",
    "soc",
    "family",
    "devices",
    "cann",
    "driver",
    "chip",
    "judging",
    "tags",
    "state",
    "quarantined",
    "reason",
    "since",
)
SET_ASIDE = "set aside"


def host_rows(
    inventory: Inventory,
    state_dir: str | os.PathLike[str] | None = None,
    healths: Mapping[str, HostHealth] | None = None,
) -> list[dict[str, str]]:
    """The rows of ``farm hosts`` (keys: :data:`HOST_COLUMNS`, all strings): one per host, then
    one per chip ("host:device") of a host whose chips were reported, each with its health and,
    when set aside, why and since when.

    ``state`` is this check's outcome where ``healths`` has the host, else ``bad`` for a
    quarantined host and ``unknown`` otherwise. The architecture, CANN, driver, chips and judging
    path (golden/fused.py: fused, or numpy and why) are what the host said at its last check.
    """
    q = Quarantine(state_dir) if state_dir is not None else None
    entries = q.entries() if q else {}
    chip_entries = q.chip_entries() if q else {}
    seen = q.seen() if q else {}
    rows = []
    for h in inventory.hosts:
        entry = entries.get(h.name)
        checked = (healths or {}).get(h.name)
        if checked is not None:
            state = checked.state
            reason = "; ".join(checked.reasons)
        else:
            state = BAD if entry else UNKNOWN
            reason = entry["reason"] if entry else ""
        said = (checked.identity or {}) if checked else {}
        last = seen.get(h.name) or {}
        raw = said.get("machine") or last.get("machine")
        judging = str(said.get("judging") or last.get("judging") or "")
        machine = Machine.from_wire(raw) if isinstance(raw, dict) else None
        chips = {c.device: c for c in (machine.chips or ())} if machine else {}
        aside = devices_of(chip_entries, h.name)
        if checked is not None:
            aside = {
                d: {"reason": why, "since": (aside.get(d) or {}).get("since", "")}
                for d, why in checked.set_aside.items()
            }
        rows.append(
            {
                "host": h.name,
                "transport": h.transport,
                "address": h.endpoint,
                "arch": (machine.arch if machine else ""),
                "soc": h.soc,
                "family": h.family,
                "devices": str(h.devices),
                "cann": (machine.cann_version or "") if machine else "",
                "driver": (machine.driver or "") if machine else "",
                "chip": f"{len(aside)} set aside" if aside else "",
                "judging": judging,
                "tags": ",".join(h.tags),
                "state": state,
                "quarantined": "yes" if entry else "no",
                "reason": reason,
                "since": entry["since"] if entry else "",
            }
        )
        if not chips and not aside:
            continue
        chip_rows: list[tuple[int, dict[str, str]]] = []
        for device in range(h.devices):
            chip = chips.get(device)
            out = aside.get(device)
            row = {
                **{c: "" for c in HOST_COLUMNS},
                "host": f"{h.name}:{device}",
                "soc": h.soc,
                "chip": _chip_text(chip) if chip else "missing",
                "state": SET_ASIDE if out else state,
                "quarantined": "yes" if out else "no",
                "reason": out["reason"] if out else "",
                "since": out["since"] if out else "",
            }
            last_device, last = chip_rows[-1] if chip_rows else (-2, {})
            if chip is None and last.get("chip") == "missing" and last_device == device - 1:
                if {**last, "host": ""} == {**row, "host": ""}:  # a run of missing chips: one row
                    first = last["host"].rsplit(":", 1)[1].split("-")[0]
                    last["host"] = f"{h.name}:{first}-{device}"
                    chip_rows[-1] = (device, last)
                    continue
            chip_rows.append((device, row))
        rows += [row for _, row in chip_rows]
    return rows


def _chip_text(chip: Chip) -> str:
    """ "910B1 OK, 3150/65536 MB, AI Core 0%": a chip as npu-smi reported it."""
    text = f"{chip.name} {chip.health}"
    if chip.memory_total_mb:
        text += f", {chip.memory_used_mb}/{chip.memory_total_mb} MB"
    if chip.aicore_percent is not None:
        text += f", AI Core {chip.aicore_percent}%"
    return text
