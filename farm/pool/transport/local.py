"""The local transport: the agent as a subprocess of this process (an emulated host).

The subprocess gets this process's environment minus any ``LSG_EMULATED_*`` variables, plus the
host's inventory ``env`` (its own declared configuration, the counterpart of sshd's SetEnv).
Its stdout is read through a selector, so every wait has a timeout; its stderr is drained by a
thread into a bounded buffer that error messages quote. The agent starts in a session (and process
group) of its own; a broken channel's group is killed as a whole (SIGTERM, then SIGKILL) and
checked to be gone (channel.py, "reaping"; farm/agent/hostops.py ``kill_group``).

Emulated hosts of this machine usually share a few agents instead of one per slot:
farm/pool/transport/shared.py (AgentShare), whose agents this transport starts.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from farm.agent import hostops
from farm.pool.inventory import HostSpec
from farm.pool.transport.base import COMMAND_TIMEOUT, UNPACKED_MARKER, Transport
from farm.pool.transport.channel import (
    HANDSHAKE_TIMEOUT,
    REAP_GRACE,
    STDERR_TAIL_BYTES,
    Channel,
    agent_label,
    reap_outcome,
)
from farm.pool.transport.commands import describe_exit, with_workdir_fix
from farm.util.errors import AgentTimeout, ConnectionLost, DeployError, HostUnreachable


def host_environment(host: HostSpec) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSG_EMULATED_")}
    env.update(host.env_dict)
    return env


class LocalChannel(Channel):
    def __init__(self, host: HostSpec, proc: subprocess.Popen[bytes]) -> None:
        super().__init__(host)
        self.proc = proc
        assert proc.stdin and proc.stdout and proc.stderr
        self._fd = proc.stdout.fileno()
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._fd, selectors.EVENT_READ)
        self._stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_thread = threading.Thread(
            target=self._drain_stderr, name=f"agent-stderr-{host.name}", daemon=True
        )
        self._stderr_thread.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for chunk in iter(lambda: stream.read1(8192), b""):  # type: ignore[attr-defined]
            self._stderr.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size > STDERR_TAIL_BYTES and len(self._stderr) > 1:
                self._stderr_size -= len(self._stderr.popleft())

    def stderr_tail(self) -> str:
        text = b"".join(self._stderr).decode("utf-8", "replace")
        return text[-STDERR_TAIL_BYTES:]

    def _send_bytes(self, data: bytes, timeout: float) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise ConnectionLost(
                f"{self.where}: agent is gone (write failed); {self._diagnostics()}",
                host=self.host.name,
            ) from None

    def _recv_bytes(self, timeout: float) -> bytes | None:
        if not self._sel.select(timeout):
            return None
        try:
            return os.read(self._fd, 1 << 16)
        except OSError:
            return b""

    def _diagnostics(self) -> str:
        try:
            status = self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            status = None
        self._stderr_thread.join(timeout=0.5)
        tail = " | ".join(self.stderr_tail().strip().splitlines()[-5:])
        what = "agent still running" if status is None else f"agent {describe_exit(status)}"
        return what + (f"; stderr: {tail}" if tail else "")

    def _close_raw(self) -> None:
        proc = self.proc
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        if not self._broken:
            # An idle agent exits on EOF; one that does not is reaped like a broken one.
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self._start_reaping()
        try:
            self._sel.close()
        except Exception:
            pass
        if proc.stdout:
            proc.stdout.close()

    def _reap(self) -> tuple[bool | None, str]:
        proc = self.proc
        pgid = self.agent_pgid or proc.pid  # start_new_session: the group is the agent's pid
        # The agent is this process's child: poll() collects a dead leader, so that it does not
        # stay a zombie (which kill_group would not count anyway).
        result = hostops.kill_group(pgid, REAP_GRACE, poll=proc.poll)
        if result["gone"]:
            try:  # the leader may still be between exiting and being a zombie: collect it
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass
        return reap_outcome(agent_label(proc.pid, pgid), self.where, result)


# sha256 -> a complete version directory of a local host, deployed or found by this process.
_COMPLETE: dict[str, str] = {}


_MEMBERS: dict[str, frozenset[str]] = {}  # sha256 -> the regular files its archive holds


def _link_tree(source: str, tmp: str, name: str, sha256: str) -> bool:
    """Hard-link the unpacked files of complete version directory ``source`` (its marker holds
    ``sha256``) into ``tmp``, where ``name`` was uploaded; False (and ``tmp`` as it was) when
    that cannot be done, or when a file of the archive is not there."""
    marker = os.path.join(source, UNPACKED_MARKER)
    try:
        with open(marker, encoding="ascii") as f:
            if f.read().strip() != sha256:
                return False
        if sha256 not in _MEMBERS:
            with tarfile.open(os.path.join(tmp, name), "r:*") as archive:
                _MEMBERS[sha256] = frozenset(m.name for m in archive.getmembers() if m.isfile())
    except (OSError, tarfile.TarError):
        return False
    linked: list[str] = []
    try:
        for folder, _dirs, files in os.walk(source):
            rel = os.path.relpath(folder, source)
            target = os.path.normpath(os.path.join(tmp, rel))
            os.makedirs(target, exist_ok=True)
            for file in files:
                if rel == "." and file in (name, UNPACKED_MARKER):
                    continue
                os.link(os.path.join(folder, file), os.path.join(target, file))
                linked.append(os.path.join(target, file))
        if not all(os.path.isfile(os.path.join(tmp, m)) for m in _MEMBERS[sha256]):
            raise FileNotFoundError("the source directory lacks a file of the archive")
    except OSError:
        for path in linked:
            with contextlib.suppress(OSError):
                os.remove(path)
        return False
    return True


class LocalTransport(Transport):
    """Agents as local subprocesses; "remote" paths are local paths; the deploy helper's
    commands run in this process (farm/agent/hostops.py, imported: no interpreter started per
    command, which cost a pool of 64 emulated hosts seconds of start-up)."""

    def __init__(self, host: HostSpec) -> None:
        if host.transport != "local":
            raise ValueError(f"host {host.name} uses transport {host.transport!r}, not local")
        super().__init__(host)
        self._channels: list[LocalChannel] = []

    def open_channel(
        self, argv: Sequence[str], *, cwd: str | None = None, timeout: float = HANDSHAKE_TIMEOUT
    ) -> LocalChannel:
        argv = [str(a) for a in argv]
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=host_environment(self.host),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: killable as a whole
            )
        except FileNotFoundError as exc:
            missing = cwd if cwd and not Path(cwd).is_dir() else argv[0]
            raise HostUnreachable(
                f"{self.where}: cannot start the agent: {missing} not found ({exc.strerror}); "
                "check 'python' and 'workdir' in the inventory, and that deploy ran",
                host=self.host.name,
            ) from None
        except OSError as exc:
            raise HostUnreachable(
                f"{self.where}: cannot start the agent {argv[0]}: {exc.strerror}",
                host=self.host.name,
            ) from None
        channel = LocalChannel(self.host, proc)
        channel.agent_pid = channel.agent_pgid = proc.pid  # until hello says otherwise
        self._channels = [c for c in self._channels if c.usable]
        self._channels.append(channel)
        channel.handshake(timeout)
        return channel

    def put_file(self, local: Path, remote: str) -> None:
        dest = Path(remote)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
            with os.fdopen(fd, "wb") as out, open(local, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
            os.replace(tmp, dest)
        except OSError as exc:
            raise DeployError(
                f"{self.where}: cannot copy {local} to {remote}: {exc.strerror}; check the "
                "host's workdir and free space",
                host=self.host.name,
            ) from None

    def get_file(self, remote: str, local: Path) -> None:
        tmp = local.with_name(f".{local.name}.part")
        try:
            local.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(remote, tmp)
            os.replace(tmp, local)
        except OSError as exc:
            raise DeployError(
                f"{self.where}: cannot copy {remote} to {local}: {exc.strerror}",
                host=self.host.name,
            ) from None

    def run_argv(
        self, argv: Sequence[str], *, cwd: str | None = None, timeout: float = COMMAND_TIMEOUT
    ) -> tuple[int, str, str]:
        argv = [str(a) for a in argv]
        start = time.monotonic()
        try:
            proc = subprocess.run(
                argv,
                cwd=cwd,
                env=host_environment(self.host),
                capture_output=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise AgentTimeout(
                f"{self.where}: command {argv[0]} did not finish within {timeout:g}s",
                host=self.host.name,
            ) from None
        except FileNotFoundError:
            return 127, "", f"{argv[0]}: not found (after {time.monotonic() - start:.1f}s)"
        return (
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
        )

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
        """As Transport.install_remote; an archive another local host of this process already
        has complete (verified and unpacked) is not unpacked again: its files are hard-linked
        into ``tmp`` (a version directory never changes, so sharing its files is safe), then
        ``tmp`` is verified, marked and renamed as usual. Anything unusual (another file system,
        a directory changed since): unpacked as usual."""
        source = _COMPLETE.get(sha256)
        other = source is not None and os.path.normpath(source) != os.path.normpath(dest)
        # Never from the destination itself: linking changes a file's ctime, and the directory
        # an agent of this host runs from must look untouched (tests/pool/test_deploy.py).
        if archive and source is not None and other and _link_tree(source, tmp, name, sha256):
            archive = False  # the unpacked files are there
        result = super().install_remote(tmp, dest, name, sha256, archive=archive, reuse=reuse)
        if result.get("installed"):
            _COMPLETE[sha256] = dest
        return result

    def _helper(
        self,
        *args: str,
        timeout: float = COMMAND_TIMEOUT,
        set_up: bool = False,  # a local host's commands have its env already, and no CANN
    ) -> dict[str, Any]:
        cmd = args[0]
        try:
            reply = hostops.command(args)
        except hostops.HostOpError as exc:  # what the helper prints on stderr over SSH
            raise DeployError(
                with_workdir_fix(f"{self.where}: helper '{cmd}' failed: {exc}", self.host.workdir),
                host=self.host.name,
            ) from None
        except (OSError, tarfile.TarError) as exc:
            raise DeployError(
                with_workdir_fix(
                    f"{self.where}: helper '{cmd}' failed: {exc.__class__.__name__}: {exc}",
                    self.host.workdir,
                ),
                host=self.host.name,
            ) from None
        if cmd == "status" and reply.get("unpacked") and reply["unpacked"] == reply.get("sha256"):
            _COMPLETE.setdefault(reply["unpacked"], args[2])
        return reply

    def remote_platform(self) -> dict[str, Any]:
        # This machine's, or what the emulated host's own environment (its inventory env) says.
        return hostops.host_platform({**os.environ, **self.host.env_dict})

    def close(self) -> None:
        for channel in self._channels:
            channel.close()
        self._channels.clear()
