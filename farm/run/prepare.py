"""Preparing a pool for a run, and reaching its agents again from the workers.

prepare_pool: decide everything (building the operator package only when not given one). Every
host of the inventory is deployed to and checked in parallel (reachable, identity, dependencies,
canary cases run end to end); the persistent quarantine is updated; the plan lists the healthy
slots.
"""

from __future__ import annotations

import datetime as _dt
import os
import secrets
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from farm.agent.errors import FarmError
from farm.paths import REPO_ROOT, RUNS_DIR, STATE_DIR
from farm.pool import deploy, health
from farm.pool.inventory import HostSpec, Inventory, default_inventory, load_inventory
from farm.pool.transport import Transport, open_transport
from farm.run.plan import Plan
from golden import soc
from suites.case import Case
from suites.caseset import Selection

EMBEDDED_WORKROOT = RUNS_DIR / "hosts"  # work directories of the embedded emulated hosts


class NoHealthyHost(FarmError):
    """Not one host of the pool passed its health check: a run would have nowhere to go."""


def new_run_id(tier: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isalnum() or c == "-" else "-" for c in tier)[:40]
    return f"{stamp}-{slug}-{secrets.token_hex(2)}"


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


# -- the canary ------------------------------------------------------------------------------

CANARY_TIMEOUT = 60.0


def canary_cases(family: str) -> list[Case]:
    """A no-reduce and a reduce call, small enough to cost nothing."""
    return [
        Case(family, "float32", (4, 1, 8), (1,), y_dist="uniform", origin="canary"),
        Case(family, "float16", (3, 33), (-1,), origin="canary"),
    ]


def make_canary(backend: str):
    """The canary proves the *host* can run the operator end to end, with a known answer: the
    inputs it makes from the case's seed must be the bytes this machine makes (numpy, ml_dtypes
    and the generators behave), and the call must come back judged. It does not judge the
    operator: a wrong answer is a product failure, which the run's own cases report (exit 1);
    quarantining every host for it would turn a product bug into an infrastructure error."""
    from farm.agent.execute import make_call_inputs
    from golden.inputs import sha256_of

    def canary(channel, identity) -> str | None:
        family = soc.family_of(identity.get("soc", ""))
        for case in canary_cases(family):
            record = channel.run_case(case.to_dict(), backend, 0, CANARY_TIMEOUT)
            if record.get("case_id") != case.id or record.get("outcome") not in (
                "passed",
                "failed",
            ):
                return f"canary {case.id}: no judged result came back: {record.get('message')}"
            known = sha256_of(*(t for t in make_call_inputs(case.to_dict()) if t is not None))
            if record.get("inputs_sha256") != known:
                return (
                    f"canary {case.id}: the host made other inputs from the same seed "
                    f"(sha256 {str(record.get('inputs_sha256'))[:12]}, expected {known[:12]}); "
                    "check its numpy and ml_dtypes versions against this machine's"
                )
        return None

    return canary


# -- preparing ------------------------------------------------------------------------------


def _prepare_host(host: HostSpec, bundle: Path, bundle_sha: str, package: Path | None, canary):
    """Deploy, then check. Never raises for a host problem: it becomes a reason."""
    native_lib = None
    try:
        transport = open_transport(host)
        try:
            _, native_lib = deploy.deploy_all(transport, bundle=bundle, op_package=package)
        finally:
            transport.close()
    except FarmError as exc:
        return health.HostHealth(host=host.name, state=health.BAD, reasons=[str(exc)]), None
    checked = health.check_host(
        host, open_transport, bundle_sha, canary, native_lib=native_lib, timeout=CANARY_TIMEOUT
    )
    return checked, native_lib


