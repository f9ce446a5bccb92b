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
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from farm.agent.machine import Chip, Machine, chip_problem, hidden_chips
from farm.pool.deploy import deploy, sha256_file, start_agent
from farm.pool.host_neutral import host_parts, neutral
from farm.pool.host_threads import host_threads
from farm.pool.inventory import PIN_FIELDS, HostSpec, Inventory
from farm.pool.transport import HANDSHAKE_TIMEOUT, Channel, Transport, open_transport
from farm.util.errors import DeviceBusy, FarmError
from farm.util.waits import result_of

GOOD, BAD, UNKNOWN = "good", "bad", "unknown"
QUARANTINE_FILE = "quarantine.json"
# Infrastructure errors on one host within a run before it is quarantined (farm/run/leases.py).
QUARANTINE_AFTER = 3

TransportFactory = Callable[[HostSpec], Transport]
# canary(channel, identity, device) -> None when fine, or a reason; an exception is a reason too.
# ``device``: the first of the host's devices not set aside.
Canary = Callable[[Channel, dict, int], "str | None"]


@dataclass
class HostHealth:
    host: str
    state: str  # "good" | "bad"
    reasons: list[str] = field(default_factory=list)
    identity: dict[str, Any] | None = None
    checked_at: float = field(default_factory=time.time)
    seconds: float = 0.0
    # What the check could not do, and why that is nobody's fault (a canary whose device another
    # run holds: the host stays good; the run's dispatcher waits for the device).
    notes: list[str] = field(default_factory=list)
    # The chips of a good host that may not run cases, alone: device -> why (chip_set_aside).
    set_aside: dict[int, str] = field(default_factory=dict)
    package: str = ""  # the operator package deployed there (of the host's architecture)
    # False: the host is left out for what is not its fault (no package can be had for it: a CANN
    # build that failed); the quarantine does not take it.
    blame_host: bool = True

    @property
    def good(self) -> bool:
        return self.state == GOOD

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def identity_problems(
    host: HostSpec, ident: Mapping[str, Any], expected_bundle_sha: str | None = None
) -> list[str]:
    """What is wrong with a host's reported identity, one fix-naming line each."""
    name = host.name
    reasons: list[str] = []
    source = ident.get("source", "?")
    soc = ident.get("soc")
    if soc is None:
        detail = "; ".join(ident.get("problems") or []) or "no declaration found"
        reasons.append(f"host {name} declares no SoC ({detail})")
    elif soc != host.soc:
        reasons.append(
            f"SoC mismatch: host {name} declares {soc} (from {source}) but the inventory says "
            f"{host.soc}; fix the inventory or the host's declaration"
        )
    devices = ident.get("devices")
    if soc is not None and devices != host.devices:
        reasons.append(
            f"device count mismatch: host {name} declares {devices} device(s) (from {source}) but "
            f"the inventory says {host.devices}; fix the inventory or the host's declaration"
        )
    for problem in ident.get("problems") or []:
        if soc is not None:
            reasons.append(f"host {name}: {problem}")
    # The agent says "<executable> <version>"; the executable's path may hold spaces.
    python = ident["python"].rsplit(" ", 1)[0] if ident.get("python") else host.python
    for module in ident.get("missing") or []:
        reasons.append(
            f"missing python module {module} on host {name}: pip install {module} on host {name} "
            f"(for {python})"
        )
    reasons += pin_problems(host, ident)
    got = ident.get("bundle")
    if expected_bundle_sha and got != expected_bundle_sha:
        reasons.append(
            f"host {name} runs agent bundle {str(got)[:12]} but {expected_bundle_sha[:12]} is "
            "expected; redeploy the agent"
        )
    return reasons


def _machine(ident: Mapping[str, Any]) -> Machine | None:
    raw = ident.get("machine")
    return Machine.from_wire(raw) if isinstance(raw, dict) else None


