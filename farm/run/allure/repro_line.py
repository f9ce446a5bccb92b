"""The `farm repro` line on a case's page in the report: the one command that reruns the case
alone on the package its run used (farm/run/repro.py takes it as it is).

    run_options(plan)                   the run's operator and pool as `farm repro` options
    repro_command(record, run_options)  `farm repro CASE_ID [--cases FILE] [options]`

A case of a case file is found through that file (`--cases FILE`: its origin is "<file
name>#<n>", suites/casefile_entries.py); a tier's and an explored case without one.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def run_options(plan: Any) -> dict[str, Any]:
    """What `farm repro` needs of a run (a farm/run/plan.py Plan): its package's target and
    planted bug, its backend, its inventory file and its case files."""
    from farm.pool import build

    package = getattr(plan, "package", None) or {}
    inventory = (getattr(plan, "inventory", None) or {}).get("source")
    return {
        "target": str(package.get("target") or ""),
        "plant_bug": build.bug_in_archive(str(package.get("file") or "")),
        "backend": str(getattr(plan, "backend", "") or ""),
        "inventory": "" if inventory in (None, "", "embedded") else str(inventory),
        "case_files": [str(f) for f in (getattr(plan, "selection", None) or {}).get("files") or ()],
    }


def repro_command(record: Mapping, options: Mapping[str, Any]) -> str:
    """The command line that reruns the case of `record` as its run ran it."""
    from farm.pool import build
    from farm.util import targets

    argv = ["farm", "repro", str(record.get("case_id", ""))]
    for path in _case_files(record, options.get("case_files") or ()):
        argv += ["--cases", path]
    target = options.get("target") or build.DEFAULT_TARGET
    if target != build.DEFAULT_TARGET:
        argv += ["--target", str(target)]
    if options.get("plant_bug"):
        argv += ["--plant-bug", str(options["plant_bug"])]
    if options.get("inventory"):
        argv += ["--inventory", str(options["inventory"])]
    backend = options.get("backend")
    if backend and backend != targets.default_backend(str(target)):
        argv += ["--backend", str(backend)]
    return shlex.join(argv)


def _case_files(record: Mapping, files: Sequence[str]) -> list[str]:
    """The run's case files the case came from: the one its origin names ("<file name>#<n>"),
    or, where none matches (an origin changed on the way), every one of them."""
    origin = str(record.get("origin") or "")
    if "#" not in origin or not files:
        return []
    name = origin.rsplit("#", 1)[0]
    named = [f for f in files if Path(f).name == name]
    return named or list(files)
