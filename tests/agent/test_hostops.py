"""farm/agent/hostops.py: the host-side helper's commands (main, as a host runs them) and the
process-group functions, on a temporary directory and on real throwaway process groups.

Processes: every one a test starts is killed and waited for in a ``finally``; waits are generous
deadlines, never timing assertions.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import select
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from farm.agent import hostops
from farm.util import proc as procfs

SOURCE = Path(hostops.__file__).read_text(encoding="utf-8")
# What travels with it to a host (farm/pool/transport/base.py helper_source): its one module.
PROC_SOURCE = Path(procfs.__file__).read_text(encoding="utf-8")
DEADLINE_S = 60.0  # the longest a test waits for a process to get ready or go


def run_main(capsys, *argv: str) -> tuple[int, dict | None, str]:
    """(exit status, the JSON reply or None, stderr) of one command."""
    rc = hostops.main(list(argv))
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    assert len(lines) <= 1, out  # one JSON reply at most
    return rc, (json.loads(lines[0]) if lines else None), err


def make_archive(path: Path, members: dict[str, bytes], *, symlink: str | None = None) -> str:
    """A tar.gz of ``members`` (name -> bytes), with a symlink member when asked; its sha256."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if symlink is not None:
            link = tarfile.TarInfo(symlink)
            link.type = tarfile.SYMTYPE
            link.linkname = "/etc/passwd"
            tar.addfile(link)
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the source: self-contained, for old host pythons ------------------------------------------


def test_the_source_parses_as_python_3_7():
    ast.parse(SOURCE, feature_version=(3, 7))
    ast.parse(PROC_SOURCE, feature_version=(3, 7))
    # The check sees what 3.7 lacks (so the line above can fail).
    with pytest.raises(SyntaxError):
        ast.parse("if (n := 1):\n    pass\n", feature_version=(3, 7))
    with pytest.raises(SyntaxError):
        ast.parse("match x:\n    case 1:\n        pass\n", feature_version=(3, 7))


