"""The operator package each host of a run gets: the one of its CPU architecture, and for the
CANN package (target ascend) also of its CANN version.

A run starts from one package (what ``farm run`` built, or what a caller gave; none for the CANN
package when this machine has no CANN), whose manifest says what it is for. A host that needs
another gets one built for it — the CPU targets cross-compiled here from the same sources, target
and planted bug (``farm build --arch``), the CANN package on a host with that CANN
(farm/pool/cann_build.py) — once per run whatever the number of such hosts. A host that cannot
have one is set aside with the line that says why and what to run; the rest of the pool runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from farm.pool import deploy
from farm.util.errors import FarmError

# (arch, CANN version or None, the host asking) -> the package built for them; a FarmError when
# it cannot be built.
Builder = Callable[[str, "str | None", str], Path]
Key = tuple[str, "str | None"]


class NoPackage(FarmError):
    """A host has no package for the run; the message names the fix."""


class Packages:
    def __init__(
        self,
        package: Path | None,
        build_for: Builder | None = None,
        *,
        target: str = "",
    ) -> None:
        self.first = package
        self.target = deploy.package_target(package) if package else target
        self._by_key: dict[Key, Path] = {}
        if package is not None:
            self._by_key[self._key_of(package)] = package
        self._cannot: dict[Key, str] = {}
        self._build_for = build_for
        self._lock = threading.Lock()

    @property
    def cann(self) -> bool:
        """Whether the packages are CANN packages, one per (architecture, CANN version)."""
        return self.target == "ascend"

    def _key_of(self, package: Path) -> Key:
        cann = deploy.package_manifest(package).get("cann") if self.cann else None
        return deploy.package_arch(package), cann

    @property
    def by_arch(self) -> dict[str, Path]:
        """The packages found so far, by architecture (and CANN version: "aarch64 CANN 8.2.RC1")."""
        with self._lock:
            return {
                (arch if cann is None else f"{arch} CANN {cann}"): p
                for (arch, cann), p in self._by_key.items()
            }

    def for_host(self, platform: dict[str, Any], host: str) -> Path:
        """The package for a host of ``platform`` (hostops ``platform``: its arch and CANN),
        built on first need; NoPackage when there is none."""
        from farm.pool import build

        arch = platform["arch"]
        cann = platform.get("cann") if self.cann else None
        if self.cann and not cann:
            raise NoPackage(
                f"host {host} has no CANN (no ASCEND_HOME_PATH with a toolkit version in its "
                "agent's environment): the ascend package runs where CANN is; name CANN's "
                "set_env.sh in the host's inventory (set_env), or run a CPU target there",
                host=host,
            )
        key = (arch, cann)
        with self._lock:
            if key in self._by_key:
                return self._by_key[key]
            if key not in self._cannot:
                self._cannot[key] = self._why_none(key, host, build.ARCHES)
                if not self._cannot[key]:
                    return self._by_key[key]
            what = arch if cann is None else f"{arch} with CANN {cann}"
            raise NoPackage(f"host {host} is {what}: {self._cannot[key]}", host=host)

    def _why_none(self, key: Key, host: str, arches: tuple[str, ...]) -> str:
        """Build the package of ``key`` (into _by_key) and return ""; else say why there is none
        and what to run."""
        arch, cann = key
        command = f"farm build --target {self.target} --arch {arch}"
        if not self.cann and arch not in arches:
            return (
                f"no {self.target} package can be built for {arch} (farm build --arch takes "
                + ", ".join(arches)
                + ")"
            )
        if self._build_for is None:
            given = self.first.name if self.first else "none"
            return f"the run's package is {given}; give the run one for it ({command})"
        try:
            self._by_key[key] = self._build_for(arch, cann, host)
        except FarmError as exc:
            said = (str(exc).strip().splitlines() or ["no message"])[0]
            if self.cann:
                return f"the CANN package for it did not build: {said}"
            return f"there is no {self.target} package for {arch}: {command} failed: {said}"
        return ""


__all__ = ["Builder", "NoPackage", "Packages"]
