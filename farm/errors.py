"""The farm's error taxonomy (ARCHITECTURE.md, "Error taxonomy", after LAVA).

Two kinds of trouble, never mixed:

* a *product* failure (a precision failure, a wrong acceptance or rejection, a wrong status code,
  the operator crashing) is a verdict in a result record, never an exception of this module and
  never retried;
* an *infrastructure* error (:class:`InfraError`: the host is unreachable, auth fails, deploy or
  protocol breaks, the agent does not answer in time) may be retried on another slot of the same
  SoC family and counts towards quarantining the host.

:class:`ConfigError` is raised before anything starts (bad inventory, unknown SoC, missing key
file) and is never retried: a person must fix the configuration.

Every message is one line for people: it names the thing (file, host, address, field) and the fix.

This module is shipped to hosts inside the agent bundle: standard library only.
"""

from __future__ import annotations


class FarmError(Exception):
    """Base of every error the farm raises on purpose.

    ``host`` names the inventory host the error is about, where there is one (the dispatcher uses
    it to count infrastructure errors per host).
    """

    def __init__(self, message: str, *, host: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.host = host

    def __str__(self) -> str:
        return self.message


class ConfigError(FarmError):
    """The farm's configuration is wrong (inventory, SoC name, key file): fix it, then rerun."""


class InfraError(FarmError):
    """An infrastructure error: retryable on another slot of the same family.

    ``stderr_tail``: where the error is about an agent process (ConnectionLost, AgentTimeout),
    the last of what it wrote to stderr, so that the dispatcher can tell an operator crash (a
    fatal signal line) from a lost host.
    """

    retryable = True
    stderr_tail: str = ""


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


class ProtocolError(InfraError):
    """The agent sent something that is not a valid reply (malformed, oversize, wrong seq, wrong
    version, unknown op). The channel is unusable afterwards."""


class AgentError(InfraError):
    """The agent answered, but reported that it failed to do the request for a reason that is not
    a product verdict (e.g. the executor raised an unexpected exception)."""


class DeployError(InfraError):
    """A file could not be uploaded, verified or unpacked on a host."""


__all__ = [
    "AgentError",
    "AgentTimeout",
    "AuthError",
    "ConfigError",
    "ConnectionLost",
    "DeployError",
    "FarmError",
    "HostKeyError",
    "HostUnreachable",
    "InfraError",
    "ProtocolError",
]