def _import_roots(source: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module
            roots |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return roots


def test_the_source_imports_only_the_standard_library_and_proc():
    stdlib = {r for r in _import_roots(SOURCE) if r.split(".")[0] in sys.stdlib_module_names}
    assert _import_roots(SOURCE) - stdlib - {"__future__", "__future__.annotations"} == {
        "farm.util",
        "farm.util.proc",
    }
    roots = {r.split(".")[0] for r in _import_roots(PROC_SOURCE)}
    assert roots and all(r in sys.stdlib_module_names or r == "__future__" for r in roots), roots


NEWER_ATTRIBUTES = {"removeprefix", "removesuffix", "is_relative_to", "cache", "bit_count"}


def newer_apis(source: str) -> list[str]:
    """Uses of 3.8+ APIs that a 3.7 parse does not catch (str.removeprefix, zip(strict=), ...)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in NEWER_ATTRIBUTES:
            found.append(node.attr)
        elif isinstance(node, ast.Call):
            found += [f"{k.arg}=" for k in node.keywords if k.arg == "strict"]
    return found


def test_the_source_uses_no_api_newer_than_3_7():
    assert newer_apis(SOURCE) == [] and newer_apis(PROC_SOURCE) == []
    planted = "s.removeprefix('x')\nzip(a, b, strict=True)\n"
    assert sorted(newer_apis(planted)) == ["removeprefix", "strict="]


# -- files ------------------------------------------------------------------------------------


def test_sha256_of_a_file_and_of_a_missing_one(tmp_path, capsys):
    f = tmp_path / "f.bin"
    f.write_bytes(b"x" * (3 << 20) + b"tail")  # more than one read block
    assert run_main(capsys, "sha256", str(f)) == (
        0,
        {"sha256": hashlib.sha256(f.read_bytes()).hexdigest()},
        "",
    )
    assert run_main(capsys, "sha256", str(tmp_path / "absent")) == (0, {"sha256": None}, "")


def test_status_trusts_a_complete_version_directory_whose_files_are_as_installed(tmp_path, capsys):
    sha = "ab" * 32
    complete = tmp_path / sha
    (complete / "lib").mkdir(parents=True)
    (complete / hostops.MARKER).write_text(sha + "\n")
    (complete / "lib" / "x.so").write_bytes(b"library")
    listed = {"lib/x.so": hashlib.sha256(b"library").hexdigest()}
    (complete / hostops.CONTENTS).write_text(json.dumps(listed))
    (complete / "__pycache__").mkdir()  # what an agent adds does not count
    (complete / "__pycache__" / "m.pyc").write_bytes(b"x")
    # The directory vouches for the archive (not even there) once its files are as installed.
    rc, reply, _ = run_main(capsys, "status", str(complete / "gone.tar.gz"), str(complete))
    assert (rc, reply) == (0, {"sha256": sha, "unpacked": sha})
    # A file cut short since: the directory is no longer complete, and says which file.
    (complete / "lib" / "x.so").write_bytes(b"lib")
    rc, reply, _ = run_main(capsys, "status", str(complete / "gone.tar.gz"), str(complete))
    assert (rc, reply) == (0, {"sha256": None, "unpacked": None, "damaged": ["lib/x.so"]})
    # An older farm's directory (no contents list): its archive, gone here, stands for it.
    (complete / "lib" / "x.so").write_bytes(b"library")
    (complete / hostops.CONTENTS).unlink()
    rc, reply, _ = run_main(capsys, "status", str(complete / "gone.tar.gz"), str(complete))
    assert reply is not None and reply["damaged"] == ["gone.tar.gz"]

    other = tmp_path / "other"
    other.mkdir()
    archive = other / "a.bin"
    archive.write_bytes(b"payload")
    rc, reply, _ = run_main(capsys, "status", str(archive), str(other))
    assert (rc, reply) == (0, {"sha256": hashlib.sha256(b"payload").hexdigest(), "unpacked": None})


def test_install_unpacks_marks_and_renames_and_a_second_install_finds_it(tmp_path, capsys):
    versions = tmp_path / "versions"
    tmp = versions / ".incoming-1"
    tmp.mkdir(parents=True)
    sha = make_archive(tmp / "b.tar.gz", {"pkg/a.txt": b"a", "pkg/sub/b.txt": b"b"})
    dest = versions / sha
    rc, reply, err = run_main(capsys, "install", str(tmp), str(dest), "b.tar.gz", sha, "1", "-")
    assert (rc, reply, err) == (0, {"sha256": sha, "installed": "renamed"}, "")
    assert not tmp.exists()
    assert (dest / "pkg" / "sub" / "b.txt").read_bytes() == b"b"
    assert (dest / hostops.MARKER).read_text().strip() == sha
    assert hostops.marker(str(dest)) == sha

    # Another deploy of the same file: its copy (linked from REUSE) is discarded, DEST kept.
    tmp2 = versions / ".incoming-2"
    before = (dest / "pkg" / "a.txt").stat().st_mtime_ns
    reuse = str(dest / "b.tar.gz")
    rc, reply, _ = run_main(capsys, "install", str(tmp2), str(dest), "b.tar.gz", sha, "1", reuse)
    assert (rc, reply) == (0, {"sha256": sha, "installed": "exists"})
    assert not tmp2.exists() and (dest / "pkg" / "a.txt").stat().st_mtime_ns == before


def test_install_of_a_wrong_file_installs_nothing(tmp_path, capsys):
    tmp = tmp_path / "versions" / ".incoming-x"
    tmp.mkdir(parents=True)
    (tmp / "f").write_bytes(b"not what was sent")
    dest = tmp_path / "versions" / ("0" * 64)
    rc, reply, _ = run_main(capsys, "install", str(tmp), str(dest), "f", "0" * 64, "0", "-")
    assert (rc, reply) == (
        0,
        {"sha256": hashlib.sha256(b"not what was sent").hexdigest(), "installed": None},
    )
    assert not tmp.exists() and not dest.exists()


def test_install_moves_an_incomplete_destination_aside(tmp_path, capsys):
    versions = tmp_path / "versions"
    tmp = versions / ".incoming-y"
    tmp.mkdir(parents=True)
    (tmp / "f").write_bytes(b"file")
    sha = hashlib.sha256(b"file").hexdigest()
    dest = versions / sha
    dest.mkdir()
    (dest / "half-written").write_bytes(b"?")  # no marker: a deploy that died half-way
    rc, reply, _ = run_main(capsys, "install", str(tmp), str(dest), "f", sha, "0", "-")
    assert (rc, reply) == (0, {"sha256": sha, "installed": "renamed"})
    assert sorted(p.name for p in dest.iterdir()) == sorted(["f", hostops.MARKER, hostops.CONTENTS])
    assert [p.name for p in versions.iterdir()] == [sha]  # nothing left aside


@pytest.mark.parametrize(
    "members, symlink, bad",
    [
        ({"ok.txt": b"1", "../evil.txt": b"2"}, None, "../evil.txt"),
        ({"/abs/evil.txt": b"2"}, None, "/abs/evil.txt"),
        ({"ok.txt": b"1"}, "link", "link"),
    ],
    ids=["dotdot", "absolute", "symlink"],
)
def test_install_refuses_an_unsafe_archive_member(tmp_path, capsys, members, symlink, bad):
    versions = tmp_path / "deep" / "versions"
    tmp = versions / ".incoming-z"
    tmp.mkdir(parents=True)
    archive = tmp / "bad.tar.gz"
    sha = make_archive(archive, members, symlink=symlink)
    dest = versions / sha
    rc, reply, err = run_main(capsys, "install", str(tmp), str(dest), "bad.tar.gz", sha, "1", "-")
    assert (rc, reply) == (1, None)
    assert err.strip() == f"refusing unsafe archive member {bad!r} in {archive}"
    assert not dest.exists()
    assert not (versions / "evil.txt").exists() and not (tmp / "ok.txt").exists()
    with pytest.raises(hostops.HostOpError, match="refusing unsafe archive member"):
        hostops.unpack(str(archive), str(tmp))


def test_install_removes_what_a_dead_deploy_left_a_day_ago(tmp_path, capsys):
    versions = tmp_path / "versions"
    old = versions / ".incoming-dead"
    recent = versions / ".stale-recent"
    for d in (old, recent):
        d.mkdir(parents=True)
    day_ago = time.time() - hostops.STALE_AFTER_S - 60
    os.utime(old, (day_ago, day_ago))
    tmp = versions / ".incoming-now"
    tmp.mkdir()
    (tmp / "f").write_bytes(b"f")
    sha = hashlib.sha256(b"f").hexdigest()
    assert run_main(capsys, "install", str(tmp), str(versions / sha), "f", sha, "0", "-")[0] == 0
    assert not old.exists() and recent.exists()


def test_unknown_or_missing_command(capsys):
    assert run_main(capsys, "frobnicate", "x") == (1, None, "unknown helper command 'frobnicate'\n")
    rc, reply, err = run_main(capsys)
    assert (rc, reply) == (1, None) and "no helper command" in err


# -- processes --------------------------------------------------------------------------------

# A throwaway process group: the leader starts a child (sleep) in its group, prints "ready" and
# sleeps. argv[1] says whether it ignores SIGTERM; "farm.agent" among its arguments makes it
# pass for an agent (as `python -m farm.agent` does).
GROUP_LEADER = """
import signal, subprocess, sys, time
if sys.argv[1] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "600"])
print("ready", child.pid, flush=True)
time.sleep(600)
"""


class Group:
    """A started throwaway process group: its leader and its child's pid."""

    def __init__(self, mode: str, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", GROUP_LEADER, mode, *extra],
            stdout=subprocess.PIPE,
            start_new_session=True,
            text=True,
        )
        self.pgid = self.proc.pid
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], DEADLINE_S)
        line = self.proc.stdout.readline() if ready else ""  # "" also when the leader died
        if not line.startswith("ready"):
            self.close()
            pytest.fail(f"the group leader did not start within {DEADLINE_S:g} s: {line!r}")
        self.child = int(line.split()[1])

    def close(self) -> None:
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=DEADLINE_S)
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture
def group_factory():
    groups: list[Group] = []

    def start(mode: str, *extra: str) -> Group:
        groups.append(Group(mode, *extra))
        return groups[-1]

    yield start
    for g in groups:
        g.close()


