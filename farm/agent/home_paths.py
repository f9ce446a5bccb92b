"""Paths an agent is given relative to its host user's home.

An inventory's relative ``workdir`` is relative to the home directory, where SSH sessions and
SFTP start; what the orchestrator derives from it (the operator's library, the CANN package's
install directory) is relative too. The agent runs in its bundle's directory, so it makes them
absolute against the home before it uses them.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

CUSTOM_OPP_ENV = "ASCEND_CUSTOM_OPP_PATH"  # CANN's list of custom operator package directories
# The farm's own: the vendor directory the package under test was installed into. Where it is
# set the operator comes from there or not at all (never from another package CANN has).
PACKAGE_OPP_ENV = "LSG_PACKAGE_OPP"


def from_home(path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(os.path.expanduser("~"), path)


def custom_opp_from_home(environ: MutableMapping[str, str]) -> None:
    """Each relative entry of $ASCEND_CUSTOM_OPP_PATH and $LSG_PACKAGE_OPP made absolute against
    the home."""
    for name in (CUSTOM_OPP_ENV, PACKAGE_OPP_ENV):
        value = environ.get(name)
        if value:
            environ[name] = ":".join(from_home(p) if p else p for p in value.split(":"))
