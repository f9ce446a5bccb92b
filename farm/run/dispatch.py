"""Run one case on a slot of its family, with the farm's retry rules, and make its one record.

The rules, as a case meets them:

* **Product failures** come back from the agent as verdicts and are final.
* **Infrastructure errors** (connection lost, protocol, an agent that does not start) are retried
  on another slot of the same family, at most twice; each counts against its host, and a host with
  repeated infrastructure errors is quarantined for the rest of the run. **A fault of the farm is
  nobody's**: errors an agent answered (AgentError, ProtocolError) are charged once the case is
  decided, and a case that met the same one on two hosts or more, up to what is each host's own
  (names, addresses, ports, paths: farm/pool/host_neutral.py), charges no host: it is broken with
  that error, said once, as the farm's or the package's fault.
* **A device another run holds** (the agent answers ``busy``: farm/agent/devicelock.py) is nobody's
  fault. The case tries the family's other slots and waits, saying so (a line on stderr, a note in
  the record), until its family has waited ``busy_wait`` seconds; then it is reported as not run
  (broken, category ``not_run``, naming the busy devices and the run that holds them). A busy
  device never counts against its host. **Free devices first:** the worker remembers the slots
  whose device another run holds, and its cases take the family's other slots (waiting for their
  leases, woken when one is let go) rather than queue on a held device; a held slot is asked again
  at most every BUSY_POLL seconds, with no lock wait, in case the other run has let go. Only when
  every device of the family is held does a case wait on them, in the agent, which is woken the
  moment the holder lets go (up to ``lock_wait`` a request, then asked again at once).
* **A timeout** breaks the channel, which kills the stuck agent's whole process group and checks
  that it is gone (farm/pool/transport/base.py, "reaping") before the slot is used again: the next
  case there starts a fresh agent, which takes the device lock the dead one released. A slot whose
  agent could not be verified gone (any broken channel: unkillable, or its host unreachable) is
  set aside by this worker and checked again every DEAD_RECHECK seconds. The case moves on.
  **The host is asked at once whose fault it was** (``_confirm_hang``): the family's canary
  cases, the health check's own (farm/run/prepare.py make_canary), run on the same device through
  a fresh channel under the canary's timeout. **A canary answered right means the case hangs**:
  a product failure (category ``hang``) naming the host, its timeout and its canary, after one
  timeout; no host is charged. A canary that fails, times out or cannot reach the host leaves the
  timeout the host's, as before: it is charged when the case is decided (completed elsewhere, or
  given up: each timeout an infrastructure error of its host), and a case that then times out on
  a second host hangs too (two different hosts, both named; nobody charged). Only an agent that
  could not be killed is always its host's problem (and its slot gets no canary).
* **An operator crash** (the agent died of a fatal signal: CRASH_MARKERS on its stderr) may be the
  late effect of an earlier case's memory corruption on the same agent. The case is rerun once on
  a fresh agent (same slot, same lease): if it crashes again, that is this case's crash (failed,
  category ``crash``, both attempts named); otherwise its own verdict stands, with a note naming
  the earlier crash and the case that ran before it on the crashed agent.

A record that took more than one attempt, or carries a note, has ``attempts_log`` (one entry per
attempt: slot, host, what happened) and ``notes``.
"""

from __future__ import annotations

import hashlib
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from farm.agent.record import ResultRecord, broken_record, with_case
from farm.agent.request import CaseRequest
from farm.pool.host_neutral import host_parts, neutral
from farm.pool.transport.base import HANDSHAKE_TIMEOUT
from farm.run import run_dir
from farm.run.leases import (
    LeaseTimeout,
    RunState,
    lease,
    lease_any,
    needs_benchmark,
    without_torch,
)
from farm.run.requests import case_request
from farm.util.errors import (
    AgentError,
    AgentTimeout,
    ConnectionLost,
    DeviceBusy,
    HostLacks,
    InfraError,
    ProtocolError,
)
from suites.case import Case

# canary(channel, identity, device) -> None when the host answered right, else what it said
# (farm/pool/health.py Canary; the dispatcher's is prepare.make_canary's unless given one).
Canary = Callable[[Any, dict, int], "str | None"]

MAX_RETRIES = 2
AGENT_STARTUP_ALLOWANCE = 30.0  # seconds a first case gets on a channel that cannot warm_up
LOCK_WAIT = 5.0  # seconds an agent waits for its device before it answers busy
BUSY_WAIT = 600.0  # seconds a family's cases wait, in all, for devices another run holds
BUSY_POLL = 1.0  # a slot that answered busy is asked again after this long at the soonest
LET_GO_WAIT = 5.0  # seconds a slot done with waits for its lease, to close its agent
DEAD_RECHECK = 30.0  # seconds before a slot whose agent could not be killed is checked again
CRASH_MARKERS = ("Fatal Python error", "Segmentation fault", "Aborted", "AddressSanitizer")
HANG = "hang"
NO_HOST_OF_FAMILY = (
    "the pool has no host of this family; add one to the inventory, or select the cases of the "
    "families it has"
)
NOT_RUN = "not_run"


