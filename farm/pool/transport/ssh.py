"""The SSH transport (paramiko): key auth only, host keys checked, one connection per host.

* Authentication and host keys: farm/pool/transport/ssh_keys.py (the inventory's private key
  only; host keys checked against the inventory's ``known_hosts``, an unknown one refused under
  ``strict``, the default, and recorded under the lab opt-in ``accept-new``; a *changed* key is
  refused under both).
* One persistent ``SSHClient`` per host with transport keepalive; reconnected when it has died.
  Each :class:`SSHChannel` is one long-lived exec channel running the agent; SFTP moves files;
  short commands are exec channels too. Every wait has a timeout.
* Commands are argv lists quoted with :func:`shlex.join` (farm/pool/transport/commands.py
  ``remote_command``); nothing from a case or the inventory reaches the remote shell unquoted.
* Closing an exec channel does not stop a process that is not reading its stdin (a hung case):
  a broken channel's agent is killed by process group with a short command on the host
  (``Transport.reap_group``: SIGTERM, SIGKILL, then a check that nothing of the group is left),
  within :data:`REAP_OPEN_TIMEOUT` per SSH step, so a frozen or lost host costs seconds.
* paramiko and socket errors are mapped to :mod:`farm.util.errors` with messages that name the host,
  its address and the fix.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from farm.pool.inventory import HostSpec
from farm.pool.transport.base import COMMAND_TIMEOUT, Transport
from farm.pool.transport.channel import HANDSHAKE_TIMEOUT, STDERR_TAIL_BYTES, Channel
from farm.pool.transport.commands import describe_exit, remote_command
from farm.pool.transport.ssh_keys import (
    AcceptNewHostKeyPolicy,
    StrictHostKeyPolicy,
    address,
    known_hosts_name,
    load_known_hosts,
    load_private_key,
    where_of,
)
from farm.util.errors import (
    AgentTimeout,
    AuthError,
    ConfigError,
    ConnectionLost,
    DeployError,
    HostKeyError,
    HostUnreachable,
)

# paramiko logs transport failures at ERROR; the farm reports them as its own errors (with the
# host and the fix), so they are not printed again unless the application configures logging.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

KEEPALIVE_S = 15
SFTP_TIMEOUT = 120.0
REAP_OPEN_TIMEOUT = 3.0  # opening the session (or connection) that kills a broken channel's agent
_POLL = 0.25  # longest single blocking read, so stderr is drained while waiting


class SSHChannel(Channel):
    """One agent process behind one exec channel."""

    def __init__(
        self,
        host: HostSpec,
        chan: paramiko.Channel,
        command: str,
        transport: SSHTransport | None = None,
    ) -> None:
        super().__init__(host)
        self.chan = chan
        self.command = command
        self.transport = transport
        self._stderr: deque[bytes] = deque(maxlen=64)

    def _reap(self) -> tuple[bool | None, str]:
        if self.transport is None:
            return None, ""
        if self.agent_pid is None or self.agent_pgid is None:
            return False, (
                f"the agent on {self.where} broke before it said its pid: it cannot be killed by "
                "process group (farm lab down, or a look at the host, finds it)"
            )
        return self.transport.reap_group(self.agent_pid, self.agent_pgid)

    def _drain_stderr(self) -> None:
        try:
            while self.chan.recv_stderr_ready():
                data = self.chan.recv_stderr(1 << 16)
                if not data:
                    break
                self._stderr.append(data)
        except (OSError, EOFError, paramiko.SSHException):
            pass

    def stderr_tail(self) -> str:
        self._drain_stderr()
        return b"".join(self._stderr).decode("utf-8", "replace")[-STDERR_TAIL_BYTES:]

    def _send_bytes(self, data: bytes, timeout: float) -> None:
        try:
            self.chan.settimeout(timeout)
            self.chan.sendall(data)
        except TimeoutError:
            raise AgentTimeout(
                f"{self.where}: could not send a request within {timeout:g}s; the host may be "
                "frozen",
                host=self.host.name,
            ) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise ConnectionLost(
                f"{self.where}: SSH channel to the agent is gone ({exc.__class__.__name__}: "
                f"{exc}); {self._diagnostics()}",
                host=self.host.name,
            ) from None

    def _recv_bytes(self, timeout: float) -> bytes | None:
        self._drain_stderr()
        try:
            self.chan.settimeout(max(0.001, min(timeout, _POLL)))
            return self.chan.recv(1 << 16)
        except TimeoutError:
            return None
        except (OSError, EOFError, paramiko.SSHException):
            return b""

    def _diagnostics(self) -> str:
        transport = self.chan.get_transport()
        if transport is None or not transport.is_active():
            return "the SSH connection dropped (host down, sshd killed, or network reset)"
        status = None
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if self.chan.exit_status_ready():
                status = self.chan.recv_exit_status()
                break
            time.sleep(0.02)
        tail = " | ".join(self.stderr_tail().strip().splitlines()[-5:])
        what = "agent still running" if status in (None, -1) else f"agent {describe_exit(status)}"
        return what + (f"; stderr: {tail}" if tail else "")

    def _close_raw(self) -> None:
        try:
            self.chan.close()
        except Exception:
            pass


class SSHTransport(Transport):
    def __init__(self, host: HostSpec, *, keepalive: int = KEEPALIVE_S) -> None:
        if host.transport != "ssh":
            raise ValueError(f"host {host.name} uses transport {host.transport!r}, not ssh")
        super().__init__(host)
        self.keepalive = keepalive
        self._lock = threading.RLock()
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._pkey: paramiko.PKey | None = None

    @property
    def where(self) -> str:
        return where_of(self.host)

    # -- connection -----------------------------------------------------------------------------

    def connect(self, timeout: float | None = None) -> paramiko.SSHClient:
        """The live client, (re)connecting when needed (within ``timeout``, default the host's
        connect_timeout)."""
        with self._lock:
            client = self._client
            if client is not None:
                t = client.get_transport()
                if t is not None and t.is_active():
                    return client
                self._drop()
            self._client = self._connect(timeout)
            return self._client

    def _connect(self, timeout: float | None = None) -> paramiko.SSHClient:
        host = self.host
        if self._pkey is None:
            self._pkey = load_private_key(host)
        client = paramiko.SSHClient()
        load_known_hosts(host, client)
        if host.host_key_policy == "accept-new":
            client.set_missing_host_key_policy(AcceptNewHostKeyPolicy(host))
        else:
            client.set_missing_host_key_policy(StrictHostKeyPolicy(host))
        t = timeout or host.connect_timeout
        try:
            client.connect(
                address(host),
                port=host.port,
                username=host.user,
                pkey=self._pkey,
                timeout=t,
                banner_timeout=t,
                auth_timeout=t,
                channel_timeout=t,
                allow_agent=False,
                look_for_keys=False,
            )
        except BaseException as exc:
            # paramiko sometimes reports a symptom ("No existing session") of an error its
            # transport thread saved (e.g. the banner timeout): map the cause.
            saved = getattr(client.get_transport(), "saved_exception", None)
            if isinstance(exc, paramiko.SSHException) and isinstance(saved, Exception):
                exc = saved
            client.close()
            raise self._map_connect_error(exc) from None
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(self.keepalive)
        return client

    def _map_connect_error(self, exc: BaseException) -> BaseException:
        host, where = self.host, self.where
        fix = "check address/port in the inventory"
        if isinstance(exc, (HostKeyError, ConfigError)):
            return exc
        if isinstance(exc, paramiko.BadHostKeyException):
            return HostKeyError(
                f"{where}: host key CHANGED: got {exc.key.get_name()} {exc.key.fingerprint}, "
                f"{host.known_hosts} has {exc.expected_key.fingerprint}; refusing to connect "
                "(possible impersonation). If the host was reinstalled, remove its old line "
                f"(ssh-keygen -R '{known_hosts_name(host)}' -f {host.known_hosts}) and record "
                "the new key",
                host=host.name,
            )
        if isinstance(exc, paramiko.AuthenticationException):
            return AuthError(
                f"{where}: user {host.user!r} was refused with key {host.key}; add "
                f"{host.key}.pub to that user's authorized_keys on the host, or fix user/key in "
                "the inventory",
                host=host.name,
            )
        if isinstance(exc, NoValidConnectionsError):
            return HostUnreachable(
                f"{where}: connection refused; is sshd running? {fix}", host=host.name
            )
        if isinstance(exc, TimeoutError):
            return HostUnreachable(
                f"{where}: no answer within {host.connect_timeout:g}s; host down or "
                f"firewalled? {fix}",
                host=host.name,
            )
        if isinstance(exc, socket.gaierror):
            return HostUnreachable(
                f"{where}: cannot resolve address {host.address!r}: {exc.strerror}; {fix}",
                host=host.name,
            )
        if isinstance(exc, ConnectionRefusedError):
            return HostUnreachable(
                f"{where}: connection refused; is sshd running? {fix}", host=host.name
            )
        if isinstance(exc, OSError):
            return HostUnreachable(f"{where}: {exc.strerror or exc}; {fix}", host=host.name)
        if isinstance(exc, paramiko.SSHException):
            text = str(exc)
            # "No existing session": paramiko gave up waiting for the negotiation (timeout)
            # before its transport thread reported why.
            if "banner" in text.lower() or "no existing session" in text.lower():
                return HostUnreachable(
                    f"{where}: no SSH banner or key exchange within {host.connect_timeout:g}s "
                    f"(not an SSH server, or sshd is stopped/overloaded); {fix}",
                    host=host.name,
                )
            return HostUnreachable(f"{where}: SSH negotiation failed: {text}", host=host.name)
        if isinstance(exc, EOFError):
            return HostUnreachable(
                f"{where}: the server closed the connection during the handshake (sshd "
                "MaxStartups, or it refuses this address)",
                host=host.name,
            )
        return exc

    def _drop(self) -> None:
        if self._sftp is not None:
            try:
                self._sftp.close()
            except Exception:
                pass
            self._sftp = None
        if self._client is not None:
            try:
                self._client.close()
            except Exception:
                pass
            self._client = None

    def _open_session(
        self, timeout: float | None = None, *, retry: bool = True
    ) -> paramiko.Channel:
        """A new session channel; on failure, once more on a new connection (unless not
        ``retry``: a host that did not open one on a live connection is frozen, not dropped)."""
        attempts = (1, 2) if retry else (2,)
        for attempt in attempts:
            client = self.connect(timeout)
            transport = client.get_transport()
            try:
                assert transport is not None
                return transport.open_session(timeout=timeout or self.host.connect_timeout)
            except (paramiko.SSHException, EOFError, OSError, AssertionError) as exc:
                with self._lock:
                    self._drop()
                if attempt == 2:
                    raise ConnectionLost(
                        f"{self.where}: cannot open an SSH session channel: {exc}; sshd "
                        "MaxSessions too low, or the connection keeps dropping",
                        host=self.host.name,
                    ) from None
        raise AssertionError("unreachable")

    # -- Transport ------------------------------------------------------------------------------

    def open_channel(
        self, argv: Sequence[str], *, cwd: str | None = None, timeout: float = HANDSHAKE_TIMEOUT
    ) -> SSHChannel:
        command = remote_command(argv, cwd)
        chan = self._open_session()
        try:
            chan.exec_command(command)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            chan.close()
            raise ConnectionLost(
                f"{self.where}: the host refused to run the agent: {exc}", host=self.host.name
            ) from None
        channel = SSHChannel(self.host, chan, command, self)
        channel.handshake(timeout)
        return channel

    def run_argv(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        timeout: float = COMMAND_TIMEOUT,
        open_timeout: float | None = None,
        retry: bool = True,
    ) -> tuple[int, str, str]:
        """``open_timeout``: the limit for opening the session (and connecting, if need be;
        default the host's connect_timeout); ``retry``: see _open_session."""
        command = remote_command(argv, cwd)
        chan = self._open_session(open_timeout, retry=retry)
        deadline = time.monotonic() + timeout
        out, err = bytearray(), bytearray()
        try:
            chan.exec_command(command)
            chan.shutdown_write()
            while True:
                busy = False
                if chan.recv_ready():
                    out += chan.recv(1 << 16)
                    busy = True
                if chan.recv_stderr_ready():
                    err += chan.recv_stderr(1 << 16)
                    busy = True
                if busy:
                    continue
                if chan.exit_status_ready() and chan.eof_received:
                    break
                if chan.closed and not chan.exit_status_ready():
                    raise ConnectionLost(
                        f"{self.where}: the connection dropped while running {argv[0]}",
                        host=self.host.name,
                    )
                if time.monotonic() > deadline:
                    raise AgentTimeout(
                        f"{self.where}: command {argv[0]} did not finish within {timeout:g}s",
                        host=self.host.name,
                    )
                time.sleep(0.005)
            status = chan.recv_exit_status()
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ConnectionLost(
                f"{self.where}: the connection failed while running {argv[0]}: {exc}",
                host=self.host.name,
            ) from None
        finally:
            chan.close()
        return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def _reap_command(self, argv: Sequence[str], timeout: float) -> tuple[int, str, str]:
        """A host that does not open a session (or, when the connection is gone, accept a new
        one) within REAP_OPEN_TIMEOUT is reported at once: a frozen host costs seconds."""
        return self.run_argv(argv, timeout=timeout, open_timeout=REAP_OPEN_TIMEOUT, retry=False)

    def sftp(self) -> paramiko.SFTPClient:
        with self._lock:
            client = self.connect()
            channel = self._sftp.get_channel() if self._sftp is not None else None
            if self._sftp is None or channel is None or channel.closed:
                try:
                    self._sftp = client.open_sftp()
                except (paramiko.SSHException, EOFError, OSError) as exc:
                    raise ConnectionLost(
                        f"{self.where}: cannot start SFTP: {exc}; is the sftp Subsystem enabled "
                        "in sshd_config?",
                        host=self.host.name,
                    ) from None
                channel = self._sftp.get_channel()
                if channel is not None:
                    channel.settimeout(SFTP_TIMEOUT)
            return self._sftp

    @contextlib.contextmanager
    def _transfer(self, what: str) -> Iterator[None]:
        """A stalled or lost SFTP transfer of ``what`` ("upload of x") as the transport's
        errors; an OSError is the caller's to say."""
        try:
            yield
        except TimeoutError:
            raise AgentTimeout(
                f"{self.where}: {what} stalled for {SFTP_TIMEOUT:g}s", host=self.host.name
            ) from None
        except (EOFError, paramiko.SSHException) as exc:
            raise ConnectionLost(
                f"{self.where}: connection lost during the {what}: {exc}", host=self.host.name
            ) from None

    def put_file(self, local: Path, remote: str) -> None:
        sftp = self.sftp()
        parent = posixpath.dirname(remote)
        tmp = posixpath.join(parent, f".{posixpath.basename(remote)}.{uuid.uuid4().hex[:8]}.part")
        try:
            with self._transfer(f"upload of {Path(local).name}"):
                self._makedirs(sftp, parent)
                sftp.put(os.fspath(local), tmp, confirm=True)
                sftp.posix_rename(tmp, remote)
        except OSError as exc:
            try:
                sftp.remove(tmp)
            except (OSError, EOFError, paramiko.SSHException):
                pass
            raise DeployError(
                f"{self.where}: cannot upload {local} to {remote}: {exc}; check the host's "
                "workdir permissions and free space",
                host=self.host.name,
            ) from None

    def get_file(self, remote: str, local: Path) -> None:
        sftp = self.sftp()
        tmp = local.with_name(f".{local.name}.part")
        try:
            with self._transfer(f"download of {remote}"):
                local.parent.mkdir(parents=True, exist_ok=True)
                sftp.get(remote, os.fspath(tmp))
                os.replace(tmp, local)
        except OSError as exc:
            raise DeployError(
                f"{self.where}: cannot download {remote} to {local}: {exc}", host=self.host.name
            ) from None

    @staticmethod
    def _makedirs(sftp: paramiko.SFTPClient, path: str) -> None:
        if path in ("", "/", "."):
            return
        try:
            sftp.stat(path)
            return
        except FileNotFoundError:
            pass
        SSHTransport._makedirs(sftp, posixpath.dirname(path))
        try:
            sftp.mkdir(path)
        except OSError:
            sftp.stat(path)  # created concurrently is fine; otherwise this raises

    def close(self) -> None:
        with self._lock:
            self._drop()
