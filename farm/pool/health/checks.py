"""Host health checks and the quarantine (after LAVA's device health states).

:func:`check_host` answers one question per host: may cases run here? It checks, in order, that
the host is reachable (and, given a bundle, that the agent is deployed), that an agent starts and
handshakes, that the host's own declared identity matches the inventory (SoC, device count), that
numpy and ml_dtypes import, that the agent runs the expected bundle, and finally an optional
*canary* (e.g. one known case). Every problem found is one reason that names the host and the fix;
the host is ``good`` when there are none.

The :class:`Quarantine` is a JSON file in a state directory. A bad check (or repeated
infrastructure errors during a run) puts a host there with the reason and the time; it stays until
a later check passes. :func:`host_rows` gives ``farm hosts`` its table.

One module a job; this one checks hosts (check_host, check_pool, the canaries) and re-exports
the others' names:
    farm/pool/health/states.py       a host's health: the record a check makes (HostHealth)
    farm/pool/health/identity.py   what a host says it is against the inventory, its chips
    farm/pool/health/quarantine.py        the quarantine file (Quarantine)
    farm/pool/health/table.py        the rows of `farm hosts` (host_rows)

"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from farm.pool.deploy import deploy, sha256_file, start_agent
from farm.pool.health.identity import (
    chip_notes,
    chip_set_aside,
    grouped,
    identity_problems,
    pin_problems,
    ranges,
)
from farm.pool.health.quarantine import QUARANTINE_AFTER, QUARANTINE_FILE, Quarantine, devices_of
from farm.pool.health.states import BAD, GOOD, UNKNOWN, HostHealth
from farm.pool.health.table import HOST_COLUMNS, SET_ASIDE, host_rows, pool_health
from farm.pool.host_neutral import host_parts, neutral
from farm.pool.host_threads import host_threads
from farm.pool.inventory import HostSpec
from farm.pool.transport import HANDSHAKE_TIMEOUT, Channel, Transport, open_transport
from farm.util.errors import DeviceBusy, FarmError
from farm.util.waits import result_of

TransportFactory = Callable[[HostSpec], Transport]
# canary(channel, identity, device) -> None when fine, or a reason; an exception is a reason too.
# ``device``: the first of the host's devices not set aside.
Canary = Callable[[Channel, dict, int], "str | None"]


def check_host(
    host: HostSpec,
    transport_factory: TransportFactory = open_transport,
    expected_bundle_sha: str | None = None,
    canary: Canary | None = None,
    *,
    bundle: Path | None = None,
    native_lib: str | None = None,
    executor: str | None = None,
    timeout: float = HANDSHAKE_TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> HostHealth:
    """Check one host; never raises for a host problem (it becomes a reason). ``env``: what the
    agent's environment needs for the deployed package (farm/pool/cann_build.py install).

    ``bundle``: deploy this agent bundle first (skipped when the host has it); its sha256 is the
    expected one unless ``expected_bundle_sha`` says otherwise. Without a bundle, the agent must
    already be deployed under ``expected_bundle_sha``.
    """
    if expected_bundle_sha is None:
        if bundle is None:
            raise ValueError("check_host needs expected_bundle_sha or bundle")
        expected_bundle_sha = sha256_file(bundle)
    start = time.monotonic()
    reasons: list[str] = []
    notes: list[str] = []
    set_aside: dict[int, str] = {}
    identity: dict[str, Any] | None = None
    channel: Channel | None = None
    transport: Transport | None = None
    try:
        transport = transport_factory(host)
        if bundle is not None:
            notes += deploy(transport, host, [bundle]).notes
        channel = start_agent(
            transport,
            expected_bundle_sha,
            native_lib=native_lib,
            executor=executor,
            timeout=timeout,
            env=env,
        )
        identity = _checked_identity(
            host, channel, expected_bundle_sha, canary, timeout, reasons, notes, set_aside
        )
    except FarmError as exc:  # e.g. an unusable key or known_hosts (AuthError): this host only
        reasons.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - one host's surprise must not end the others' check
        reasons.append(_unexpected(host, exc))
    finally:
        if channel is not None:
            channel.shutdown()
        if transport is not None:
            transport.close()
    return HostHealth(
        host=host.name,
        state=BAD if reasons else GOOD,
        reasons=reasons,
        identity=identity,
        seconds=time.monotonic() - start,
        notes=notes,
        set_aside=set_aside,
    )


def check_local_hosts(
    hosts: Sequence[HostSpec],
    expected_bundle_sha: str,
    canary: Canary | None = None,
    *,
    native_libs: Mapping[str, str | None] | None = None,
    executor: str | None = None,
    timeout: float = HANDSHAKE_TIMEOUT,
) -> dict[str, HostHealth]:
    """Check emulated hosts of this machine (local transport, already deployed, able to share an
    agent: farm/pool/transport/shared.py share_key) one after the other through one shared agent,
    as :func:`check_host` checks each: the agent starts and handshakes, each host's own declared
    identity, dependencies and deployed bundle, then the canary. An agent that a host's check
    breaks (a canary that crashes it) costs that host alone: the next host's check starts a new
    one. Never raises for a host problem."""
    from farm.pool.deploy import start_shared_agent
    from farm.pool.transport.shared import AgentShare

    libs = dict(native_libs or {})
    hosts = list(hosts)
    lib = libs.get(hosts[0].name) if hosts else None

    def start(group: str, members: Sequence[HostSpec]) -> Channel:
        return start_shared_agent(
            members, expected_bundle_sha, native_lib=lib, executor=executor, timeout=timeout
        )

    share = AgentShare({"hosts": hosts}, start, limit=1)
    results: dict[str, HostHealth] = {}
    try:
        for host in hosts:
            started = time.monotonic()
            reasons: list[str] = []
            notes: list[str] = []
            set_aside: dict[int, str] = {}
            identity: dict[str, Any] | None = None
            try:
                channel = share.open(host.name)
                identity = _checked_identity(
                    host, channel, expected_bundle_sha, canary, timeout, reasons, notes, set_aside
                )
            except FarmError as exc:
                reasons.append(str(exc))
            except Exception as exc:  # noqa: BLE001 - see check_host
                reasons.append(_unexpected(host, exc))
            results[host.name] = HostHealth(
                host=host.name,
                state=BAD if reasons else GOOD,
                reasons=reasons,
                identity=identity,
                seconds=time.monotonic() - started,
                notes=notes,
                set_aside=set_aside,
            )
    finally:
        share.close()
    return results


def _checked_identity(
    host: HostSpec,
    channel: Any,
    expected_bundle_sha: str,
    canary: Canary | None,
    timeout: float,
    reasons: list[str],
    notes: list[str],
    set_aside: dict[int, str],
) -> dict[str, Any]:
    """identify, the identity's problems, the chips set aside, then the canary on the first
    device left: reasons, notes and set_aside added in place."""
    identity = channel.identify(timeout)
    identity.pop("seq", None)
    identity.pop("ok", None)
    reasons += identity_problems(host, identity, expected_bundle_sha)
    set_aside.update(chip_set_aside(host, identity))
    notes += chip_notes(host, identity)
    usable = [d for d in range(host.devices) if d not in set_aside]
    if not usable and not reasons:
        reasons.append(
            f"host {host.name}: every chip is set aside: "
            + "; ".join(why for _, why in grouped(set_aside))
        )
    if identity.get("executor"):
        notes.append(
            f"host {host.name} answers cases with the {identity['executor']} benchmark executor "
            "(its LSG_EMULATED_EXECUTOR): no operator runs there"
        )
    if canary is not None and not reasons:
        try:
            verdict = canary(channel, identity, usable[0])
        except DeviceBusy as exc:  # another run holds the device: not the host's fault
            verdict = None
            notes.append(f"canary not run on host {host.name}: {exc}")
        except Exception as exc:  # the canary's own failure is a reason
            verdict = f"{exc.__class__.__name__}: {exc}"
        if verdict:
            reasons.append(canary_reason(host.name, verdict))
    return identity


def canary_reason(host: str, verdict: str) -> str:
    return f"canary failed on host {host}: {verdict}"


def canary_failure(
    health: HostHealth, parts: Iterable[tuple[str, str]] | None = None
) -> str | None:
    """What the canary said on a host whose one problem is its canary, its host-specific parts
    (names, addresses and ports, paths, SoC: farm/pool/host_neutral.py) replaced by placeholders;
    None for any other host. ``parts``: the parts of every host the text may name (default: this
    host's own, as its check knows them)."""
    prefix = canary_reason(health.host, "")
    if len(health.reasons) != 1 or not health.reasons[0].startswith(prefix):
        return None
    text = health.reasons[0][len(prefix) :]
    return neutral(text, own_parts(health) if parts is None else parts)


def own_parts(health: HostHealth, spec: HostSpec | None = None) -> list[tuple[str, str]]:
    """What names the host of ``health`` (with its inventory entry's address and port where
    given)."""
    identity = health.identity or {}
    machine = identity.get("host")
    soc = identity.get("soc") if isinstance(identity.get("soc"), str) else None
    parts = host_parts(health.host, soc=soc, machine=machine if isinstance(machine, str) else None)
    if spec is not None:
        parts += host_parts(
            spec.name,
            soc=spec.soc,
            address=spec.address,
            port=spec.port if spec.address else None,
        )
    return parts


def common_canary_failure(
    checks: Iterable[HostHealth], specs: Mapping[str, HostSpec] | None = None
) -> str | None:
    """The canary's failure when it fails the same way on every host that ran it, two at least,
    up to what is each host's own (names, addresses, ports, paths, SoCs: farm/pool/host_neutral.py):
    the farm's or the package's fault, not the hosts'. None otherwise (a host failing alone is its
    own). Hosts that never reached the canary do not count; a good host did (or was kept from it
    by another run's lease: then nothing is concluded). ``specs``: the hosts' inventory entries
    (their addresses and ports)."""
    checks = list(checks)
    specs = specs or {}
    parts = [p for c in checks for p in own_parts(c, specs.get(c.host))]
    ran = [c for c in checks if c.good or canary_failure(c, parts) is not None]
    failures = {canary_failure(c, parts) for c in ran}
    if len(ran) < 2 or len(failures) != 1 or None in failures:
        return None
    return failures.pop()


def _unexpected(host: HostSpec, exc: Exception) -> str:
    detail = " ".join(str(exc).split()) or "no message"
    return (
        f"host {host.name}: the check failed unexpectedly ({exc.__class__.__name__}: "
        f"{detail}); fix what it names, then rerun farm hosts --check"
    )


def check_pool(
    hosts: Iterable[HostSpec],
    transport_factory: TransportFactory = open_transport,
    expected_bundle_sha: str | None = None,
    canary: Canary | None = None,
    *,
    bundle: Path | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    max_workers: int = 8,
    **kwargs: Any,
) -> dict[str, HostHealth]:
    """Check hosts in parallel; record the outcomes in the quarantine when state_dir is given."""
    hosts = list(hosts)
    with host_threads(max(1, min(max_workers, len(hosts) or 1))) as pool:
        futures = {
            h.name: pool.submit(
                check_host,
                h,
                transport_factory,
                expected_bundle_sha,
                canary,
                bundle=bundle,
                **kwargs,
            )
            for h in hosts
        }
        results = {name: result_of(f) for name, f in futures.items()}
    if state_dir is not None:
        q = Quarantine(state_dir)
        for health in results.values():
            q.record(health)
    return results


__all__ = [
    "BAD",
    "QUARANTINE_AFTER",
    "QUARANTINE_FILE",
    "canary_failure",
    "canary_reason",
    "chip_notes",
    "common_canary_failure",
    "own_parts",
    "GOOD",
    "HOST_COLUMNS",
    "SET_ASIDE",
    "UNKNOWN",
    "Canary",
    "HostHealth",
    "Quarantine",
    "check_host",
    "check_local_hosts",
    "check_pool",
    "chip_set_aside",
    "devices_of",
    "grouped",
    "host_rows",
    "identity_problems",
    "pin_problems",
    "pool_health",
    "ranges",
]