def prepare_pool(
    inventory_path: str | os.PathLike | None = None,
    tier: str = "smoke",
    backend: str = "native",
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
) -> Plan:
    """Health-check and deploy every host; return the saved plan of healthy slots.

    ``package``: the operator package to deploy; without one, the real package of ``target``
    (default: build.DEFAULT_TARGET, the emulated real kernel) is built first.

    ``require_healthy``: when no host is healthy (every address unreachable, every key refused,
    ...) raise :class:`NoHealthyHost` instead, before the run directory exists: there is nothing
    to run on, and the reasons name each host and the fix. The quarantine is updated either way.

    ``selection``: what the run runs (default: the tier alone); its case files are copied into
    the run directory and the plan names the copies.
    """
    inventory = load_pool(inventory_path)
    if selection is not None:
        tier = selection.key
    run_id = run_id or new_run_id(tier)
    run_dir = Path(run_dir) if run_dir else RUNS_DIR / run_id
    if package is None:
        # Never "the newest archive in dist/op": after `farm run --plant-bug` that is a
        # planted-bug build. Build the real one of the default target (the emulated real
        # kernel; a no-op when it is up to date).
        from farm import build

        package = build.build_package(target or build.DEFAULT_TARGET)
    bundle, bundle_sha = deploy.make_agent_bundle(state_dir / "bundle")
    canary = make_canary(backend)
    quarantine = health.Quarantine(state_dir)

    hosts, slots, unhealthy = {}, [], {}
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(inventory.hosts)))) as pool:
        futures = {
            h.name: pool.submit(_prepare_host, h, bundle, bundle_sha, package, canary)
            for h in inventory.hosts
        }
        for spec in inventory.hosts:
            checked, native_lib = futures[spec.name].result()
            quarantine.record(checked)
            if on_host is not None:
                on_host(spec, checked)
            if not checked.good:
                unhealthy[spec.name] = "; ".join(checked.reasons)
                continue
            hosts[spec.name] = {"bundle_sha": bundle_sha, "native_lib": native_lib}
            slots += [
                {
                    "id": s.id,
                    "host": spec.name,
                    "family": s.family,
                    "soc": s.soc,
                    "device": s.device,
                }
                for s in spec.slots()
            ]

    if require_healthy and not hosts:
        where = "the embedded pool" if not inventory_path else f"inventory {inventory_path}"
        raise NoHealthyHost(
            f"no host of {where} is healthy, so nothing was started: "
            + "; ".join(f"{name}: {why}" for name, why in unhealthy.items())
        )
    manifest = deploy.package_manifest(package) if package else {}
    plan = Plan(
        run_id=run_id,
        run_dir=run_dir,
        tier=tier,
        backend=backend,
        inventory=_pool_source(inventory_path),
        slots=slots,
        hosts=hosts,
        unhealthy=unhealthy,
        case_timeout=case_timeout,
        package={
            "file": str(package) if package else "",
            "version": manifest.get("version", ""),
            "target": manifest.get("target", ""),
            "implementation": manifest.get("implementation", ""),
            "sha256": deploy.sha256_file(package) if package else "",
        },
        git_commit=git_commit(),
        selection={} if selection is None else selection.freeze(run_dir).to_json(),
        # More cases at once than cores only slows a pool of this machine down.
        window=(os.cpu_count() or 1) if on_this_machine(inventory) else 0,
    )
    plan.save()
    return plan


# -- reaching agents from a worker ---------------------------------------------------------


def open_channel_factory(plan: Plan):
    """slot -> a fresh agent channel on the slot's host; one SSH connection per host, reused."""
    inventory = _reload_pool(plan.inventory)
    transports: dict[str, Transport] = {}
    connecting = threading.Lock()  # the pipeline's slot threads open channels at once

    def open_channel(slot):
        spec = inventory.host(slot.host)
        info = plan.hosts[slot.host]
        with connecting:
            transport = transports.get(slot.host)
            if transport is None:
                transport = transports[slot.host] = open_transport(spec)
        try:
            return deploy.start_agent(
                transport, info["bundle_sha"], native_lib=info.get("native_lib")
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

    return open_channel
