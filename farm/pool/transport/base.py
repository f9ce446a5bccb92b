"""What every transport provides: a Channel to one agent process, and file/command plumbing.

A :class:`Channel` is a persistent, line-oriented connection to one agent (a subprocess's pipes,
or one long-lived SSH exec channel). It speaks :mod:`farm.agent.protocol`, waits with a timeout on
every read and write, and raises only :class:`~farm.errors.InfraError` subclasses:

* :class:`~farm.errors.ConnectionLost` - EOF, reset, the agent exited (with its exit status and
  the tail of its stderr in the message);
* :class:`~farm.errors.AgentTimeout` - no complete reply within the timeout;
* :class:`~farm.errors.ProtocolError` - a malformed, oversize or mismatched reply.

After any of these the channel is *broken* (a late reply could otherwise be taken for the answer
to the next request): it is closed, and every further request raises ConnectionLost. Open a new
channel.

Before the handshake a channel tolerates a few lines that are not JSON (a login shell's rc file
that prints something); they are kept in :attr:`Channel.noise`. After it, the stream is strict.

A :class:`Transport` is the per-host connection factory: ``open_channel`` starts an agent and
handshakes with it, ``put_file``/``sha256_remote``/``run_argv`` serve deploy and health checks.
Commands are argv lists, never shell strings: where a shell is unavoidable (SSH exec), they are
quoted with :func:`shlex.join` by :func:`remote_command`.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from farm import __version__
from farm.agent import protocol
from farm.agent.errors import InfraError, ProtocolError
from farm.errors import AgentTimeout, ConnectionLost, DeployError
from farm.pool.inventory import HostSpec

DEFAULT_TIMEOUT = 60.0
HANDSHAKE_TIMEOUT = 30.0
COMMAND_TIMEOUT = 120.0
MAX_NOISE_LINES = 50
STDERR_TAIL_BYTES = 4000

UNPACKED_MARKER = ".lsg-unpacked"

# Runs on the host with its python (standard library only), as `python -c HELPER <cmd> args...`.
HELPER = r"""
import hashlib, json, os, sys, tarfile
def sha(p):
    h = hashlib.sha256()
    try:
        with open(p, "rb") as f:
            for b in iter(lambda: f.read(1 << 20), b""):
                h.update(b)
    except FileNotFoundError:
        return None
    return h.hexdigest()
def marker(d):
    try:
        with open(os.path.join(d, MARKER)) as f:
            return f.read().strip()
    except OSError:
        return None
cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "sha256":
    print(json.dumps({"sha256": sha(args[0])}))
elif cmd == "status":
    print(json.dumps({"sha256": sha(args[0]), "unpacked": marker(args[1])}))
elif cmd == "unpack":
    archive, dest, expect = args
    m = os.path.join(dest, MARKER)
    if os.path.exists(m):
        os.remove(m)
    got = sha(archive)
    if got != expect:
        print(json.dumps({"unpacked": None, "sha256": got}))
        sys.exit(0)
    with tarfile.open(archive, "r:*") as t:
        members = t.getmembers()
        for x in members:
            parts = x.name.split("/")
            if x.name.startswith("/") or ".." in parts or not (x.isfile() or x.isdir()):
                sys.exit("refusing unsafe archive member %r in %s" % (x.name, archive))
        if hasattr(tarfile, "data_filter"):
            t.extractall(dest, members, filter="data")
        else:
            t.extractall(dest, members)
    with open(m + ".tmp", "w") as f:
        f.write(expect + "\n")
    os.replace(m + ".tmp", m)
    print(json.dumps({"unpacked": expect, "sha256": got}))
else:
    sys.exit("unknown helper command %r" % cmd)
