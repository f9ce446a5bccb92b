"""Preparing a pool for a run, and reaching its agents again from the workers.

prepare_pool: decide everything (building the operator package only when not given one). Every
host of the inventory is deployed to and checked in parallel (reachable, identity, dependencies,
canary cases run end to end), at most :func:`parallel_hosts` at once; the emulated hosts of this
machine are checked in a few groups, each through one shared agent. The persistent quarantine is
updated; the plan lists the healthy slots.

open_channel_factory: how a worker reaches a slot's agent. A remote host's slot gets an agent of
its own; the emulated hosts of this machine share at most :func:`local_agent_limit` agents per
worker (farm/pool/transport/shared.py AgentShare), so that the machine never runs more agents
than it has cores, whatever the number of slots.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from farm.pool import cann_build, deploy
from farm.pool.health import checks as health
from farm.pool.host_threads import host_threads
from farm.pool.inventory import HostSpec, Inventory, default_inventory, load_inventory
from farm.pool.transport import Channel, Transport, open_transport
from farm.pool.transport.shared import AgentShare, share_key
from farm.run.canary import CANARY_TIMEOUT, make_canary
from farm.run.metadata import new_run_id
from farm.run.packages import Builder, NoPackage, Packages
from farm.run.plan import Plan
from farm.run.slots import SlotInfo
from farm.util import targets
from farm.util.errors import ConfigError, FarmError
from farm.util.paths import REPO_ROOT, RUNS_DIR, STATE_DIR
from farm.util.waits import result_of
from suites.caseset import Selection

EMBEDDED_WORKROOT = RUNS_DIR / "hosts"  # work directories of the embedded emulated hosts


class NoHealthyHost(FarmError):
    """Not one host of the pool passed its health check: a run would have nowhere to go."""


class CanaryBroken(FarmError):
    """The canary fails the same way on every host: the farm's or the package's fault, which no
    host is quarantined for; nothing is started."""


def load_pool(inventory_path: str | os.PathLike | None) -> Inventory:
    if inventory_path:
        return load_inventory(inventory_path)
    return default_inventory(EMBEDDED_WORKROOT)


def on_this_machine(pool: Inventory) -> bool:
    """Whether every host is this machine (emulated, or reached on loopback): then the agents
    share its cores with the orchestrator."""
    return all(
        h.transport == "local" or (h.address or "").startswith(("127.", "localhost"))
        for h in pool.hosts
    )


def _pool_source(inventory_path) -> dict:
    if inventory_path:
        return {"source": str(Path(inventory_path).resolve())}
    return {"source": "embedded", "workroot": str(EMBEDDED_WORKROOT)}


def _reload_pool(source: dict) -> Inventory:
    if source["source"] == "embedded":
        return default_inventory(source["workroot"])
    return load_inventory(source["source"])


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() if out.returncode == 0 else ""
    except OSError:
        return ""


# -- preparing ------------------------------------------------------------------------------


PARALLEL_HOSTS_ENV = "FARM_PARALLEL_HOSTS"
MAX_PARALLEL_HOSTS = 32
LOCAL_AGENTS_ENV = "FARM_LOCAL_AGENTS"


def _env_count(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not a whole number; unset it or give one") from None
    if value < 1:
        raise ConfigError(f"{name}={value} must be at least 1")
    return value


def parallel_hosts(hosts: int) -> int:
    """How many hosts are deployed to and checked at once: all of them up to
    MAX_PARALLEL_HOSTS (a thread each, mostly waiting on the network), or $FARM_PARALLEL_HOSTS.
    Always at least 1 and never more than the hosts."""
    bound = _env_count(PARALLEL_HOSTS_ENV) or MAX_PARALLEL_HOSTS
    return max(1, min(bound, hosts))


def local_agent_limit(workers: int | None = None) -> int:
    """How many agents one orchestrator process keeps for the emulated hosts of this machine:
    the machine's cores (or $FARM_LOCAL_AGENTS), shared among the run's worker processes
    ($PYTEST_XDIST_WORKER_COUNT), at least one each. The agents of local hosts share processes
    (farm/pool/transport/shared.py AgentShare) so that this is all there are, whatever the
    number of slots."""
    total = _env_count(LOCAL_AGENTS_ENV) or os.cpu_count() or 1
    if workers is None:
        try:
            workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
        except ValueError:
            workers = 1
    return max(1, total // max(1, workers))


@dataclass
class Deployed:
    """What a host was given: the operator package of its platform, where its C ABI library is
    (the CPU targets), and what its agent's environment needs (the CANN package's install)."""

    package: Path
    native_lib: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # files found damaged and deployed again


def _deploy_host(host: HostSpec, bundle: Path, packages: Packages, backend: str):
    """Deploy the bundle and the package of the host's platform: (None, Deployed) or (a bad
    HostHealth, None). Never raises for a host problem. The agent's environment names the
    installed CANN package only for the backend that runs it (cann_build.agent_env)."""
    started = time.monotonic()
    try:
        transport = open_transport(host)
        try:
            package = packages.for_host(transport.remote_platform(), host.name)
            report, native_lib = deploy.deploy_all(transport, bundle=bundle, op_package=package)
            env = cann_build.install(transport, report, package) if packages.cann else {}
        finally:
            transport.close()
    except FarmError as exc:
        bad = health.HostHealth(
            host=host.name,
            state=health.BAD,
            reasons=[str(exc)],
            seconds=time.monotonic() - started,
            blame_host=not isinstance(exc, NoPackage) or not packages.cann,
        )
        return bad, None
    return None, Deployed(
        package, native_lib, cann_build.agent_env(env, backend), notes=list(report.notes)
    )


def _prepare_host(
    host: HostSpec, bundle: Path, bundle_sha: str, packages: Packages, canary, backend: str
):
    """Deploy, then check. Never raises for a host problem: it becomes a reason."""
    bad, deployed = _deploy_host(host, bundle, packages, backend)
    if bad is not None:
        return bad, None
    checked = health.check_host(
        host,
        open_transport,
        bundle_sha,
        canary,
        native_lib=deployed.native_lib,
        env=deployed.env,
        timeout=CANARY_TIMEOUT,
    )
    checked.notes[:0] = deployed.notes
    return checked, deployed


def _check_local(hosts: list[HostSpec], bundle_sha: str, deployed: dict, canary) -> dict:
    """Check emulated hosts of this machine through one shared agent (health.check_local_hosts):
    host name -> (HostHealth, Deployed)."""
    libs = {h.name: deployed[h.name].native_lib for h in hosts}
    checked = health.check_local_hosts(
        hosts, bundle_sha, canary, native_libs=libs, timeout=CANARY_TIMEOUT
    )
    for h in hosts:
        checked[h.name].notes[:0] = deployed[h.name].notes
    return {h.name: (checked[h.name], deployed[h.name]) for h in hosts}


def _prepare_all(
    inventory: Inventory, bundle: Path, bundle_sha: str, packages: Packages, canary, backend: str
) -> dict:
    """Every host deployed and checked: name -> (HostHealth, Deployed or None). SSH hosts in
    parallel, each on its own (deploy, then check). The emulated hosts of this machine are
    deployed one after the other in one thread (copies and unpacking in this process: threads
    would only contend for it, and each host after the first links the files the first one
    unpacked), then checked in a few groups, each through one shared agent (an agent per host
    would start as many interpreters as hosts at once), as many groups as the machine has
    cores."""
    hosts = inventory.hosts
    results: dict = {}
    with host_threads(parallel_hosts(len(hosts))) as pool:
        remote = {
            h.name: pool.submit(_prepare_host, h, bundle, bundle_sha, packages, canary, backend)
            for h in hosts
            if h.transport != "local"
        }
        local = [h for h in hosts if h.transport == "local"]
        deploying = pool.submit(lambda: [_deploy_host(h, bundle, packages, backend) for h in local])
        deployed: dict[str, Deployed] = {}
        groups: dict[tuple, list[HostSpec]] = {}
        deploys = result_of(deploying)
        for h, (bad, given) in zip(local, deploys, strict=True):
            if bad is not None:
                results[h.name] = (bad, None)
                continue
            deployed[h.name] = given
            lib = given.native_lib
            rel = posixpath.relpath(lib, h.workdir) if lib else ""
            groups.setdefault((share_key(h), rel), []).append(h)
        checks = []
        chunks = max(1, os.cpu_count() or 1)
        for members in groups.values():
            size = -(-len(members) // min(chunks, len(members)))
            for i in range(0, len(members), size):
                chunk = members[i : i + size]
                checks.append(pool.submit(_check_local, chunk, bundle_sha, deployed, canary))
        for future in checks:
            checked = result_of(future)
            results.update(checked)
        for name, future in remote.items():
            results[name] = result_of(future)
    return results


def reported_memory(identity: dict | None) -> int | None:
    """The memory (bytes, MemTotal) a host's identity says the host has; None where it does not
    say (an agent of an older bundle, a machine without /proc/meminfo)."""
    total = ((identity or {}).get("machine") or {}).get("memory_total")
    return total if isinstance(total, int) and total > 0 else None


def prepare_pool(
    inventory_path: str | os.PathLike | None = None,
    tier: str = "smoke",
    backend: str | None = None,
    run_dir: str | os.PathLike | None = None,
    case_timeout: float = 60.0,
    *,
    package: Path | None = None,
    run_id: str | None = None,
    state_dir: Path = STATE_DIR,
    on_host=None,
    require_healthy: bool = False,
    target: str | None = None,
    selection: Selection | None = None,
    build_for: Builder | None = None,
    with_canary: bool = True,
    pool: Inventory | None = None,
) -> Plan:
    """Health-check and deploy every host; return the saved plan of healthy slots.

    ``package``: the operator package to deploy; without one, the real package of ``target``
    (default: build.DEFAULT_TARGET, the emulated real kernel) is built first.

    ``require_healthy``: when no host is healthy (every address unreachable, every key refused,
    ...) raise :class:`NoHealthyHost` instead, before the run directory exists: there is nothing
    to run on, and the reasons name each host and the fix. The quarantine is updated either way.

    ``selection``: what the run runs (default: the tier alone); its case files are copied into
    the run directory and the plan names the copies.

    ``build_for``: builds the package for another CPU architecture (farm/run/packages.py), for
    the hosts of it; without it, only a package built here for ``target`` is built for them, and
    a given ``package`` serves only hosts of its own architecture.

    ``with_canary``: False leaves the canary out of the health checks (`farm hosts --check
    --deep` runs its own case, and says more of a failure than the canary can).

    ``pool``: the inventory at ``inventory_path`` as the caller loaded it already (farm run
    loads it before anything starts, to refuse a bad one), so that it is read once.
    """
    inventory = pool if pool is not None else load_pool(inventory_path)
    if selection is not None:
        tier = selection.key
    run_id = run_id or new_run_id(tier)
    run_dir = Path(run_dir) if run_dir else RUNS_DIR / run_id
    if package is None:
        # Never "the newest archive in dist/op": after `farm run --plant-bug` that is a
        # planted-bug build. Build the real one of the default target (the emulated real
        # kernel; a no-op when it is up to date).
        from farm.pool import build

        chosen = target or build.DEFAULT_TARGET
        if chosen == "ascend" and not build.cann_here():
            build_for = build_for or cann_build.builder(inventory)  # on the pool's CANN hosts
        else:
            package = build.build_package(chosen)
            if build_for is None:
                build_for = lambda arch, cann, host: build.build_package(chosen, arch=arch)  # noqa: E731
    problem = deploy.package_problem(package) if package is not None else None
    if problem is not None:  # never deployed as it is: every host would fail for it
        raise ConfigError(
            f"operator package {package}: {problem}; delete it and build it again (farm build)"
        )
    manifest = deploy.package_manifest(package) if package is not None else {}
    package_target = target or manifest.get("target")
    backend = targets.backend_for(package_target, backend)
    if (
        backend == "acl"
        and package is not None
        and package_target in targets.NATIVE_TARGETS
        and not manifest.get("acl")
    ):
        # Every host's canary would fail for the package's want, not the hosts'.
        raise ConfigError(
            f"operator package {package.name} has no aclnn layer (built without the genuine ACL "
            "headers): fetch them (python -m farm.pool.acl_sdk) and build again (farm build), or "
            "run its C ABI alone with --backend native"
        )
    packages = Packages(package, build_for, target=target or "")
    bundle, bundle_sha = deploy.make_agent_bundle(state_dir / "bundle")
    canary = make_canary(backend) if with_canary else None
    quarantine = health.Quarantine(state_dir)

    hosts, slots, unhealthy, set_aside = {}, [], {}, {}
    prepared = _prepare_all(inventory, bundle, bundle_sha, packages, canary, backend)
    broken_canary = health.common_canary_failure(
        (checked for checked, _ in prepared.values()), {h.name: h for h in inventory.hosts}
    )
    for spec in inventory.hosts:
        checked, deployed = prepared[spec.name]
        checked.package = deployed.package.name if deployed else ""
        pool_fault = broken_canary is not None and health.canary_failure(checked) is not None
        if pool_fault:
            checked.blame_host = False  # said once below, for the whole pool
        quarantine.record(checked)
        if on_host is not None and not pool_fault:
            on_host(spec, checked)
        if not checked.good:
            unhealthy[spec.name] = "; ".join(checked.reasons)
            continue
        hosts[spec.name] = {
            "bundle_sha": bundle_sha,
            "native_lib": deployed.native_lib,
            "agent_env": deployed.env,
            "package": checked.package,
            "memory_total": reported_memory(checked.identity),  # bounds its default budget
        }
        set_aside.update({f"{spec.name}:{d}": why for d, why in checked.set_aside.items()})
        torch = bool(((checked.identity or {}).get("deps") or {}).get("torch"))
        slots += [
            SlotInfo(s.id, spec.name, s.family, s.soc, s.device, torch)
            for s in spec.slots()
            if s.device not in checked.set_aside
        ]

    if broken_canary is not None:
        raise CanaryBroken(
            f"the canary fails the same way on every host: {broken_canary}; this is the farm's "
            "or the package's fault, not the hosts' (none is quarantined): fix it, then rerun"
        )
    if require_healthy and not hosts:
        where = "the embedded pool" if not inventory_path else f"inventory {inventory_path}"
        raise NoHealthyHost(
            f"no host of {where} is healthy, so nothing was started: "
            + "; ".join(f"{name}: {why}" for name, why in unhealthy.items())
        )
    by_arch = packages.by_arch
    # Without a package of its own (the CANN package, built on the pool), the run's is the first
    # one built for it.
    first = package or next(iter(by_arch.values()), None)
    manifest = deploy.package_manifest(first) if first else {"target": packages.target}
    plan = Plan(
        run_id=run_id,
        run_dir=run_dir,
        tier=tier,
        backend=backend,
        inventory=_pool_source(inventory_path),
        slots=slots,
        hosts=hosts,
        unhealthy=unhealthy,
        set_aside=set_aside,
        case_timeout=case_timeout,
        package={
            "file": str(first) if first else "",
            "version": manifest.get("version", ""),
            "target": manifest.get("target", ""),
            "implementation": manifest.get("implementation", ""),
            "sha256": deploy.sha256_file(first) if first else "",
            "arch": deploy.package_arch(first) if first else "",
        },
        packages={
            arch: {"file": str(p), "sha256": deploy.sha256_file(p)} for arch, p in by_arch.items()
        },
        git_commit=git_commit(),
        selection={} if selection is None else selection.freeze(run_dir).to_json(),
        # More cases at once than cores only slows a pool of this machine down.
        window=(os.cpu_count() or 1) if on_this_machine(inventory) else 0,
    )
    plan.save()
    return plan


# -- reaching agents from a worker ---------------------------------------------------------


def local_share(plan: Plan, inventory: Inventory, limit: int | None = None) -> AgentShare | None:
    """The shared agents of the plan's healthy emulated hosts of this machine (None when it has
    none): hosts that may share a process (same interpreter, environment and deployed files) are
    one group; at most ``limit`` agents (default :func:`local_agent_limit`)."""
    groups: dict[str, list[HostSpec]] = {}
    keys: dict[tuple, str] = {}
    for name, info in plan.hosts.items():
        spec = inventory.host(name)
        if spec.transport != "local":
            continue
        lib = info.get("native_lib")
        rel = posixpath.relpath(lib, spec.workdir) if lib else ""
        key = (share_key(spec), info["bundle_sha"], rel)
        group = keys.setdefault(key, f"group{len(keys)}")
        groups.setdefault(group, []).append(spec)
    if not groups:
        return None

    def start(group: str, members) -> Channel:
        info = plan.hosts[members[0].name]
        return deploy.start_shared_agent(
            members, info["bundle_sha"], native_lib=info.get("native_lib")
        )

    return AgentShare(groups, start, local_agent_limit() if limit is None else limit)


def open_channel_factory(plan: Plan):
    """slot -> a fresh agent channel on the slot's host; one SSH connection per host, reused.
    Emulated hosts of this machine share a few agents instead (:func:`local_share`): the
    factory's ``share``."""
    inventory = _reload_pool(plan.inventory)
    transports: dict[str, Transport] = {}
    connecting = threading.Lock()  # the pipeline's slot threads open channels at once
    share = local_share(plan, inventory)

    def open_channel(slot):
        if share is not None and share.serves(slot.host):
            return share.open(slot.host, key=slot.id)
        spec = inventory.host(slot.host)
        info = plan.hosts[slot.host]
        with connecting:
            transport = transports.get(slot.host)
            if transport is None:
                transport = transports[slot.host] = open_transport(spec)
        try:
            return deploy.start_agent(
                transport,
                info["bundle_sha"],
                native_lib=info.get("native_lib"),
                env=info.get("agent_env"),
            )
        except FarmError:
            # The connection itself may be what broke: the next attempt starts afresh.
            with connecting:
                if transports.get(slot.host) is transport:
                    transports.pop(slot.host, None)
            try:
                transport.close()
            except Exception:
                pass
            raise

    open_channel.share = share  # type: ignore[attr-defined]
    return open_channel