def test_members_and_liveness_of_a_real_group(group_factory):
    g = group_factory("normal", "farm.agent")
    assert sorted(procfs.members(g.pgid)) == sorted([g.proc.pid, g.child])
    assert procfs.group_of(g.child) == g.pgid
    assert procfs.alive(g.proc.pid) and procfs.alive(g.child)
    assert hostops.is_agent(procfs.cmdline(g.proc.pid) or [])
    assert hostops.leader_is_agent(g.proc.pid)
    start = procfs.start_time(g.proc.pid)
    assert start is not None and start.isdigit()
    assert not procfs.alive(0) and not procfs.alive(-1)


def test_reap_kills_a_group_with_sigterm(group_factory, capsys):
    g = group_factory("normal", "farm.agent")
    # Generous grace: SIGTERM's default action ends both long before it runs out.
    rc, reply, err = run_main(capsys, "reap", str(g.pgid), str(g.proc.pid), str(DEADLINE_S))
    assert (rc, err) == (0, "")
    assert reply == {"gone": True, "left": [], "sent": ["SIGCONT", "SIGTERM"]}
    assert procfs.members(g.pgid) == []
    g.proc.wait(timeout=DEADLINE_S)
    assert not procfs.alive(g.proc.pid) and procfs.group_of(g.proc.pid) is None


