"""Deploy to hosts: the agent bundle and the operator package, content-addressed.

Layout on a host (``<workdir>`` from the inventory)::

    <workdir>/versions/<sha256>/<file name>     an uploaded file (agent bundle, op package, ...)
    <workdir>/versions/<sha256>/...             its unpacked contents (tar archives)
    <workdir>/versions/<sha256>/.lsg-unpacked   the marker of a complete directory: the sha256

**A version directory never changes once it exists.** A deploy uploads into a temporary
directory next to it (``versions/.incoming-<sha12>-<random>/``), verifies and unpacks there,
writes the marker, and renames the whole directory into place in one ``rename(2)``, which fails on
an existing directory. So a complete directory (its marker holds the right sha256) is skipped and
never written into, an agent running from it never sees a file change under it (re-extracting a
shared library under a running agent crashed it with bus errors), and two runs deploying the same
version at once both succeed: the loser of the rename finds the winner's complete directory and
discards its temporary one. A directory without the marker (a deploy of an older farm that died
half-way) is moved aside and replaced. Redeploying identical files costs one status command.

**Verified before use.** A complete directory also holds its contents list (``.lsg-contents``:
the sha256 of the file and of every file unpacked from it, from the archive itself). Each deploy's
status command checks every listed file, and a directory whose files changed since (a library
cut short on the host's disk) is no longer complete: it is moved aside and deployed again, with
one line naming the file (DeployReport.notes). A package archive is checked against its own
manifest before it is deployed (:func:`package_problem`).

The agent runs as ``<python> -m farm.agent --workdir <workdir> [--native-lib <path>]`` with the
bundle's directory as its working directory (so ``farm``/``golden`` come from the bundle).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import posixpath
import tarfile
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from farm.agent import hostops, machine
from farm.pool.inventory import HostSpec
from farm.pool.transport.base import Transport
from farm.pool.transport.channel import HANDSHAKE_TIMEOUT, Channel
from farm.pool.transport.commands import env_argv, set_env_problem, with_set_env
from farm.util.errors import ConfigError, ConnectionLost, DeployError, HostSetupError
from farm.util.paths import DIST_DIR, REPO_ROOT

# What ships to a host: the agent package and the maths, nothing else (farm/__init__.py only makes
# `farm` a package there). Everything under these paths that is Python goes in, and the fused
# judging pass's C source, which the agent builds on the host (golden/fused.py).
BUNDLE_PATHS = (
    "farm/__init__.py",
    "farm/util/__init__.py",
    "farm/util/errors.py",
    "farm/util/proc.py",
    "farm/agent",
    "golden",
    "golden/fused.c",
    # The table of reasons golden/reasons.py reads at import, where the operator compiles it from.
    "op/tiling/reasons.def",
)
BUNDLE_PREFIX = "lsg-agent"
_ENTRY_MTIME = 946684800  # 2000-01-01: fixed, so identical sources give identical bytes
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


_SHA_CACHE: dict[tuple[str, int, int, int], str] = {}  # (path, inode, size, mtime) -> sha256


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The file's sha256, remembered while the file is unchanged (a deploy to 64 hosts hashes
    the same bundle and package once, not 64 times)."""
    st = os.stat(path)
    key = (os.fspath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    known = _SHA_CACHE.get(key)
    if known is not None:
        return known
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = _SHA_CACHE[key] = h.hexdigest()
    return digest


def bundle_files(root: Path = REPO_ROOT) -> dict[str, Path]:
    """Archive name -> source file, for the agent bundle."""
    files: dict[str, Path] = {}
    for rel in BUNDLE_PATHS:
        src = root / rel
        if src.is_file():
            files[rel] = src
        elif src.is_dir():
            for p in sorted(src.rglob("*.py")):
                if "__pycache__" not in p.parts:
                    files[p.relative_to(root).as_posix()] = p
        else:
            raise ConfigError(f"agent bundle: {src} is missing; run from a complete checkout")
    return files


def make_agent_bundle(
    out_dir: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
) -> tuple[Path, str]:
    """Write the agent bundle (a deterministic tar.gz: byte-identical for identical sources) into
    ``out_dir`` as ``lsg-agent-<sha12>.tar.gz``; return (path, sha256)."""
    root = Path(root) if root is not None else REPO_ROOT
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, src in sorted(bundle_files(root).items()):
            data = src.read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = _ENTRY_MTIME
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    data = packed.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{BUNDLE_PREFIX}-{sha[:12]}.tar.gz"
    if not (path.is_file() and sha256_file(path) == sha):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path, sha


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeployedFile:
    name: str
    sha256: str
    remote_path: str
    remote_dir: str
    action: str  # "uploaded", "unpacked" (file was there, unpack was not) or "skipped"
    bytes: int
    seconds: float


@dataclass
class DeployReport:
    host: str
    files: list[DeployedFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was found damaged and deployed again

    @property
    def uploaded(self) -> list[str]:
        return [f.name for f in self.files if f.action == "uploaded"]

    @property
    def skipped(self) -> list[str]:
        return [f.name for f in self.files if f.action == "skipped"]

    def remote_dir(self, name_or_sha: str) -> str:
        for f in self.files:
            if name_or_sha in (f.name, f.sha256):
                return f.remote_dir
        raise KeyError(name_or_sha)

    def summary(self) -> str:
        parts = [f"{f.name} {f.action}" for f in self.files]
        return f"host {self.host}: " + (", ".join(parts) or "nothing to deploy")


def versions_dir(host: HostSpec, sha256: str) -> str:
    return posixpath.join(host.workdir, "versions", sha256)


def _is_archive(name: str) -> bool:
    return name.endswith(_ARCHIVE_SUFFIXES)


def deploy(transport: Transport, host: HostSpec | None, files: Iterable[Path]) -> DeployReport:
    """Install each file into ``<workdir>/versions/<sha256>/`` (skipped where the host already
    has that directory complete; uploaded into a temporary directory, verified by sha256 and,
    for archives, unpacked there, then renamed into place atomically)."""
    host = host or transport.host
    report = DeployReport(host.name)
    for local in files:
        local = Path(local)
        if not local.is_file():
            raise ConfigError(f"deploy to host {host.name}: {local} does not exist; build it first")
        start = time.monotonic()
        sha = sha256_file(local)
        dest = versions_dir(host, sha)
        remote = posixpath.join(dest, local.name)
        archive = _is_archive(local.name)
        status = transport.remote_status(remote, dest)
        broken = status.get("damaged")
        if broken:
            report.notes.append(
                f"host {host.name}: {', '.join(posixpath.join(dest, p) for p in broken)} did not "
                f"match its sha256 as deployed (changed or cut short on the host): {local.name} "
                "deployed again"
            )
        present = status.get("sha256") == sha
        # Complete: the marker says so (a plain file of an older farm had no marker: its bytes do).
        complete = status.get("unpacked") == sha or (present and not archive)
        if complete:
            action = "skipped"
        else:
            # A file that arrived but was never unpacked (an older deploy that died) is reused on
            # the host; otherwise it is uploaded into the temporary directory.
            action = "unpacked" if present else "uploaded"
            tmp = posixpath.join(
                host.workdir, "versions", f".incoming-{sha[:12]}-{uuid.uuid4().hex[:8]}"
            )
            if not present:
                transport.put_file(local, posixpath.join(tmp, local.name))
            result = transport.install_remote(
                tmp, dest, local.name, sha, archive=archive, reuse=remote if present else None
            )
            got = result.get("sha256")
            if got != sha or not result.get("installed"):
                raise DeployError(
                    f"host {host.name}: {local.name} arrived corrupted at {tmp} (sha256 "
                    f"{got or 'missing'}, expected {sha}); check the host's disk and rerun",
                    host=host.name,
                )
        report.files.append(
            DeployedFile(
                name=local.name,
                sha256=sha,
                remote_path=remote,
                remote_dir=dest,
                action=action,
                bytes=local.stat().st_size,
                seconds=time.monotonic() - start,
            )
        )
    return report


# ---------------------------------------------------------------------------------------------
# The operator package (dist/op/*.tar.gz, built by farm/pool/build/)


def find_op_package(
    dist: str | os.PathLike[str] = DIST_DIR, target: str = "ascendc-cpu", arch: str | None = None
) -> Path:
    """The newest op package for ``target`` built for ``arch`` (default: this machine's) in
    ``dist``, never one with a planted bug. The architecture is the package's own (package_arch):
    ``dist`` holds the packages of every architecture a run has built."""
    import platform

    want = hostops.normalise_arch(arch or platform.machine())
    found = sorted(
        (
            p
            for p in Path(dist).glob(f"*-{target}*.tar.gz")
            if "-bug-" not in p.name and package_arch(p) == want
        ),
        key=lambda p: p.stat().st_mtime,
    )
    if not found:
        raise ConfigError(
            f"no {target} operator package for {want} in {dist}; run 'farm build --arch {want}'"
        )
    return found[-1]


_MANIFESTS: dict[tuple[str, int, int, int], dict] = {}


def package_manifest(package: str | os.PathLike[str]) -> dict:
    """The package's manifest.json (read once while the file is unchanged)."""
    try:
        st = os.stat(package)
        key = (os.fspath(package), st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _MANIFESTS:
        return json.loads(json.dumps(_MANIFESTS[key]))  # a copy: callers may change theirs
    manifest = _read_manifest(package)
    if key is not None:
        _MANIFESTS[key] = manifest
    return json.loads(json.dumps(manifest))


def _read_manifest(package: str | os.PathLike[str]) -> dict:
    try:
        with tarfile.open(package, "r:*") as tar:
            member = tar.extractfile("manifest.json")
            assert member is not None
            return json.loads(member.read())
    except (KeyError, AssertionError, tarfile.TarError, ValueError, OSError) as exc:
        raise ConfigError(
            f"operator package {package}: no readable manifest.json ({exc}); rebuild it with "
            "'farm build'"
        ) from None


_PROBLEMS: dict[tuple[str, int, int, int], str | None] = {}  # (path, inode, size, mtime) -> ...


def package_problem(package: str | os.PathLike[str]) -> str | None:
    """What is wrong with an operator package archive against its own manifest: None when it
    reads whole and holds exactly the files its manifest lists, each of its sha256 and size;
    else what is not (remembered while the file is unchanged)."""
    try:
        st = os.stat(package)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    key = (os.fspath(package), st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _PROBLEMS:
        _PROBLEMS[key] = _problem(package)
    return _PROBLEMS[key]


def _problem(package: str | os.PathLike[str]) -> str | None:
    import zlib

    found: dict[str, tuple[str, int]] = {}
    listed: dict[str, tuple[str, int]] = {}
    try:
        with tarfile.open(package, "r:*") as tar:
            for member in tar:
                data = tar.extractfile(member) if member.isfile() else None
                if data is None:
                    continue
                raw = data.read()
                if member.name == "manifest.json":
                    for entry in json.loads(raw).get("files") or []:
                        listed[str(entry["path"])] = (str(entry["sha256"]), int(entry["bytes"]))
                else:
                    found[member.name] = (hashlib.sha256(raw).hexdigest(), len(raw))
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        return f"it does not read whole ({exc.__class__.__name__}: {exc}): cut short or changed"
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"its manifest.json does not list its files ({exc.__class__.__name__}: {exc})"
    if not listed:
        return "its manifest.json lists no files"
    for path in sorted(set(found) | set(listed)):
        if path not in found:
            return f"{path}, which its manifest lists, is missing"
        if path not in listed:
            return f"{path} is not in its manifest"
        if found[path] != listed[path]:
            return f"{path} does not match its sha256 in the manifest"
    return None


def package_target(package: str | os.PathLike[str]) -> str:
    """What the package was built for (its manifest's target: "ascendc-cpu", "twin", ...)."""
    return str(package_manifest(package).get("target", ""))


def package_arch(package: str | os.PathLike[str]) -> str:
    """The CPU architecture a package's libraries are for: its manifest's "arch".

    An archive from before the field (every one built for the machine that built it) is read by
    its library instead: the ELF header's e_machine of its lib/*.so. Only an old archive with no
    ELF library in it (an old ascend package: its installer is a shell archive) is taken as this
    machine's, since the CANN package is built on the machine CANN is on."""
    manifest = package_manifest(package)
    if manifest.get("arch"):
        return hostops.normalise_arch(str(manifest["arch"]))
    library = manifest.get("library") or ""
    if library:
        with tarfile.open(package, "r:*") as tar:
            member = tar.extractfile(library)
            arch = machine.elf_arch_of(member.read(64)) if member is not None else None
        if arch:
            return arch
    return machine.kernel_arch()


def package_native_lib(package: str | os.PathLike[str]) -> str | None:
    """The path of the package's C ABI library (the emulated real kernel or the twin) inside it,
    from its manifest, or None."""
    manifest = package_manifest(package)
    for entry in manifest.get("files", []):
        path = entry.get("path", "") if isinstance(entry, dict) else str(entry)
        if path.startswith("lib/") and ".so" in posixpath.basename(path):
            return path
    return None


def native_lib_on_host(report: DeployReport, package: str | os.PathLike[str]) -> str | None:
    """Where the C ABI library of a deployed op package lies on the host (for LSG_NATIVE_LIB)."""
    rel = package_native_lib(package)
    if rel is None:
        return None
    return posixpath.join(report.remote_dir(Path(package).name), rel)


# ---------------------------------------------------------------------------------------------
# Starting an agent from a deployed bundle


def agent_argv(
    host: HostSpec,
    *,
    native_lib: str | None = None,
    executor: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """How a host's agent starts: its python on the bundle; on an SSH host with CANN's set-up
    script sourced (the inventory's set_env), its inventory env on top, and ``env`` (what the
    deployed package needs: cann_build.agent_env)."""
    argv = [host.python, "-m", "farm.agent", "--workdir", host.workdir]
    if native_lib:
        argv += ["--native-lib", native_lib]
    if executor:
        argv += ["--executor", executor]
    added = (host.env if host.transport != "local" else ()) + tuple(sorted((env or {}).items()))
    return with_set_env(host.set_env, env_argv(added, argv))


def start_agent(
    transport: Transport,
    bundle_sha: str,
    *,
    native_lib: str | None = None,
    executor: str | None = None,
    timeout: float = HANDSHAKE_TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> Channel:
    """Start an agent from the deployed bundle ``bundle_sha`` and handshake with it."""
    host = transport.host
    try:
        return transport.open_channel(
            agent_argv(host, native_lib=native_lib, executor=executor, env=env),
            cwd=versions_dir(host, bundle_sha),
            timeout=timeout,
        )
    except ConnectionLost as exc:  # the agent never started: was it CANN's set-up script?
        problem = set_env_problem(host, getattr(exc, "stderr_tail", "") or "")
        if problem is None:
            raise
        raise HostSetupError(problem, host=host.name) from None


def start_shared_agent(
    hosts: Sequence[HostSpec],
    bundle_sha: str,
    *,
    native_lib: str | None = None,
    executor: str | None = None,
    timeout: float = HANDSHAKE_TIMEOUT,
) -> Channel:
    """Start one agent that serves several local (emulated) hosts of this machine, from the
    first host's copy of bundle ``bundle_sha``, and handshake with it (farm/agent/server.py, "One
    agent for several emulated hosts"). The hosts must share an interpreter and environment
    (farm/pool/transport/shared.py share_key); each keeps its own declaration, work directory
    (device locks) and deployed bundle. ``native_lib``: the operator's library, one host's copy
    of the package all of them have."""
    from farm.pool.transport.local import LocalTransport
    from farm.pool.transport.shared import shared_agent_hosts, shared_host

    if not hosts or any(h.transport != "local" for h in hosts):
        raise ValueError("a shared agent serves local hosts only")
    first = hosts[0]
    entries = shared_agent_hosts(hosts, {h.name: versions_dir(h, bundle_sha) for h in hosts})
    try:
        os.makedirs(first.workdir, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix=".agent-hosts-", suffix=".json", dir=first.workdir)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"hosts": entries}, f)
    except OSError as exc:
        raise DeployError(
            f"host {first.name}: cannot write the shared agent's host list in {first.workdir}: "
            f"{exc.strerror}",
            host=first.name,
        ) from None
    argv = agent_argv(first, native_lib=native_lib, executor=executor) + ["--hosts-file", path]
    try:  # the agent reads the list before it answers hello
        return LocalTransport(shared_host(hosts)).open_channel(
            argv, cwd=versions_dir(first, bundle_sha), timeout=timeout
        )
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)


def deploy_all(
    transport: Transport,
    *,
    bundle: Path,
    op_package: Path | None = None,
    extra: Sequence[Path] = (),
) -> tuple[DeployReport, str | None]:
    """Deploy the agent bundle (+ op package); return the report and the host's LSG_NATIVE_LIB."""
    files = [bundle] + ([op_package] if op_package else []) + list(extra)
    report = deploy(transport, transport.host, files)
    native = native_lib_on_host(report, op_package) if op_package else None
    return report, native


__all__ = [
    "BUNDLE_PATHS",
    "DeployReport",
    "DeployedFile",
    "agent_argv",
    "bundle_files",
    "deploy",
    "deploy_all",
    "find_op_package",
    "make_agent_bundle",
    "package_arch",
    "package_manifest",
    "package_native_lib",
    "package_problem",
    "package_target",
    "sha256_file",
    "start_agent",
    "start_shared_agent",
    "native_lib_on_host",
    "versions_dir",
]
