"""Agents shared by the emulated hosts of this machine: :class:`AgentShare`, whose channels
(:class:`SharedChannel`) are views onto a few agent processes started by the local transport
(farm/pool/transport/local.py), each naming its host in every request (farm/agent/server.py
serves several hosts in one process).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from farm.agent.request import CaseRequest
from farm.pool.inventory import EMULATED_PREFIX, HostSpec
from farm.pool.transport.channel import (
    DEFAULT_TIMEOUT,
    HANDSHAKE_TIMEOUT,
    Channel,
    checked_identity,
    warm_up,
)
from farm.util.errors import ConnectionLost, InfraError

# Seconds one slot's request may hold a shared agent before the agent's other slots stop waiting
# for it and go to another agent of the group (a smoke case answers in well under a second; one
# that takes this long may be hanging until its timeout, a minute or more).
STALLED_AFTER = 3.0


def share_key(host: HostSpec) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What local hosts must have in common to share an agent process: the interpreter and the
    environment, apart from each host's own ``LSG_EMULATED_*`` declaration (which the shared
    agent keeps per host)."""
    common = tuple(sorted((k, v) for k, v in host.env if not k.startswith(EMULATED_PREFIX)))
    return host.python, common


def shared_host(hosts: Sequence[HostSpec]) -> HostSpec:
    """The HostSpec a shared agent's channel runs under: the first host's interpreter and work
    directory, the hosts' common environment (no host's declaration), all their names."""
    first = hosts[0]
    names = [h.name for h in hosts]
    label = ",".join(names) if len(names) <= 4 else f"{','.join(names[:3])},... ({len(names)})"
    return HostSpec(
        name=label,
        soc=first.soc,
        devices=first.devices,
        transport="local",
        python=first.python,
        workdir=first.workdir,
        env=share_key(first)[1],
        tags=("shared-agent",),
    )


def shared_agent_hosts(hosts: Sequence[HostSpec], bundle_dirs: dict[str, str]) -> list[dict]:
    """The ``hosts`` a shared agent is given (farm/agent/server.py): name, work directory, the
    host's own declaration, where its bundle is deployed."""
    return [
        {
            "name": h.name,
            "workdir": h.workdir,
            "env": {k: v for k, v in h.env if k.startswith(EMULATED_PREFIX)},
            "bundle_dir": bundle_dirs.get(h.name),
        }
        for h in hosts
    ]


class SharedAgent:
    """One agent process serving several local hosts, and what the share knows of it."""

    def __init__(self, channel: Channel, group: str) -> None:
        self.channel = channel
        self.group = group
        self.views = 0  # SharedChannels bound to it
        self.cases = 0  # cases it has answered
        self.warmed = False  # its start-up (identify: imports, identity) is done
        self.devices: set[tuple[str, int]] = set()  # (host, device) it holds the lock of
        self.lock = threading.Lock()  # one request at a time, whichever slot sends it
        self.sent_at: float | None = None  # when the request in flight was sent (monotonic)
        self.surplus = False  # beyond the share's limit once a stall ended: closed when unused

    @property
    def usable(self) -> bool:
        """Open to new requests: not broken, not surplus."""
        return self.channel.usable and not self.surplus

    def stalled(self, after: float, now: float | None = None) -> bool:
        """Whether the request in flight has held the agent for ``after`` seconds or more."""
        sent = self.sent_at
        return sent is not None and (time.monotonic() if now is None else now) - sent >= after


