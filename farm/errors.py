"""The orchestrator's errors: every one a :class:`FarmError` with a one-line message.

The roots (:class:`FarmError`, :class:`InfraError`) and the wire's errors live with the agent
(``farm/agent/errors.py``), which ships to hosts; this module adds what only the orchestrator
raises. ``farm`` prints any FarmError as one line and exits with its ``exit_code`` (2: nothing
here is a product failure).
"""

from __future__ import annotations

from farm.agent.errors import FarmError, InfraError


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
