"""Deploy: a deterministic, self-contained agent bundle; content-addressed upload that skips what
the host has, verifies what it sends, and unpacks archives."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from farm.agent import hostops
from farm.pool.deploy import (
    BUNDLE_PATHS,
    agent_argv,
    bundle_files,
    deploy,
    deploy_all,
    find_op_package,
    make_agent_bundle,
    native_lib_on_host,
    sha256_file,
    start_agent,
    versions_dir,
)
from farm.pool.transport import open_transport
from farm.pool.transport.local import LocalTransport
from farm.util.errors import ConfigError, DeployError
from tests.pool.conftest import ECHO, REPO


def copy_sources(dest: Path) -> Path:
    for rel in BUNDLE_PATHS:
        if (REPO / rel).is_dir():
            shutil.copytree(REPO / rel, dest / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / rel, dest / rel)
    return dest


def test_bundle_is_byte_identical_for_identical_sources(tmp_path):
    p1, sha1 = make_agent_bundle(tmp_path / "a")
    p2, sha2 = make_agent_bundle(tmp_path / "b", root=copy_sources(tmp_path / "src"))
    assert sha1 == sha2 and p1.read_bytes() == p2.read_bytes()
    assert p1.name == f"lsg-agent-{sha1[:12]}.tar.gz" and sha256_file(p1) == sha1
    with tarfile.open(p1) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    for needed in (
        "farm/__init__.py",
        "farm/util/errors.py",
        "farm/agent/protocol.py",
        "farm/agent/__main__.py",
        "farm/agent/server.py",
        "farm/agent/identity.py",
        "golden/soc.py",
    ):
        assert needed in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    # Exactly farm/agent, golden and the ground floor the agent stands on: nothing of the
    # orchestrator.
    alone = (
        "farm/__init__.py",
        "farm/util/__init__.py",
        "farm/util/errors.py",
        "farm/util/proc.py",
        "op/tiling/reasons.def",
    )
    assert all(n in alone or n.startswith(("farm/agent/", "golden/")) for n in names)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.mode) for m in members} == {
        (946684800, 0, 0, "", 0o644)
    }
    header = p1.read_bytes()[:10]
    assert header[:2] == b"\x1f\x8b" and header[4:8] == b"\0\0\0\0"  # gzip mtime 0


def test_bundle_changes_when_a_source_changes(tmp_path):
    src = copy_sources(tmp_path / "src")
    _, before = make_agent_bundle(tmp_path / "out", root=src)
    (src / "golden" / "soc.py").write_text((src / "golden" / "soc.py").read_text() + "\n# x\n")
    _, after = make_agent_bundle(tmp_path / "out", root=src)
    assert before != after


def test_bundle_is_self_contained(tmp_path, agent_bundle):
    """Everything the agent and the executor import comes from the bundle (an editable install
    of the farm on this machine must not hide a file missing from it)."""
    path, _ = agent_bundle
    hostops.unpack(str(path), str(tmp_path))  # as the agent's host unpacks it
    probe = (
        "import sys, json\n"
        "import farm.agent.__main__, farm.agent.server, farm.agent.identity\n"
        "import farm.agent.execute\n"
        "mods = {n: getattr(m, '__file__', None) for n, m in sys.modules.items()\n"
        "        if n.split('.')[0] in ('farm', 'golden')}\n"
        "heavy = [n for n in ('paramiko', 'rich', 'pytest') if n in sys.modules]\n"
        "print(json.dumps({'mods': mods, 'heavy': heavy}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    outside = {
        n: f
        for n, f in out["mods"].items()
        if f and not Path(f).resolve().is_relative_to(tmp_path.resolve())
    }
    assert outside == {}, f"imported from outside the bundle (add them to BUNDLE_PATHS): {outside}"
    assert out["heavy"] == []


def test_bundle_files_lists_the_python_sources_the_fused_pass_source_and_the_reasons():
    files = bundle_files()
    assert [name for name in files if not name.endswith(".py")] == [
        "golden/fused.c",
        "op/tiling/reasons.def",
    ]
    assert "farm/agent/server.py" in files and "golden/soc.py" in files


def fake_op_package(path: Path, payload: bytes, **manifest_fields) -> Path:
    files = {"lib/liblsg_twin.so": payload, "include/lsg.h": b"/* h */\n"}
    manifest = {
        "name": "logsoftmaxgrad",
        "target": "twin",
        "files": [{"path": p, "bytes": len(b)} for p, b in sorted(files.items())],
        **manifest_fields,
    }
    files["manifest.json"] = json.dumps(manifest).encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_find_op_package_takes_the_package_of_the_architecture(tmp_path):
    """dist/op holds the packages of every architecture a run built (a mixed pool's run builds
    the aarch64 one too): the newest of this machine's is the default, never the newest of all."""
    import os
    import platform

    from farm.agent.hostops import normalise_arch

    here = normalise_arch(platform.machine())
    other = "aarch64" if here == "x86_64" else "x86_64"
    mine = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-twin.tar.gz", b"\x7fELF", arch=here)
    theirs = fake_op_package(
        tmp_path / f"logsoftmaxgrad-0.1.0-twin-{other}.tar.gz", b"\x7fELF", arch=other
    )
    fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-twin-bug-x.tar.gz", b"\x7fELF", arch=here)
    os.utime(mine, (1, 1))  # the other architecture's is the newest file
    assert find_op_package(tmp_path, "twin") == mine
    assert find_op_package(tmp_path, "twin", arch=other) == theirs
    with pytest.raises(ConfigError, match=f"no ascendc-cpu operator package for {here}"):
        find_op_package(tmp_path, "ascendc-cpu")