class AgentShare:
    """The agents one orchestrator process keeps for the emulated hosts of this machine.

    Without it every slot would start an agent of its own: 512 agents for 64 emulated hosts of 8
    devices, on a machine with a few cores to run them. Here the hosts are put in *groups* (hosts
    that may share a process: :func:`share_key`) and a slot's channel is a :class:`SharedChannel`,
    a view onto one agent of its group that names its host in every request. At most ``limit``
    agents run at once (each group gets one even beyond it); a new view goes to a new agent while
    there is room, else to the group's agent with the fewest views.

    **A slow case holds up only its own slot.** A view that finds its agent busy with a request
    in flight for ``stalled_after`` seconds (a case that may hang until its timeout) stops waiting
    for it: it moves to an idle agent of the group, or to a new one while fewer than ``limit``
    agents are not stalled (at most twice ``limit`` in all), else to the group's least used agent
    that is not stalled, and otherwise keeps waiting and looks again. Once the stall ends (the
    case answers, or its timeout breaks the agent), the agents beyond the limit are closed as
    they become unused.

    What sharing must not change:

    * **Serialized requests.** A view takes its agent's lock for the whole request, so only one
      case is ever in flight on an agent: the dispatcher's timeout covers the case alone, never
      the wait behind other slots' cases.
    * **A broken agent costs only the case that broke it.** A timeout, a crash or garbage breaks
      the agent's channel (and the transport kills the agent's process group and checks it is
      gone). The view whose request did it raises the error as before (its slot is dropped,
      retried elsewhere, charged, or a hang or crash per the dispatcher's rules; its ``close``
      waits for the kill and reports it in ``reaped``/``reap_detail``; ``reap_again`` asks once
      more). Every other view of that agent had no request on the wire: its next request simply
      goes to another (or a new) agent of the group, and nobody is charged for it.
    * **A fresh agent after a crash.** A slot whose request lost its agent (ConnectionLost: a
      crash, a kill) gets its next channel's first case on an agent of its own, started for it,
      as the dispatcher's rerun-on-a-fresh-agent rule expects; afterwards that agent joins the
      group (or is closed when the group has enough).
    * **Device locks.** The agent takes each (host, device) lock on its first case there, in that
      host's work directory, and holds them all until it exits (farm/agent/devicelock.py). A
      device another run holds is answered ``busy`` at once (``lock_wait`` 0): an agent waiting
      for one device would hold up its other slots' cases; the dispatcher does the waiting.
    """

    def __init__(
        self,
        groups: Mapping[str, Sequence[HostSpec]],
        start: Callable[[str, Sequence[HostSpec]], Channel],
        limit: int,
        stalled_after: float = STALLED_AFTER,
    ) -> None:
        self.limit = max(1, int(limit))
        self.stalled_after = stalled_after
        self._groups = {name: tuple(hosts) for name, hosts in groups.items()}
        self._group_of = {h.name: name for name, hosts in groups.items() for h in hosts}
        self._hosts = {h.name: h for hosts in groups.values() for h in hosts}
        self._start = start
        self._lock = threading.Lock()
        self._agents: list[SharedAgent] = []  # usable (pruned when found broken)
        self._retired: list[SharedAgent] = []  # broken (killed in the background), or surplus
        self._fresh_for: set[str] = set()  # slot keys whose next channel needs a fresh agent
        self.started = 0  # agents started, in all (tests, benchmarks)
        self.peak = 0  # the most agents alive at once

    def serves(self, host: str) -> bool:
        return host in self._group_of

    @property
    def agents(self) -> list[SharedAgent]:
        with self._lock:
            return [a for a in self._agents if a.usable]

    def open(self, host: str, key: str | None = None) -> SharedChannel:
        """A channel for slot ``key`` of ``host`` (starting an agent if it needs one)."""
        view = SharedChannel(self, self._hosts[host], key)
        with self._lock:
            fresh = key is not None and key in self._fresh_for
            self._fresh_for.discard(key or "")
        if fresh:
            view._private = self._new(self._group_of[host])
            view._private.views += 1
        else:
            view._agent = self._acquire(view, None)
        return view

    def close(self) -> None:
        """Close every agent (an idle one exits on EOF) and wait for the broken ones' kill."""
        with self._lock:
            agents, self._agents = self._agents, []
            retired, self._retired = self._retired, []
        for agent in agents + retired:
            try:
                agent.channel.close()
            except Exception:
                pass

    # -- for SharedChannel --------------------------------------------------------------------

    def _new(self, group: str) -> SharedAgent:
        channel = self._start(group, self._groups[group])
        with self._lock:
            self.started += 1
            agent = SharedAgent(channel, group)
            alive = sum(a.usable for a in self._agents) + 1
            self.peak = max(self.peak, alive)
        return agent

    def _acquire(self, view: SharedChannel, old: SharedAgent | None) -> SharedAgent:
        """Bind ``view`` to an agent of its host's group (instead of ``old``: broken or surplus)."""
        group = self._group_of[view.host.name]
        with self._lock:
            unused = self._leave_locked(old)
            self._prune()
            mine = [a for a in self._agents if a.group == group]
            if mine and len(self._agents) >= self.limit:
                now = time.monotonic()
                agent = min(mine, key=lambda a: (a.stalled(self.stalled_after, now), a.views))
            else:
                # Started under the lock: the views waiting for an agent want this one.
                agent = self._new_locked(group)
                self._agents.append(agent)
            agent.views += 1
        if unused is not None:
            unused.channel.close()
        return agent

    def _move(self, view: SharedChannel, stalled: SharedAgent) -> SharedAgent:
        """Another agent for ``view``, whose agent ``stalled`` has had a request in flight for
        ``stalled_after`` seconds; ``stalled`` itself when there is none to go to yet."""
        group = self._group_of[view.host.name]
        with self._lock:
            self._prune()
            if stalled not in self._agents:
                return stalled  # broken or surplus meanwhile: the view finds another itself
            now = time.monotonic()
            going = [
                a
                for a in self._agents
                if a.group == group and a is not stalled and not a.stalled(self.stalled_after, now)
            ]
            idle = [a for a in going if not a.lock.locked()]
            flowing = sum(not a.stalled(self.stalled_after, now) for a in self._agents)
            if idle:
                agent = min(idle, key=lambda a: a.views)
            elif flowing < self.limit and len(self._agents) < 2 * self.limit:
                agent = self._new_locked(group)  # beyond the limit while the stall lasts
                self._agents.append(agent)
            elif going:
                agent = min(going, key=lambda a: a.views)
            else:
                return stalled
            stalled.views -= 1
            agent.views += 1
        return agent

    def _answered(self, agent: SharedAgent) -> None:
        """A request on ``agent`` was answered (its lock still held, nothing in flight): one
        agent more than the limit allows now that no stall needs it is surplus; its views go
        elsewhere on their next request, and the last one to leave closes it.

        The surplus one is the group's flowing agent that has answered the fewest cases (the
        newest on a tie): as a rule the one started for the stall, not the agent that was held
        up, whose start-up (imports, torch for the benchmark cases) is paid. Retiring the agent
        that answered instead made each stall's new agent pay that start-up again, and on a
        loaded machine the start-up itself (torch: ~3 s) held the new agent up past the stall
        threshold: a chain of new agents (20 in a nightly run under a profiler)."""
        with self._lock:
            if agent not in self._agents:
                return
            now = time.monotonic()
            flowing = [a for a in self._agents if not a.stalled(self.stalled_after, now)]
            siblings = [a for a in flowing if a.group == agent.group]
            if len(flowing) <= self.limit or len(siblings) < 2:
                return
            surplus = min(reversed(siblings), key=lambda a: a.cases)
            surplus.surplus = True
            self._agents.remove(surplus)
            self._retired.append(surplus)

    def _leave_locked(self, agent: SharedAgent | None) -> SharedAgent | None:
        """A view leaves ``agent`` (the share's lock held): the agent if it is now surplus and
        unused, for the caller to close outside the lock."""
        if agent is None:
            return None
        agent.views -= 1
        return agent if agent.surplus and agent.views <= 0 else None

    def _new_locked(self, group: str) -> SharedAgent:
        channel = self._start(group, self._groups[group])
        self.started += 1
        agent = SharedAgent(channel, group)
        self.peak = max(self.peak, len(self._agents) + 1)
        return agent

    def _prune(self) -> None:
        broken = [a for a in self._agents if not a.usable]
        if broken:
            self._agents = [a for a in self._agents if a.usable]
            self._retired += broken

    def _broken(self, agent: SharedAgent, key: str | None, exc: BaseException) -> None:
        with self._lock:
            if agent in self._agents:
                self._agents.remove(agent)
            if agent not in self._retired:
                self._retired.append(agent)
            if key is not None and isinstance(exc, ConnectionLost):
                self._fresh_for.add(key)

    def _settle(self, view: SharedChannel) -> None:
        """After a private agent's first case: it joins the group, or closes if there is no
        room (the view then binds to the group's agent on its next request)."""
        agent = view._private
        if agent is None:
            return
        view._private = None
        with self._lock:
            self._prune()
            keep = agent.usable and len(self._agents) < self.limit
            if keep:
                self._agents.append(agent)
                view._agent = agent
                return
            agent.views -= 1
        agent.channel.close()

    def _release(self, view: SharedChannel) -> None:
        """A view closed: an agent nobody uses any more is closed."""
        idle: list[SharedAgent] = []
        with self._lock:
            for agent in (view._agent, view._private):
                if agent is None:
                    continue
                agent.views -= 1
                if agent.views <= 0 and (agent.usable or agent.surplus):
                    if agent in self._agents:
                        self._agents.remove(agent)
                    idle.append(agent)
            view._agent = view._private = None
        for agent in idle:
            agent.channel.close()