@dataclass(frozen=True)
class SlotInfo:
    id: str
    host: str
    family: str
    soc: str
    device: int
    # Whether the host has PyTorch, which the benchmark-ratio standard's benchmark needs (its
    # identity's deps); such cases go only to slots that have it.
    torch: bool = True


class CaseChannel(Protocol):
    """A persistent channel to one agent (farm/pool/transport/base.py Channel, or a test fake).

    A channel may also have ``reaped``/``reap_detail`` (set when closing it killed a stuck agent,
    see base.Channel), and ``warm`` (True: the agent it sends the next case to is running and
    answers a busy device at once, so the case needs no room for start-up: a shared agent's,
    farm/pool/transport/local.py), and ``warm_up(timeout)`` (a new agent's start-up, done before
    its first case under a timeout of its own: base.Channel.warm_up); the dispatcher reads them
    with getattr."""

    def run_case(
        self,
        case: CaseRequest,
        backend: str,
        device: int,
        timeout: float,
        *,
        lock: dict[str, Any] | None = None,
    ) -> dict[str, Any]: ...

    def close(self) -> None: ...


def case_timeout(case, base: float) -> float:
    """Generous for big tensors: the base plus a microsecond per element, twice over."""
    return base + 2e-6 * case.numel


def run_owner(lock_dir: str | Path, run_id: str | None = None) -> tuple[str, str]:
    """(run id, owner token) of the run whose slot leases live in ``lock_dir``.

    The run id defaults to the run directory's name (``runs/<run id>/locks``). The owner token
    names "this run" in the device locks: the same in every worker of the run (they share the
    lock directory), different for another run, even one of the same name in another clone."""
    path = Path(lock_dir).resolve()
    run = run_id or path.parent.name
    digest = hashlib.sha256(f"{socket.gethostname()}:{path}".encode()).hexdigest()[:12]
    return run, f"{run}@{socket.gethostname()}:{digest}"


class _TimedOut(Exception):
    def __init__(self, exc: AgentTimeout, timeout: float) -> None:
        super().__init__(str(exc))
        self.exc = exc
        self.timeout = timeout


class _Crash(Exception):
    def __init__(self, exc: ConnectionLost, text: str) -> None:
        super().__init__(text)
        self.exc = exc
        self.text = text


class _CrashedTwice(Exception):
    pass


@dataclass
class _Progress:
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


def _extra(record: ResultRecord, key: str, value: Any) -> None:
    """Set a record field that farm/agent/record.py does not declare (yet)."""
    cast(dict, record)[key] = value


