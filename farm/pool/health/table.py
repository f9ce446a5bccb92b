"""What `farm hosts` shows: each host of the pool with its health and, nested under it, its chips
(pool_health, typed: what `farm hosts --json` prints, docs/hosts.schema.json), and the same as
the table's text rows (host_rows: one row per host, then one per chip).

A value read from a host (its architecture, CANN, driver, judging path, chips) is shown only
when the check that gave the host its state read it: a host a check found bad without reading
it (unreachable, say) shows "-" (null in JSON), never what it said at an earlier, good check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from farm.agent.machine import Chip, Machine
from farm.pool.health.quarantine import Quarantine, devices_of, now_iso
from farm.pool.health.states import BAD, UNKNOWN, HostHealth
from farm.pool.inventory import HostSpec, Inventory

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
NOT_READ = "-"  # the table's cell of a value the check did not read


def pool_health(
    inventory: Inventory,
    state_dir: str | os.PathLike[str] | None = None,
    healths: Mapping[str, HostHealth] | None = None,
) -> list[dict[str, Any]]:
    """Each host of ``inventory``, typed (docs/hosts.schema.json): what the inventory says, its
    state, the values it said at the check that gave that state (``checked``; null when that
    check read none) and its chips nested (``chips``: one per device, empty when neither read
    nor set aside).

    ``state`` is this check's outcome where ``healths`` has the host (what it read: its
    identity, else what the quarantine recorded at or after its ``checked_at``), else ``bad``
    for a quarantined host (what a check that found it bad read) and ``unknown``
    otherwise (what it said at its last check).
    """
    q = Quarantine(state_dir) if state_dir is not None else None
    entries = q.entries() if q else {}
    chip_entries = q.chip_entries() if q else {}
    seen = q.seen() if q else {}
    return [
        _host(h, entries.get(h.name), chip_entries, seen.get(h.name), (healths or {}).get(h.name))
        for h in inventory.hosts
    ]


def _host(
    h: HostSpec,
    entry: dict[str, Any] | None,
    chip_entries: dict[str, Any],
    last: dict[str, Any] | None,
    checked: HostHealth | None,
) -> dict[str, Any]:
    if checked is not None:
        state = checked.state
        reason = "; ".join(checked.reasons) or None
        said = checked.identity or {}
        # What this check read: its identity, or the quarantine's record of it made by this
        # check (the same state, and not older: a record of an earlier good check made in the
        # same second is not what a check that found the host unreachable read).
        if (
            not said.get("machine")
            and last
            and last.get("state") == state
            and str(last.get("checked") or "") >= now_iso(checked.checked_at)
        ):
            said = last
        aside = {
            d: {
                "reason": why,
                "since": (devices_of(chip_entries, h.name).get(d) or {}).get("since"),
            }
            for d, why in checked.set_aside.items()
        }
    else:
        state = BAD if entry else UNKNOWN
        reason = entry["reason"] if entry else None
        # A quarantined host's values are those a check that found it bad read (what it said
        # at a good check before is no longer so).
        stale = entry is not None and (last or {}).get("state") != BAD
        said = {} if stale else last or {}
        aside = devices_of(chip_entries, h.name)
    raw = said.get("machine")
    machine = Machine.from_wire(raw) if isinstance(raw, dict) else None
    read = machine is not None
    return {
        "host": h.name,
        "transport": h.transport,
        "address": h.endpoint,
        "soc": h.soc,
        "family": h.family,
        "devices": h.devices,
        "tags": list(h.tags),
        "state": state,
        "quarantined": entry is not None,
        "reason": reason,
        "since": entry["since"] if entry else None,
        "checked": (str(said.get("checked") or "") or None) if read else None,
        "arch": machine.arch if machine else None,
        "cann": machine.cann_version if machine else None,
        "driver": machine.driver if machine else None,
        "judging": (str(said.get("judging") or "") or None) if read else None,
        "set_aside": len(aside),
        "machine": raw if read else None,
        "chips": _chips(h, state, machine, aside),
    }


def _chips(
    h: HostSpec, state: str, machine: Machine | None, aside: dict[int, Any]
) -> list[dict[str, Any]]:
    """One entry per device of ``h``: what npu-smi said of it at the check (``listed`` false: it
    did not list the chip; null: not read), its state (``set aside`` alone, or its host's)."""
    chips = {c.device: c for c in (machine.chips or ())} if machine else {}
    if not chips and not aside:
        return []
    out = []
    for device in range(h.devices):
        chip: Chip | None = chips.get(device)
        why = aside.get(device)
        out.append(
            {
                "device": device,
                "listed": (chip is not None) if machine is not None else None,
                "name": chip.name if chip else None,
                "health": chip.health if chip else None,
                "memory_used_mb": chip.memory_used_mb if chip else None,
                "memory_total_mb": chip.memory_total_mb if chip else None,
                "aicore_percent": chip.aicore_percent if chip else None,
                "state": SET_ASIDE if why else state,
                "set_aside": why is not None,
                "reason": why["reason"] if why else None,
                "since": (why.get("since") or None) if why else None,
            }
        )
    return out


def host_rows(
    inventory: Inventory,
    state_dir: str | os.PathLike[str] | None = None,
    healths: Mapping[str, HostHealth] | None = None,
) -> list[dict[str, str]]:
    """The rows of ``farm hosts``' table (keys: :data:`HOST_COLUMNS`, all text): one per host,
    then one per chip ("host:device"; a run of alike missing chips one row, "host:2-63") of a
    host that has chips (:func:`pool_health`); "-" where the check read nothing."""
    rows = []
    for h in pool_health(inventory, state_dir, healths):
        rows.append(
            {
                "host": h["host"],
                "transport": h["transport"],
                "address": h["address"],
                "arch": _read(h["arch"], h),
                "soc": h["soc"],
                "family": h["family"],
                "devices": str(h["devices"]),
                "cann": _read(h["cann"], h),
                "driver": _read(h["driver"], h),
                "chip": f"{h['set_aside']} set aside" if h["set_aside"] else "",
                "judging": _read(h["judging"], h),
                "tags": ",".join(h["tags"]),
                "state": h["state"],
                "quarantined": "yes" if h["quarantined"] else "no",
                "reason": h["reason"] or "",
                "since": h["since"] or "",
            }
        )
        chip_rows: list[tuple[int, dict[str, str]]] = []
        for chip in h["chips"]:
            device = chip["device"]
            text = {None: NOT_READ, False: "missing"}.get(chip["listed"]) or _chip_text(chip)
            row = {
                **{c: "" for c in HOST_COLUMNS},
                "host": f"{h['host']}:{device}",
                "soc": h["soc"],
                "chip": text,
                "state": chip["state"],
                "quarantined": "yes" if chip["set_aside"] else "no",
                "reason": chip["reason"] or "",
                "since": chip["since"] or "",
            }
            last_device, last = chip_rows[-1] if chip_rows else (-2, {})
            if chip["listed"] is not True and last_device == device - 1 and last:
                if last.get("chip") == text and {**last, "host": ""} == {**row, "host": ""}:
                    first = last["host"].rsplit(":", 1)[1].split("-")[0]  # alike: one row
                    last["host"] = f"{h['host']}:{first}-{device}"
                    chip_rows[-1] = (device, last)
                    continue
            chip_rows.append((device, row))
        rows += [row for _, row in chip_rows]
    return rows


def _read(value: str | None, host: dict[str, Any]) -> str:
    """A value read from the host as the table shows it: "-" when the check read nothing, ""
    when it read the host and the host has none."""
    if host["machine"] is None:
        return NOT_READ
    return value or ""


def _chip_text(chip: dict[str, Any]) -> str:
    """ "910B1 OK, 3150/65536 MB, AI Core 0%": a chip as npu-smi reported it."""
    text = f"{chip['name']} {chip['health']}"
    if chip["memory_total_mb"]:
        text += f", {chip['memory_used_mb']}/{chip['memory_total_mb']} MB"
    if chip["aicore_percent"] is not None:
        text += f", AI Core {chip['aicore_percent']}%"
    return text