def pin_problems(host: HostSpec, ident: Mapping[str, Any]) -> list[str]:
    """One line per inventory pin (arch = "aarch64", cann = "8.2.*", ...) the host does not
    match, naming the field, the pin and what the host reports."""
    if not host.pins:
        return []
    machine = _machine(ident)
    reasons = []
    for pin, pattern in host.pins:
        found = getattr(machine, PIN_FIELDS[pin]) if machine is not None else None
        if found is None or not fnmatch.fnmatchcase(found, pattern):
            said = "nothing" if found is None else repr(found)
            reasons.append(
                f"host {host.name}: {pin} is pinned to {pattern!r} in the inventory, the host "
                f"reports {said}; fix the pin or the host"
            )
    return reasons


def chip_set_aside(host: HostSpec, ident: Mapping[str, Any]) -> dict[int, str]:
    """The host's devices that may not run cases, each with its reason, from the chips the host
    reports (npu-smi) as its agent sees them (ASCEND_RT_VISIBLE_DEVICES): a chip missing, in
    alarm (unless the inventory's accept_health accepts it), or with memory another process
    holds. A host that reports no chips (no npu-smi: an emulated host) sets none aside."""
    machine = _machine(ident)
    if machine is None or machine.chips is None:
        return {}
    chips = {c.device: c for c in machine.chips if c.device is not None}
    seen = (
        ""
        if machine.visible_devices is None
        else f" visible to the agent (ASCEND_RT_VISIBLE_DEVICES={machine.visible_devices!r})"
    )
    aside = {}
    missing = [device for device in range(host.devices) if device not in chips]
    if missing:  # one reason for them all: said once, however many (devices = 64 for 2 chips)
        which = f"chip {missing[0]} is" if len(missing) == 1 else f"chips {ranges(missing)} are"
        why = (
            f"{which} missing: npu-smi lists {len(chips)} chip(s){seen}, the inventory says "
            f"{host.devices}; fix devices in the inventory, or the host's chips"
        )
        aside = dict.fromkeys(missing, why)
    for device, chip in chips.items():
        if device < host.devices and (problem := chip_problem(chip, host.accept_health)):
            aside[device] = problem
    return dict(sorted(aside.items()))


def ranges(devices: Iterable[int]) -> str:
    """Device numbers as a person reads them: "2-63", "0, 3, 5-7"."""
    parts: list[str] = []
    run: list[int] = []
    for d in sorted(set(devices)):
        if run and d != run[-1] + 1:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = []
        run.append(d)
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(parts)


def grouped(set_aside: Mapping[int, str]) -> list[tuple[str, str]]:
    """(devices, why) of chips set aside, the devices that share a reason together ("2-63"), in
    the order of their first device: what is said of them, once a reason."""
    by_reason: dict[str, list[int]] = {}
    for device in sorted(set_aside):
        by_reason.setdefault(set_aside[device], []).append(device)
    return [(ranges(devices), why) for why, devices in by_reason.items()]


def chip_notes(host: HostSpec, ident: Mapping[str, Any]) -> list[str]:
    """What the check says of the host's chips beyond those set aside: chips npu-smi lists that
    the agent cannot see, and chips that run although their health is one the inventory
    accepts (accept_health)."""
    machine = _machine(ident)
    if machine is None or machine.chips is None:
        return []
    notes = [f"host {host.name}: {hidden}"] if (hidden := hidden_chips(machine)) else []
    for chip in machine.chips:
        if chip.device is not None and chip.device < host.devices:
            if chip.health in host.accept_health:
                notes.append(
                    f"host {host.name}: chip {chip.device} ({chip.name}) runs in health "
                    f"{chip.health}, as the inventory's accept_health says"
                )
    return notes


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


# ---------------------------------------------------------------------------------------------


def _now_iso(ts: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if ts is None else ts, timezone.utc).isoformat(
        timespec="seconds"
    )


