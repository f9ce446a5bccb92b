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
  set aside by this worker and checked again every DEAD_RECHECK seconds (farm/run/slot_table.py).
  The case moves on.
  **The host is asked at once whose fault it was** (``_confirm_hang``): the family's canary
  cases, the health check's own (farm/run/canary.py make_canary), run on the same device through
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

import sys
import time
from collections.abc import Callable

from farm.agent.record import ResultRecord, parse_record, with_case
from farm.agent.request import CaseRequest
from farm.pool.transport.channel import HANDSHAKE_TIMEOUT
from farm.run import case_records
from farm.run.attempts import (
    Crash,
    CrashedTwice,
    Progress,
    TimedOut,
    crash_text,
    entry,
    farm_fault,
    holder_text,
)
from farm.run.canary import Canary, make_canary
from farm.run.case_channel import CaseChannel, LockedChannel, run_owner
from farm.run.case_records import HANG
from farm.run.leases import (
    LeaseTimeout,
    RunState,
    lease,
    lease_any,
    needs_benchmark,
    without_torch,
)
from farm.run.requests import case_request
from farm.run.slot_table import SlotTable
from farm.run.slots import SlotInfo
from farm.util import run_dir
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

MAX_RETRIES = 2
AGENT_STARTUP_ALLOWANCE = 30.0  # seconds a first case gets on a channel that cannot warm_up
LOCK_WAIT = 5.0  # seconds an agent waits for its device before it answers busy
BUSY_WAIT = 600.0  # seconds a family's cases wait, in all, for devices another run holds
BUSY_POLL = 1.0  # a slot that answered busy is asked again after this long at the soonest
LET_GO_WAIT = 5.0  # seconds a slot done with waits for its lease, to close its agent


