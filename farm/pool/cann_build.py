"""The CANN package (target ascend), built where CANN is, and installed where it runs.

**Built on a host.** The orchestrator has no CANN; a host of the pool that has the CANN version a
group of hosts needs builds the package from the source package (``build.source_package``:
what op/ascendc/build.sh reads), over its transport: the source package is deployed like any
file, ``bash op/ascendc/build.sh OUT`` runs there in the host's agent environment (CANN's
set-up script sourced, the inventory env on top: transport/commands.py host_argv), and the installer
it made and the build's log come back. The result is
an operator package like the others (``logsoftmaxgrad-<version>-ascend-<arch>-cann<cann>-
<source sha12>.tar.gz``, its manifest saying the architecture, the CANN version, the source
sha256 and the host that built it), kept in dist/op: a later run for the same sources,
architecture and CANN reuses it once it has checked it against its manifest (one that does not
match, cut short on the disk, is said in one line and built again). A build that fails is
:class:`CannBuildFailed` (a build failure, with the log kept beside the cache, never the host's
fault); a set-up script that is missing or fails on the host is the host's
(:class:`~farm.util.errors.HostSetupError`).

**Installed per version.** A host given the package unpacks it into its version directory as
usual; :func:`install` then runs the installer there with ``--install-path=<that directory>/opp``
(once: a marker says it is done), never into CANN's shared vendor directory, and the agent's
environment gets ``ASCEND_CUSTOM_OPP_PATH`` pointing at it, so two runs of different operator
versions on one host never load each other's operator — the acl backend's agent only
(:func:`agent_env`): a torch agent must run CANN's own aclnnLogSoftmaxBackward, never the
package's.
"""

from __future__ import annotations

import json
import posixpath
import tempfile
from pathlib import Path

from farm.agent.home_paths import CUSTOM_OPP_ENV, PACKAGE_OPP_ENV
from farm.pool import deploy
from farm.pool.inventory import HostSpec, Inventory
from farm.pool.transport import Transport, open_transport
from farm.pool.transport.commands import host_argv, set_env_problem
from farm.util import announce
from farm.util.errors import BuildError, FarmError, HostSetupError
from farm.util.paths import DIST_DIR

BUILD_TIMEOUT = 3600.0  # a CANN build of both SoCs takes minutes; a stuck one is stopped here
INSTALL_TIMEOUT = 600.0
LOG_TAIL_LINES = 20
INSTALLED_MARKER = ".lsg-installed"
VENDOR = "customize"  # the vendor name of the project msopgen generates


class CannBuildFailed(BuildError):
    """The CANN build of the operator failed on its build host; the message has the log's tail
    and where the whole log is."""


def package_name(version: str, arch: str, cann: str, source_sha: str) -> str:
    return f"logsoftmaxgrad-{version}-ascend-{arch}-cann{cann}-{source_sha[:12]}.tar.gz"


def build_on(
    host: HostSpec,
    source: Path,
    *,
    arch: str,
    cann: str,
    out_dir: Path,
    transport: Transport | None = None,
) -> Path:
    """The CANN package of ``source`` for ``arch`` and ``cann``: the one in ``out_dir`` when it
    was built before, else built on ``host`` (which has that CANN) and kept there; the build's
    lines said (farm/util/announce.py), "(cached)" for the one kept before."""
    with announce.announced(f"ascend {arch} CANN {cann}, on host {host.name}"):
        return _build_on(host, source, arch, cann, out_dir, transport)


