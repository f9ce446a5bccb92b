"""The errors the wire can produce, and the roots of the farm's error taxonomy.

Two kinds of trouble, never mixed (ARCHITECTURE.md, "Error taxonomy", after LAVA):

* a *product* failure (a precision failure, a wrong acceptance or rejection, a wrong status code,
  the operator crashing) is a verdict in a result record, never an exception, and never retried;
* an *infrastructure* error (:class:`InfraError`) may be retried on another slot of the same SoC
  family and counts towards quarantining the host.

This module ships to hosts with the agent: standard library only. The orchestrator's own errors
(configuration, usage, storage, the pool's transports) extend these roots in ``farm/errors.py``.
Every message is one line for people: it names the thing (file, host, field) and the fix.
"""

from __future__ import annotations


class FarmError(Exception):
    """Base of every error the farm raises on purpose; ``farm`` prints it as one line, no
    traceback.

    ``host`` names the inventory host the error is about, where there is one (the dispatcher uses
    it to count infrastructure errors per host).
    """

    exit_code = 2  # never 1: that code means a product failure

    def __init__(self, message: str, *, host: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.host = host

    def __str__(self) -> str:
        return self.message


class InfraError(FarmError):
    """An infrastructure error: retryable on another slot of the same family.

    ``stderr_tail``: where the error is about an agent process (ConnectionLost, AgentTimeout),
    the last of what it wrote to stderr, so that the dispatcher can tell an operator crash (a
    fatal signal line) from a lost host.
    """

    retryable = True
    stderr_tail: str = ""


class ProtocolError(InfraError):
    """The agent sent something that is not a valid reply (malformed, oversize, wrong seq, wrong
    version, unknown op). The channel is unusable afterwards."""


class AgentError(InfraError):
    """The agent answered, but reported that it failed to do the request for a reason that is not
    a product verdict (e.g. the executor raised an unexpected exception)."""


class HostLacks(InfraError):
    """The host lacks what this case needs and other hosts may have: PyTorch, the benchmark-ratio
    standard's benchmark, which it says it has but cannot import (wire error kind ``lacks``).
    Not charged to the host, whose other cases run as ever: the dispatcher sends such cases to
    the family's other hosts, and where none is left says so in the case's record."""


class DeviceBusy(InfraError):
    """The device is held by another run's agent (the host's device lock,
    farm/agent/devicelock.py; wire error kind ``busy``).

    Nobody's fault: it never counts as an infrastructure error against the host and never
    quarantines it. The dispatcher tries the family's other slots and waits; a case that cannot get
    a device within its limit is reported as not run. ``holder`` is the holder record (run,
    owner, pids, since) as the agent read it.
    """

    def __init__(
        self,
        message: str,
        *,
        host: str | None = None,
        device: int | None = None,
        holder: dict | None = None,
    ) -> None:
        super().__init__(message, host=host)
        self.device = device
        self.holder: dict = holder or {}
