"""What every transport provides: a Channel to one agent process, and file/command plumbing.

A :class:`Channel` is a persistent, line-oriented connection to one agent (a subprocess's pipes,
or one long-lived SSH exec channel). It speaks :mod:`farm.agent.protocol`, waits with a timeout on
every read and write, and raises only :class:`~farm.util.errors.InfraError` subclasses:

* :class:`~farm.util.errors.ConnectionLost` - EOF, reset, the agent exited (with its exit status and
  the tail of its stderr in the message);
* :class:`~farm.util.errors.AgentTimeout` - no complete reply within the timeout;
* :class:`~farm.util.errors.ProtocolError` - a malformed, oversize or mismatched reply.

After any of these the channel is *broken* (a late reply could otherwise be taken for the answer
to the next request): it is closed, and every further request raises ConnectionLost. Open a new
channel. Breaking a channel also *reaps* its agent, in the background: the agent's whole process
group (pid and group from hello; the local transport knows its child anyway) gets SIGTERM, then
SIGKILL after :data:`REAP_GRACE` seconds, and is checked to be gone (farm/agent/hostops.py
``kill_group``; over SSH the helper's ``reap`` command on the host: :meth:`Transport.reap_group`).
A stuck agent must not keep its device (and its device lock) busy. :meth:`Channel.close` waits
for the reaping; :attr:`Channel.reaped` says how it ended (True: gone; False: still there or the
host could not be asked, :attr:`Channel.reap_detail` says which; None: nothing to reap).

Before the handshake a channel tolerates a few lines that are not JSON (a login shell's rc file
that prints something); they are kept in :attr:`Channel.noise`. After it, the stream is strict.

A :class:`Transport` is the per-host connection factory: ``open_channel`` starts an agent and
handshakes with it, ``put_file``/``sha256_remote``/``run_argv`` serve deploy and health checks.
The host-side helper behind ``sha256_remote``, ``remote_status``, ``install_remote`` and
``reap_group`` is farm/agent/hostops.py, sent as ``python -c`` text (:func:`helper_source`).
Commands are argv lists, never shell strings: where a shell is unavoidable (SSH exec), they are
quoted with :func:`shlex.join` by :func:`remote_command`.
"""

from __future__ import annotations

import functools
import json
import shlex
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from farm import __version__
from farm.agent import hostops, protocol
from farm.agent.request import CaseRequest
from farm.pool.inventory import HostSpec
from farm.util import proc as procfs
from farm.util.errors import (
    AgentTimeout,
    ConnectionLost,
    DeployError,
    HostSetupError,
    InfraError,
    ProtocolError,
)

DEFAULT_TIMEOUT = 60.0
HANDSHAKE_TIMEOUT = 30.0
COMMAND_TIMEOUT = 120.0
MAX_NOISE_LINES = 50
STDERR_TAIL_BYTES = 4000
REAP_GRACE = 2.0  # seconds between SIGTERM and SIGKILL for a broken channel's agent
REAP_TIMEOUT = 15.0  # the longest Channel.close waits for the reaping

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


def env_argv(env: Sequence[tuple[str, str]], argv: Sequence[str]) -> list[str]:
    """``argv`` run in an environment with ``env`` added (POSIX env(1)): how a host's agent and
    commands get its inventory env, which an SSH session does not have."""
    return ["env", *(f"{k}={v}" for k, v in env), *argv] if env else list(argv)


# How a host's agent and commands run with CANN's set-up script sourced (bash: CANN's script is
# bash's). Its words: the number of candidate scripts, the candidates, then the command. The first
# candidate that exists is sourced with no arguments (a sourced script sees the caller's) and its
# stdout discarded (the agent's stdout is the protocol's); the command runs in what it exported.
# A missing or failing script is one marked line on stderr and exit status SET_ENV_STATUS.
SET_ENV_MARK = "lsg-farm set_env:"
SET_ENV_STATUS = 120
_SET_ENV_SCRIPT = (
    'n=$1; shift; f=""; '
    'for c in "${@:1:n}"; do if [ -f "$c" ]; then f=$c; break; fi; done; '
    'shift "$n"; '
    f'if [ -z "$f" ]; then echo "{SET_ENV_MARK} missing" >&2; exit {SET_ENV_STATUS}; fi; '
    'command=("$@"); set --; '
    f'. "$f" >/dev/null || {{ echo "{SET_ENV_MARK} failed $? $f" >&2; exit {SET_ENV_STATUS}; }}; '
    'exec "${command[@]}"'
)


def with_set_env(scripts: Sequence[str], argv: Sequence[str]) -> list[str]:
    """``argv`` run after the first of ``scripts`` that exists on the host is sourced (CANN's
    set_env.sh: HostSpec.set_env); ``argv`` itself when there are none."""
    if not scripts:
        return list(argv)
    return ["bash", "-c", _SET_ENV_SCRIPT, "lsg-farm-set-env", str(len(scripts)), *scripts, *argv]


def host_argv(
    host: HostSpec, argv: Sequence[str], env: Sequence[tuple[str, str]] = ()
) -> list[str]:
    """``argv`` as a host's commands run (the CANN build and install, the platform helper): CANN's
    set-up script sourced (the inventory's set_env), then its env and ``env`` added on top."""
    return with_set_env(host.set_env, env_argv(tuple(host.env) + tuple(env), argv))


def set_env_problem(host: HostSpec, stderr: str) -> str | None:
    """The one line that says how sourcing the host's set-up script failed (a command run by
    :func:`with_set_env` wrote its mark on ``stderr``), with the fix; None when it did not."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    marks = [i for i, line in enumerate(lines) if line.startswith(SET_ENV_MARK)]
    if not marks or not host.set_env:
        return None
    said = lines[marks[-1]].removeprefix(SET_ENV_MARK).split(maxsplit=2)
    fix = (
        'fix set_env in the inventory (the path of CANN\'s set_env.sh on the host, or "" to use '
        "its env alone)"
    )
    if said[:1] == ["failed"] and len(said) == 3:
        before = lines[: marks[-1]]
        why = f": {before[-1]}" if before else ""
        return (
            f"host {host.name}: sourcing CANN's set-up script {said[2]} failed (status "
            f"{said[1]}){why}; repair it on the host, or {fix}"
        )
    where = " nor ".join(host.set_env)
    return f"host {host.name}: CANN's set-up script is not on the host ({where}); {fix}"


def remote_command(argv: Sequence[str], cwd: str | None = None) -> str:
    """A POSIX shell command line that runs ``argv`` (in ``cwd``), every word quoted."""
    if not argv:
        raise ValueError("empty argv")
    command = "exec " + shlex.join(str(a) for a in argv)
    if cwd:
        command = f"cd {shlex.quote(str(cwd))} && {command}"
    return command


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


# What the host's own file system said, by errno, and what to do about it in its workdir.
_WORKDIR_FIXES = {
    "[Errno 28]": "free space there",
    "[Errno 122]": "free space there (a disk quota)",
    "[Errno 13]": "let the inventory's user write there",
    "[Errno 30]": "give the host a writable workdir in the inventory",
}


def with_workdir_fix(message: str, workdir: str) -> str:
    """A host helper's failure; where the host's file system refused it (full, over quota, not
    writable), with the fix in the host's workdir."""
    fix = next((f for errno, f in _WORKDIR_FIXES.items() if errno in message), None)
    return f"{message}; the host's workdir is {workdir}: {fix}" if fix else message


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
        return self.request({"op": "identify"}, timeout)

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
