"""The host-side helper on the wire: what a transport sends is farm/agent/hostops.py's own text,
and it runs as a bare ``python -I -S -c TEXT`` with no farm on sys.path (a host before deploy);
the local transport calls the module in its own process instead, with the same replies.

The "remote" here is this machine: a Transport whose run_argv runs the argv it is given, as the
SSH transport's exec channel does (tests/pool/test_ssh_lab.py runs it over real SSH).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from farm.agent import hostops
from farm.pool.transport.base import COMMAND_TIMEOUT, Transport, helper_source
from farm.pool.transport.channel import Channel
from farm.pool.transport.local import LocalTransport
from farm.util import proc as procfs
from farm.util.errors import DeployError
from tests.agent.test_hostops import DEADLINE_S, Group, make_archive

SOURCE = Path(hostops.__file__).read_text(encoding="utf-8")


def bare_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


class BareHost(Transport):
    """Runs every command here, its python bare (-I -S: no site-packages, no editable farm, no
    PYTHONPATH, not the current directory) in an empty directory; records the argv."""

    def __init__(self, host, cwd: Path) -> None:
        super().__init__(host)
        self.cwd = cwd
        self.sent: list[list[str]] = []

    def open_channel(self, argv, *, cwd=None, timeout=0.0) -> Channel:
        raise NotImplementedError

    def put_file(self, local, remote) -> None:
        raise NotImplementedError

    def get_file(self, remote, local) -> None:
        raise NotImplementedError

    def run_argv(
        self, argv: Sequence[str], *, cwd: str | None = None, timeout: float = COMMAND_TIMEOUT
    ) -> tuple[int, str, str]:
        argv = [str(a) for a in argv]
        self.sent.append(argv)
        proc = subprocess.run(
            [argv[0], "-I", "-S", *argv[1:]],
            cwd=self.cwd,
            env=bare_env(),
            capture_output=True,
            text=True,
            timeout=max(timeout, DEADLINE_S),
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr

    def close(self) -> None:
        pass


@pytest.fixture
def bare(tmp_path, local_host) -> BareHost:
    empty = tmp_path / "empty"
    empty.mkdir()
    return BareHost(local_host, empty)


def test_the_helper_text_is_the_two_module_sources():
    text = helper_source()
    assert repr(SOURCE) in text and repr(Path(procfs.__file__).read_text(encoding="utf-8")) in text
    assert "def main(argv" in SOURCE and 'if __name__ == "__main__":' in SOURCE


def test_the_bare_interpreter_has_no_farm(bare):
    rc, _, err = bare.run_argv([sys.executable, "-c", "import farm"])
    assert rc == 1 and "ModuleNotFoundError" in err


def test_sha256_runs_standalone_from_the_sent_text(bare, tmp_path):
    f = tmp_path / "file.bin"
    f.write_bytes(b"bytes on the host")
    assert bare.sha256_remote(str(f)) == hashlib.sha256(b"bytes on the host").hexdigest()
    assert bare.sent == [[bare.host.python, "-c", helper_source(), "sha256", str(f)]]
    assert bare.sha256_remote(str(tmp_path / "absent")) is None


def test_status_and_install_over_the_wire(bare, tmp_path):
    versions = tmp_path / "versions"
    tmp = versions / ".incoming-w"
    tmp.mkdir(parents=True)
    sha = make_archive(tmp / "b.tar.gz", {"x/y.txt": b"y"})
    dest = str(versions / sha)
    assert bare.remote_status(str(tmp / "b.tar.gz"), dest) == {"sha256": sha, "unpacked": None}
    reply = bare.install_remote(str(tmp), dest, "b.tar.gz", sha, archive=True)
    assert reply == {"sha256": sha, "installed": "renamed"}
    assert bare.remote_status(str(Path(dest, "b.tar.gz")), dest) == {
        "sha256": sha,
        "unpacked": sha,
    }
    assert Path(dest, "x", "y.txt").read_bytes() == b"y"
    assert [argv[3] for argv in bare.sent] == ["status", "install", "status"]
    assert bare.sent[1][4:] == [str(tmp), dest, "b.tar.gz", sha, "1", "-"]


def unsafe_install(transport: Transport, tmp_path: Path) -> tuple[Path, DeployError]:
    tmp = tmp_path / "versions" / ".incoming-u"
    tmp.mkdir(parents=True)
    archive = tmp / "bad.tar.gz"
    sha = make_archive(archive, {"../escape.txt": b"!"})
    with pytest.raises(DeployError) as caught:
        transport.install_remote(
            str(tmp), str(tmp_path / "versions" / sha), "bad.tar.gz", sha, archive=True
        )
    assert not (tmp_path / "versions" / sha).exists()
    assert not (tmp_path / "versions" / "escape.txt").exists()
    return archive, caught.value


def test_an_unsafe_archive_fails_the_same_over_the_wire_and_locally(bare, local_host, tmp_path):
    archive, remote = unsafe_install(bare, tmp_path / "remote")
    refusal = f"refusing unsafe archive member '../escape.txt' in {archive}"
    assert str(remote) == (f"{bare.where}: helper 'install' failed (exit status 1): {refusal}")
    with LocalTransport(local_host) as local:
        archive, error = unsafe_install(local, tmp_path / "local")
    refusal = f"refusing unsafe archive member '../escape.txt' in {archive}"
    assert str(error) == f"{local.where}: helper 'install' failed: {refusal}"


def test_an_unknown_command_fails_over_the_wire(bare):
    with pytest.raises(DeployError, match="helper 'nope' failed .*unknown helper command 'nope'"):
        bare._helper("nope")


def test_the_local_transport_runs_the_helper_in_process(local_host, tmp_path, monkeypatch):
    def no_subprocess(*args, **kwargs):
        raise AssertionError("the local transport started a helper process")

    monkeypatch.setattr(LocalTransport, "run_argv", no_subprocess)
    f = tmp_path / "f"
    f.write_bytes(b"local")
    with LocalTransport(local_host) as t:
        assert t.sha256_remote(str(f)) == hashlib.sha256(b"local").hexdigest()
        assert t.remote_status(str(f), str(tmp_path / "nowhere")) == {
            "sha256": hashlib.sha256(b"local").hexdigest(),
            "unpacked": None,
        }


def test_reap_group_over_the_wire_kills_a_real_group(bare):
    group = Group("normal", "farm.agent")
    try:
        gone, detail = bare.reap_group(group.proc.pid, group.pgid, grace=DEADLINE_S)
        assert (gone, detail) == (True, f"the agent (pid {group.proc.pid}) was killed (TERM)")
        assert bare.sent[-1] == [
            bare.host.python,
            "-c",
            helper_source(),
            "reap",
            str(group.pgid),
            str(group.proc.pid),
            f"{DEADLINE_S:g}",
        ]
        assert procfs.members(group.pgid) == []
    finally:
        group.close()


def test_reap_group_over_the_wire_refuses_a_leader_that_is_not_an_agent(bare):
    group = Group("normal")
    try:
        gone, detail = bare.reap_group(group.proc.pid, group.pgid, grace=0.0)
        assert gone is False
        assert detail == (
            f"the agent (pid {group.proc.pid}) on {bare.where} could not be killed: "
            "not a farm agent"
        )
        assert group.proc.poll() is None
    finally:
        group.close()


class FullHost(BareHost):
    """A host whose disk is full: every helper command fails as the helper does there."""

    def run_argv(self, argv, *, cwd=None, timeout=COMMAND_TIMEOUT):
        self.sent.append([str(a) for a in argv])
        return 1, "", "Traceback ...\nOSError: [Errno 28] No space left on device\n"


def test_a_full_disk_on_the_host_names_its_workdir_and_the_fix(local_host, tmp_path, monkeypatch):
    full = FullHost(local_host, tmp_path)
    with pytest.raises(DeployError) as remote:
        full.remote_status(str(tmp_path / "b.tar.gz"), str(tmp_path / "dest"))
    assert str(remote.value) == (
        f"{full.where}: helper 'status' failed (exit status 1): OSError: [Errno 28] No space "
        f"left on device; the host's workdir is {local_host.workdir}: free space there"
    )

    def no_space(args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(hostops, "command", no_space)
    with LocalTransport(local_host) as local, pytest.raises(DeployError) as here:
        local.remote_status(str(tmp_path / "b.tar.gz"), str(tmp_path / "dest"))
    assert str(here.value) == (
        f"{local.where}: helper 'status' failed: OSError: [Errno 28] No space left on device; "
        f"the host's workdir is {local_host.workdir}: free space there"
    )