class Quarantine:
    """Persistent host quarantine: ``<state_dir>/quarantine.json``, safe across processes.

    Format: ``{"version": 1, "hosts": {name: {"reason", "since", "updated"}}, "chips":
    {"name:device": {...the same}}, "seen": {name: {"machine", "checked"}}}``: the hosts set aside,
    the chips of good hosts set aside alone, and what each host last said it is (for ``farm
    hosts``). Mid-run infrastructure errors are counted per run (farm/run/leases.py RunState) and
    land here when they reach ``QUARANTINE_AFTER``.
    """

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(state_dir)
        self.path = self.dir / QUARANTINE_FILE

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / (QUARANTINE_FILE + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                tmp = self.path.with_name(f".{QUARANTINE_FILE}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
                tmp.replace(self.path)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError):
            # A damaged file must not keep hosts out forever, nor crash the run: start afresh.
            data = {}
        if not isinstance(data, dict):
            data = {}
        data.setdefault("version", 1)
        for key in ("hosts", "chips", "seen"):
            if not isinstance(data.get(key), dict):
                data[key] = {}
        return data

    def entries(self) -> dict[str, dict[str, Any]]:
        return dict(self._read()["hosts"])

    def chip_entries(self) -> dict[str, dict[str, Any]]:
        """The chips set aside alone: "host:device" -> {"reason", "since", "updated"}."""
        return dict(self._read()["chips"])

    def seen(self) -> dict[str, dict[str, Any]]:
        """What each host last said it is: name -> {"machine": Machine wire form, "judging":
        which path judges there (golden/fused.py status), "checked"}."""
        return dict(self._read()["seen"])

    def reason(self, host: str) -> str | None:
        entry = self._read()["hosts"].get(host)
        return entry["reason"] if entry else None

    def add(self, host: str, reason: str) -> None:
        with self._locked() as data:
            _enter(data["hosts"], host, reason)

    def release(self, host: str) -> None:
        with self._locked() as data:
            data["hosts"].pop(host, None)

    def record(self, health: HostHealth) -> None:
        """A bad check quarantines the host; a good one releases it, and sets aside its chips
        that may not run cases (and no others: a chip healthy again comes back)."""
        with self._locked() as data:
            name = health.host
            if not health.good:
                if health.blame_host:
                    _enter(data["hosts"], name, "; ".join(health.reasons) or "health check failed")
            else:
                data["hosts"].pop(name, None)
                for device in devices_of(data["chips"], name):
                    if device not in health.set_aside:  # healthy again: back in the pool
                        del data["chips"][f"{name}:{device}"]
                for device, reason in health.set_aside.items():
                    _enter(data["chips"], f"{name}:{device}", reason)
            identity = health.identity or {}
            machine = identity.get("machine")
            if isinstance(machine, dict):
                data["seen"][name] = {
                    "machine": machine,
                    "judging": str(identity.get("judging") or ""),
                    "checked": _now_iso(health.checked_at),
                }


def devices_of(by_slot: Mapping[str, Any], host: str) -> dict[int, Any]:
    """The entries of ``host``'s chips in a table keyed by slot id ("host:device"), by device."""
    found = {}
    for slot, value in by_slot.items():
        name, _, device = slot.rpartition(":")
        if name == host:
            found[int(device)] = value
    return found


def _enter(table: dict[str, Any], key: str, reason: str) -> None:
    """Set ``key`` aside in ``table`` with ``reason``; since when stays that of the first time."""
    now = _now_iso()
    entry = table.get(key)
    if entry is None:
        table[key] = {"reason": reason, "since": now, "updated": now}
    else:
        entry.update(reason=reason, updated=now)


HOST_COLUMNS = (
    "host",
    "transport",
    "address",
    "arch",
    "soc",
    "family",
    "devices",
    "cann",
    "driver",
    "chip",
    "judging",
    "tags",
    "state",
    "quarantined",
    "reason",
    "since",
)
SET_ASIDE = "set aside"


def host_rows(
    inventory: Inventory,
    state_dir: str | os.PathLike[str] | None = None,
    healths: Mapping[str, HostHealth] | None = None,
) -> list[dict[str, str]]:
    """The rows of ``farm hosts`` (keys: :data:`HOST_COLUMNS`, all strings): one per host, then
    one per chip ("host:device") of a host whose chips were reported, each with its health and,
    when set aside, why and since when.

    ``state`` is this check's outcome where ``healths`` has the host, else ``bad`` for a
    quarantined host and ``unknown`` otherwise. The architecture, CANN, driver, chips and judging
    path (golden/fused.py: fused, or numpy and why) are what the host said at its last check.
    """
    q = Quarantine(state_dir) if state_dir is not None else None
    entries = q.entries() if q else {}
    chip_entries = q.chip_entries() if q else {}
    seen = q.seen() if q else {}
    rows = []
    for h in inventory.hosts:
        entry = entries.get(h.name)
        checked = (healths or {}).get(h.name)
        if checked is not None:
            state = checked.state
            reason = "; ".join(checked.reasons)
        else:
            state = BAD if entry else UNKNOWN
            reason = entry["reason"] if entry else ""
        said = (checked.identity or {}) if checked else {}
        last = seen.get(h.name) or {}
        raw = said.get("machine") or last.get("machine")
        judging = str(said.get("judging") or last.get("judging") or "")
        machine = Machine.from_wire(raw) if isinstance(raw, dict) else None
        chips = {c.device: c for c in (machine.chips or ())} if machine else {}
        aside = devices_of(chip_entries, h.name)
        if checked is not None:
            aside = {
                d: {"reason": why, "since": (aside.get(d) or {}).get("since", "")}
                for d, why in checked.set_aside.items()
            }
        rows.append(
            {
                "host": h.name,
                "transport": h.transport,
                "address": h.endpoint,
                "arch": (machine.arch if machine else ""),
                "soc": h.soc,
                "family": h.family,
                "devices": str(h.devices),
                "cann": (machine.cann_version or "") if machine else "",
                "driver": (machine.driver or "") if machine else "",
                "chip": f"{len(aside)} set aside" if aside else "",
                "judging": judging,
                "tags": ",".join(h.tags),
                "state": state,
                "quarantined": "yes" if entry else "no",
                "reason": reason,
                "since": entry["since"] if entry else "",
            }
        )
        if not chips and not aside:
            continue
        chip_rows: list[tuple[int, dict[str, str]]] = []
        for device in range(h.devices):
            chip = chips.get(device)
            out = aside.get(device)
            row = {
                **{c: "" for c in HOST_COLUMNS},
                "host": f"{h.name}:{device}",
                "soc": h.soc,
                "chip": _chip_text(chip) if chip else "missing",
                "state": SET_ASIDE if out else state,
                "quarantined": "yes" if out else "no",
                "reason": out["reason"] if out else "",
                "since": out["since"] if out else "",
            }
            last_device, last = chip_rows[-1] if chip_rows else (-2, {})
            if chip is None and last.get("chip") == "missing" and last_device == device - 1:
                if {**last, "host": ""} == {**row, "host": ""}:  # a run of missing chips: one row
                    first = last["host"].rsplit(":", 1)[1].split("-")[0]
                    last["host"] = f"{h.name}:{first}-{device}"
                    chip_rows[-1] = (device, last)
                    continue
            chip_rows.append((device, row))
        rows += [row for _, row in chip_rows]
    return rows


def _chip_text(chip: Chip) -> str:
    """ "910B1 OK, 3150/65536 MB, AI Core 0%": a chip as npu-smi reported it."""
    text = f"{chip.name} {chip.health}"
    if chip.memory_total_mb:
        text += f", {chip.memory_used_mb}/{chip.memory_total_mb} MB"
    if chip.aicore_percent is not None:
        text += f", AI Core {chip.aicore_percent}%"
    return text


__all__ = [
    "BAD",
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
    "ranges",
]
