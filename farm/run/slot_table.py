"""The slots one worker's dispatcher may use (farm/run/dispatch.py), and which of them may take
a case now: not on a quarantined host, not set aside while a stuck agent of theirs may still run
(checked again every DEAD_RECHECK seconds), and with PyTorch for the cases whose standard needs
it (not on a host that said it has it but could not import it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from farm.pool.host_neutral import host_parts
from farm.run.case_channel import CaseChannel
from farm.run.slots import SlotInfo

NO_HOST_OF_FAMILY = (
    "the pool has no host of this family; add one to the inventory, or select the cases of the "
    "families it has"
)
DEAD_RECHECK = 30.0  # seconds before a slot whose agent could not be killed is checked again


class SlotTable:
    """Slot id -> slot (``by_id``), by family, and what is known of their agents and hosts."""

    def __init__(self, slots: Mapping[str, SlotInfo], say: Callable[[str], None]) -> None:
        self.say = say
        self.set(slots)
        # Slots whose broken agent could not be verified gone: the dropped channel, and when it
        # was last checked. Not used until a new check (reap_again) finds the agent gone.
        self.dead: dict[str, tuple[CaseChannel, float]] = {}
        # Hosts that said they have PyTorch but could not import it (HostLacks), with what
        # they said: this worker sends them no more benchmark-ratio cases.
        self.lacks_torch: dict[str, str] = {}

    def set(self, slots: Mapping[str, SlotInfo]) -> None:
        self.by_id = dict(slots)
        # family -> its slots in id order: a case's candidates are found without a pass over
        # the whole pool (a pool of 512 slots spent ~0.5 ms a case choosing).
        self.by_family: dict[str, list[SlotInfo]] = {}
        for slot in sorted(slots.values(), key=lambda s: s.id):
            self.by_family.setdefault(slot.family, []).append(slot)
        # What names each host of the pool, in the messages of its errors (dispatch.py
        # _farm_fault).
        self.host_parts = sorted({p for s in slots.values() for p in host_parts(s.host, soc=s.soc)})

    def candidates(
        self,
        family: str,
        preferred: str | None,
        tried: list[str],
        quarantined: Mapping[str, str],
        torch: bool = False,
    ) -> list[SlotInfo]:
        """The family's healthy slots (those with PyTorch where ``torch``) in the order to try
        them: the preferred one, then those on hosts the case has not been tried on, each group
        in id order."""
        healthy = self.by_family.get(family, [])
        if quarantined or self.dead:
            healthy = [s for s in healthy if s.host not in quarantined and self.alive(s)]
        if torch:
            healthy = [s for s in healthy if s.torch and s.host not in self.lacks_torch]
        if not tried:  # the common case, and the only one at scale: no sort
            first = [s for s in healthy if s.id == preferred]
            return first + [s for s in healthy if s.id != preferred] if first else list(healthy)
        fresh = [s for s in healthy if s.id not in tried]
        # Another slot first; the same slot again only when the family has no other.
        pool = fresh or list(healthy)
        tried_hosts = {self.by_id[t].host for t in tried}
        pool.sort(key=lambda s: (s.id != preferred, s.host in tried_hosts, s.id))
        return pool

    def alive(self, slot: SlotInfo) -> bool:
        """False while the slot's last broken agent may still be running (re-checked every
        DEAD_RECHECK seconds: a host that could not be asked may answer later)."""
        dead = self.dead.get(slot.id)
        if dead is None:
            return True
        channel, checked = dead
        if time.monotonic() - checked < DEAD_RECHECK:
            return False
        again = getattr(channel, "reap_again", None)
        gone = again() if again is not None else None
        if gone is False:
            self.dead[slot.id] = (channel, time.monotonic())
            return False
        self.dead.pop(slot.id, None)
        self.say(f"{slot.id}: its stuck agent is gone now; the slot is used again")
        return True

    def mark_dead(self, slot: SlotInfo, channel: CaseChannel, detail: str) -> None:
        self.dead[slot.id] = (channel, time.monotonic())
        self.say(
            f"{slot.id}: {detail or 'its agent could not be checked'}; this worker does not use "
            f"the slot until the agent is gone"
        )

    def dead_of(self, family: str) -> list[str]:
        """The family's slots set aside for a stuck agent, in id order."""
        return sorted(s for s in list(self.dead) if self.by_id[s].family == family)

    def lacking_torch(self, family: str) -> str:
        """What the family's hosts that could not import PyTorch said (the last three), as the
        end of a message; "" when none said anything."""
        hosts = {s.host for s in self.by_family.get(family, [])}
        said = [why for host, why in self.lacks_torch.items() if host in hosts]
        return ": " + "; ".join(said[-3:]) if said else ""

    def none_healthy(
        self, family: str, quarantined: Mapping[str, str], left_out: Mapping[str, str]
    ) -> str:
        """Why the family has no slot to run a case on: the hosts quarantined, those the health
        check left out (``left_out``: host -> why), the slots set aside for a stuck agent."""
        why = "; ".join(f"{h}: {r}" for h, r in quarantined.items())
        detail = f" (quarantined: {why})" if why else ""
        left = "; ".join(f"{h}: {r}" for h, r in left_out.items())
        detail += f" (failed the health check: {left})" if left else ""
        dead = ", ".join(self.dead_of(family))
        detail += f" (stuck agents not killed on {dead})" if dead else ""
        if not left and family not in self.by_family:
            detail = f": {NO_HOST_OF_FAMILY}"
        return f"no healthy slot of family {family}{detail}"