class SharedChannel:
    """One slot's channel onto a shared agent (see :class:`AgentShare`): what the dispatcher
    needs of a channel (farm/run/dispatch.py CaseChannel), with every request naming its host."""

    def __init__(self, share: AgentShare, host: HostSpec, key: str | None) -> None:
        self.host = host
        self.key = key
        self._share = share
        self._agent: SharedAgent | None = None
        self._private: SharedAgent | None = None  # a fresh agent for the first case (a crash)
        self._broke: SharedAgent | None = None  # the agent this channel's own request broke
        self._closed = False
        self.last_device_lock: dict[str, Any] | None = None
        self.reaped: bool | None = None
        self.reap_detail = ""

    @property
    def where(self) -> str:
        return f"host {self.host.name} ({self.host.endpoint}, shared agent)"

    @property
    def usable(self) -> bool:
        return not self._closed and self._broke is None

    @property
    def agent(self) -> SharedAgent | None:
        return self._private or self._agent

    @property
    def warm(self) -> bool:
        """Whether the agent this channel's next case goes to has started up (answered a case,
        or warmed up: its imports are done; a shared agent never waits for a device): the
        dispatcher then gives the case exactly its timeout. Should the case meet a new agent
        after all, the channel warms that one up first (see :meth:`request`)."""
        agent = self.agent
        return agent is not None and agent.usable and (agent.warmed or agent.cases > 0)

    def warm_up(self, timeout: float = HANDSHAKE_TIMEOUT) -> None:
        """The start-up of the agent this channel's next case goes to (as Channel.warm_up)."""
        warm_up(lambda: self.request({"op": "identify"}, timeout, start_up=True))

    @property
    def agent_pid(self) -> int | None:
        agent = self._broke or self.agent
        return agent.channel.agent_pid if agent is not None else None

    @property
    def agent_pgid(self) -> int | None:
        agent = self._broke or self.agent
        return agent.channel.agent_pgid if agent is not None else None

    def _current(self) -> SharedAgent:
        private = self._private
        if private is not None:
            if private.usable:
                return private
            self._private = None  # it never answered (a request of ours would have raised)
            self._share._broken(private, None, ConnectionLost("private agent gone"))
        agent = self._agent
        if agent is None or not agent.usable:
            # Another slot's case broke it (or the view was never bound): nothing of ours was
            # on the wire, so the request just goes to another agent of the group.
            agent = self._agent = self._share._acquire(self, agent)
        return agent

    def _turn(self, agent: SharedAgent) -> bool:
        """Wait for ``agent``'s lock: True once this view holds it. False when this view moved
        to another agent instead of waiting behind another slot's request that has held this
        one for the share's ``stalled_after`` (see AgentShare)."""
        if agent is self._private:  # its own agent: nobody else sends there
            agent.lock.acquire()
            return True
        after = self._share.stalled_after
        while True:
            sent = agent.sent_at
            wait = after if sent is None else sent + after - time.monotonic()
            if agent.lock.acquire(timeout=max(0.0, wait)):
                return True
            if not agent.stalled(after):
                continue  # the request it waited behind ended and another began: its turn next
            other = self._share._move(self, agent)
            if other is not agent:
                self._agent = other
                return False
            # Nowhere to go yet (every agent the share may run is held up): look again later.
            if agent.lock.acquire(timeout=after):
                return True

    def _own(self, exc: InfraError, agent: SharedAgent) -> InfraError:
        """The error as this slot's host's own (the dispatcher counts it against that host)."""
        exc.host = self.host.name
        shared = agent.channel.where
        if shared in exc.message:
            exc.message = exc.message.replace(shared, self.where)
            exc.args = (exc.message,)
        return exc

    def request(
        self, msg: dict[str, Any], timeout: float = DEFAULT_TIMEOUT, *, start_up: bool = False
    ) -> dict[str, Any]:
        """One request for this channel's host on its agent (see Channel.request). ``start_up``:
        only for an agent that has not started up yet (another slot's warm-up may have done
        it while this one waited for the agent: the many slots of a new agent send one)."""
        if not self.usable:
            why = "it was closed" if self._closed else "its agent broke"
            raise ConnectionLost(
                f"{self.where}: channel unusable after an earlier error ({why}); open a new "
                "channel",
                host=self.host.name,
            )
        msg = {**msg, "host": self.host.name}
        device = msg.get("device") if msg.get("op") == "run-case" else None
        if device is not None and msg.get("lock_wait") is not None:
            # A device another run holds is answered busy at once: waiting for it in the agent
            # would hold up every other slot's case there. The dispatcher waits instead (it
            # tries the family's other slots, then asks again).
            msg["lock_wait"] = 0.0
        while True:
            agent = self._current()
            if not self._turn(agent):
                continue  # moved to another agent instead of waiting behind a stalled one
            try:
                if not agent.usable:
                    continue  # broken (or surplus) while this request waited for it: never sent
                if start_up and (agent.warmed or agent.cases):
                    return {"ok": True}
                agent.sent_at = time.monotonic()
                try:
                    if device is not None and not (agent.warmed or agent.cases):
                        # A new agent (another slot's case broke the one before, or held it
                        # up): its start-up under its own timeout, so that the case still gets
                        # exactly its timeout.
                        start = {"op": "identify", "host": self.host.name}
                        warm_up(functools.partial(agent.channel.request, start, HANDSHAKE_TIMEOUT))
                        agent.warmed = True
                    reply = agent.channel.request(msg, timeout)
                except InfraError as exc:
                    if not agent.channel.usable:  # this request broke the agent
                        self._broke = agent
                        self._share._broken(agent, self.key, exc)
                    raise self._own(exc, agent) from None
                finally:
                    agent.sent_at = None
                if device is not None:
                    agent.cases += 1
                    agent.devices.add((self.host.name, device))
                elif msg.get("op") == "identify":
                    agent.warmed = True
                self._share._answered(agent)
            finally:
                agent.lock.release()
            if self._private is not None and device is not None:
                self._share._settle(self)  # after its first case, not its warm-up
            return reply

    def identify(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """As Channel.identify, for this channel's host."""
        return checked_identity(self.request({"op": "identify"}, timeout), self.where, self.host)

    def run_case(
        self,
        case: CaseRequest,
        backend: str,
        device: int,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        lock: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """As Channel.run_case, on this channel's host."""
        fields = {k: v for k, v in (lock or {}).items() if v is not None}
        self.last_device_lock = None
        reply = self.request(
            {"op": "run-case", "case": case, "backend": backend, "device": device, **fields},
            timeout,
        )
        waited = reply.get("device_lock")
        self.last_device_lock = waited if isinstance(waited, dict) else None
        return reply["result"]

    def close(self) -> None:
        """Leave the agent (the last channel of an agent closes it). A channel whose request
        broke its agent waits for the agent's kill and says how it went (``reaped``)."""
        if not self._closed:
            self._closed = True
            self._share._release(self)
        broke = self._broke
        if broke is not None:
            self.reaped = broke.channel.wait_reaped()
            self.reap_detail = broke.channel.reap_detail

    def shutdown(self, timeout: float = 5.0) -> None:
        self.close()

    def reap_again(self) -> bool | None:
        """Kill and check the agent this channel's request broke once more (see Channel)."""
        broke = self._broke
        if broke is None:
            return None
        self.reaped = broke.channel.reap_again()
        self.reap_detail = broke.channel.reap_detail
        return self.reaped

    def __enter__(self) -> SharedChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