def case_timeout(case, base: float) -> float:
    """Generous for big tensors: the base plus a microsecond per element, twice over."""
    return base + 2e-6 * case.numel


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
        the health check's, farm/run/canary.py make_canary)."""
        self.left_out = left_out or {}
        self.notify = notify or _to_stderr
        self.table = SlotTable({s.id: s for s in slots}, self._say)
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
        if canary is None:
            canary = make_canary(backend)
        self.canary = canary
        self._channels: dict[str, CaseChannel] = {}
        self._history: dict[str, list[str]] = {}  # slot -> cases run on its current agent
        self._fresh: set[str] = set()  # slots whose agent has not finished a case yet
        self._busy_since: dict[str, float] = {}  # family -> since when its cases wait
        # Slots whose device another run held when last asked -> when that was (monotonic):
        # the worker's cases go to the family's other slots first (see _wanted).
        self._held: dict[str, float] = {}

    @property
    def slots(self) -> dict[str, SlotInfo]:
        """Slot id -> slot, every slot this worker may use."""
        return self.table.by_id

    @slots.setter
    def slots(self, slots: dict[str, SlotInfo]) -> None:
        self.table.set(slots)

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
        """The family's healthy slots in the order to try them (SlotTable.candidates)."""
        quarantined = self.state.quarantined()
        return self.table.candidates(family, preferred, tried, quarantined, torch)

    def _wanted(self, candidates: list[SlotInfo], p: Progress) -> list[str]:
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
        p = Progress()
        payload = case_request(case)
        torch = needs_benchmark(case)
        while True:
            candidates = self._candidates(case.family, preferred, p.tried, torch)
            if not candidates and torch and self._candidates(case.family, None, p.tried):
                said = "" if p.errors else self.table.lacking_torch(case.family)
                return self._give_up(case, p, started, without_torch(case.family) + said)
            if not candidates:
                quarantined = self.state.quarantined()
                left_out = self.left_out.get(case.family, {})
                summary = self.table.none_healthy(case.family, quarantined, left_out)
                return self._give_up(case, p, started, summary)
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
                    except TimedOut as exc:
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
            except CrashedTwice:
                return self._crash(case, p, started)
            except HostLacks as exc:  # not the host's fault: its other cases run there as ever
                assert slot is not None
                self.table.lacks_torch[slot.host] = f"{slot.id}: {exc}"
                p.errors.append(f"{slot.id}: {exc}")
                p.log.append(entry(slot, "lacks", str(exc)))
            except InfraError as exc:
                assert slot is not None
                self._drop(slot)
                p.errors.append(f"{slot.id}: {exc}")
                p.log.append(entry(slot, "infrastructure", str(exc)))
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
        self, slot: SlotInfo, payload: CaseRequest, case: Case, p: Progress
    ) -> ResultRecord:
        """The case on ``slot`` (leased), rerun once on a fresh agent after a crash."""
        p.tried.append(slot.id)
        while True:
            before = list(self._history.get(slot.id, []))
            try:
                record = self._attempt(slot, payload, case, p)
            except Crash as crash:
                self._drop(slot)
                after = before[-1] if before else None
                p.crashes.append(
                    {"slot": slot.id, "host": slot.host, "crash": crash.text, "after": after}
                )
                logged = entry(slot, "crash", crash.text)
                logged["previous_case"] = after
                p.log.append(logged)
                if len(p.crashes) >= 2:
                    raise CrashedTwice from None
                p.need_fresh = True
                self._say(
                    f"case {case.id} crashed the agent on {slot.id} ({crash.text})"
                    + (f" after case {after} ran on it" if after else "")
                    + "; rerunning it once on a fresh agent"
                )
                continue
            p.log.append(entry(slot, str(record.get("outcome")), ""))
            return record

    def _attempt(
        self, slot: SlotInfo, payload: CaseRequest, case: Case, p: Progress
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
            raise TimedOut(exc, timeout) from None
        except ConnectionLost as exc:
            text = crash_text(exc)
            if text is not None:
                raise Crash(exc, text) from None
            raise
        waited = getattr(channel, "last_device_lock", None)
        if waited:  # the agent waited for the device before it ran the case
            holder = DeviceBusy("", holder=waited.get("holder") or {})
            p.lock_waits.append(f"{slot.id}: {holder_text(holder)}")
            p.lock_waited_s += float(waited.get("waited_s") or 0.0)
        self._fresh.discard(slot.id)
        self._held.pop(slot.id, None)  # its agent has the device now
        self._history.setdefault(slot.id, []).append(case.id)
        p.need_fresh = False
        record = parse_record(result, where=f"the agent on {slot.id}'s reply to case {case.id}")
        return with_case(record, case, payload)

    def _drop(self, slot: SlotInfo) -> tuple[bool | None, str]:
        """Close the slot's channel (killing a stuck agent, see base.Channel): how that went.
        A slot whose agent could not be verified gone is set aside (SlotTable.alive)."""
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
            self.table.mark_dead(slot, channel, detail)
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

    def _pace(self, wanted: list[str], p: Progress) -> None:
        """When every slot wanted was asked a moment ago and answered busy, wait a little before
        asking again. Counted from the asking: an agent that waited for the device (woken the
        moment it is let go) has spent that time already, and is asked again at once."""
        if not wanted or not all(sid in p.busy_at for sid in wanted):
            return
        pause = min(p.busy_at[sid] for sid in wanted) + BUSY_POLL - time.monotonic()
        if pause > 0:
            time.sleep(pause)

    def _busy(
        self, case: Case, slot: SlotInfo, exc: DeviceBusy, p: Progress, started: float
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
            p.log.append(entry(slot, "busy", holder_text(exc)))
        since = self._busy_since.setdefault(case.family, now)
        if p.waited_from is None:
            p.waited_from = now
            left = max(0.0, since + self.busy_wait - now)
            self._say(
                f"case {case.id}: {slot.id} is busy, another run holds it "
                f"({holder_text(exc)}); trying the family's other slots, waiting up to "
                f"{left:.0f} s"
            )
        usable = {s.id for s in self._candidates(case.family, None, p.tried)}
        if now - since >= self.busy_wait and usable <= set(p.busy):
            return self._not_run(case, p, started, now - since)
        return None

    def _not_run(self, case: Case, p: Progress, started: float, waited: float) -> ResultRecord:
        self._settle_timeouts(p)
        slot = self.slots[sorted(p.busy)[-1]]
        return case_records.not_run(case, p, slot, time.perf_counter() - started, waited)

    # -- timeouts, hangs and crashes ------------------------------------------------------

    def _timed_out(
        self, case: Case, slot: SlotInfo, t: TimedOut, p: Progress, started: float
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
            p.log.append(entry(slot, "timeout", message))
            return self._hang(case, p, started)
        # An agent that could not be killed holds the device: no canary can be sent there.
        answer = self._confirm_hang(slot) if killed is not False else None
        if answer is None:
            if killed is not False:
                p.timeouts[-1]["message"] = message = f"{message}; its canary did not answer right"
        else:
            p.timeouts[-1]["canary"] = answer
        p.errors[-1] = message
        p.log.append(entry(slot, "timeout", message))
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
        locked = LockedChannel(channel, lock)
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

    def _settle_timeouts(self, p: Progress) -> None:
        """The case did not hang everywhere: each timeout was its host's infrastructure error;
        so was each error an agent answered."""
        for x in p.timeouts:
            self.state.record_infra_error(x["host"], x["message"])
        p.timeouts = []
        self._settle_answered(p)

    def _settle_answered(self, p: Progress) -> None:
        for host, message in p.answered:
            self.state.record_infra_error(host, message)
        p.answered = []

    def _hang(self, case: Case, p: Progress, started: float) -> ResultRecord:
        message, hang = case_records.hang_message(p)
        last = p.timeouts[-1]["slot"]
        timeout_messages = {x["message"] for x in p.timeouts}
        p.errors = [e for e in p.errors if e not in timeout_messages]
        p.timeouts = []
        self._settle_answered(p)
        record = self._record(case, p, started, message, last=last)
        record.update({"outcome": "failed", "category": HANG, "hang": hang})
        return record

    def _crash(self, case: Case, p: Progress, started: float) -> ResultRecord:
        self._settle_timeouts(p)
        message = case_records.crash_message(p)
        record = self._record(case, p, started, message, last=p.crashes[1]["slot"])
        record.update({"outcome": "failed", "category": "crash"})
        return record

    # -- records --------------------------------------------------------------------------

    def _done(
        self, case: Case, record: ResultRecord, slot: SlotInfo, p: Progress, started: float
    ) -> ResultRecord:
        self._settle_timeouts(p)
        self._busy_since.pop(case.family, None)
        waited: float | None = None
        if p.waited_from is not None or p.lock_waits:
            waited = p.lock_waited_s
            if p.waited_from is not None:
                waited = time.monotonic() - p.waited_from
        wall_s = time.perf_counter() - started
        return case_records.completed(record, slot, p, wall_s, waited)

    def _give_up(self, case: Case, p: Progress, started: float, summary: str) -> ResultRecord:
        fault = farm_fault(p, self.table.host_parts)
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
        self, case: Case, p: Progress, started: float, message: str, last: str | None
    ) -> ResultRecord:
        """A broken record for ``case`` (callers change outcome and category as needed)."""
        slot_id = last or (p.tried[-1] if p.tried else None)
        slot = self.slots[slot_id] if slot_id else None
        return case_records.broken(case, p, slot, time.perf_counter() - started, message)


def _to_stderr(line: str) -> None:
    print(f"farm: {line}", file=sys.stderr, flush=True)