class Dispatcher:
    """One per worker process. `open_channel(slot)` gives a persistent agent channel.

    Several threads of a worker may run cases at once (farm/run/pipeline.py): what is kept per
    slot is only touched by the thread holding the slot's lease, and what is shared (the run
    state, the leases) is locked across processes, hence across threads too."""

    def __init__(
        self,
        slots: list[SlotInfo],
        open_channel: Callable[[SlotInfo], CaseChannel],
        state: RunState,
        lock_dir,
        backend: str,
        base_timeout: float = 60.0,
        left_out: dict[str, dict[str, str]] | None = None,
        *,
        run_id: str | None = None,
        lock_wait: float = LOCK_WAIT,
        busy_wait: float = BUSY_WAIT,
        startup_allowance: float = AGENT_STARTUP_ALLOWANCE,
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
        notify: Callable[[str], None] | None = None,
        canary: Canary | None = None,
    ):
        """``left_out``: family -> {host: reason} for the hosts the health check kept out of
        the run, so that a family without a healthy slot says why. ``run_id`` names the run in
        the hosts' device locks (default: the name of ``lock_dir``'s parent, the run directory).
        ``notify`` receives the lines a person watching should see (default: stderr).
        ``canary`` asks a host whose case timed out whether it still runs cases right (default:
        the health check's, farm/run/prepare.py make_canary)."""
        self.left_out = left_out or {}
        # Hosts that said they have PyTorch but could not import it (HostLacks), with what they
        # said: this worker sends them no more benchmark-ratio cases.
        self._lacks_torch: dict[str, str] = {}
        self.slots = {s.id: s for s in slots}
        self.open_channel = open_channel
        self.state = state
        self.lock_dir = lock_dir
        self.backend = backend
        self.base_timeout = base_timeout
        self.run_id, self.owner = run_owner(lock_dir, run_id)
        self.lock_wait = lock_wait
        self.busy_wait = busy_wait
        self.startup_allowance = startup_allowance  # for channels that cannot warm_up
        self.handshake_timeout = handshake_timeout  # a new agent's warm_up, before its case
        self.notify = notify or _to_stderr
        if canary is None:
            # Imported here: prepare reaches this module through the transports it imports.
            from farm.run.prepare import make_canary

            canary = make_canary(backend)
        self.canary = canary
        self._channels: dict[str, CaseChannel] = {}
        self._history: dict[str, list[str]] = {}  # slot -> cases run on its current agent
        self._fresh: set[str] = set()  # slots whose agent has not finished a case yet
        # Slots whose broken agent could not be verified gone: the dropped channel, and when it was
        # last checked. Not used until a new check (reap_again) finds the agent gone.
        self._dead: dict[str, tuple[CaseChannel, float]] = {}
        self._busy_since: dict[str, float] = {}  # family -> since when its cases wait
        # Slots whose device another run held when last asked -> when that was (monotonic):
        # the worker's cases go to the family's other slots first (see _wanted).
        self._held: dict[str, float] = {}

    @property
    def slots(self) -> dict[str, SlotInfo]:
        """Slot id -> slot, every slot this worker may use."""
        return self._slots

    @slots.setter
    def slots(self, slots: dict[str, SlotInfo]) -> None:
        self._slots = slots
        # family -> its slots in id order: a case's candidates are found without a pass over
        # the whole pool (a pool of 512 slots spent ~0.5 ms a case choosing).
        self._family_slots: dict[str, list[SlotInfo]] = {}
        for slot in sorted(slots.values(), key=lambda s: s.id):
            self._family_slots.setdefault(slot.family, []).append(slot)
        # What names each host of the pool, in the messages of its errors (see _farm_fault).
        self._host_parts = sorted(
            {p for s in slots.values() for p in host_parts(s.host, soc=s.soc)}
        )

    def let_go(self, slot_id: str) -> None:
        """Close the slot's agent: this worker has no more cases for it (farm/run/pipeline.py).
        Its device lock goes with it, so another run waiting for the device is woken now, not
        at this worker's end. A case that still comes to the slot starts a new agent."""
        if slot_id not in self._channels:
            return
        try:
            with lease(self.lock_dir, slot_id, LET_GO_WAIT):  # no case of this worker on it
                channel = self._channels.pop(slot_id, None)
                self._history.pop(slot_id, None)
                self._fresh.discard(slot_id)
        except LeaseTimeout:
            return  # in use after all: it goes at the worker's end
        except OSError as exc:
            if not run_dir.is_fault(exc):
                raise
            # The runs directory refuses the lock file (full, read-only): the run is stopping
            # on that fault already, and the agent goes at the worker's end as when in use.
            return
        if channel is not None:
            try:
                channel.close()
            except Exception:  # closing a dead channel is not news
                pass

    def close(self) -> None:
        for channel in self._channels.values():
            try:
                channel.close()
            except Exception:  # closing a dead channel is not news
                pass
        self._channels.clear()

    # -- choosing slots -------------------------------------------------------------------

    def _candidates(
        self, family: str, preferred: str | None, tried: list[str], torch: bool = False
    ) -> list[SlotInfo]:
        """The family's healthy slots (those with PyTorch where ``torch``) in the order to try
        them: the preferred one, then those on hosts the case has not been tried on, each group
        in id order."""
        quarantined = self.state.quarantined()
        healthy = self._family_slots.get(family, [])
        if quarantined or self._dead:
            healthy = [s for s in healthy if s.host not in quarantined and self._alive_slot(s)]
        if torch:
            healthy = [s for s in healthy if s.torch and s.host not in self._lacks_torch]
        if not tried:  # the common case, and the only one at scale: no sort
            first = [s for s in healthy if s.id == preferred]
            return first + [s for s in healthy if s.id != preferred] if first else list(healthy)
        fresh = [s for s in healthy if s.id not in tried]
        # Another slot first; the same slot again only when the family has no other.
        pool = fresh or list(healthy)
        tried_hosts = {self.slots[t].host for t in tried}
        pool.sort(key=lambda s: (s.id != preferred, s.host in tried_hosts, s.id))
        return pool

    def _alive_slot(self, slot: SlotInfo) -> bool:
        """False while the slot's last broken agent may still be running (re-checked every
        DEAD_RECHECK seconds: a host that could not be asked may answer later)."""
        dead = self._dead.get(slot.id)
        if dead is None:
            return True
        channel, checked = dead
        if time.monotonic() - checked < DEAD_RECHECK:
            return False
        again = getattr(channel, "reap_again", None)
        gone = again() if again is not None else None
        if gone is False:
            self._dead[slot.id] = (channel, time.monotonic())
            return False
        self._dead.pop(slot.id, None)
        self._say(f"{slot.id}: its stuck agent is gone now; the slot is used again")
        return True

    def _mark_dead(self, slot: SlotInfo, channel: CaseChannel, detail: str) -> None:
        self._dead[slot.id] = (channel, time.monotonic())
        self._say(
            f"{slot.id}: {detail or 'its agent could not be checked'}; this worker does not use "
            f"the slot until the agent is gone"
        )

    def _wanted(self, candidates: list[SlotInfo], p: _Progress) -> list[str]:
        """Any free slot of the best candidates: the preferred one first, then the others on
        hosts this case has not failed on yet.

        Slots whose device another run holds (as last asked, by any case of this worker) are
        left out while the family has others: the case waits for those (their leases), and a
        held slot joins, last and asked without a lock wait (``p.quick``), only when it was last
        asked BUSY_POLL seconds ago or more. When every candidate is held, a slot that answered
        this case busy goes last, as ever."""
        tried_hosts = {self.slots[t].host for t in p.tried}
        first = candidates[0].host in tried_hosts
        wanted = [s.id for s in candidates if (s.host in tried_hosts) == first]
        held = {sid: at for sid in wanted if (at := self._held.get(sid)) is not None}
        free = [sid for sid in wanted if sid not in held]
        if free and held:
            now = time.monotonic()
            due = sorted(
                (sid for sid, at in held.items() if now - at >= BUSY_POLL), key=held.__getitem__
            )
            p.quick = set(due)
            return free + due
        p.quick = set()
        if p.busy_at:
            wanted.sort(key=lambda sid: p.busy_at.get(sid, float("-inf")))
        return wanted

    # -- running --------------------------------------------------------------------------

    def run(self, case: Case, preferred: str | None = None) -> ResultRecord:
        started = time.perf_counter()
        p = _Progress()
        payload = case_request(case)
        torch = needs_benchmark(case)
        while True:
            candidates = self._candidates(case.family, preferred, p.tried, torch)
            if not candidates and torch and self._candidates(case.family, None, p.tried):
                hosts = {s.host for s in self._family_slots.get(case.family, [])}
                said = [why for host, why in self._lacks_torch.items() if host in hosts]
                why = "" if p.errors or not said else ": " + "; ".join(said[-3:])
                return self._give_up(case, p, started, without_torch(case.family) + why)
            if not candidates:
                why = "; ".join(f"{h}: {r}" for h, r in self.state.quarantined().items())
                detail = f" (quarantined: {why})" if why else ""
                left = "; ".join(f"{h}: {r}" for h, r in self.left_out.get(case.family, {}).items())
                detail += f" (failed the health check: {left})" if left else ""
                dead = ", ".join(
                    sorted(s for s in list(self._dead) if self.slots[s].family == case.family)
                )
                detail += f" (stuck agents not killed on {dead})" if dead else ""
                if not left and case.family not in self._family_slots:
                    detail = f": {NO_HOST_OF_FAMILY}"
                return self._give_up(
                    case, p, started, f"no healthy slot of family {case.family}{detail}"
                )
            wanted = self._wanted(candidates, p)
            self._pace(wanted, p)
            slot: SlotInfo | None = None
            record: ResultRecord | None = None
            hang: ResultRecord | None = None
            try:
                timeout = case_timeout(case, self.base_timeout)
                with lease_any(self.lock_dir, wanted, timeout=timeout) as slot_id:
                    slot = self.slots[slot_id]
                    try:
                        record = self._run_on(slot, payload, case, p)
                    except _TimedOut as exc:
                        # Decided under the slot's lease: the canary that asks its host whose
                        # fault it was runs on the same slot.
                        hang = self._timed_out(case, slot, exc, p, started)
            except LeaseTimeout as exc:
                p.waits += 1
                p.errors.append(str(exc))
            except DeviceBusy as exc:
                assert slot is not None
                given_up = self._busy(case, slot, exc, p, started)
                if given_up is not None:
                    return given_up
                continue
            except _CrashedTwice:
                return self._crash(case, p, started)
            except HostLacks as exc:  # not the host's fault: its other cases run there as ever
                assert slot is not None
                self._lacks_torch[slot.host] = f"{slot.id}: {exc}"
                p.errors.append(f"{slot.id}: {exc}")
                p.log.append(_entry(slot, "lacks", str(exc)))
            except InfraError as exc:
                assert slot is not None
                self._drop(slot)
                p.errors.append(f"{slot.id}: {exc}")
                p.log.append(_entry(slot, "infrastructure", str(exc)))
                if isinstance(exc, (AgentError, ProtocolError)):
                    p.answered.append((slot.host, str(exc)))  # charged once decided
                else:
                    self.state.record_infra_error(slot.host, str(exc))
            else:
                assert slot is not None
                if hang is not None:
                    return hang
                if record is not None:
                    return self._done(case, record, slot, p, started)
            if len(p.tried) + p.waits > MAX_RETRIES:
                return self._give_up(
                    case, p, started, f"gave up after {len(p.tried) + p.waits} attempts"
                )

    def _run_on(
        self, slot: SlotInfo, payload: CaseRequest, case: Case, p: _Progress
    ) -> ResultRecord:
        """The case on ``slot`` (leased), rerun once on a fresh agent after a crash."""
        p.tried.append(slot.id)
        while True:
            before = list(self._history.get(slot.id, []))
            try:
                record = self._attempt(slot, payload, case, p)
            except _Crash as crash:
                self._drop(slot)
                after = before[-1] if before else None
                p.crashes.append(
                    {"slot": slot.id, "host": slot.host, "crash": crash.text, "after": after}
                )
                entry = _entry(slot, "crash", crash.text)
                entry["previous_case"] = after
                p.log.append(entry)
                if len(p.crashes) >= 2:
                    raise _CrashedTwice from None
                p.need_fresh = True
                self._say(
                    f"case {case.id} crashed the agent on {slot.id} ({crash.text})"
                    + (f" after case {after} ran on it" if after else "")
                    + "; rerunning it once on a fresh agent"
                )
                continue
            p.log.append(_entry(slot, str(record.get("outcome")), ""))
            return record

    def _attempt(
        self, slot: SlotInfo, payload: CaseRequest, case: Case, p: _Progress
    ) -> ResultRecord:
        if p.need_fresh and self._history.get(slot.id):
            self._drop(slot)  # an agent that ran other cases is no place for a crash's rerun
        channel = self._channels.get(slot.id)
        timeout = case_timeout(case, self.base_timeout)
        if channel is None:
            channel = self._channels[slot.id] = self.open_channel(slot)
            self._history[slot.id] = []
            self._fresh.add(slot.id)
        # A held slot asked while the family has free ones is asked only whether its device is
        # free now: no lock wait (the case has other slots to go to).
        lock_wait = 0.0 if slot.id in p.quick else self.lock_wait
        if slot.id in self._fresh and not getattr(channel, "warm", False):
            # A new agent imports numpy and gathers its identity first: start-up, not the case
            # being slow. A channel that can (warm_up) does it before the case is sent, under
            # the handshake's timeout, so that the case gets exactly its own timeout (a case
            # that hangs keeps its slot no longer than that) and a slow start is an
            # infrastructure error, never a hang; a channel that cannot gets the start-up
            # allowance on its first case. (A new channel to a shared agent that has run cases
            # is warm: nothing to do.)
            warm_up = getattr(channel, "warm_up", None)
            if warm_up is not None:
                warm_up(self.handshake_timeout)
            else:
                timeout += self.startup_allowance
            if not getattr(channel, "warm", False):
                # The agent takes the device lock on its first case, waiting up to lock_wait
                # if the device is busy (a shared agent never waits: it says warm once up).
                timeout += lock_wait
        lock = {"run": self.run_id, "owner": self.owner, "lock_wait": lock_wait}
        p.asked_at = time.monotonic()
        try:
            result = channel.run_case(payload, self.backend, slot.device, timeout, lock=lock)
        except AgentTimeout as exc:
            if getattr(exc, "start_up", False):
                raise  # a shared agent met a new agent and warmed it: slow to start, no hang
            raise _TimedOut(exc, timeout) from None
        except ConnectionLost as exc:
            text = _crash_text(exc)
            if text is not None:
                raise _Crash(exc, text) from None
            raise
        waited = getattr(channel, "last_device_lock", None)
        if waited:  # the agent waited for the device before it ran the case
            holder = DeviceBusy("", holder=waited.get("holder") or {})
            p.lock_waits.append(f"{slot.id}: {_holder_text(holder)}")
            p.lock_waited_s += float(waited.get("waited_s") or 0.0)
        self._fresh.discard(slot.id)
        self._held.pop(slot.id, None)  # its agent has the device now
        self._history.setdefault(slot.id, []).append(case.id)
        p.need_fresh = False
        return with_case(ResultRecord(**result), case, payload)  # type: ignore[typeddict-item]

    def _drop(self, slot: SlotInfo) -> tuple[bool | None, str]:
        """Close the slot's channel (killing a stuck agent, see base.Channel): how that went.
        A slot whose agent could not be verified gone is set aside (see _alive_slot)."""
        channel = self._channels.pop(slot.id, None)
        self._history.pop(slot.id, None)
        self._fresh.discard(slot.id)
        if channel is None:
            return None, ""
        try:
            channel.close()
        except Exception:
            pass
        killed = getattr(channel, "reaped", None)
        detail = getattr(channel, "reap_detail", "") or ""
        if killed is False:
            self._mark_dead(slot, channel, detail)
            # The host could not be asked, or would not kill its agent: its fault, whatever the
            # case did. Counted here, a host lost with all its slots busy (each set aside from
            # then on) still reaches the quarantine.
            self.state.record_infra_error(
                slot.host, f"{slot.id}: {detail or 'its agent could not be checked'}"
            )
        return killed, detail

    def _say(self, line: str) -> None:
        try:
            self.notify(line)
        except Exception:  # a broken stderr must not lose the case
            pass

    # -- busy devices ---------------------------------------------------------------------

    def _pace(self, wanted: list[str], p: _Progress) -> None:
        """When every slot wanted was asked a moment ago and answered busy, wait a little before
        asking again. Counted from the asking: an agent that waited for the device (woken the
        moment it is let go) has spent that time already, and is asked again at once."""
        if not wanted or not all(sid in p.busy_at for sid in wanted):
            return
        pause = min(p.busy_at[sid] for sid in wanted) + BUSY_POLL - time.monotonic()
        if pause > 0:
            time.sleep(pause)

    def _busy(
        self, case: Case, slot: SlotInfo, exc: DeviceBusy, p: _Progress, started: float
    ) -> ResultRecord | None:
        """Another run holds the slot's device: wait for it or another slot; None to go on."""
        now = time.monotonic()
        if p.tried and p.tried[-1] == slot.id:
            p.tried.pop()  # nothing ran: it was not an attempt on that slot
        p.busy[slot.id] = exc
        asked = now if p.asked_at is None else p.asked_at
        p.busy_at[slot.id] = asked
        self._held[slot.id] = asked
        if not any(e["outcome"] == "busy" and e["slot"] == slot.id for e in p.log):
            p.log.append(_entry(slot, "busy", _holder_text(exc)))
        since = self._busy_since.setdefault(case.family, now)
        if p.waited_from is None:
            p.waited_from = now
            left = max(0.0, since + self.busy_wait - now)
            self._say(
                f"case {case.id}: {slot.id} is busy, another run holds it "
                f"({_holder_text(exc)}); trying the family's other slots, waiting up to "
                f"{left:.0f} s"
            )
        usable = {s.id for s in self._candidates(case.family, None, p.tried)}
        if now - since >= self.busy_wait and usable <= set(p.busy):
            return self._not_run(case, p, started, now - since)
        return None

    def _not_run(self, case: Case, p: _Progress, started: float, waited: float) -> ResultRecord:
        self._settle_timeouts(p)
        holders = "; ".join(f"{sid}: {_holder_text(exc)}" for sid, exc in sorted(p.busy.items()))
        message = (
            f"not run: the devices of family {case.family} it could use stayed busy for "
            f"{waited:.0f} s, held by another run ({holders}); no host is at fault"
        )
        record = self._record(case, p, started, message, last=sorted(p.busy)[-1])
        record["category"] = NOT_RUN
        _extra(record, "not_run", "busy")
        _extra(record, "busy", {sid: exc.holder for sid, exc in sorted(p.busy.items())})
        return record

    # -- timeouts, hangs and crashes ------------------------------------------------------

    def _timed_out(
        self, case: Case, slot: SlotInfo, t: _TimedOut, p: _Progress, started: float
    ) -> ResultRecord | None:
        killed, detail = self._drop(slot)
        message = f"{slot.id}: {t.exc}" + (f"; {detail}" if detail else "")
        p.errors.append(message)
        p.timeouts.append(
            {
                "slot": slot.id,
                "host": slot.host,
                "timeout": t.timeout,
                "message": message,
                "killed": killed,
            }
        )
        hosts = list(dict.fromkeys(x["host"] for x in p.timeouts))
        if len(hosts) >= 2:
            p.log.append(_entry(slot, "timeout", message))
            return self._hang(case, p, started)
        # An agent that could not be killed holds the device: no canary can be sent there.
        answer = self._confirm_hang(slot) if killed is not False else None
        if answer is None:
            if killed is not False:
                p.timeouts[-1]["message"] = message = f"{message}; its canary did not answer right"
        else:
            p.timeouts[-1]["canary"] = answer
        p.errors[-1] = message
        p.log.append(_entry(slot, "timeout", message))
        if answer is not None:
            return self._hang(case, p, started)
        return None

    def _confirm_hang(self, slot: SlotInfo) -> str | None:
        """Whether ``slot``'s host runs cases right just after a case timed out there: the
        canary (the health check's) on the same device through a fresh channel, which is kept
        for the slot's next case when it answers right. The canary's cases (None when it did
        not answer right: the channel is dropped, a stuck one reaped as any other)."""
        lock = {"run": self.run_id, "owner": self.owner, "lock_wait": self.lock_wait}
        channel = self._channels[slot.id] = self.open_channel(slot)
        locked = _Locked(channel, lock)
        self._history[slot.id] = locked.sent
        self._fresh.add(slot.id)
        try:
            warm_up = getattr(channel, "warm_up", None)
            if warm_up is not None and not getattr(channel, "warm", False):
                warm_up(self.handshake_timeout)
            verdict = self.canary(locked, {"soc": slot.soc}, slot.device)
        except Exception as exc:  # a canary that cannot run says the same as one that fails
            verdict = f"{exc.__class__.__name__}: {exc}"
        if verdict or not locked.sent:
            self._say(f"{slot.id}: its canary after the timeout: {verdict or 'nothing ran'}")
            self._drop(slot)
            return None
        self._fresh.discard(slot.id)
        return ", ".join(locked.sent)

    def _settle_timeouts(self, p: _Progress) -> None:
        """The case did not hang everywhere: each timeout was its host's infrastructure error;
        so was each error an agent answered."""
        for x in p.timeouts:
            self.state.record_infra_error(x["host"], x["message"])
        p.timeouts = []
        self._settle_answered(p)

    def _settle_answered(self, p: _Progress) -> None:
        for host, message in p.answered:
            self.state.record_infra_error(host, message)
        p.answered = []

    def _farm_fault(self, p: _Progress) -> str | None:
        """The error the agents answered the case with when it is the same on two hosts or
        more, up to what is each host's own: the farm's or the package's fault, not the hosts'.
        None otherwise."""
        hosts = {host for host, _ in p.answered}
        said = {neutral(message, self._host_parts) for _, message in p.answered}
        if len(hosts) < 2 or len(said) != 1:
            return None
        return said.pop()

    def _hang(self, case: Case, p: _Progress, started: float) -> ResultRecord:
        timeouts = p.timeouts
        hosts = list(dict.fromkeys(x["host"] for x in timeouts))
        where = " and ".join(
            f"{x['host']} ({x['slot']}, no reply within {round(x['timeout'], 1):g} s)"
            for x in timeouts
        )
        killed = all(x["killed"] is not False for x in timeouts)
        confirmed = timeouts[-1].get("canary")
        if confirmed:
            message = (
                f"the case hangs: it timed out on {where}, and the host answered its canary "
                f"({confirmed}) right after: the case's failure, not the host's "
                + ("(the stuck agent was killed)" if killed else "(its stuck agent survived)")
            )
        else:
            message = (
                f"the case hangs: it timed out on {len(hosts)} hosts, {where}; a case that hangs "
                "on every host it runs on is the case's failure, not the hosts' "
                + ("(the stuck agents were killed)" if killed else "(some stuck agents survived)")
            )
        timeout_messages = {x["message"] for x in timeouts}
        p.errors = [e for e in p.errors if e not in timeout_messages]
        p.timeouts = []
        self._settle_answered(p)
        record = self._record(case, p, started, message, last=timeouts[-1]["slot"])
        record.update({"outcome": "failed", "category": HANG})
        hang: dict[str, Any] = {"hosts": hosts, "timeouts": [x["timeout"] for x in timeouts]}
        if confirmed:
            hang["canary"] = confirmed
        _extra(record, "hang", hang)
        return record

    def _crash(self, case: Case, p: _Progress, started: float) -> ResultRecord:
        self._settle_timeouts(p)
        first, again = p.crashes[0], p.crashes[1]
        message = (
            f"the agent died running this case on {_crash_part(first)}; rerun on a fresh "
            f"agent, it died again on {_crash_part(again)}"
        )
        record = self._record(case, p, started, message, last=again["slot"])
        record.update({"outcome": "failed", "category": "crash"})
        return record

    # -- records --------------------------------------------------------------------------

    def _done(
        self, case: Case, record: ResultRecord, slot: SlotInfo, p: _Progress, started: float
    ) -> ResultRecord:
        self._settle_timeouts(p)
        self._busy_since.pop(case.family, None)
        # The agent reports its machine's hostname; the record names the inventory host (what
        # the quarantine, `farm hosts` and the report speak of).
        record["machine"] = record.get("host")
        record.update({"host": slot.host, "slot": slot.id, "attempts": p.attempts})
        record["infra_errors"] = p.errors
        record.setdefault("timings", {})["wall_s"] = time.perf_counter() - started
        notes = []
        if p.crashes:
            crash = p.crashes[0]
            notes.append(
                f"the agent crashed running this case on {_crash_part(crash)}; rerun on a "
                f"fresh agent on {slot.id}, it {record.get('outcome')}"
            )
        if p.waited_from is not None or p.lock_waits:
            waited = p.lock_waited_s
            if p.waited_from is not None:
                waited = time.monotonic() - p.waited_from
            holders = "; ".join(
                dict.fromkeys(
                    [f"{s}: {_holder_text(e)}" for s, e in sorted(p.busy.items())] + p.lock_waits
                )
            )
            notes.append(f"waited {waited:.0f} s for devices another run held ({holders})")
        if notes:
            _extra(record, "notes", notes)
            record["message"] = f"{record.get('message') or ''} [{'; '.join(notes)}]".strip()
        if notes or len(p.log) > 1:
            _extra(record, "attempts_log", p.log)
        return record

    def _give_up(self, case: Case, p: _Progress, started: float, summary: str) -> ResultRecord:
        fault = self._farm_fault(p)
        if fault is not None:
            hosts = ", ".join(sorted({host for host, _ in p.answered}))
            p.answered = []  # nobody's: no host is charged
            self._settle_timeouts(p)
            message = (
                f"the same infrastructure error on every host the case was tried on ({hosts}): "
                f"{fault}; this is the farm's or the package's fault, not the hosts' (none is "
                "charged): fix it, then rerun"
            )
            return self._record(case, p, started, message, last=None)
        self._settle_timeouts(p)
        detail = "; ".join(p.errors[-3:])
        return self._record(
            case, p, started, summary + (f": {detail}" if detail else ""), last=None
        )

    def _record(
        self, case: Case, p: _Progress, started: float, message: str, last: str | None
    ) -> ResultRecord:
        """A broken record for ``case`` (callers change outcome and category as needed)."""
        slot_id = last or (p.tried[-1] if p.tried else None)
        slot = self.slots[slot_id] if slot_id else None
        record = broken_record(
            case,
            message,
            host=slot.host if slot else None,
            soc=slot.soc if slot else None,
            slot=slot.id if slot else None,
            attempts=p.attempts,
            infra_errors=p.errors,
            timings={"wall_s": time.perf_counter() - started},
        )
        if p.log:
            _extra(record, "attempts_log", p.log)
        return record


