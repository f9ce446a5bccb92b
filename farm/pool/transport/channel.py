"""A persistent, line-oriented connection to one agent process: :class:`Channel`.

The contract (every transport's channel keeps it; farm/pool/transport/base.py says how a transport
makes one): a channel speaks :mod:`farm.agent.protocol`, waits with a timeout on every read and
write, and raises only :class:`~farm.util.errors.InfraError` subclasses:

* :class:`~farm.util.errors.ConnectionLost` - EOF, reset, the agent exited (with its exit status and
  the tail of its stderr in the message);
* :class:`~farm.util.errors.AgentTimeout` - no complete reply within the timeout;
* :class:`~farm.util.errors.ProtocolError` - a malformed, oversize or mismatched reply.

After any of these the channel is *broken* (a late reply could otherwise be taken for the answer
to the next request): it is closed, and every further request raises ConnectionLost. Open a new
channel. Breaking a channel also *reaps* its agent, in the background: the agent's whole process
group (pid and group from hello; the local transport knows its child anyway) gets SIGTERM, then
SIGKILL after :data:`REAP_GRACE` seconds, and is checked to be gone (farm/agent/hostops.py
``kill_group``; over SSH the helper's ``reap`` command on the host:
farm/pool/transport/base.py ``Transport.reap_group``). A stuck agent must not keep its device (and
its device lock) busy. :meth:`Channel.close` waits for the reaping; :attr:`Channel.reaped` says
how it ended (True: gone; False: still there or the host could not be asked,
:attr:`Channel.reap_detail` says which; None: nothing to reap).

Before the handshake a channel tolerates a few lines that are not JSON (a login shell's rc file
that prints something); they are kept in :attr:`Channel.noise`. After it, the stream is strict.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from farm import __version__
from farm.agent import protocol
from farm.agent.identity import Identity
from farm.agent.request import CaseRequest
from farm.pool.inventory import HostSpec
from farm.util.errors import AgentTimeout, ConnectionLost, InfraError, ProtocolError

DEFAULT_TIMEOUT = 60.0
HANDSHAKE_TIMEOUT = 30.0
MAX_NOISE_LINES = 50
STDERR_TAIL_BYTES = 4000
REAP_GRACE = 2.0  # seconds between SIGTERM and SIGKILL for a broken channel's agent
REAP_TIMEOUT = 15.0  # the longest Channel.close waits for the reaping


def checked_identity(reply: dict[str, Any], where: str, host: HostSpec) -> dict[str, Any]:
    """``reply`` to identify, once Identity.from_json has found it well formed."""
    try:
        Identity.from_json(reply, where=f"agent on {where}")
    except ProtocolError as exc:
        exc.host = host.name
        raise
    return reply


def agent_label(pid: int, pgid: int) -> str:
    """'the agent (pid P)', with its process group when that is not P, for messages."""
    return f"the agent (pid {pid}" + (f", process group {pgid})" if pgid != pid else ")")


def reap_outcome(label: str, where: str, result: dict[str, Any]) -> tuple[bool, str]:
    """(gone, what happened) from a reply of farm/agent/hostops.py's ``kill_group``/``reap``."""
    if result.get("gone"):
        sent = [s.removeprefix("SIG") for s in result.get("sent") or [] if s != "SIGCONT"]
        return True, (f"{label} was killed ({'/'.join(sent)})" if sent else f"{label} was gone")
    why = result.get("refused") or f"processes {result.get('left')} still there after SIGKILL"
    return False, f"{label} on {where} could not be killed: {why}"