def _build_on(
    host: HostSpec, source: Path, arch: str, cann: str, out_dir: Path, transport: Transport | None
) -> Path:
    from farm.pool import build

    manifest = deploy.package_manifest(source)
    source_sha = deploy.sha256_file(source)
    cached = out_dir / package_name(manifest["version"], arch, cann, source_sha)
    if cached.is_file():
        problem = deploy.package_problem(cached)
        if problem is None:
            return cached
        build.rebuilt(cached, problem)  # cut short or changed since: never deployed as it is
        cached.unlink(missing_ok=True)
    announce.worked()
    own = transport is None
    t = transport or open_transport(host)
    try:
        report = deploy.deploy(t, host, [source])
        remote = report.remote_dir(source.name)
        out = posixpath.join(remote, f"cann-build-{arch}-{cann}")
        argv = host_argv(host, ["bash", posixpath.join(remote, "op/ascendc/build.sh"), out])
        rc, stdout, stderr = t.run_argv(argv, timeout=BUILD_TIMEOUT)
        problem = set_env_problem(host, stderr) if rc != 0 else None
        if problem:  # the host's, not the build's: nothing was built
            raise HostSetupError(problem, host=host.name)
        log = stdout + ("\n" if stdout and stderr else "") + stderr
        log_file = cached.with_name(cached.name.removesuffix(".tar.gz") + ".log")
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.write_text(log)
        if rc != 0:
            lines = [line.strip() for line in log.strip().splitlines() if line.strip()]
            tail = " | ".join(lines[-3:])
            raise CannBuildFailed(
                f"the CANN build of {source.name} on host {host.name} (CANN {cann}, {arch}) "
                f"failed (exit {rc}): {tail or 'no output'}; the whole log: {log_file}"
            )
        installers = _installers(stdout, out)
        if not installers:
            raise CannBuildFailed(
                f"the CANN build on host {host.name} finished but named no custom_opp_*.run in "
                f"{out}; the whole log: {log_file}"
            )
        files: dict[str, bytes] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for remote_file in installers:
                local = Path(tmp) / posixpath.basename(remote_file)
                t.get_file(remote_file, local)
                files[local.name] = local.read_bytes()
    finally:
        if own:
            t.close()
    files["build.log"] = log.encode()
    files["manifest.json"] = (
        json.dumps(
            {
                **build.manifest("ascend", files, arch=arch),
                "cann": cann,
                "source_sha256": source_sha,
                "built_on": host.name,
                "git_commit": manifest.get("git_commit", "unknown"),
                "git_dirty": manifest.get("git_dirty", False),
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    ).encode()
    return build.write_archive(cached, files)


def builder(inventory: Inventory, out_dir: Path | None = None):
    """A farm/run/packages.py Builder of the CANN package: the source package of this checkout,
    built on the inventory's first build host (role = "build") of that architecture and CANN,
    else on the host that needs it (it has that CANN), kept in ``out_dir`` (dist/op)."""
    from farm.pool import build

    out = out_dir or DIST_DIR
    source: list[Path] = []  # made on first need, once
    platforms: dict[str, dict] = {}  # build host -> what it said it is (once a run)

    def build_for(arch: str, cann: str | None, host: str) -> Path:
        if not source:
            source.append(build.source_package(out))
        where = _build_host(inventory, arch, cann, platforms) or inventory.host(host)
        return build_on(where, source[0], arch=arch, cann=cann or "", out_dir=out)

    return build_for


def _build_host(
    inventory: Inventory, arch: str, cann: str | None, platforms: dict[str, dict]
) -> HostSpec | None:
    """The first build host of the inventory that is ``arch`` with CANN ``cann``; None when none
    is (or none answers: the pool's own host builds then)."""
    for candidate in inventory.build_hosts:
        if candidate.name not in platforms:
            try:
                with open_transport(candidate) as t:
                    platforms[candidate.name] = t.remote_platform()
            except FarmError:
                platforms[candidate.name] = {}
        said = platforms[candidate.name]
        if said.get("arch") == arch and said.get("cann") == cann:
            return candidate
    return None


def _installers(stdout: str, out: str) -> list[str]:
    """The installers op/ascendc/build.sh says it made (its last lines, one a path:
    "op/ascendc/build.sh: <path>"; a path may hold spaces), all of them under ``out``."""
    said = "op/ascendc/build.sh: "
    paths = []
    for line in reversed(stdout.rstrip("\n").splitlines()):
        if not line.startswith(said):
            break
        paths.append(line.removeprefix(said))
    return [p for p in reversed(paths) if p.startswith(out + "/") and p.endswith(".run")]


def install(transport: Transport, report: deploy.DeployReport, package: Path) -> dict[str, str]:
    """Install a deployed CANN package into its own version directory on the host (once) and
    return the agent's environment for it: {ASCEND_CUSTOM_OPP_PATH: <dir>/opp/vendors/...}."""
    host = transport.host
    remote = report.remote_dir(package.name)
    target = posixpath.join(remote, "opp")
    vendor = posixpath.join(target, "vendors", VENDOR)
    installers = [
        f["path"]
        for f in deploy.package_manifest(package).get("files", [])
        if f["path"].startswith("custom_opp_") and f["path"].endswith(".run")
    ]
    if not installers:
        raise BuildError(f"{package.name}: no custom_opp_*.run in the package; rebuild it")
    # The installer gets an absolute path: a makeself installer runs from its own extraction
    # directory, where a path relative to the home (the default workdir's) means nothing.
    script = (
        f'[ -f "$1/{INSTALLED_MARKER}" ] && exit 0; '
        'mkdir -p "$1" && dir=$(cd "$1" && pwd) && bash "$2" --install-path="$dir" && '
        f'touch "$dir/{INSTALLED_MARKER}"'
    )
    argv = host_argv(
        host, ["sh", "-c", script, "install", target, posixpath.join(remote, installers[0])]
    )
    rc, out, err = transport.run_argv(argv, timeout=INSTALL_TIMEOUT)
    problem = set_env_problem(host, err) if rc != 0 else None
    if problem:
        raise HostSetupError(problem, host=host.name)
    if rc != 0:
        said = " | ".join((err or out).strip().splitlines()[-3:]) or f"exit {rc}"
        raise FarmError(
            f"host {host.name}: installing {installers[0]} into {target} failed: {said}",
            host=host.name,
        )
    return {CUSTOM_OPP_ENV: vendor, PACKAGE_OPP_ENV: vendor}


# The backends that run the installed CANN package: their agents get its directories.
PACKAGE_BACKENDS = ("acl",)


def agent_env(installed: dict[str, str], backend: str) -> dict[str, str]:
    """What an agent running ``backend`` gets of :func:`install`'s environment: all of it for
    the backend that runs the package, nothing for any other. torch_npu takes aclnn entries from
    every $ASCEND_CUSTOM_OPP_PATH package's libcust_opapi.so before CANN's own, and the package
    defines aclnnLogSoftmaxBackward: a torch agent given it would test the package, not CANN's
    operator."""
    return dict(installed) if backend in PACKAGE_BACKENDS else {}


__all__ = ["CannBuildFailed", "agent_env", "build_on", "builder", "install", "package_name"]
