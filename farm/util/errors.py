"""The errors the wire can produce, and the roots of the farm's error taxonomy.

Two kinds of trouble, never mixed (ARCHITECTURE.md, "Error taxonomy", after LAVA):

* a *product* failure (a precision failure, a wrong acceptance or rejection, a wrong status code,
  the operator crashing) is a verdict in a result record, never an exception, and never retried;
* an *infrastructure* error (:class:`InfraError`) may be retried on another slot of the same SoC
  family and counts towards quarantining the host.

This module ships to hosts with the agent: standard library only. The orchestrator's own errors
(configuration, usage, storage, the pool's transports) extend these roots at its end.
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


# The orchestrator's own errors (never raised on a host; nothing here is a product failure).


class ConfigError(FarmError):
    """The farm's configuration is wrong (inventory, SoC name, key file): fix it, then rerun.
    Raised before anything starts, never retried."""


class UsageError(FarmError):
    """A command line, a case selection or a store request that cannot be done as asked."""


class BuildError(FarmError):
    """Building the operator package failed; the message names the step and shows its output."""


class ToolMissing(FarmError):
    """A tool the farm needs is not installed (Allure 3, node, cmake); the message says how."""


class StoreError(FarmError):
    """The run store cannot be used (schema newer than this farm, not a farm store, read-only)."""


class RunDirUnwritable(FarmError):
    """The runs directory cannot take what a run writes (full, read-only, no permission): the
    message names the directory, the problem and the fix; what could be written is kept."""


class HostUnreachable(InfraError):
    """No SSH session could be established (refused, timed out, no route, not an SSH server)."""


class AuthError(InfraError):
    """The host refused our key, or our key could not be used."""


class HostKeyError(AuthError):
    """The host's key is unknown (strict policy) or has changed since it was recorded.

    Retrying elsewhere is fine; accepting the key is not, unless the inventory opts in with
    ``host_key_policy = "accept-new"`` (and never for a changed key).
    """


class ConnectionLost(InfraError):
    """An established connection or agent process went away (EOF, reset, agent exited)."""


class AgentTimeout(InfraError):
    """The agent (or a command on the host) did not answer within the timeout."""


class DeployError(InfraError):
    """A file could not be uploaded, verified or unpacked on a host."""


class HostSetupError(InfraError):
    """The host's own set-up is broken: CANN's set-up script (the inventory's set_env) is not
    there or fails when sourced. The host's fault, never the operator's."""
