"""The operator package of each CPU architecture a run's hosts have.

A run starts from one package (what ``farm run`` built, or what a caller gave); its manifest says
its architecture. A host of another architecture gets the package of its own, built for it from
the same sources, target and planted bug when the run may build (``farm build --arch``: the CPU
targets cross-compile), once per run whatever the number of such hosts. A host whose
architecture cannot have one is set aside with the line that says why and which ``farm build``
to run; the rest of the pool runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from farm.errors import FarmError
from farm.pool import deploy

# arch -> the package built for it (raises FarmError when it cannot be built)
Builder = Callable[[str], Path]


class NoPackage(FarmError):
    """A host's architecture has no package for the run; the message names the fix."""


class Packages:
    def __init__(self, package: Path, build_for: Builder | None = None) -> None:
        self.first = package
        self.target = deploy.package_target(package)
        self._by_arch: dict[str, Path] = {deploy.package_arch(package): package}
        self._cannot: dict[str, str] = {}
        self._build_for = build_for
        self._lock = threading.Lock()

    @property
    def by_arch(self) -> dict[str, Path]:
        """The packages found so far, by architecture."""
        with self._lock:
            return dict(self._by_arch)

    def for_arch(self, arch: str, host: str) -> Path:
        """The package for a host of ``arch``, built on first need; NoPackage when there is none."""
        from farm import build

        with self._lock:
            if arch in self._by_arch:
                return self._by_arch[arch]
            if arch not in self._cannot:
                self._cannot[arch] = self._why_none(arch, build.ARCHES)
                if not self._cannot[arch]:
                    return self._by_arch[arch]
            raise NoPackage(f"host {host} is {arch}: {self._cannot[arch]}", host=host)

    def _why_none(self, arch: str, arches: tuple[str, ...]) -> str:
        """Build the package of ``arch`` (into _by_arch) and return ""; else say why there is
        none and which farm build to run."""
        command = f"farm build --target {self.target} --arch {arch}"
        if arch not in arches:
            return (
                f"no {self.target} package can be built for {arch} (farm build --arch takes "
                + ", ".join(arches)
                + ")"
            )
        if self._build_for is None:
            return (
                f"the run's package {self.first.name} is for {deploy.package_arch(self.first)}; "
                f"give the run one for {arch} ({command})"
            )
        try:
            self._by_arch[arch] = self._build_for(arch)
        except FarmError as exc:
            said = (str(exc).strip().splitlines() or ["no message"])[0]
            return f"there is no {self.target} package for {arch}: {command} failed: {said}"
        return ""


__all__ = ["Builder", "NoPackage", "Packages"]
