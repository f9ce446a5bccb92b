"""Inventories the tests write: emulated hosts of this machine on the local transport."""

from __future__ import annotations

import sys
from pathlib import Path


def local_910b_hosts(
    tmp_path: Path, names: tuple[str, ...], python: str | Path = sys.executable, extra: str = ""
) -> Path:
    """An inventory of one-device Ascend910B1 hosts named ``names``, each working in
    ``tmp_path/<name>`` and running its agent with ``python``; ``extra``: more TOML lines of every
    host."""
    hosts = "".join(
        f'[[host]]\nname = "{name}"\ntransport = "local"\nsoc = "Ascend910B1"\ndevices = 1\n'
        f'python = "{python}"\nworkdir = "{tmp_path / name}"\n{extra}'
        'env = { LSG_EMULATED_SOC = "Ascend910B1", LSG_EMULATED_DEVICES = "1" }\n'
        for name in names
    )
    path = tmp_path / "inventory.toml"
    path.write_text(hosts)
    return path
