"""A host's health: what one check of it found (HostHealth): good or bad, every reason, its
identity, the chips set aside, the package deployed (farm/pool/health/checks.py checks hosts).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

GOOD, BAD, UNKNOWN = "good", "bad", "unknown"


@dataclass
class HostHealth:
    host: str
    state: str  # "good" | "bad"
    reasons: list[str] = field(default_factory=list)
    identity: dict[str, Any] | None = None
    checked_at: float = field(default_factory=time.time)
    seconds: float = 0.0
    # What the check could not do, and why that is nobody's fault (a canary whose device another
    # run holds: the host stays good; the run's dispatcher waits for the device).
    notes: list[str] = field(default_factory=list)
    # The chips of a good host that may not run cases, alone: device -> why (chip_set_aside).
    set_aside: dict[int, str] = field(default_factory=dict)
    package: str = ""  # the operator package deployed there (of the host's architecture)
    # False: the host is left out for what is not its fault (no package can be had for it: a CANN
    # build that failed); the quarantine does not take it.
    blame_host: bool = True

    @property
    def good(self) -> bool:
        return self.state == GOOD

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