def test_local_deploy_skips_then_reuploads_after_a_change(local_host, tmp_path, agent_bundle):
    bundle, sha = agent_bundle
    with open_transport(local_host) as t:
        first = deploy(t, local_host, [bundle])
        assert first.uploaded == [bundle.name] and first.skipped == []
        dest = Path(versions_dir(local_host, sha))
        assert (dest / ".lsg-unpacked").read_text().strip() == sha
        assert (dest / "farm" / "agent" / "server.py").is_file()
        again = deploy(t, local_host, [bundle])
        assert again.skipped == [bundle.name] and again.uploaded == []
        # An interrupted unpack is redone without a new upload.
        (dest / ".lsg-unpacked").unlink()
        assert deploy(t, local_host, [bundle]).files[0].action == "unpacked"
        # The agent runs from the deployed bundle and says so.
        with start_agent(t, sha, executor=ECHO) as ch:
            assert ch.identify()["bundle"] == sha
        # A changed file is a new version.
        changed = tmp_path / "changed"
        changed.mkdir()
        src = copy_sources(tmp_path / "src")
        (src / "farm" / "agent" / "server.py").write_text(
            (src / "farm" / "agent" / "server.py").read_text() + "\n# changed\n"
        )
        bundle2, sha2 = make_agent_bundle(changed, root=src)
        report = deploy(t, local_host, [bundle2, bundle])
        assert [f.action for f in report.files] == ["uploaded", "skipped"]
        assert Path(report.remote_dir(sha2)).name == sha2


class CorruptingTransport(LocalTransport):
    def put_file(self, local, remote):
        super().put_file(local, remote)
        with open(remote, "ab") as f:
            f.write(b"bitrot")


def test_a_corrupted_upload_is_a_deploy_error(local_host, agent_bundle):
    bundle, _ = agent_bundle
    with pytest.raises(DeployError) as info:
        deploy(CorruptingTransport(local_host), local_host, [bundle])
    msg = str(info.value)
    assert msg.startswith(f"host emu-t: {bundle.name} arrived corrupted at ") and "expected" in msg


def test_ssh_deploy_of_agent_and_op_package(deployed_lab, tmp_path, agent_bundle):
    lab, inventory, sha = deployed_lab
    host = inventory.host("a200-01")
    bundle, _ = agent_bundle
    pkg = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-twin.tar.gz", b"\x7fELF fake v1")
    with open_transport(host) as t:
        report, twin = deploy_all(t, bundle=bundle, op_package=pkg)
        assert [f.action for f in report.files] == ["skipped", "uploaded"]
        assert twin == f"{report.remote_dir(pkg.name)}/lib/liblsg_twin.so"
        assert t.sha256_remote(twin) is not None
        again, _ = deploy_all(t, bundle=bundle, op_package=pkg)
        assert [f.action for f in again.files] == ["skipped", "skipped"]
        # A rebuilt package (new bytes) is uploaded next to the old one.
        pkg2 = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-twin.tar.gz", b"\x7fELF fake v2")
        report2, twin2 = deploy_all(t, bundle=bundle, op_package=pkg2)
        assert [f.action for f in report2.files] == ["skipped", "uploaded"] and twin2 != twin
        assert native_lib_on_host(report2, pkg2) == twin2
        # The agent is told where the library lies.
        with start_agent(t, sha, native_lib=twin2, executor=ECHO) as ch:
            assert "native" in ch.identify()["backends"]