def warm_up(identify: Callable[[], Any]) -> None:
    """Run an agent's start-up request; an AgentTimeout of it is marked ``start_up`` (the
    dispatcher retries it elsewhere as an infrastructure error, never counts it as a hang)."""
    try:
        identify()
    except AgentTimeout as exc:
        exc.start_up = True  # type: ignore[attr-defined]
        raise


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
        self.agent_pid: int | None = None  # from hello
        self.agent_pgid: int | None = None
        self.reaped: bool | None = None
        self.reap_detail = ""
        self._reaper: threading.Thread | None = None
        self.last_device_lock: dict[str, Any] | None = None  # see run_case

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

    def _reap(self) -> tuple[bool | None, str]:
        """Kill the agent's process group and check it is gone: (gone, what happened). Runs in a
        thread after the channel broke; None when there is nothing this transport can do."""
        return None, ""

    @property
    def agent_label(self) -> str:
        if self.agent_pid is None:
            return "the agent"
        return agent_label(self.agent_pid, self.agent_pgid or self.agent_pid)

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
        self._start_reaping()

    def _start_reaping(self) -> None:
        if self._reaper is not None:
            return
        self._reaper = threading.Thread(
            target=self._reap_in_thread, name=f"reap-agent-{self.host.name}", daemon=True
        )
        self._reaper.start()

    def _reap_in_thread(self) -> None:
        try:
            self.reaped, self.reap_detail = self._reap()
        except Exception as exc:  # never let a reaper thread die silently
            self.reaped = False
            self.reap_detail = (
                f"{self.agent_label} could not be checked on {self.where}: "
                f"{exc.__class__.__name__}: {exc}"
            )

    def reap_again(self) -> bool | None:
        """Kill and check once more (a host that could not be asked may answer now); the new
        outcome. Blocks for at most about REAP_GRACE + a few seconds."""
        if self._reaper is not None and self._reaper.is_alive():
            return self.wait_reaped()
        self._reap_in_thread()
        return self.reaped

    def wait_reaped(self, timeout: float = REAP_TIMEOUT) -> bool | None:
        """Wait for the reaping of a broken channel's agent; its outcome (see :attr:`reaped`)."""
        reaper = self._reaper
        if reaper is None:
            return None
        reaper.join(timeout)
        if reaper.is_alive():
            self.reap_detail = (
                f"{self.agent_label} on {self.where} was still being killed after {timeout:g} s"
            )
            return False
        return self.reaped

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
        pid, pgid = reply.get("pid"), reply.get("pgid")
        if isinstance(pid, int) and pid > 0:
            self.agent_pid = pid
            self.agent_pgid = pgid if isinstance(pgid, int) and pgid > 0 else pid
        return reply

    def identify(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The agent's identity, as it answered (its reply, ``seq`` and ``ok`` included),
        checked against farm/agent/identity.py Identity: a malformed one raises ProtocolError
        (the channel stays usable)."""
        return checked_identity(self.request({"op": "identify"}, timeout), self.where, self.host)

    def warm_up(self, timeout: float = HANDSHAKE_TIMEOUT) -> None:
        """The agent's start-up, done before its first case under a timeout of its own: the
        imports and the identity gather of ``identify`` (numpy, ml_dtypes), which would
        otherwise fall in that case's timeout. A timeout here is the agent starting slowly, not
        a case that hangs: the AgentTimeout says so (``start_up``)."""
        warm_up(lambda: self.identify(timeout))

    def run_case(
        self,
        case: CaseRequest,
        backend: str,
        device: int,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        lock: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The result record of one case. An agent-side failure raises AgentError/ProtocolError;
        a device another run holds raises DeviceBusy (the channel stays usable); product failures
        are verdicts inside the record.

        ``lock``: the device lock's fields for the agent (``run``, ``owner``, ``lock_wait``; see
        farm/agent/devicelock.py). Give ``timeout`` room for ``lock_wait``. When the case had to
        wait for its device, :attr:`last_device_lock` says how long and for whom."""
        fields = {k: v for k, v in (lock or {}).items() if v is not None}
        self.last_device_lock = None
        reply = self.request(
            {"op": "run-case", "case": case, "backend": backend, "device": device, **fields},
            timeout,
        )
        waited = reply.get("device_lock")
        self.last_device_lock = waited if isinstance(waited, dict) else None
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
        """Close the channel. An idle agent exits on EOF; a broken channel's agent is killed,
        and this waits (at most :data:`REAP_TIMEOUT`) until that is done or has failed."""
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._close_raw()
                except Exception:
                    pass
        self.wait_reaped()

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