class _Locked:
    """A channel whose requests carry this run's device-lock fields (the canary's calls do
    not name them), so that the canary's agent holds the device as the run's own."""

    def __init__(self, channel: CaseChannel, lock: dict[str, Any]) -> None:
        self.channel, self.lock = channel, lock
        self.sent: list[str] = []  # the canary's cases that came back

    def run_case(
        self, case: CaseRequest, backend: str, device: int, timeout: float
    ) -> dict[str, Any]:
        result = self.channel.run_case(case, backend, device, timeout, lock=self.lock)
        self.sent.append(str(case["id"]))
        return result


def _entry(slot: SlotInfo, outcome: str, detail: str) -> dict[str, Any]:
    return {"slot": slot.id, "host": slot.host, "outcome": outcome, "detail": detail}


def _crash_part(crash: dict[str, Any]) -> str:
    after = crash.get("after")
    return f"{crash['slot']}: {crash['crash']}" + (
        f" (after case {after} on that agent)" if after else " (the agent's first case)"
    )


def _holder_text(exc: DeviceBusy) -> str:
    holder = exc.holder or {}
    run = holder.get("run")
    who = f"run {run}" if run else "an agent outside any run (a health check?)"
    pids = ", ".join(str(x) for x in holder.get("pids") or []) or "?"
    since = holder.get("since_iso")
    return f"{who}, agent pid {pids}" + (f", since {since}" if since else "")


def _to_stderr(line: str) -> None:
    print(f"farm: {line}", file=sys.stderr, flush=True)


def _crash_text(exc: InfraError) -> str | None:
    """The fatal-signal line an agent left on stderr when it died, if that is what happened."""
    if not isinstance(exc, ConnectionLost):
        return None
    tail = getattr(exc, "stderr_tail", "") or ""
    for line in tail.splitlines():
        if any(marker in line for marker in CRASH_MARKERS):
            return line.strip()
    return None
