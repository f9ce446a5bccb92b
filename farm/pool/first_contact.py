"""`farm hosts --check --deep`: first contact with CANN on every host, said plainly.

The pool is prepared as `farm run --target ascend --backend acl` prepares it (the CANN package
built where CANN is and installed per version, the agent bundle deployed, each host's health
checked), then each healthy host runs farm/agent/first_contact.py in the acl backend's agent
environment (CANN's set_env.sh sourced, the inventory's env, the package's directories) and says,
a line a check, whether each assumption of the device path holds there, and the fix where it does
not. A host the health checks turned away gets one failed line with their reason; a chip set
aside, one each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from farm.agent.first_contact import FAIL, Check
from farm.pool import deploy
from farm.pool.inventory import HostSpec, Inventory
from farm.pool.transport import open_transport
from farm.pool.transport.commands import host_argv
from farm.util.errors import FarmError

TIMEOUT = 600.0  # one case on the device, the libraries loaded and read: seconds, not minutes


@dataclass(frozen=True)
class HostChecks:
    host: str
    checks: tuple[Check, ...]

    @property
    def failed(self) -> bool:
        return any(c.status == FAIL for c in self.checks)


def run_on_host(host: HostSpec, info: dict) -> HostChecks:
    """farm/agent/first_contact.py on ``host`` (its plan entry ``info``: bundle, agent env)."""
    argv = [host.python, "-m", "farm.agent.first_contact"]
    if host.accept_health:
        argv += ["--accept-health", ",".join(host.accept_health)]
    env = tuple(sorted((info.get("agent_env") or {}).items()))
    cwd = deploy.versions_dir(host, info["bundle_sha"])
    try:
        transport = open_transport(host)
        try:
            rc, out, err = transport.run_argv(host_argv(host, argv, env), cwd=cwd, timeout=TIMEOUT)
        finally:
            transport.close()
    except FarmError as exc:
        return HostChecks(host.name, (Check("agent", FAIL, str(exc), "see the message"),))
    checks = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                checks.append(Check(**json.loads(line)))
            except (ValueError, TypeError):
                continue
    if rc != 0 or not checks:
        tail = " | ".join(err.strip().splitlines()[-3:]) or f"exit status {rc}"
        checks.append(
            Check(
                "agent",
                FAIL,
                f"the first-contact check stopped (exit {rc}): {tail}",
                "run it by hand on the host: python -m farm.agent.first_contact",
            )
        )
    return HostChecks(host.name, tuple(checks))


def check_pool(
    inventory: Inventory,
    plan_hosts: dict[str, dict],
    unhealthy: dict[str, str],
    set_aside: dict[str, str],
    run: Callable[[HostSpec, dict], HostChecks] = run_on_host,
) -> list[HostChecks]:
    """Every run host's checks, in the inventory's order."""
    found = []
    for spec in inventory.hosts:
        if spec.name in unhealthy:
            found.append(HostChecks(spec.name, (Check("health", FAIL, unhealthy[spec.name]),)))
            continue
        checks = list(run(spec, plan_hosts[spec.name]).checks)
        said: set[str] = set()  # chips set aside for one reason (missing ones): said once
        for slot, why in sorted(set_aside.items()):
            if slot.split(":")[0] == spec.name and why not in said:
                said.add(why)
                checks.append(Check("chip", FAIL, why))
        found.append(HostChecks(spec.name, tuple(checks)))
    return found