def test_agent_argv_is_a_list_of_words(local_host):
    argv = agent_argv(local_host, native_lib="/x y/lib.so", executor="m:f")
    assert argv[1:] == [
        "-m",
        "farm.agent",
        "--workdir",
        local_host.workdir,
        "--native-lib",
        "/x y/lib.so",
        "--executor",
        "m:f",
    ]


# -- atomic deploys: a version directory never changes once it exists ---------------------------


def tree_state(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every deployed file under root: (inode, ctime, size). Equal states: nothing was rewritten
    or replaced (the agent's own __pycache__ is left out: python writes it there)."""
    return {
        str(p.relative_to(root)): (st.st_ino, st.st_ctime_ns, st.st_size)
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
        for st in [p.lstat()]
    }


def stale_status(transport_cls):
    """A transport whose deploys saw the version missing: deploys that checked just before
    another one completed, and race to install it."""

    # a subclass of whichever transport the test gives, which mypy cannot follow
    class Stale(transport_cls):  # type: ignore[valid-type,misc]
        def remote_status(self, archive, dest):
            return {"sha256": None, "unpacked": None}

    return Stale


def deploy_concurrently(make_transport, host, files, n=2):
    barrier = threading.Barrier(n)
    reports, errors = [], []

    def one():
        try:
            with make_transport(host) as t:
                barrier.wait(30)
                reports.append(deploy(t, host, files))
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors, errors
    assert len(reports) == n
    return reports


def assert_complete_and_tidy(versions: Path, sha: str) -> None:
    assert (versions / sha / ".lsg-unpacked").read_text().strip() == sha
    assert [p.name for p in versions.iterdir() if p.name.startswith(".")] == []


def test_concurrent_deploys_of_a_new_version_both_succeed(local_host, agent_bundle, tmp_path):
    bundle, sha = agent_bundle
    pkg = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-native.tar.gz", b"\x7fELF race")
    reports = deploy_concurrently(LocalTransport, local_host, [bundle, pkg], n=4)
    versions = Path(local_host.workdir) / "versions"
    assert_complete_and_tidy(versions, sha)
    pkg_dir = Path(reports[0].remote_dir(pkg.name))
    assert (pkg_dir / "lib" / "liblsg_twin.so").read_bytes() == b"\x7fELF race"
    assert {r.remote_dir(sha) for r in reports} == {str(versions / sha)}


def test_concurrent_deploys_never_touch_a_running_agents_files(local_host, agent_bundle, tmp_path):
    """Two runs deploy the version an agent runs from, both having seen it missing: each
    installs into its own temporary directory, loses the rename to the complete directory,
    and discards its copy. No file under the agent changes (re-extracting its shared library
    under it crashed it with bus errors)."""
    bundle, sha = agent_bundle
    pkg = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-native.tar.gz", b"\x7fELF v1")
    with open_transport(local_host) as t:
        deploy(t, local_host, [bundle, pkg])
        dest = Path(versions_dir(local_host, sha))
        pkg_dir = Path(versions_dir(local_host, sha256_file(pkg)))
        before = tree_state(dest), tree_state(pkg_dir)
        with start_agent(t, sha, executor=ECHO) as ch:
            assert ch.run_case({"id": "before"}, "native", 0)["echo"]["id"] == "before"
            reports = deploy_concurrently(stale_status(LocalTransport), local_host, [bundle, pkg])
            assert [[f.action for f in r.files] for r in reports] == [["uploaded"] * 2] * 2
            assert ch.run_case({"id": "after"}, "native", 0)["echo"]["id"] == "after"
            assert ch.identify()["bundle"] == sha
        assert (tree_state(dest), tree_state(pkg_dir)) == before
    assert_complete_and_tidy(dest.parent, sha)


def test_an_incomplete_version_directory_is_replaced_whole(local_host, agent_bundle):
    """A deploy of an older farm that died half-way left files and no marker."""
    bundle, sha = agent_bundle
    dest = Path(versions_dir(local_host, sha))
    (dest / "farm").mkdir(parents=True)
    (dest / "farm" / "half-written.py").write_text("# torn")
    with open_transport(local_host) as t:
        assert deploy(t, local_host, [bundle]).files[0].action == "uploaded"
    assert not (dest / "farm" / "half-written.py").exists()
    assert (dest / "farm" / "agent" / "server.py").is_file()
    assert_complete_and_tidy(dest.parent, sha)


def test_ssh_concurrent_deploys_while_an_agent_runs(deployed_lab, agent_bundle, tmp_path):
    """The same over SFTP, on a lab host, with two SSH connections racing."""
    from farm.pool.transport.ssh import SSHTransport

    lab, inventory, sha = deployed_lab
    host = inventory.host("a2-02")
    bundle, _ = agent_bundle
    pkg = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-native.tar.gz", b"\x7fELF ssh race")
    with open_transport(host) as t:
        deploy(t, host, [bundle, pkg])
        dest = Path(versions_dir(host, sha))
        before = tree_state(dest)
        with start_agent(t, sha, executor=ECHO) as ch:
            assert ch.run_case({"id": "before"}, "native", 1)["echo"]["id"] == "before"
            reports = deploy_concurrently(stale_status(SSHTransport), host, [bundle, pkg])
            assert [[f.action for f in r.files] for r in reports] == [["uploaded"] * 2] * 2
            assert ch.run_case({"id": "after"}, "native", 1)["echo"]["id"] == "after"
        assert tree_state(dest) == before
    assert_complete_and_tidy(dest.parent, sha)


# -- a deployed file damaged on the host --------------------------------------------------------

LIBRARY = b"\x7fELF" + bytes(range(256)) * 64


def assert_no_leftovers(versions: Path) -> None:
    assert [p.name for p in versions.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("installed_by", ["this farm", "an older farm"])
def test_a_deployed_library_cut_short_on_the_host_is_deployed_again_in_one_line(
    local_host, agent_bundle, tmp_path, installed_by
):
    """Before, the complete directory's marker vouched for it: the host failed its canary on
    every run from then on, quarantined for good, and nothing named the file. An older farm's
    directory has no contents list: its archive stands for it."""
    bundle, _ = agent_bundle
    pkg = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-twin.tar.gz", LIBRARY)
    with open_transport(local_host) as t:
        deploy(t, local_host, [bundle, pkg])
        pkg_dir = Path(versions_dir(local_host, sha256_file(pkg)))
        if installed_by == "an older farm":
            (pkg_dir / ".lsg-contents").unlink(missing_ok=True)
        library = pkg_dir / "lib" / "liblsg_twin.so"
        os.truncate(library, 100)
        report = deploy(t, local_host, [bundle, pkg])
        assert [f.action for f in report.files] == ["skipped", "unpacked"]
        assert report.notes == [
            f"host emu-t: {library} did not match its sha256 as deployed (changed or cut short "
            f"on the host): {pkg.name} deployed again"
        ]
        assert library.read_bytes() == LIBRARY
        assert_no_leftovers(pkg_dir.parent)
        again = deploy(t, local_host, [bundle, pkg])
        assert again.skipped == [bundle.name, pkg.name] and again.notes == []


def test_a_deployed_archive_cut_short_is_uploaded_again(local_host, agent_bundle):
    bundle, sha = agent_bundle
    with open_transport(local_host) as t:
        deploy(t, local_host, [bundle])
        kept = Path(versions_dir(local_host, sha)) / bundle.name
        os.truncate(kept, 10)
        report = deploy(t, local_host, [bundle])
        assert [f.action for f in report.files] == ["uploaded"]
        assert report.notes and str(kept) in report.notes[0]
        assert sha256_file(kept) == sha


def test_a_file_linked_from_a_damaged_directory_is_unpacked_afresh_never_written_through(
    local_host, agent_bundle, tmp_path
):
    """A second emulated host links the files of the first one's complete directory; one cut
    short there since is extracted afresh into the new directory, and the first one's file is
    not written through the link (its own next deploy puts it right)."""
    from farm.pool.inventory import HostSpec

    bundle, _ = agent_bundle
    other = HostSpec(**{**local_host.__dict__, "name": "emu-u", "workdir": str(tmp_path / "u")})
    pkg = fake_op_package(tmp_path / "logsoftmaxgrad-0.1.0-twin.tar.gz", LIBRARY)
    sha = sha256_file(pkg)
    with open_transport(local_host) as t:
        deploy(t, local_host, [bundle, pkg])
    first = Path(versions_dir(local_host, sha)) / "lib" / "liblsg_twin.so"
    os.truncate(first, 100)
    with open_transport(other) as t:
        assert deploy(t, other, [pkg]).notes == []
    assert (Path(versions_dir(other, sha)) / "lib" / "liblsg_twin.so").read_bytes() == LIBRARY
    assert first.stat().st_size == 100
    with open_transport(local_host) as t:
        assert len(deploy(t, local_host, [pkg]).notes) == 1
    assert first.read_bytes() == LIBRARY