""".replace("MARKER", repr(UNPACKED_MARKER))


def remote_command(argv: Sequence[str], cwd: str | None = None) -> str:
    """A POSIX shell command line that runs ``argv`` (in ``cwd``), every word quoted."""
    if not argv:
        raise ValueError("empty argv")
    command = "exec " + shlex.join(str(a) for a in argv)
    if cwd:
        command = f"cd {shlex.quote(str(cwd))} && {command}"
    return command


def describe_exit(status: int | None) -> str:
    if status is None:
        return "exit status unknown"
    hints = {
        126: " (not executable: check 'python' in the inventory)",
        127: " (command not found: check 'python' in the inventory)",
    }
    if status < 0:
        return f"killed by signal {-status}"
    return f"exit status {status}{hints.get(status, '')}"


class Channel(ABC):
    """A persistent connection to one agent process. Thread-safe (requests are serialized)."""

    def __init__(self, host: HostSpec) -> None:
        self.host = host
        self._seq = 0
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._broken: str | None = None
        self._closed = False
        self._handshaken = False
        self.noise: list[str] = []
        self.agent_version: str | None = None

    @property
    def where(self) -> str:
        return f"host {self.host.name} ({self.host.endpoint})"

    @property
    def usable(self) -> bool:
        return not self._closed and self._broken is None

    # -- subclass hooks -------------------------------------------------------------------------

    @abstractmethod
    def _send_bytes(self, data: bytes, timeout: float) -> None:
        """Write all of data; raise ConnectionLost or AgentTimeout."""

    @abstractmethod
    def _recv_bytes(self, timeout: float) -> bytes | None:
        """Some bytes; b"" at EOF; None if nothing arrived within timeout."""

    @abstractmethod
    def _close_raw(self) -> None:
        """Release the underlying process/channel. Must not block for long."""

    def _diagnostics(self) -> str:
        """Why the other end went away (exit status, stderr tail), for messages."""
        return ""

    def stderr_tail(self) -> str:
        """The last few KB the agent wrote to stderr (where the transport can see it)."""
        return ""

    # -- requests -------------------------------------------------------------------------------

    def request(self, msg: dict[str, Any], timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Send one request (``msg`` has ``op`` and its fields; ``seq`` is assigned here) and
        return the agent's ``ok: true`` reply.

        An ``ok: false`` reply raises (:func:`protocol.raise_for_error`): ProtocolError for a
        refused request (bad-request, unknown-op, version), AgentError for an agent-side failure
        (e.g. the executor raised). Those leave the channel usable; a timeout, EOF or garbage
        breaks it. ConnectionLost and AgentTimeout carry ``stderr_tail``, the agent's last
        stderr output (a crash's fatal-signal line is there)."""
        fields = {k: v for k, v in msg.items() if k not in ("op", "seq")}
        op = msg.get("op")
        if not isinstance(op, str):
            raise ValueError(f"a request needs an op, got {msg!r}")
        with self._lock:
            if self._closed or self._broken is not None:
                why = self._broken or "it was closed"
                raise ConnectionLost(
                    f"{self.where}: channel unusable after an earlier error ({why}); open a new "
                    "channel",
                    host=self.host.name,
                )
            seq = self._seq = self._seq + 1
            data = protocol.encode(protocol.make_request(op, seq, **fields))
            try:
                self._send_bytes(data, timeout)
                line = self._read_line(time.monotonic() + timeout, op, seq, timeout)
                reply = protocol.decode_reply(line, seq)
            except InfraError as exc:
                if exc.host is None:
                    exc.host = self.host.name
                if isinstance(exc, ProtocolError) and not str(exc).startswith("host "):
                    exc.message = f"{self.where}: {exc.message}"
                    exc.args = (exc.message,)
                if isinstance(exc, (ConnectionLost, AgentTimeout)):
                    exc.stderr_tail = self.stderr_tail()
                self._break(str(exc))
                raise
        if not reply["ok"]:
            try:
                protocol.raise_for_error(reply, where=f"agent on {self.where}")
            except InfraError as exc:
                exc.host = self.host.name
                raise
        return reply

    def _read_line(self, deadline: float, op: str, seq: int, timeout: float) -> bytes:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[: nl + 1])
                del self._buf[: nl + 1]
                if not self._handshaken and not line.lstrip().startswith(b"{"):
                    self.noise.append(line.decode("utf-8", "replace").rstrip())
                    if len(self.noise) > MAX_NOISE_LINES:
                        raise ProtocolError(
                            f"{self.where}: more than {MAX_NOISE_LINES} non-protocol lines before "
                            f"the handshake (first: {self.noise[0]!r}); make the login shell "
                            "quiet for non-interactive sessions"
                        )
                    continue
                return line
            if len(self._buf) > protocol.MAX_LINE_BYTES:
                raise ProtocolError(
                    f"{self.where}: reply to {op} #{seq} exceeds the protocol's "
                    f"{protocol.MAX_LINE_BYTES}-byte line cap"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentTimeout(
                    f"{self.where}: no reply to {op} #{seq} within {timeout:g}s; the host may be "
                    "frozen or overloaded (the case is retried elsewhere)",
                    host=self.host.name,
                )
            chunk = self._recv_bytes(remaining)
            if chunk is None:
                continue
            if chunk == b"":
                diag = self._diagnostics()
                raise ConnectionLost(
                    f"{self.where}: agent connection closed while waiting for {op} #{seq}"
                    + (f"; {diag}" if diag else ""),
                    host=self.host.name,
                )
            self._buf += chunk

    def _break(self, why: str) -> None:
        self._broken = why
        try:
            self._close_raw()
        except Exception:
            pass

    # -- the protocol's requests ----------------------------------------------------------------

    def handshake(self, timeout: float = HANDSHAKE_TIMEOUT) -> dict[str, Any]:
        """hello: check that the agent speaks our protocol version. Any failure breaks the
        channel (and the transports close it)."""
        try:
            reply = self.request(
                {
                    "op": "hello",
                    "protocol": protocol.PROTOCOL_VERSION,
                    "farm_version": __version__,
                },
                timeout,
            )
            protocol.check_hello_reply(reply, where=f"agent on {self.where}")
        except InfraError as exc:
            exc.host = self.host.name
            self._break(str(exc))
            raise
        self._handshaken = True
        self.agent_version = reply.get("agent_version")
        return reply

    def identify(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        return self.request({"op": "identify"}, timeout)

    def run_case(
        self, case: dict[str, Any], backend: str, device: int, timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        """The result record of one case. An agent-side failure raises AgentError/ProtocolError;
        product failures are verdicts inside the record."""
        reply = self.request(
            {"op": "run-case", "case": case, "backend": backend, "device": device}, timeout
        )
        return reply["result"]

    def shutdown(self, timeout: float = 5.0) -> None:
        """Ask the agent to exit, then close. Best effort: never raises."""
        try:
            if self.usable:
                self.request({"op": "shutdown"}, timeout)
        except InfraError:
            pass
        finally:
            self.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._close_raw()
            except Exception:
                pass

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


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
    def run_argv(
        self, argv: Sequence[str], *, cwd: str | None = None, timeout: float = COMMAND_TIMEOUT
    ) -> tuple[int, str, str]:
        """Run a short command on the host: (exit status, stdout, stderr)."""

    @abstractmethod
    def close(self) -> None: ...

    # -- built on run_argv ----------------------------------------------------------------------

    def _helper(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> dict[str, Any]:
        rc, out, err = self.run_argv([self.host.python, "-c", HELPER, *args], timeout=timeout)
        if rc != 0:
            detail = (err.strip().splitlines() or [describe_exit(rc)])[-1]
            raise DeployError(
                f"{self.where}: helper '{args[0]}' failed ({describe_exit(rc)}): {detail}",
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

    def unpack_remote(self, archive: str, dest: str, sha256: str) -> str | None:
        """Verify a tar archive on the host and unpack it into dest (the marker is written
        last). Returns the archive's sha256 on the host; where that is not ``sha256`` nothing is
        unpacked and the caller decides (deploy raises DeployError)."""
        return self._helper("unpack", archive, dest, sha256)["sha256"]

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
