"""What a host says about itself: SoC, device count, python and dependencies, and what the machine
is (farm/agent/machine.py: architecture, CANN, driver, each chip's state).

The identity comes from the host's *own* configuration, never from the orchestrator, so that the
health check can catch a host that is not what the inventory claims. In order:

1. the environment: ``LSG_EMULATED_SOC`` and ``LSG_EMULATED_DEVICES`` (an SSH lab host gets them
   from its sshd's ``SetEnv``; a local emulated host from its inventory ``env``);
2. ``host.toml`` in the agent's work directory::

       soc = "Ascend910B1"
       devices = 2
       fault = "crash-after:3"      # optional, test-only (see below)

3. on a real Atlas host, a best-effort parse of ``npu-smi info`` (only when nothing is declared).

Fault injection (TEST-ONLY): an *emulated* host (one that declares its identity through 1 or 2)
may also declare ``LSG_EMULATED_FAULT`` (or ``fault`` in host.toml) so that fault tests can make
its agent misbehave: ``corrupt-reply-after:N``, ``crash-after:N``, ``hang-after:N`` or
``wrong-seq-after:N`` (the first N replies are sent normally), or ``slow-after:N`` (every reply
after the first N comes SLOW_REPLY_S late: a host still busy when a test breaks it). A host
identified by npu-smi never injects faults.

Standard library only at import time (numpy and ml_dtypes are imported by :func:`check_deps`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import socket
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from farm.agent import hostops
from farm.agent import machine as host_machine
from farm.util.errors import ProtocolError

REQUIRED_MODULES = ("numpy", "ml_dtypes")
OPTIONAL_MODULES = ("torch",)
FAULT_KINDS = ("corrupt-reply-after", "crash-after", "hang-after", "wrong-seq-after", "slow-after")
SLOW_REPLY_S = 0.2

ENV_SOC = hostops.ENV_EMULATED_SOC
ENV_DEVICES = "LSG_EMULATED_DEVICES"
ENV_FAULT = "LSG_EMULATED_FAULT"
HOST_FILE = "host.toml"


@dataclass(frozen=True)
class Fault:
    kind: str
    after: int

    @classmethod
    def parse(cls, text: str) -> Fault:
        kind, sep, count = text.strip().partition(":")
        if kind not in FAULT_KINDS or not sep or not count.isdigit():
            raise ValueError(
                f"bad fault declaration {text!r}; use one of "
                + ", ".join(f"{k}:N" for k in FAULT_KINDS)
            )
        return cls(kind, int(count))

    def __str__(self) -> str:
        return f"{self.kind}:{self.after}"


@dataclass(frozen=True)
class Declared:
    """The SoC and device count a host declares, and where the declaration came from."""

    soc: str | None
    devices: int | None
    source: str  # "env", "host.toml", "npu-smi" or "none"
    fault: Fault | None = None
    problems: tuple[str, ...] = ()

    @property
    def emulated(self) -> bool:
        return self.source in ("env", HOST_FILE)


@dataclass(frozen=True)
class Identity:
    host: str
    soc: str | None
    devices: int | None
    source: str
    emulated: bool
    python: str
    deps: dict[str, str | None] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    bundle: str | None = None
    problems: tuple[str, ...] = ()
    machine: host_machine.Machine | None = None  # the architecture, CANN, driver, chips
    judging: str = ""  # which path judges: golden/fused.py status (fused, or numpy and why)

    def to_wire(self) -> dict:
        """The identity as ``identify`` answers it (farm/agent/protocol.py), and as the health
        check keeps it (farm/pool/health/checks.py HostHealth.identity)."""
        d = asdict(self)
        d["missing"] = list(self.missing)
        d["backends"] = list(self.backends)
        d["problems"] = list(self.problems)
        return d

    to_json = to_wire

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "the agent") -> Identity:
        """The identity an agent answered ``identify`` with (the reply's own ``seq`` and ``ok``,
        and a declared benchmark executor, ``executor``, are not the identity's). A field that is
        missing or of the wrong type is a one-line ProtocolError naming ``where`` and the field;
        fields this orchestrator does not know are left out."""
        for name, kinds in _WIRE_TYPES.items():
            if name not in data:
                if name in _REQUIRED:
                    raise _bad_identity(where, f"has no {name}")
                continue
            value = data[name]
            ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
            if ok and name in _STRING_LISTS:
                ok = all(isinstance(v, str) for v in value)
            if ok and name == "deps":
                ok = all(
                    isinstance(k, str) and isinstance(v, (str, type(None)))
                    for k, v in value.items()
                )
            if not ok:
                raise _bad_identity(where, f"says {name} is {_shown(value)}")
        machine = data.get("machine")
        try:
            parsed = host_machine.Machine.from_wire(machine) if machine is not None else None
        except (TypeError, ValueError) as exc:
            raise _bad_identity(where, f"says machine is {_shown(machine)} ({exc})") from None
        return cls(
            host=data["host"],
            soc=data["soc"],
            devices=data["devices"],
            source=data["source"],
            emulated=data["emulated"],
            python=data["python"],
            deps=dict(data.get("deps") or {}),
            missing=tuple(data.get("missing") or ()),
            backends=tuple(data.get("backends") or ()),
            bundle=data.get("bundle"),
            problems=tuple(data.get("problems") or ()),
            machine=parsed,
            judging=data.get("judging", ""),
        )


# The identity's fields as JSON has them (farm/agent/protocol.py ``identify``).
_WIRE_TYPES: dict[str, tuple[type, ...]] = {
    "host": (str,),
    "soc": (str, type(None)),
    "devices": (int, type(None)),
    "source": (str,),
    "emulated": (bool,),
    "python": (str,),
    "deps": (dict,),
    "missing": (list,),
    "backends": (list,),
    "bundle": (str, type(None)),
    "problems": (list,),
    "machine": (dict, type(None)),
    "judging": (str,),
}
_REQUIRED = ("host", "soc", "devices", "source", "emulated", "python")
_STRING_LISTS = ("missing", "backends", "problems")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bad_identity(where: str, what: str) -> ProtocolError:
    return ProtocolError(
        f"{where}: its identity {what}; the agent and the orchestrator disagree on the identity's "
        "form: redeploy the agent (farm deploy)"
    )


def declared_identity(
    workdir: str | os.PathLike[str] | None = None,
    environ: dict[str, str] | None = None,
    *,
    use_npu_smi: bool = True,
) -> Declared:
    env = os.environ if environ is None else environ
    problems: list[str] = []

    if env.get(ENV_SOC):
        devices = _parse_devices(env.get(ENV_DEVICES, "1"), ENV_DEVICES, problems)
        fault = _parse_fault(env.get(ENV_FAULT), ENV_FAULT, problems)
        return Declared(env[ENV_SOC], devices, "env", fault, tuple(problems))

    if workdir is not None:
        path = Path(workdir) / HOST_FILE
        if path.is_file():
            data = _read_host_toml(path, problems)
            soc = data.get("soc") if isinstance(data.get("soc"), str) else None
            if soc is None:
                problems.append(f'{path}: no soc = "..." declared')
            devices = _parse_devices(str(data.get("devices", 1)), f"{path}: devices", problems)
            fault = _parse_fault(data.get("fault"), f"{path}: fault", problems)
            return Declared(soc, devices, HOST_FILE, fault, tuple(problems))

    if use_npu_smi:
        found = npu_smi_identity()
        if found is not None:
            return Declared(found[0], found[1], "npu-smi")
    return Declared(
        None,
        None,
        "none",
        problems=(
            f"no identity declared: set {ENV_SOC}/{ENV_DEVICES}, write {HOST_FILE} in the "
            "work directory, or install npu-smi",
        ),
    )


def _parse_devices(text: str, where: str, problems: list[str]) -> int | None:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        problems.append(f"{where}={text!r} is not a device count >= 1")
        return None
    return n


def _parse_fault(text: object, where: str, problems: list[str]) -> Fault | None:
    if not text:
        return None
    try:
        return Fault.parse(str(text))
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None


def _read_host_toml(path: Path, problems: list[str]) -> dict:
    try:
        import tomllib  # 3.11+
    except ModuleNotFoundError:  # pragma: no cover
        problems.append(f"{path}: python {sys.version.split()[0]} cannot read TOML (needs 3.11)")
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable: {exc}")
        return {}


def parse_npu_smi(text: str) -> tuple[str, int] | None:
    """Parse ``npu-smi info`` output into (SoC name, chip count); None if nothing is found."""
    chips = host_machine.parse_npu_smi(text)
    return _soc_and_count(chips) if chips else None


def _soc_and_count(chips: tuple[host_machine.Chip, ...]) -> tuple[str, int]:
    """The SoC (npu-smi's Name, e.g. 910B4-1 or 310B4, with "Ascend" before it: CANN's SoC name)
    and the devices this agent may use: the chips visible to it (ASCEND_RT_VISIBLE_DEVICES)."""
    name = chips[0].name
    soc = name if name.startswith("Ascend") else "Ascend" + name
    return soc, sum(1 for c in chips if c.device is not None)


def npu_smi_identity() -> tuple[str, int] | None:
    chips, _ = host_machine.read_npu_smi()
    return _soc_and_count(chips) if chips else None


def check_deps() -> tuple[dict[str, str | None], tuple[str, ...]]:
    """Import the required modules; note optional ones' versions without importing them.

    Returns ({module: version or None}, missing required module names).
    """
    deps: dict[str, str | None] = {}
    missing: list[str] = []
    for name in REQUIRED_MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception:  # ImportError, or a broken install raising anything
            deps[name] = None
            missing.append(name)
            continue
        deps[name] = str(getattr(mod, "__version__", None) or _dist_version(name) or "unknown")
    for name in OPTIONAL_MODULES:
        # torch takes seconds to import: its metadata is enough to know it is there.
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        deps[name] = (_dist_version(name) or "unknown") if spec is not None else None
    return deps, tuple(missing)


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def bundle_sha(root: Path | None = None) -> str | None:
    """The sha256 of the agent bundle this code was unpacked from, or None (a source checkout).

    deploy unpacks a bundle into ``<workdir>/versions/<sha256>/`` and writes ``.lsg-unpacked``
    containing the sha256 there.
    """
    if root is None:
        root = Path(__file__).resolve().parent.parent.parent
    marker = root / ".lsg-unpacked"
    try:
        text = marker.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return text if re.fullmatch(r"[0-9a-f]{64}", text) else None


def available_backends(deps: dict[str, str | None]) -> tuple[str, ...]:
    backends = []
    lib = os.environ.get("LSG_NATIVE_LIB")
    if lib and Path(lib).is_file() and deps.get("numpy"):
        backends.append("native")
    if deps.get("torch"):
        backends.append("torch")
    if deps.get("numpy"):
        from farm.agent.backends import acl_api

        if acl_api.available():
            backends.append("acl")
    return tuple(backends)


def gather(
    workdir: str | os.PathLike[str] | None = None, declared: Declared | None = None
) -> Identity:
    """The full identity reported by ``identify``."""
    if declared is None:
        declared = declared_identity(workdir)
    deps, missing = check_deps()
    judging, unjudgeable = judging_path() if not missing else ("none: modules missing", ())
    return Identity(
        host=socket.gethostname(),
        soc=declared.soc,
        devices=declared.devices,
        source=declared.source,
        emulated=declared.emulated,
        python=f"{sys.executable} {sys.version.split()[0]}",
        deps=deps,
        missing=missing,
        backends=available_backends(deps),
        bundle=bundle_sha(),
        problems=declared.problems + unjudgeable,
        machine=host_machine.gather(),
        judging=judging,
    )


def judging_path() -> tuple[str, tuple[str, ...]]:
    """(which path judges, and where PyTorch's benchmark results are kept; the problem when
    $LSG_FUSED=require and the fused one cannot be had: the host cannot judge as it was asked
    to)."""
    from farm.agent import benchmark_cache
    from golden import fused

    try:
        return f"{fused.status()}; {benchmark_cache.status()}", ()
    except RuntimeError as exc:
        return f"none: {exc}", (str(exc),)


__all__ = [
    "Declared",
    "Fault",
    "Identity",
    "available_backends",
    "bundle_sha",
    "check_deps",
    "declared_identity",
    "gather",
    "judging_path",
    "npu_smi_identity",
    "parse_npu_smi",
]
