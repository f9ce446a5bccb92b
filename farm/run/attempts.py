"""What happened to one case on its way through the dispatcher (farm/run/dispatch.py): its
attempts so far (:class:`Progress`), the ways an attempt ends that the dispatcher decides on
(a timeout, a crash), and the words the record and the log use for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from farm.pool.host_neutral import neutral
from farm.run.slots import SlotInfo
from farm.util.errors import AgentTimeout, ConnectionLost, DeviceBusy, InfraError

CRASH_MARKERS = ("Fatal Python error", "Segmentation fault", "Aborted", "AddressSanitizer")


class TimedOut(Exception):
    def __init__(self, exc: AgentTimeout, timeout: float) -> None:
        super().__init__(str(exc))
        self.exc = exc
        self.timeout = timeout


class Crash(Exception):
    def __init__(self, exc: ConnectionLost, text: str) -> None:
        super().__init__(text)
        self.exc = exc
        self.text = text


class CrashedTwice(Exception):
    pass


@dataclass
class Progress:
    """What happened to one case so far."""

    tried: list[str] = field(default_factory=list)  # slots it was sent to (busy ones are not)
    errors: list[str] = field(default_factory=list)  # infrastructure errors met, for the record
    waits: int = 0  # lease timeouts: every candidate slot stayed leased
    timeouts: list[dict[str, Any]] = field(default_factory=list)  # charged once decided
    # Errors an agent answered (host, message): charged once decided, unless the same on every
    # host the case met them on (the farm's fault).
    answered: list[tuple[str, str]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    busy: dict[str, DeviceBusy] = field(default_factory=dict)  # slot -> the latest busy answer
    busy_at: dict[str, float] = field(default_factory=dict)  # slot -> when it was asked
    asked_at: float | None = None  # when the latest request was sent
    quick: set[str] = field(default_factory=set)  # held slots asked without a lock wait
    waited_from: float | None = None
    log: list[dict[str, Any]] = field(default_factory=list)  # one entry per attempt
    need_fresh: bool = False  # after a crash: the rerun must start a fresh agent
    lock_waits: list[str] = field(default_factory=list)  # devices the agent waited for, and whom
    lock_waited_s: float = 0.0

    @property
    def attempts(self) -> int:
        return sum(1 for entry in self.log if entry["outcome"] != "busy")


def entry(slot: SlotInfo, outcome: str, detail: str) -> dict[str, Any]:
    return {"slot": slot.id, "host": slot.host, "outcome": outcome, "detail": detail}


def crash_part(crash: dict[str, Any]) -> str:
    after = crash.get("after")
    return f"{crash['slot']}: {crash['crash']}" + (
        f" (after case {after} on that agent)" if after else " (the agent's first case)"
    )


def holder_text(exc: DeviceBusy) -> str:
    holder = exc.holder or {}
    run = holder.get("run")
    who = f"run {run}" if run else "an agent outside any run (a health check?)"
    pids = ", ".join(str(x) for x in holder.get("pids") or []) or "?"
    since = holder.get("since_iso")
    return f"{who}, agent pid {pids}" + (f", since {since}" if since else "")


def crash_text(exc: InfraError) -> str | None:
    """The fatal-signal line an agent left on stderr when it died, if that is what happened."""
    if not isinstance(exc, ConnectionLost):
        return None
    tail = getattr(exc, "stderr_tail", "") or ""
    for line in tail.splitlines():
        if any(marker in line for marker in CRASH_MARKERS):
            return line.strip()
    return None


def farm_fault(p: Progress, host_parts: list[tuple[str, str]]) -> str | None:
    """The error the agents answered the case with when it is the same on two hosts or
    more, up to what is each host's own (``host_parts``: farm/pool/host_neutral.py): the farm's
    or the package's fault, not the hosts'. None otherwise."""
    hosts = {host for host, _ in p.answered}
    said = {neutral(message, host_parts) for _, message in p.answered}
    if len(hosts) < 2 or len(said) != 1:
        return None
    return said.pop()
