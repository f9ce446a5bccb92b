"""The identity a test hands farm.agent.execute.run_case: of the host it uses only the name, the
SoC and the device count."""

from __future__ import annotations

from farm.agent.identity import Identity


def host_identity(soc: str = "Ascend910B1", host: str = "test", devices: int = 1) -> Identity:
    """An emulated host's identity with only what run_case reads filled in."""
    return Identity(host=host, soc=soc, devices=devices, source="test", emulated=True, python="")
