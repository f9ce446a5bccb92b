"""Transports: how the orchestrator reaches an agent (base.py: a host's transport; channel.py: a
channel to one agent and its contract; commands.py: a host's command lines; shared.py: agents
shared by the emulated hosts of this machine).

``open_transport(host)`` is the default transport factory: LocalTransport for ``transport =
"local"`` hosts, SSHTransport (paramiko, imported only then) for ``"ssh"``.
"""

from __future__ import annotations

from farm.pool.inventory import HostSpec
from farm.pool.transport.base import COMMAND_TIMEOUT, Transport
from farm.pool.transport.channel import DEFAULT_TIMEOUT, HANDSHAKE_TIMEOUT, Channel
from farm.pool.transport.commands import remote_command


def open_transport(host: HostSpec) -> Transport:
    """The transport for one host. Connects lazily (on the first channel or command)."""
    if host.transport == "local":
        from farm.pool.transport.local import LocalTransport

        return LocalTransport(host)
    if host.transport == "ssh":
        from farm.pool.transport.ssh import SSHTransport

        return SSHTransport(host)
    raise ValueError(f"host {host.name}: unknown transport {host.transport!r}")


__all__ = [
    "COMMAND_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "HANDSHAKE_TIMEOUT",
    "Channel",
    "Transport",
    "open_transport",
    "remote_command",
]
