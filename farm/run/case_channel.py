"""What the dispatcher needs of a channel to one agent (:class:`CaseChannel`), the run's fields
of the device locks its requests carry (:func:`run_owner`), and the channel its canary runs
through (:class:`LockedChannel`).

A real channel is farm/pool/transport/channel.py Channel (an agent of its own) or
farm/pool/transport/shared.py SharedChannel (a view onto a shared agent); tests give fakes. Its
``run_case`` returns the reply's result as the agent sent it (a JSON object); the dispatcher
parses it into the typed record (farm/agent/record.py parse_record).
"""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path
from typing import Any, Protocol

from farm.agent.request import CaseRequest


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


def run_owner(lock_dir: str | Path, run_id: str | None = None) -> tuple[str, str]:
    """(run id, owner token) of the run whose slot leases live in ``lock_dir``.

    The run id defaults to the run directory's name (``runs/<run id>/locks``). The owner token
    names "this run" in the device locks: the same in every worker of the run (they share the
    lock directory), different for another run, even one of the same name in another clone."""
    path = Path(lock_dir).resolve()
    run = run_id or path.parent.name
    digest = hashlib.sha256(f"{socket.gethostname()}:{path}".encode()).hexdigest()[:12]
    return run, f"{run}@{socket.gethostname()}:{digest}"


class LockedChannel:
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
