"""The pool of hosts: a TOML inventory, validated before anything starts.

Format::

    [defaults]                       # any host field except name; a host's own value wins
    user = "root"
    key = "~/.ssh/farm_ed25519"
    known_hosts = "~/.ssh/known_hosts"

    [[host]]
    name = "a2-01"                   # unique
    transport = "ssh"                # "ssh" (default) or "local"
    address = "10.0.0.5"
    port = 22
    soc = "Ascend910B1"              # golden.soc's (any Ascend910B<n>/Ascend310B<n> over ssh)
    devices = 8                      # >= 1
    python = "python3"               # ssh default; a local host's: this farm's own interpreter
    set_env = "/usr/local/Ascend/ascend-toolkit/set_env.sh"   # CANN's set-up script (below)
    workdir = "lsg-farm"             # ssh: relative to the remote home; local: to this file
    host_key_policy = "strict"       # or "accept-new" (lab opt-in: record unknown keys)
    tags = ["nightly"]
    memory_budget = "64GiB"          # what one case may take there (default: suites/footprint.py)
    accept_health = ["Alarm"]        # run on chips npu-smi says are in these states (only Alarm;
                                     #   default none: such a chip is set aside)
    arch = "aarch64"                 # optional pins, each a glob the host must match:
    cann = "8.2.*"                   #   arch os glibc compiler cann driver firmware

    [[host]]
    name = "cann-build"              # role = "build": builds the CANN package, runs no cases
    role = "build"                   #   (no soc or devices; farm/pool/cann_build.py)
    address = "10.0.0.20"
    env = { ASCEND_HOME_PATH = "/usr/local/Ascend/ascend-toolkit/latest" }   # set_env.sh found

    [[host]]
    name = "emu-01"
    transport = "local"              # the agent as a local subprocess (an emulated host)
    soc = "Ascend310B1"
    devices = 1
    env = { LSG_EMULATED_SOC = "Ascend310B1", LSG_EMULATED_DEVICES = "1" }

``env`` of a local host is the emulated host's *own* configuration, the counterpart of sshd's
``SetEnv`` on an SSH lab host: the agent reads its identity from it, and the health check
compares that identity with ``soc``/``devices`` here. ``env`` of an SSH host is added to the
agent's environment there, and to the CANN build's and install's (``env K=V ...``); it may not
declare the identity (no ``LSG_EMULATED_*``).

``set_env`` of an SSH host is CANN's set-up script, which an SSH session does not source: the
agent and the build run under ``bash -c '. set_env.sh && exec ...'``
(farm/pool/transport/commands.py ``host_argv``), ``env`` on top. Without the field, where ``env``
names ``ASCEND_HOME_PATH``, the ``set_env.sh`` beside it or in the directory above it
(``ascend-toolkit/set_env.sh`` of ``ascend-toolkit/latest``); ``set_env = ""``: none, ``env``
alone. A script that is missing or
fails there is the host's error (:class:`~farm.util.errors.HostSetupError`).

Every validation error is one :class:`~farm.util.errors.ConfigError` line that names the file, the
host, the field and the fix.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from farm.agent.machine import ACCEPTABLE_HEALTH
from farm.util.errors import ConfigError
from farm.util.sizes import parse_size
from golden.soc import UnknownSocError
from golden.soc import family_of as soc_family
from golden.soc import profile as soc_profile
from suites import limits

TRANSPORTS = ("ssh", "local")
# "run": a host of the pool, whose devices run cases; "build": a host that only builds the CANN
# package (farm/pool/cann_build.py), with no SoC or devices of its own to declare.
ROLES = ("run", "build")
HOST_KEY_POLICIES = ("strict", "accept-new")
DEFAULT_SSH_WORKDIR = "lsg-farm"
DEFAULT_CONNECT_TIMEOUT = 10.0
MAX_DEVICES = 64
_UNEXPANDED = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|(?:^|:)~(?=/|:|$)")
EMULATED_PREFIX = "LSG_EMULATED_"  # an emulated host's own declarations (farm/agent/identity.py)

_HOST_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    # field: (type(s), description used in messages)
    "name": (str, "a unique host name"),
    "transport": (str, '"ssh" or "local"'),
    "address": (str, "a host name or IP address"),
    "port": (int, "a TCP port 1-65535"),
    "user": (str, "a login name"),
    "key": (str, "a private key file path"),
    "host_key_policy": (str, '"strict" or "accept-new"'),
    "known_hosts": (str, "a known_hosts file path"),
    "soc": (str, "an SoC name"),
    "devices": (int, "a device count >= 1"),
    "python": (str, "the python interpreter on the host"),
    "workdir": (str, "a directory path on the host"),
    "tags": (list, "a list of strings"),
    "env": (dict, "a table of string values: the agent's environment"),
    "connect_timeout": ((int, float), "seconds > 0"),
    "role": (str, '"run" (the default) or "build"'),
    "memory_budget": ((str, int), 'a size: bytes, or e.g. "8GiB", "512MiB"'),
    "accept_health": (list, 'a list of npu-smi health words, e.g. ["Alarm"]'),
    "set_env": (str, 'the path of CANN\'s set_env.sh on the host, or "" for none'),
}
SET_ENV_FILE = "set_env.sh"  # CANN's set-up script, beside or above ASCEND_HOME_PATH
# What a host must be, beyond its SoC: inventory field -> the Machine field it pins
# (farm/agent/machine.py). A value is a glob (fnmatch): cann = "8.2.*".
PIN_FIELDS = {
    "arch": "arch",
    "os": "os",
    "glibc": "glibc",
    "compiler": "compiler",
    "cann": "cann_version",
    "driver": "driver",
    "firmware": "firmware",
}
_HOST_FIELDS.update({pin: (str, "a glob pattern, e.g. 8.2.*") for pin in PIN_FIELDS})


@dataclass(frozen=True)
class HostSpec:
    """One host of the pool, as the inventory declares it."""

    name: str
    soc: str
    devices: int
    transport: str = "ssh"
    address: str | None = None
    port: int = 22
    user: str | None = None
    key: Path | None = None
    host_key_policy: str = "strict"
    known_hosts: Path | None = None
    python: str = "python3"
    workdir: str = DEFAULT_SSH_WORKDIR
    tags: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    # CANN's set-up script on the host: the first of these that exists there is sourced before
    # the agent and the build run (farm/pool/transport/commands.py host_argv); () for none.
    set_env: tuple[str, ...] = ()
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    pins: tuple[tuple[str, str], ...] = ()  # (PIN_FIELDS key, glob) the host must match
    role: str = "run"
    # Bytes one case may take on the host (suites/footprint.py checks every case against it
    # before a run); None: not declared, the farm's default applies (bounded by the host's memory).
    memory_budget: int | None = None
    # npu-smi health states besides OK and Warning whose chips still run cases here
    # (farm/agent/machine.py ACCEPTABLE_HEALTH, chip_problem).
    accept_health: tuple[str, ...] = ()
    source: Path | None = field(default=None, compare=False)

    @property
    def family(self) -> str:
        return soc_family(self.soc)

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    @property
    def endpoint(self) -> str:
        """``address:port`` for ssh hosts, ``local`` otherwise (for messages)."""
        if self.transport == "local":
            return "local"
        return f"{self.address}:{self.port}"

    def slots(self) -> list[Slot]:
        return [Slot(self, d) for d in range(self.devices)]


@dataclass(frozen=True)
class Slot:
    """One device of one host: the unit a case leases."""

    host: HostSpec
    device: int

    @property
    def id(self) -> str:
        return f"{self.host.name}:{self.device}"

    @property
    def family(self) -> str:
        return self.host.family

    @property
    def soc(self) -> str:
        return self.host.soc

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True)
class Inventory:
    hosts: list[HostSpec]  # the pool: the hosts whose devices run cases
    source: Path | None = None
    build_hosts: list[HostSpec] = field(default_factory=list)  # role = "build"

    def slots(self, family: str | None = None) -> list[Slot]:
        return [s for h in self.hosts for s in h.slots() if family is None or s.family == family]

    def host(self, name: str) -> HostSpec:
        for h in self.hosts:
            if h.name == name:
                return h
        known = ", ".join(h.name for h in self.hosts) or "(none)"
        raise ConfigError(f"{self._where()}: no host named {name!r}; hosts: {known}")

    def _where(self) -> str:
        return f"inventory {self.source}" if self.source else "inventory"


# ---------------------------------------------------------------------------------------------


def load_inventory(path: str | os.PathLike[str]) -> Inventory:
    """Read and validate a TOML inventory. Raises ConfigError with one clear line."""
    path = Path(path)
    where = f"inventory {path}"
    try:
        raw = limits.read_bounded(path, f"inventory {path}")  # read whole: measured first
    except FileNotFoundError:
        raise ConfigError(
            f"{where}: file not found; pass an existing inventory (e.g. lab/inventory.toml from "
            "'farm lab up'), or omit it to use the embedded local pool"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8-sig"))  # a byte order mark (Notepad) is no text
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text; save the inventory as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: malformed TOML: {exc}; fix the syntax there") from None
    return inventory_from_dict(data, source=path)


def inventory_from_dict(data: Mapping[str, Any], *, source: Path | None = None) -> Inventory:
    where = f"inventory {source}" if source else "inventory"
    base = source.parent.absolute() if source else Path.cwd()
    unknown_top = sorted(set(data) - {"defaults", "host"})
    if unknown_top:
        raise ConfigError(
            f"{where}: unknown top-level key {unknown_top[0]!r}; use [defaults] and [[host]] only"
        )
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{where}: [defaults] must be a table")
    _check_fields(where, "[defaults]", defaults)
    if "name" in defaults:
        raise ConfigError(f'{where}: [defaults]: field "name" cannot have a default; name hosts')
    hosts_raw = data.get("host", [])
    if not isinstance(hosts_raw, list) or not all(isinstance(h, dict) for h in hosts_raw):
        raise ConfigError(f"{where}: hosts must be an array of tables written [[host]]")
    if not hosts_raw:
        raise ConfigError(f"{where}: no [[host]] entries; declare at least one host")
    hosts: list[HostSpec] = []
    builders: list[HostSpec] = []
    seen: dict[str, int] = {}
    endpoints: dict[tuple[str, int], str] = {}
    for index, raw in enumerate(hosts_raw):
        label = f"[[host]] #{index + 1}"
        name = raw.get("name")
        if isinstance(name, str) and name:
            label = f"[[host]] {name}"
        _check_fields(where, label, raw)
        merged = {**defaults, **raw}
        spec = _host_from_fields(where, label, merged, base, source)
        if spec.name in seen:
            raise ConfigError(
                f"{where}: [[host]] {spec.name}: duplicate name (also [[host]] entry "
                f"#{seen[spec.name] + 1}); host names must be unique"
            )
        seen[spec.name] = index
        if spec.transport == "ssh" and spec.address:
            endpoint = (spec.address, spec.port)
            other = endpoints.get(endpoint)
            if other is not None:
                raise ConfigError(
                    f"{where}: [[host]] {other} and [[host]] {spec.name} are the same machine "
                    f"({spec.endpoint}); one machine is one [[host]] entry: remove one of them "
                    "or fix its address/port"
                )
            endpoints[endpoint] = spec.name
        (builders if spec.role == "build" else hosts).append(spec)
    if not hosts:
        raise ConfigError(
            f'{where}: every [[host]] has role = "build"; declare at least one host that runs cases'
        )
    return Inventory(hosts, source, builders)


def _check_fields(where: str, label: str, table: Mapping[str, Any]) -> None:
    for key, value in table.items():
        if key not in _HOST_FIELDS:
            near = difflib.get_close_matches(key, list(_HOST_FIELDS), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            known = ", ".join(_HOST_FIELDS)
            raise ConfigError(
                f"{where}: {label}: unknown field {key!r}; {hint}known fields: {known}"
            )
        types, desc = _HOST_FIELDS[key]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ConfigError(
                f'{where}: {label}: field "{key}": expected {desc}, got {type(value).__name__} '
                f"{value!r}"
            )


def _host_from_fields(
    where: str, label: str, f: Mapping[str, Any], base: Path, source: Path | None
) -> HostSpec:
    def fail(fld: str, msg: str) -> ConfigError:
        return ConfigError(f'{where}: {label}: field "{fld}": {msg}')

    name = f.get("name")
    if not name:
        raise ConfigError(f'{where}: {label}: missing field "name"; give every host a unique name')
    if any(c.isspace() or c in "/\\:" or not c.isprintable() for c in name):
        raise fail(
            "name", f"{name!r} must not contain spaces, slashes, colons or control characters"
        )
    transport = f.get("transport", "ssh")
    if transport not in TRANSPORTS:
        raise fail("transport", f"{transport!r} is not a transport; use one of: ssh, local")
    role = f.get("role", "run")
    if role not in ROLES:
        raise fail("role", f'{role!r}; use "run" (the default) or "build"')
    if role == "build":  # it runs no cases: its SoC and devices, if any, do not matter
        f = {k: v for k, v in f.items() if k not in ("soc", "devices")}
    elif "soc" not in f:
        raise ConfigError(f'{where}: {label}: missing field "soc"; e.g. soc = "Ascend910B1"')
    try:
        if role == "run" and transport == "local":
            soc_profile(f["soc"])  # an emulated host's SoC is emulated from its profile
        elif role == "run":
            soc_family(f["soc"])  # a real one may be a SoC of a known family not in the table
    except UnknownSocError as exc:
        raise fail("soc", str(exc)) from None
    if role == "run" and "devices" not in f:
        raise ConfigError(f'{where}: {label}: missing field "devices"; the host\'s device count')
    devices = f.get("devices", 0)
    if role == "run" and devices < 1:
        raise fail("devices", f"{devices} devices; a host needs at least 1")
    if devices > MAX_DEVICES:
        raise fail(
            "devices",
            f"{devices:,} devices; at most {MAX_DEVICES} a host (an Atlas server has 8 to 16 "
            "NPUs; each device is a slot the run keeps busy, with a thread of its own)",
        )
    tags = f.get("tags", [])
    if not all(isinstance(t, str) and t for t in tags):
        raise fail("tags", "every tag must be a non-empty string")
    timeout = float(f.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT))
    if timeout <= 0:
        raise fail("connect_timeout", f"{timeout} must be > 0 seconds")
    # A local host runs on this machine: the farm's own interpreter has every dependency there.
    python = f.get("python", sys.executable if transport == "local" else "python3")
    if not python:
        raise fail("python", "empty; name the interpreter, e.g. python3")
    if transport == "local" and "/" in python:  # this machine's: as the workdir, to this file
        python = str(_resolve(python, base))
    elif "/" in python and not python.startswith("/"):
        # The agent is started in its bundle's directory, by a command whose words are quoted:
        # "~/venv/bin/python3" is not expanded, "venv/bin/python3" is not the home's.
        raise fail(
            "python",
            f"{python!r}: give an absolute path (e.g. /home/{f.get('user') or 'USER'}/venv/bin/"
            "python3) or a command on the host's PATH (python3)",
        )
    budget = None
    if "memory_budget" in f:
        try:
            budget = parse_size(f["memory_budget"])
        except ValueError as exc:
            raise fail("memory_budget", str(exc)) from None

    accept = f.get("accept_health", [])
    for word in accept:
        if word not in ACCEPTABLE_HEALTH:
            raise fail(
                "accept_health",
                f"{word!r} cannot be accepted; only {', '.join(map(repr, ACCEPTABLE_HEALTH))} "
                "may be (OK and Warning always run; any other state sets the chip aside)",
            )

    pins = []
    for pin in PIN_FIELDS:
        if pin in f:
            if not f[pin].strip():
                raise fail(pin, "empty; give a value or a glob, e.g. 8.2.*, or leave it out")
            pins.append((pin, f[pin]))

    common = dict(
        role=role,
        pins=tuple(pins),
        name=name,
        soc=f.get("soc", ""),
        devices=devices,
        transport=transport,
        python=python,
        tags=tuple(tags),
        connect_timeout=timeout,
        memory_budget=budget,
        accept_health=tuple(dict.fromkeys(accept)),
        source=source,
    )

    if transport == "local":
        env = f.get("env", {})
        for k, v in env.items():
            if not isinstance(v, str):
                raise fail("env", f"value of {k} must be a string, got {v!r}")
        if "set_env" in f:
            raise fail(
                "set_env",
                "a local host is emulated on this machine, with no CANN to set up; remove it",
            )
        workdir = f.get("workdir")
        workdir_path = _resolve(workdir, base) if workdir else base / ".lsg-hosts" / name
        return HostSpec(**common, workdir=str(workdir_path), env=tuple(sorted(env.items())))

    # ssh: env is added to the agent's environment there (on top of CANN's set-up script, for
    # what it does not set), never the host's identity
    env = f.get("env", {})
    for k, v in env.items():
        if not isinstance(v, str):
            raise fail("env", f"value of {k} must be a string, got {v!r}")
        if k.startswith(EMULATED_PREFIX):
            raise fail(
                "env",
                f"{k}: an SSH host declares its identity itself (sshd SetEnv or host.toml in "
                "its workdir); env is the agent's environment there, e.g. CANN's variables",
            )
        # Passed as written (env K=V, no shell): "$LD_LIBRARY_PATH" copied from a set_env.sh
        # would replace the host's value with those characters.
        if unexpanded := _UNEXPANDED.search(v):
            raise fail(
                "env",
                f"{k} = {v!r}: {unexpanded.group().lstrip(':')} is not expanded (the value is "
                "passed as written); write the paths out",
            )
    address = f.get("address")
    if not address:
        raise ConfigError(f'{where}: {label}: missing field "address"; the SSH host to reach')
    port = f.get("port", 22)
    if not 1 <= port <= 65535:
        raise fail("port", f"{port} is out of range; use a TCP port 1-65535")
    user = f.get("user")
    if not user:
        raise ConfigError(f'{where}: {label}: missing field "user"; the SSH login name')
    key_raw = f.get("key")
    if not key_raw:
        raise ConfigError(
            f'{where}: {label}: missing field "key"; the private key file for SSH key auth'
        )
    key = _resolve(key_raw, base)
    if not key.is_file():
        raise fail(
            "key",
            f"key file {key} does not exist; create it (ssh-keygen -t ed25519) or fix the path",
        )
    policy = f.get("host_key_policy", "strict")
    if policy not in HOST_KEY_POLICIES:
        raise fail(
            "host_key_policy",
            f'{policy!r}; use "strict" (known_hosts only) or '
            '"accept-new" (lab opt-in: record unknown keys)',
        )
    known_hosts = _resolve(f.get("known_hosts", "~/.ssh/known_hosts"), base)
    if policy == "strict" and not known_hosts.is_file():
        raise fail(
            "known_hosts",
            f"{known_hosts} does not exist and host_key_policy is strict; record the host key "
            f"(ssh-keyscan -p {port} {address} >> {known_hosts}) or opt in with "
            'host_key_policy = "accept-new"',
        )
    workdir = f.get("workdir", DEFAULT_SSH_WORKDIR)
    if not workdir or workdir.startswith("~"):
        raise fail(
            "workdir",
            f"{workdir!r}; use an absolute path or one relative to the remote home (no ~)",
        )
    return HostSpec(
        **common,
        env=tuple(sorted(env.items())),
        set_env=_set_env(f, env, fail),
        address=address,
        port=port,
        user=user,
        key=key,
        host_key_policy=policy,
        known_hosts=known_hosts,
        workdir=workdir,
    )


def _set_env(f: Mapping[str, Any], env: Mapping[str, str], fail) -> tuple[str, ...]:
    """An SSH host's CANN set-up script candidates (HostSpec.set_env): the one ``set_env``
    names; none for ``set_env = ""``; without it, the set_env.sh beside $ASCEND_HOME_PATH of its
    env, then the one above it (CANN's ascend-toolkit/set_env.sh of ascend-toolkit/latest)."""
    if "set_env" in f:
        path = f["set_env"]
        if not path:
            return ()
        if unexpanded := _UNEXPANDED.search(path):
            raise fail(
                "set_env",
                f"{path!r}: {unexpanded.group().lstrip(':')} is not expanded; write the path out",
            )
        if not path.startswith("/"):
            raise fail(
                "set_env",
                f"{path!r}: give the absolute path of CANN's {SET_ENV_FILE} on the host (e.g. "
                f'/usr/local/Ascend/ascend-toolkit/{SET_ENV_FILE}), or "" for none',
            )
        return (path,)
    home = env.get("ASCEND_HOME_PATH", "")
    if not home.startswith("/"):
        return ()
    home = posixpath.normpath(home)
    beside = posixpath.join(home, SET_ENV_FILE)
    above = posixpath.join(posixpath.dirname(home), SET_ENV_FILE)
    return (beside, above) if above != beside else (beside,)


def _resolve(value: str, base: Path) -> Path:
    p = Path(os.path.expanduser(value))
    return p if p.is_absolute() else (base / p)


# ---------------------------------------------------------------------------------------------


# The embedded default pool: emulated hosts on this machine, no SSH and no file needed.
_DEFAULT_POOL = (
    ("emu-a2-01", "Ascend910B1", 2),
    ("emu-a2-02", "Ascend910B1", 2),
    ("emu-310b-01", "Ascend310B1", 1),
)


def default_inventory(workroot: str | os.PathLike[str]) -> Inventory:
    """The embedded default pool over the local transport: two Ascend910B1 hosts with two devices
    each and one Ascend310B1 with one device, each with its own work directory under
    ``workroot``. Each emulated host declares its identity through its env (like sshd SetEnv)."""
    root = Path(workroot).absolute()
    hosts = [
        HostSpec(
            name=name,
            soc=soc,
            devices=devices,
            transport="local",
            python=sys.executable,
            workdir=str(root / name),
            tags=("emulated", "default"),
            env=(("LSG_EMULATED_DEVICES", str(devices)), ("LSG_EMULATED_SOC", soc)),
        )
        for name, soc, devices in _DEFAULT_POOL
    ]
    return Inventory(hosts, None)


__all__ = [
    "HOST_KEY_POLICIES",
    "PIN_FIELDS",
    "TRANSPORTS",
    "HostSpec",
    "Inventory",
    "Slot",
    "default_inventory",
    "inventory_from_dict",
    "load_inventory",
]
