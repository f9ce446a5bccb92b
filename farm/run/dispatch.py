"""Run one case on a slot of its family, with the farm's retry rules, and make its one record.

Product failures come back from the agent as verdicts and are final. Infrastructure errors
(connection lost, timeout, protocol) are retried on another slot of the same family, at most
twice; a host with repeated infrastructure errors is quarantined for the rest of the run. An agent
that dies of a fatal signal while running a case is an operator crash, a product failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from farm.agent.errors import InfraError
from farm.agent.record import ResultRecord, broken_record, with_case
from farm.errors import ConnectionLost
from farm.run.leases import LeaseTimeout, RunState, lease_any
from suites.case import Case

MAX_RETRIES = 2
AGENT_STARTUP_ALLOWANCE = 30.0  # seconds
CRASH_MARKERS = ("Fatal Python error", "Segmentation fault", "Aborted", "AddressSanitizer")


@dataclass(frozen=True)
class SlotInfo:
    id: str
    host: str
    family: str
    soc: str
    device: int


class CaseChannel(Protocol):
    """A persistent channel to one agent (farm/pool/transport/base.py Channel, or a test fake)."""

    def run_case(
        self, case: dict[str, Any], backend: str, device: int, timeout: float
    ) -> dict[str, Any]: ...

    def close(self) -> None: ...


def case_timeout(case, base: float) -> float:
    """Generous for big tensors: the base plus a microsecond per element, twice over."""
    return base + 2e-6 * case.numel


class Dispatcher:
    """One per worker process. `open_channel(slot)` gives a persistent agent channel."""

    def __init__(
        self,
        slots: list[SlotInfo],
        open_channel: Callable[[SlotInfo], CaseChannel],
        state: RunState,
        lock_dir,
        backend: str,
        base_timeout: float = 60.0,
        left_out: dict[str, dict[str, str]] | None = None,
    ):
        """``left_out``: family -> {host: reason} for the hosts the health check kept out of
        the run, so that a family without a healthy slot says why."""
        self.left_out = left_out or {}
        self.slots = {s.id: s for s in slots}
        self.open_channel = open_channel
        self.state = state
        self.lock_dir = lock_dir
        self.backend = backend
        self.base_timeout = base_timeout
        self._channels: dict[str, CaseChannel] = {}

    def close(self) -> None:
        for channel in self._channels.values():
            try:
                channel.close()
            except Exception:  # closing a dead channel is not news
                pass
        self._channels.clear()

    # -- choosing slots -------------------------------------------------------------------

    def _candidates(self, family: str, preferred: str | None, tried: list[str]) -> list[SlotInfo]:
        quarantined = self.state.quarantined()
        healthy = [
            s for s in self.slots.values() if s.family == family and s.host not in quarantined
        ]
        fresh = [s for s in healthy if s.id not in tried]
        # Another slot first; the same slot again only when the family has no other.
        pool = fresh or healthy
        pool.sort(
            key=lambda s: (s.id != preferred, s.host in {self.slots[t].host for t in tried}, s.id)
        )
        return pool

    # -- running --------------------------------------------------------------------------

    def run(self, case: Case, preferred: str | None = None) -> ResultRecord:
        started = time.perf_counter()
        tried: list[str] = []
        errors: list[str] = []
        waits = 0  # lease timeouts: every candidate slot stayed busy
        payload = case.to_dict()
        while True:
            candidates = self._candidates(case.family, preferred, tried)
            if not candidates:
                why = "; ".join(f"{h}: {r}" for h, r in self.state.quarantined().items())
                detail = f" (quarantined: {why})" if why else ""
                left = "; ".join(f"{h}: {r}" for h, r in self.left_out.get(case.family, {}).items())
                detail += f" (failed the health check: {left})" if left else ""
                return self._broken(
                    case, tried, errors, started, f"no healthy slot of family {case.family}{detail}"
                )
            # Any free slot of the best candidates: the preferred one first, then the others
            # on hosts this case has not failed on yet.
            tried_hosts = {self.slots[t].host for t in tried}
            first = candidates[0].host in tried_hosts
            wanted = [s.id for s in candidates if (s.host in tried_hosts) == first]
            timeout = case_timeout(case, self.base_timeout)
            try:
                with lease_any(self.lock_dir, wanted, timeout=timeout) as slot_id:
                    slot = self.slots[slot_id]
                    tried.append(slot.id)
                    record = self._attempt(slot, payload, case)
            except LeaseTimeout as exc:
                waits += 1
                errors.append(str(exc))
            except InfraError as exc:
                self._drop(slot)
                crash = _crash_text(exc)
                if crash is not None:
                    return self._crash(case, slot, tried, started, crash)
                errors.append(f"{slot.id}: {exc}")
                self.state.record_infra_error(slot.host, str(exc))
            else:
                # The agent reports its machine's hostname; the record names the inventory host
                # (what the quarantine, `farm hosts` and the report speak of).
                record["machine"] = record.get("host")
                record.update({"host": slot.host, "slot": slot.id, "attempts": len(tried)})
                record["infra_errors"] = errors
                record["timings"]["wall_s"] = time.perf_counter() - started
                return record
            if len(tried) + waits > MAX_RETRIES:
                return self._broken(
                    case, tried, errors, started, f"gave up after {len(tried) + waits} attempts"
                )

    def _attempt(self, slot: SlotInfo, payload: dict[str, Any], case: Case) -> ResultRecord:
        channel = self._channels.get(slot.id)
        timeout = case_timeout(case, self.base_timeout)
        if channel is None:
            channel = self._channels[slot.id] = self.open_channel(slot)
            # A new agent imports numpy, the twin (and torch for benchmark-ratio) on its first
            # case; that is start-up, not the case being slow.
            timeout += AGENT_STARTUP_ALLOWANCE
        result = channel.run_case(payload, self.backend, slot.device, timeout)
        return with_case(ResultRecord(**result), case, payload)  # type: ignore[typeddict-item]

    def _drop(self, slot: SlotInfo) -> None:
        channel = self._channels.pop(slot.id, None)
        if channel is not None:
            try:
                channel.close()
            except Exception:
                pass

    def _broken(
        self, case: Case, tried: list[str], errors: list[str], started: float, summary: str
    ) -> ResultRecord:
        detail = "; ".join(errors[-3:])
        last = self.slots[tried[-1]] if tried else None
        return broken_record(
            case,
            summary + (f": {detail}" if detail else ""),
            host=last.host if last else None,
            soc=last.soc if last else None,
            slot=last.id if last else None,
            attempts=len(tried),
            infra_errors=errors,
            timings={"wall_s": time.perf_counter() - started},
        )

    def _crash(
        self, case: Case, slot: SlotInfo, tried: list[str], started: float, crash: str
    ) -> ResultRecord:
        record = self._broken(case, tried, [], started, "")
        record.update(
            {
                "outcome": "failed",
                "category": "crash",
                "message": f"the agent died running this case on {slot.id}: {crash}",
            }
        )
        return record


def _crash_text(exc: InfraError) -> str | None:
    """The fatal-signal line an agent left on stderr when it died, if that is what happened."""
    if not isinstance(exc, ConnectionLost):
        return None
    tail = getattr(exc, "stderr_tail", "") or ""
    for line in tail.splitlines():
        if any(marker in line for marker in CRASH_MARKERS):
            return line.strip()
    return None
