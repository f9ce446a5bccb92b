"""A slot: one device of one healthy host, where the dispatcher sends cases.

The plan lists a run's slots (farm/run/plan.py, in plan.json as ``{"id", "host", "family",
"soc", "device", "torch"}``); every worker reads them back as :class:`SlotInfo`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class SlotInfo:
    id: str  # "host:device"
    host: str
    family: str
    soc: str
    device: int
    # Whether the host has PyTorch, which the benchmark-ratio standard's benchmark needs (its
    # identity's deps); such cases go only to slots that have it.
    torch: bool = True

    def to_json(self) -> dict[str, Any]:
        """The slot as plan.json keeps it."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SlotInfo:
        """A slot of plan.json; a missing or mistyped field is a ValueError naming it."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"slot {data.get('id')!r}: unknown field {unknown[0]!r} in the plan")
        for name, kind in _TYPES.items():
            if name not in data:
                if name == "torch":
                    continue
                raise ValueError(f"slot {data.get('id')!r}: no {name!r} in the plan")
            value = data[name]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(
                    f"slot {data.get('id')!r}: {name} is {value!r}, not a {kind.__name__}, in "
                    "the plan"
                )
        return cls(**data)


_TYPES: dict[str, type] = {
    "id": str,
    "host": str,
    "family": str,
    "soc": str,
    "device": int,
    "torch": bool,
}