def test_kill_group_goes_on_to_sigkill_when_sigterm_is_ignored(group_factory):
    g = group_factory("ignore-term", "farm.agent")
    result = hostops.kill_group(g.pgid, 0.2, kill_wait=DEADLINE_S, poll=g.proc.poll)
    # Both ignore SIGTERM (the child inherits SIG_IGN): only SIGKILL ends them.
    assert result == {"gone": True, "left": [], "sent": ["SIGCONT", "SIGTERM", "SIGKILL"]}
    assert g.proc.returncode == -signal.SIGKILL  # poll collected it


def test_kill_group_without_sigterm_is_straight_sigkill(group_factory):
    g = group_factory("normal", "farm.agent")
    result = hostops.kill_group(g.pgid, None, kill_wait=DEADLINE_S)
    assert result == {"gone": True, "left": [], "sent": ["SIGCONT", "SIGKILL"]}
    assert g.proc.wait(timeout=DEADLINE_S) == -signal.SIGKILL


def test_reap_leaves_a_group_whose_leader_is_not_an_agent(group_factory, capsys):
    g = group_factory("normal")  # no "farm.agent" argument: a reused pid, say
    rc, reply, _ = run_main(capsys, "reap", str(g.pgid), str(g.proc.pid), "0")
    assert rc == 0 and reply is not None
    assert (reply["gone"], reply["sent"], reply["refused"]) == (False, [], "not a farm agent")
    assert sorted(reply["left"]) == sorted([g.proc.pid, g.child])
    assert g.proc.poll() is None and procfs.alive(g.child)  # untouched


def test_reap_of_a_group_that_is_gone(capsys):
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    proc.wait(timeout=DEADLINE_S)
    rc, reply, _ = run_main(capsys, "reap", str(proc.pid), str(proc.pid), "1")
    assert (rc, reply) == (0, {"gone": True, "left": [], "sent": []})


def test_a_zombie_is_not_alive():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + DEADLINE_S
        while procfs.alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # it exits; unwaited, it stays a zombie
        assert not procfs.alive(proc.pid)
        assert os.path.exists(f"/proc/{proc.pid}")  # still there, as a zombie
    finally:
        proc.wait(timeout=DEADLINE_S)


@pytest.mark.parametrize(
    "argv, workdir, expected",
    [
        (["python3", "-m", "farm.agent", "--workdir", "/w"], None, True),
        (["python3", "-m", "farm.agent", "--workdir", "/w"], "/w", True),
        (["python3", "-m", "farm.agent", "--workdir=/w"], "/w", True),
        (["python3", "-m", "farm.agent", "--workdir", "/w/../w"], "/w", True),
        (["python3", "-m", "farm.agent", "--workdir", "/other"], "/w", False),
        (["python3", "-m", "farm.agent"], "/w", False),
        (["python3", "-c", "print('farm.agent')"], None, False),
        (["python3", "-m", "farm.agent.elsewhere"], None, False),
        ([], None, False),
    ],
)
def test_is_agent(argv, workdir, expected):
    assert hostops.is_agent(argv, workdir) is expected
