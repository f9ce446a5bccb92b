"""What every transport provides: agent channels, and file/command plumbing on its host.

A :class:`Transport` is the per-host connection factory: ``open_channel`` starts an agent and
handshakes with it (the :class:`~farm.pool.transport.channel.Channel` it returns is a persistent
connection to that agent: farm/pool/transport/channel.py says what it promises), and
``put_file``/``sha256_remote``/``run_argv`` serve deploy and health checks.
The host-side helper behind ``sha256_remote``, ``remote_status``, ``install_remote`` and
``reap_group`` is farm/agent/hostops.py, sent as ``python -c`` text (:func:`helper_source`).
Commands are argv lists, never shell strings: where a shell is unavoidable (SSH exec), they are
quoted with :func:`shlex.join` by farm/pool/transport/commands.py ``remote_command``.
"""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from farm.agent import hostops
from farm.pool.inventory import HostSpec
from farm.pool.transport.channel import (
    HANDSHAKE_TIMEOUT,
    REAP_GRACE,
    Channel,
    agent_label,
    reap_outcome,
)
from farm.pool.transport.commands import (
    describe_exit,
    host_argv,
    set_env_problem,
    with_workdir_fix,
)
from farm.util import proc as procfs
from farm.util.errors import DeployError, HostSetupError, InfraError, ProtocolError

COMMAND_TIMEOUT = 120.0

UNPACKED_MARKER = hostops.MARKER


@functools.cache
def helper_source() -> str:
    """The host-side helper: the text of farm/agent/hostops.py and of the one module it imports,
    farm/util/proc.py, which a host runs as ``python -c TEXT <command> args...`` (its commands and
    replies are in hostops' docstring). The text travels, not the modules: deploy runs it before
    the bundle that holds them is on the host. proc's source is made the module
    ``farm.util.proc`` first, then hostops' runs as ``__main__``. The local transport imports the
    module instead (farm/pool/transport/local.py)."""
    proc_text = Path(procfs.__file__).read_text(encoding="utf-8")
    ops_text = Path(hostops.__file__).read_text(encoding="utf-8")
    return (
        "import sys, types\n"
        "for n in ('farm', 'farm.util', 'farm.util.proc'):\n"
        "    sys.modules[n] = types.ModuleType(n)\n"
        "sys.modules['farm.util'].proc = m = sys.modules['farm.util.proc']\n"
        f"exec(compile({proc_text!r}, 'farm/util/proc.py', 'exec'), m.__dict__)\n"
        f"exec(compile({ops_text!r}, 'farm/agent/hostops.py', 'exec'),"
        " {'__name__': '__main__'})\n"
    )


class Transport(ABC):
    """The per-host connection: agent channels, file upload and small commands."""

    def __init__(self, host: HostSpec) -> None:
        self.host = host

    @property
    def where(self) -> str:
        return f"host {self.host.name} ({self.host.endpoint})"

    @abstractmethod
    def open_channel(
        self, argv: Sequence[str], *, cwd: str | None = None, timeout: float = HANDSHAKE_TIMEOUT
    ) -> Channel:
        """Start ``argv`` (an agent) on the host and handshake with it."""

    @abstractmethod
    def put_file(self, local: Path, remote: str) -> None:
        """Upload ``local`` to ``remote`` atomically (temp name, then rename); parents created."""

    @abstractmethod
    def get_file(self, remote: str, local: Path) -> None:
        """Download ``remote`` to ``local`` (a temp name, then renamed: never half a file)."""

    @abstractmethod
    def run_argv(
        self, argv: Sequence[str], *, cwd: str | None = None, timeout: float = COMMAND_TIMEOUT
    ) -> tuple[int, str, str]:
        """Run a short command on the host: (exit status, stdout, stderr)."""

    @abstractmethod
    def close(self) -> None: ...

    # -- built on run_argv ----------------------------------------------------------------------

    def _helper(
        self,
        *args: str,
        timeout: float = COMMAND_TIMEOUT,
        set_up: bool = False,
    ) -> dict[str, Any]:
        """Run hostops ``args`` on the host; with ``set_up``, in the environment its agent gets
        (CANN's set-up script sourced, the inventory env on top: :func:`host_argv`)."""
        argv = [self.host.python, "-c", helper_source(), *args]
        rc, out, err = self.run_argv(
            host_argv(self.host, argv) if set_up else argv, timeout=timeout
        )
        if rc != 0:
            problem = set_env_problem(self.host, err) if set_up else None
            if problem:
                raise HostSetupError(problem, host=self.host.name)
            detail = (err.strip().splitlines() or [describe_exit(rc)])[-1]
            raise DeployError(
                with_workdir_fix(
                    f"{self.where}: helper '{args[0]}' failed ({describe_exit(rc)}): {detail}",
                    self.host.workdir,
                ),
                host=self.host.name,
            )
        try:
            return json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise ProtocolError(
                f"{self.where}: helper '{args[0]}' printed no JSON: {out[-200:]!r}",
                host=self.host.name,
            ) from None

    def sha256_remote(self, path: str) -> str | None:
        """sha256 of a file on the host; None if it does not exist."""
        return self._helper("sha256", path)["sha256"]

    def remote_status(self, archive: str, dest: str) -> dict[str, Any]:
        """{"sha256": of archive or None, "unpacked": sha256 recorded in dest's marker or None}."""
        return self._helper("status", archive, dest)

    def install_remote(
        self,
        tmp: str,
        dest: str,
        name: str,
        sha256: str,
        *,
        archive: bool,
        reuse: str | None = None,
    ) -> dict[str, Any]:
        """Make ``dest`` the complete directory of file ``name`` (sha256 ``sha256``) atomically:
        verify ``tmp/name`` on the host (linked or copied from ``reuse`` first, when given),
        unpack it there if it is an archive, write the marker, rename ``tmp`` to ``dest``. An
        existing complete ``dest`` is never touched (the loser of two concurrent installs
        discards its ``tmp``). Returns ``{"sha256": of the file on the host, "installed":
        "renamed" | "exists" | None}``; None (and ``tmp`` removed) when the sha256 is wrong."""
        return self._helper(
            "install", tmp, dest, name, sha256, "1" if archive else "0", reuse or "-"
        )

    def remote_platform(self) -> dict[str, Any]:
        """What deploy picks the host's package by (hostops ``platform``): {"arch", "declared",
        "cann"}, in the environment the host's agent gets (CANN's set-up script sourced, its
        inventory env on top)."""
        return self._helper("platform", set_up=True)

    def reap_group(self, pid: int, pgid: int, grace: float = REAP_GRACE) -> tuple[bool, str]:
        """Kill process group ``pgid`` on the host (SIGTERM, SIGKILL after ``grace`` s) and
        check that nothing of it is left: (gone, what happened, for messages). ``pid`` is the
        group's leader, the agent: a leader that is alive but not a farm agent (the number was
        reused) is left alone."""
        label = agent_label(pid, pgid)
        argv = [self.host.python, "-c", helper_source(), "reap", str(pgid), str(pid), f"{grace:g}"]
        try:
            rc, out, err = self._reap_command(argv, grace + 15.0)
        except InfraError as exc:
            return False, f"{label} could not be checked on {self.where}: {exc}"
        try:
            result = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            detail = (err.strip().splitlines() or [describe_exit(rc)])[-1]
            return False, f"{label} could not be checked on {self.where}: {detail}"
        return reap_outcome(label, self.where, result)

    def _reap_command(self, argv: Sequence[str], timeout: float) -> tuple[int, str, str]:
        return self.run_argv(argv, timeout=timeout)

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
