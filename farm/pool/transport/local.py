"""The local transport: the agent as a subprocess of this process (an emulated host).

The subprocess gets this process's environment minus any ``LSG_EMULATED_*`` variables, plus the
host's inventory ``env`` (its own declared configuration, the counterpart of sshd's SetEnv).
Its stdout is read through a selector, so every wait has a timeout; its stderr is drained by a
thread into a bounded buffer that error messages quote. The agent starts in a session (and process
group) of its own; a broken channel's group is killed as a whole (SIGTERM, then SIGKILL) and
checked to be gone (base.py, "reaping").
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from farm.errors import AgentTimeout, ConnectionLost, DeployError, HostUnreachable
from farm.pool.inventory import HostSpec
from farm.pool.transport.base import (
    COMMAND_TIMEOUT,
    HANDSHAKE_TIMEOUT,
    REAP_GRACE,
    STDERR_TAIL_BYTES,
    Channel,
    Transport,
    describe_exit,
)


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid`` (kill -0 without /proc)."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(stat[2]) == pgid and stat[0] != b"Z":
            found.append(int(entry))
    return found


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

    def _group_left(self, pgid: int) -> bool:
        return bool(group_members(pgid))

    def _reap(self) -> tuple[bool | None, str]:
        proc = self.proc
        pgid = self.agent_pgid or proc.pid  # start_new_session: the group is the agent's pid
        label = f"the agent (pid {proc.pid}" + (
            f", process group {pgid})" if pgid != proc.pid else ")"
        )
        sent = []
        for sig, wait in (
            (signal.SIGCONT, 0.0),
            (signal.SIGTERM, REAP_GRACE),
            (signal.SIGKILL, 5.0),
        ):
            proc.poll()  # a dead leader is reaped here, so that it does not count as alive
            if not self._group_left(pgid):
                break
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            except PermissionError as exc:
                return False, f"{label} could not be killed: {exc}"
            if sig != signal.SIGCONT:
                sent.append(sig.name.removeprefix("SIG"))
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                proc.poll()
                if not self._group_left(pgid):
                    break
                time.sleep(0.01)
        if self._group_left(pgid):
            return False, f"{label} on {self.where} could not be killed: still there after SIGKILL"
        try:  # the leader may still be between exiting and being a zombie: collect it
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass
        return True, (f"{label} was killed ({'/'.join(sent)})" if sent else f"{label} was gone")


class LocalTransport(Transport):
    """Agents as local subprocesses; "remote" paths are local paths."""

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

    def close(self) -> None:
        for channel in self._channels:
            channel.close()
        self._channels.clear()
