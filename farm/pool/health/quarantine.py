"""The quarantine (after LAVA's device health states): a JSON file in a state directory, safe
across processes. A bad check (or repeated infrastructure errors during a run) puts a host, or
one of its chips, there with the reason and the time; it stays until a later check passes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from farm.pool.health.states import HostHealth

QUARANTINE_FILE = "quarantine.json"
# Infrastructure errors on one host within a run before it is quarantined (farm/run/leases.py).
QUARANTINE_AFTER = 3


def now_iso(ts: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if ts is None else ts, timezone.utc).isoformat(
        timespec="seconds"
    )


class Quarantine:
    """Persistent host quarantine: ``<state_dir>/quarantine.json``, safe across processes.

    Format: ``{"version": 1, "hosts": {name: {"reason", "since", "updated"}}, "chips":
    {"name:device": {...the same}}, "seen": {name: {"state", "machine", "checked"}}}``: the
    hosts set aside, the chips of good hosts set aside alone, and what each host last said it is
    (for ``farm hosts``). Mid-run infrastructure errors are counted per run (farm/run/leases.py
    RunState) and land here when they reach ``QUARANTINE_AFTER``.
    """

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(state_dir)
        self.path = self.dir / QUARANTINE_FILE

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / (QUARANTINE_FILE + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                tmp = self.path.with_name(f".{QUARANTINE_FILE}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
                tmp.replace(self.path)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError):
            # A damaged file must not keep hosts out forever, nor crash the run: start afresh.
            data = {}
        if not isinstance(data, dict):
            data = {}
        data.setdefault("version", 1)
        for key in ("hosts", "chips", "seen"):
            if not isinstance(data.get(key), dict):
                data[key] = {}
        return data

    def entries(self) -> dict[str, dict[str, Any]]:
        return dict(self._read()["hosts"])

    def chip_entries(self) -> dict[str, dict[str, Any]]:
        """The chips set aside alone: "host:device" -> {"reason", "since", "updated"}."""
        return dict(self._read()["chips"])

    def seen(self) -> dict[str, dict[str, Any]]:
        """What each host last said it is: name -> {"state": that check's outcome, "machine":
        Machine wire form, "judging": which path judges there (golden/fused.py status),
        "checked"}."""
        return dict(self._read()["seen"])

    def reason(self, host: str) -> str | None:
        entry = self._read()["hosts"].get(host)
        return entry["reason"] if entry else None

    def add(self, host: str, reason: str) -> None:
        with self._locked() as data:
            _enter(data["hosts"], host, reason)

    def release(self, host: str) -> None:
        with self._locked() as data:
            data["hosts"].pop(host, None)

    def record(self, health: HostHealth) -> None:
        """A bad check quarantines the host; a good one releases it, and sets aside its chips
        that may not run cases (and no others: a chip healthy again comes back)."""
        with self._locked() as data:
            name = health.host
            if not health.good:
                if health.blame_host:
                    _enter(data["hosts"], name, "; ".join(health.reasons) or "health check failed")
            else:
                data["hosts"].pop(name, None)
                for device in devices_of(data["chips"], name):
                    if device not in health.set_aside:  # healthy again: back in the pool
                        del data["chips"][f"{name}:{device}"]
                for device, reason in health.set_aside.items():
                    _enter(data["chips"], f"{name}:{device}", reason)
            identity = health.identity or {}
            machine = identity.get("machine")
            if isinstance(machine, dict):
                data["seen"][name] = {  # state: a quarantined host's are those it was put by
                    "state": health.state,
                    "machine": machine,
                    "judging": str(identity.get("judging") or ""),
                    "checked": now_iso(health.checked_at),
                }


def devices_of(by_slot: Mapping[str, Any], host: str) -> dict[int, Any]:
    """The entries of ``host``'s chips in a table keyed by slot id ("host:device"), by device."""
    found = {}
    for slot, value in by_slot.items():
        name, _, device = slot.rpartition(":")
        if name == host:
            found[int(device)] = value
    return found


def _enter(table: dict[str, Any], key: str, reason: str) -> None:
    """Set ``key`` aside in ``table`` with ``reason``; since when stays that of the first time."""
    now = now_iso()
    entry = table.get(key)
    if entry is None:
        table[key] = {"reason": reason, "since": now, "updated": now}
    else:
        entry.update(reason=reason, updated=now)
