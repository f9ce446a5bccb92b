"""An SSH lab on this machine: real OpenSSH sshd instances on loopback, for the SSH transport.

``farm lab up [--hosts N] [--root lab]`` starts N sshd instances, each on its own loopback
address 127.0.0.2, 127.0.0.3, ... (where the OS cannot bind those, all on 127.0.0.1) and a free
port, with

* its own generated host key (ed25519), recorded in ``<root>/known_hosts``, so the lab inventory
  uses the ``strict`` host-key policy;
* one generated user key (``<root>/keys/user_ed25519``) in every host's own authorized_keys;
* its own declared identity through sshd_config
  ``SetEnv LSG_EMULATED_SOC=... LSG_EMULATED_DEVICES=...``
  (default N=3: two Ascend910B1 with 2 devices, one Ascend310B1 with 1);
* ``StrictModes no``, ``UsePAM no``, public-key auth only, logging into ``hosts/<name>/sshd.log``;
* a python for the host, ``hosts/<name>/bin/python``: a wrapper that runs this farm's python
  (``sys.executable``). It exists so a test can take a package away from one host (below);
* a work directory ``hosts/<name>/work``;

and writes ``<root>/inventory.toml`` (accepted by :func:`farm.pool.inventory.load_inventory`).
``farm lab down`` stops them, and every farm agent of their work directories: an agent whose SSH
session is gone (a hung case's, after the orchestrator hung up) is no longer under its sshd, so
the lab also finds agents by their pid files (``work/agents/<pid>.json``, written by the agent) and
by their command line (``-m farm.agent ... --workdir <the host's work directory>``), and kills
their process groups. It runs as root (login as root; creates /run/sshd if needed) or as a
normal user (sshd then only lets that user in, which is who the inventory names).

For fault tests: :meth:`Lab.kill_host` (SIGKILL of the host's sshd and every session and agent
under it), :meth:`Lab.freeze_host`/:meth:`Lab.thaw_host` (SIGSTOP/SIGCONT of the same tree),
:meth:`Lab.declare` to make a host *declare* another SoC or device count than the inventory
says, or an agent fault (``LSG_EMULATED_FAULT``, test-only), and :meth:`Lab.hide_module`, which
*emulates* a missing package: the host's python wrapper puts a directory first on PYTHONPATH in
which the module's import raises ImportError. The package is still installed; only that host's
python cannot import it. :meth:`Lab.reset_host` undoes all of it.

One module a job; this one is the lab itself (Lab) and re-exports the others' names:
    farm/pool/lab/layout.py        which hosts a lab of N has (the families), LabHost
    farm/pool/lab/sshd.py          sshd, its keys and config values, its address and port
    farm/pool/lab/processes.py     the process trees of a host, and the agents of its work directory
    farm/pool/lab/cann_install.py  the emulated CANN toolkit a host gets with `--cann emulated`
    farm/pool/lab/command.py       `farm lab`

"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from farm.pool.inventory import Inventory, load_inventory
from farm.pool.lab import cann_toolchain as lab_cann_toolchain
from farm.pool.lab.cann_install import emulated_cann_libs, install_cann, set_env_script
from farm.pool.lab.layout import MAX_HOSTS, LabHost, default_layout
from farm.pool.lab.npu_smi import default_chip
from farm.pool.lab.processes import (
    alive,
    host_agents,
    kill_agents,
    process_tree,
    signal_all,
    wait_gone,
)
from farm.pool.lab.sshd import (
    SSHD,
    banner,
    can_bind,
    cfg_path,
    free_port,
    is_sshd,
    key_pair,
    read_pid,
    sh_quote,
    sshd_path,
    sshd_version,
    toml_str,
)
from farm.util.errors import ConfigError
from golden.soc import UnknownSocError
from golden.soc import profile as soc_profile

DEFAULT_ROOT = Path("lab")
STATE_FILE = "lab.json"
START_TIMEOUT = 10.0


class Lab:
    """An SSH lab under ``root``. State lives in ``<root>/lab.json``."""

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
        self.root = Path(root).absolute()
        self.hosts: dict[str, LabHost] = {}
        self.user = getpass.getuser()
        self.python = sys.executable
        self.sshd = sshd_path() or SSHD
        state = self.root / STATE_FILE
        if state.is_file():
            self._load(state)

    # -- state ----------------------------------------------------------------------------------

    @property
    def inventory_path(self) -> Path:
        return self.root / "inventory.toml"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def user_key(self) -> Path:
        return self.root / "keys" / "user_ed25519"

    def _load(self, path: Path) -> None:
        data = json.loads(path.read_text())
        self.user = data.get("user", self.user)
        self.python = data.get("python", self.python)
        self.sshd = data.get("sshd", self.sshd)
        self.hosts = {h["name"]: LabHost(**h) for h in data.get("hosts", [])}

    def _save(self) -> None:
        data = {
            "version": 1,
            "user": self.user,
            "python": self.python,
            "sshd": self.sshd,
            "hosts": [asdict(h) for h in self.hosts.values()],
        }
        tmp = self.root / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.root / STATE_FILE)

    def host(self, name: str) -> LabHost:
        try:
            return self.hosts[name]
        except KeyError:
            known = ", ".join(self.hosts) or "(none: run farm lab up)"
            raise ConfigError(f"lab {self.root}: no host {name!r}; lab hosts: {known}") from None

    def inventory(self) -> Inventory:
        return load_inventory(self.inventory_path)

    # -- up / down ------------------------------------------------------------------------------

    def up(
        self,
        hosts: int = 3,
        *,
        layout: list[tuple[str, str, int]] | None = None,
        python: str | None = None,
        cann: str = "",
    ) -> Inventory:
        """Start the lab (stopping a previous one under the same root) and return its inventory.

        ``layout``: explicit (name, soc, devices) per host instead of the default cycle.
        ``cann``: "emulated" gives every host a CANN of its own in place of a real one: the
        emulated ACL runtime in ``hosts/<name>/Ascend/ascend-toolkit/latest/lib64`` from this
        checkout's build, with ``opp/vendors`` empty (the operator package is built and installed
        by a run, ``--target ascend``, never into CANN's vendors), CANN's set-up script
        ``ascend-toolkit/set_env.sh`` (ASCEND_HOME_PATH, ASCEND_OPP_PATH, LD_LIBRARY_PATH, PATH,
        PYTHONPATH, ... as CANN's exports them), and the version files of the toolkit, the
        driver and the firmware (``emulated-<farm version>``). As on an Atlas host, an SSH
        session there has none of CANN's variables: the lab's inventory names the script
        (``set_env``), and the farm sources it for the agent and the build; the acl backend then
        finds CANN as it does on an Atlas host.

        Every host has a stand-in ``npu-smi`` (farm/pool/lab/npu_smi.py) whose chips a test puts
        into states with :meth:`set_chip`.
        """
        if cann not in ("", "emulated"):
            raise ConfigError(f"lab: --cann {cann!r}; use 'emulated' (or leave it out)")
        runtime = emulated_cann_libs() if cann else None
        sshd = sshd_path()
        if sshd is None:
            where = os.environ.get("FARM_SSHD") or SSHD
            raise ConfigError(
                f"lab: OpenSSH server not found at {where}; install it (apt-get install "
                "openssh-server) to run the SSH lab, or use the embedded local pool"
            )
        if hosts < 1 and not layout:
            raise ConfigError(f"lab: --hosts {hosts}; the lab needs at least 1 host")
        if max(hosts, len(layout or ())) > MAX_HOSTS:
            raise ConfigError(
                f"lab: --hosts {max(hosts, len(layout or ()))}; at most {MAX_HOSTS} (each is an "
                "sshd on this machine; for a large pool's cost, benchmarks/scale.py emulates its "
                "hosts without one)"
            )
        if self.hosts:
            self.down()
        self.sshd = sshd
        self.python = python or sys.executable
        self.user = getpass.getuser()
        if os.geteuid() == 0:
            # Privilege separation chroots into /run/sshd (the Debian service would create it).
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        if layout is None:
            layout = default_layout(hosts)
        for name, soc, _ in layout:
            try:
                soc_profile(soc)
            except UnknownSocError as exc:
                raise ConfigError(f"lab host {name}: {exc}") from None

        self.root.mkdir(parents=True, exist_ok=True)
        user_pub = key_pair(self.user_key, f"farm-lab-user@{self.user}")
        use_distinct = can_bind("127.0.0.2")
        self.hosts = {}
        known_lines = []
        for i, (name, soc, devices) in enumerate(layout):
            address = f"127.0.0.{2 + i}" if use_distinct and i < 250 else "127.0.0.1"
            hdir = self.root / "hosts" / name
            (hdir / "work").mkdir(parents=True, exist_ok=True)
            host_pub = key_pair(hdir / "ssh_host_ed25519_key", f"farm-lab-host-{name}")
            (hdir / "authorized_keys").write_text(user_pub + "\n")
            h = LabHost(name, soc, devices, address, free_port(address), str(hdir))
            if runtime is not None:
                h.cann_home = str(install_cann(hdir / "Ascend", runtime, self.python))
            self.hosts[name] = h
            key_type, key_b64 = host_pub.split()[:2]
            known_lines.append(f"[{address}]:{h.port} {key_type} {key_b64}\n")
        self.known_hosts.write_text("".join(known_lines))
        self._write_inventory()
        self._save()
        try:
            for h in self.hosts.values():
                self._write_host_files(h)
                self._start(h)
        except BaseException:
            self.down()
            raise
        self._save()
        return self.inventory()

    def down(self) -> None:
        """Stop every sshd of the lab (and its sessions), and every agent of its hosts' work
        directories, even one whose session is gone. Files stay."""
        for h in self.hosts.values():
            self._stop(h, kill_sessions=True)
            kill_agents(h.path / "work")
        if self.hosts and self.root.is_dir():
            self._save()

    def agents(self, name: str) -> list[int]:
        """The pids of the farm agents running for lab host ``name`` (see host_agents)."""
        return host_agents(self.host(name).path / "work")

    def running(self) -> dict[str, bool]:
        return {name: alive(h.pid) for name, h in self.hosts.items()}

    # -- files ----------------------------------------------------------------------------------

    def _write_inventory(self) -> None:
        lines = [
            "# Written by `farm lab up`: SSH hosts emulated on loopback by real sshd instances.",
            "# Regenerated on every `farm lab up`; edit farm/pool/lab/core.py instead.",
            "[defaults]",
            'transport = "ssh"',
            f"user = {toml_str(self.user)}",
            f"key = {toml_str(str(self.user_key))}",
            'host_key_policy = "strict"',
            f"known_hosts = {toml_str(str(self.known_hosts))}",
            "connect_timeout = 5.0",
            "",
        ]
        for h in self.hosts.values():
            lines += [
                "[[host]]",
                f"name = {toml_str(h.name)}",
                f"address = {toml_str(h.address)}",
                f"port = {h.port}",
                f"soc = {toml_str(h.soc)}",
                f"devices = {h.devices}",
                f"python = {toml_str(str(h.path / 'bin' / 'python'))}",
                f"workdir = {toml_str(str(h.path / 'work'))}",
            ]
            if h.cann_home:  # CANN's own set-up script, as an Atlas host's inventory names it
                lines.append(f"set_env = {toml_str(str(set_env_script(h.cann_home)))}")
            lines += ['tags = ["lab"]', ""]
        self.inventory_path.write_text("\n".join(lines))

    def _sshd_config(self, h: LabHost) -> str:
        env = [f"LSG_EMULATED_SOC={h.declared_soc}", f"LSG_EMULATED_DEVICES={h.declared_devices}"]
        if h.fault:
            env.append(f"LSG_EMULATED_FAULT={h.fault}")
        if h.arch:
            env.append(f"LSG_EMULATED_ARCH={h.arch}")
        env.append(f"LSG_NPU_SMI={h.path / 'bin' / 'npu-smi'}")
        lines = [
            f"# farm lab host {h.name}: generated by farm/pool/lab/core.py",
            f"ListenAddress {h.address}:{h.port}",
            f"HostKey {cfg_path(h.path / 'ssh_host_ed25519_key')}",
            f"PidFile {cfg_path(h.path / 'sshd.pid')}",
            f"AuthorizedKeysFile {cfg_path(h.path / 'authorized_keys')}",
            f"AllowUsers {self.user}",
            "AuthenticationMethods publickey",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "StrictModes no",
            "PermitUserEnvironment no",
            # Each NAME=value is one word to sshd: a value with a space (a lab under "My farm")
            # is quoted, as the paths above are.
            f"SetEnv {' '.join(map(cfg_path, env))}",
            "Subsystem sftp internal-sftp",
            "LogLevel VERBOSE",
            "PrintMotd no",
            "PrintLastLog no",
            "UseDNS no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "AllowAgentForwarding no",
            "PermitTunnel no",
            "MaxSessions 64",
            "MaxStartups 64:30:128",
        ]
        if sshd_version(self.sshd) >= (9, 8):
            # Killed sessions are part of the fault tests: do not penalize the client for them.
            lines.append("PerSourcePenalties no")
        return "\n".join(lines) + "\n"

    def _write_host_files(self, h: LabHost) -> None:
        (h.path / "sshd_config").write_text(self._sshd_config(h))
        hide = h.path / "hide"
        if hide.exists():
            shutil.rmtree(hide)
        script = ["#!/bin/sh", f"# python of farm lab host {h.name}: runs the farm's python."]
        if h.hidden:
            for module in h.hidden:
                (hide / module).mkdir(parents=True)
                message = (
                    f"{module} is hidden on farm lab host {h.name}: the lab emulates a missing "
                    "package (farm.pool.lab.core.Lab.hide_module)"
                )
                (hide / module / "__init__.py").write_text(f"raise ImportError({message!r})\n")
            script.append(
                f"# EMULATED missing package(s): {', '.join(h.hidden)} (installed, but hidden)"
            )
            script.append(f"PYTHONPATH={sh_quote(str(hide))}${{PYTHONPATH:+:$PYTHONPATH}}")
            script.append("export PYTHONPATH")
        script.append(f'exec {sh_quote(self.python)} "$@"')
        wrapper = h.path / "bin" / "python"
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text("\n".join(script) + "\n")
        wrapper.chmod(0o755)
        self._write_npu_smi(h)

    def _write_npu_smi(self, h: LabHost) -> None:
        """The host's stand-in npu-smi (farm/pool/lab/npu_smi.py) and its chips' state: one
        healthy chip per declared device unless a test set them (set_chip)."""
        name = h.declared_soc.removeprefix("Ascend")
        while len(h.chips) < h.declared_devices:
            h.chips.append(default_chip(name))
        del h.chips[h.declared_devices :]
        state = h.path / "npu-state.json"
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": "emulated", "chips": h.chips}, indent=1))
        tmp.replace(state)
        tool = h.path / "bin" / "npu-smi"
        tool.write_text(
            f"#!/bin/sh\n# npu-smi of farm lab host {h.name}: the lab's stand-in (TEST-ONLY)\n"
            f'exec {sh_quote(self.python)} -m farm.pool.lab.npu_smi {sh_quote(str(state))} "$@"\n'
        )
        tool.chmod(0o755)

    # -- processes ------------------------------------------------------------------------------

    def _start(self, h: LabHost) -> None:
        cfg = h.path / "sshd_config"
        log = h.path / "sshd.log"
        test = subprocess.run(
            [self.sshd, "-t", "-f", str(cfg)], capture_output=True, text=True, check=False
        )
        if test.returncode != 0:
            raise ConfigError(
                f"lab host {h.name}: sshd rejects {cfg}: {(test.stderr or test.stdout).strip()}"
            )
        pidfile = h.path / "sshd.pid"
        pidfile.unlink(missing_ok=True)
        subprocess.run(
            [self.sshd, "-f", str(cfg), "-E", str(log)],
            check=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            pid = read_pid(pidfile)
            if pid and banner(h.address, h.port):
                h.pid = pid
                return
            time.sleep(0.02)
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        raise ConfigError(
            f"lab host {h.name}: sshd did not come up on {h.address}:{h.port} within "
            f"{START_TIMEOUT:g}s; {log}: {' | '.join(tail) or 'empty'}"
        )

    def _stop(self, h: LabHost, *, kill_sessions: bool) -> None:
        pid = h.pid or read_pid(h.path / "sshd.pid")
        if pid and alive(pid) and is_sshd(pid):
            tree = process_tree(pid)
            signal_all(tree, signal.SIGCONT)  # a frozen host must be able to die
            if kill_sessions:
                signal_all(tree, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGTERM)
            if not wait_gone(pid, 3.0):
                signal_all([pid], signal.SIGKILL)
                wait_gone(pid, 2.0)
        h.pid = None

    def start_host(self, name: str) -> None:
        """(Re)start a host's sshd with its current configuration (e.g. after kill_host)."""
        h = self.host(name)
        self._stop(h, kill_sessions=False)
        self._write_host_files(h)
        self._start(h)
        self._save()

    def kill_host(self, name: str) -> None:
        """SIGKILL the host's sshd and everything under it (sessions, agents): a crashed host."""
        h = self.host(name)
        pid = h.pid
        if pid and alive(pid):
            signal_all(process_tree(pid), signal.SIGKILL)
            wait_gone(pid, 3.0)
        kill_agents(h.path / "work")  # a crashed host loses the agents its sessions left, too
        h.pid = None
        self._save()

    def freeze_host(self, name: str) -> None:
        """SIGSTOP the host's sshd and everything under it: a hung host (connections stay open)."""
        h = self.host(name)
        if not (h.pid and alive(h.pid)):
            raise ConfigError(f"lab host {name} is not running; start_host({name!r}) first")
        signal_all([h.pid], signal.SIGSTOP)  # the listener first: no new children meanwhile
        for _ in range(2):
            signal_all(process_tree(h.pid), signal.SIGSTOP)
        signal_all(host_agents(h.path / "work"), signal.SIGSTOP)  # those whose session is gone

    def thaw_host(self, name: str) -> None:
        h = self.host(name)
        if h.pid and alive(h.pid):
            signal_all(process_tree(h.pid), signal.SIGCONT)
        signal_all(host_agents(h.path / "work"), signal.SIGCONT)

    def declare(
        self,
        name: str,
        *,
        soc: str | None = None,
        devices: int | None = None,
        fault: str | None = None,
        arch: str | None = None,
    ) -> None:
        """Change what the host *declares* about itself (its sshd SetEnv) and restart its sshd.

        ``soc``/``devices`` other than the inventory's make an identity mismatch; ``fault`` is a
        test-only agent fault such as ``"crash-after:2"`` or ``"corrupt-reply-after:2"`` (see
        farm/agent/identity.py); ``arch`` a CPU architecture other than this machine's
        (``""``: this machine's). New sessions see the change; running ones keep the old one.
        """
        h = self.host(name)
        if arch is not None:
            h.arch = arch
        if soc is not None:
            h.declared_soc = soc
        if devices is not None:
            h.declared_devices = devices
        h.fault = fault
        self.start_host(name)

    def set_chip(
        self,
        name: str,
        device: int,
        *,
        health: str | None = None,
        held_mb: int | None = None,
        missing: bool | None = None,
    ) -> None:
        """Put one chip of a host into a state its npu-smi reports from now on (no restart):
        ``health`` ("OK", "Warning", "Alarm", "Critical"), ``held_mb`` of its memory held by a
        process that is not the farm's (0: none), ``missing`` (the driver lost it)."""
        h = self.host(name)
        self._write_npu_smi(h)  # one entry per declared device
        chip = h.chips[device]
        if health is not None:
            chip["health"] = health
        if held_mb is not None:
            other = {"pid": 999_999, "name": "someone-elses-job", "memory": held_mb}
            chip["processes"] = [other] if held_mb else []
            chip["hbm_used"] = 3150 + held_mb
        if missing is not None:
            chip["missing"] = missing
        self._write_npu_smi(h)
        self._save()

    def fail_cann_build(self, name: str, message: str | None) -> None:
        """Make the host's stand-in CANN build fail with ``message`` as its compiler error
        (None: build again); the host needs --cann emulated."""
        h = self.host(name)
        if not h.cann_home:
            raise ConfigError(f"lab host {name} has no CANN: start the lab with cann='emulated'")
        marker = Path(h.cann_home) / lab_cann_toolchain.FAIL_FILE
        if message is None:
            marker.unlink(missing_ok=True)
        else:
            marker.write_text(message + "\n")

    def hide_module(self, name: str, module: str = "ml_dtypes") -> None:
        """Emulate a missing python package on one host: its python can no longer import
        ``module`` (the package stays installed; the wrapper shadows it). No restart needed."""
        h = self.host(name)
        if module not in h.hidden:
            h.hidden.append(module)
        self._write_host_files(h)
        self._save()

    def reset_host(self, name: str) -> None:
        """Back to normal: declared identity = inventory, no fault, nothing hidden, running, and
        no agent left from before."""
        h = self.host(name)
        h.declared_soc, h.declared_devices, h.fault, h.hidden = h.soc, h.devices, None, []
        h.arch, h.chips = "", []
        if h.cann_home:
            (Path(h.cann_home) / lab_cann_toolchain.FAIL_FILE).unlink(missing_ok=True)
        self.start_host(name)
        kill_agents(h.path / "work")  # what a test left running there (hung, or frozen)

    def status_rows(self) -> list[dict[str, str]]:
        rows = []
        for h in self.hosts.values():
            declared = f"{h.declared_soc}x{h.declared_devices}"
            rows.append(
                {
                    "host": h.name,
                    "address": f"{h.address}:{h.port}",
                    "soc": f"{h.soc}x{h.devices}",
                    "declares": declared + (f" fault={h.fault}" if h.fault else ""),
                    "hidden": ",".join(h.hidden),
                    "running": "yes" if alive(h.pid) else "no",
                }
            )
        return rows


# ---------------------------------------------------------------------------------------------
# module-level API


def lab_up(root: str | os.PathLike[str] = DEFAULT_ROOT, hosts: int = 3, **kwargs) -> Inventory:
    return Lab(root).up(hosts, **kwargs)


def lab_down(root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
    Lab(root).down()


def kill_host(name: str, root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
    Lab(root).kill_host(name)


def freeze_host(name: str, root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
    Lab(root).freeze_host(name)


def thaw_host(name: str, root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
    Lab(root).thaw_host(name)


__all__ = [
    "Lab",
    "LabHost",
    "freeze_host",
    "host_agents",
    "kill_agents",
    "kill_host",
    "lab_down",
    "lab_up",
    "process_tree",
    "sshd_path",
    "thaw_host",
]
