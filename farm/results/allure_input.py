"""What `allure generate` reads of a run's allure-results (`allure_input`): hard links to its
files, less the fixture containers that say nothing, with the triage's lines first in the
overview's Metadata."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from farm.run.allure.environment import properties_text

# A fixture container that says something: one of its fixtures failed or broke.
_FIXTURE_FAILED = re.compile(rb'"status"\s*:\s*"(?:failed|broken)"')


def allure_input(results_dir: Path, view: Path, metadata: Mapping[str, str] | None = None) -> Path:
    """The directory `allure generate` reads: `view`, holding hard links to the files of
    `results_dir` (copies where a link cannot be made) less the fixture containers whose
    fixtures all passed; `metadata` (the triage's lines) put first in its environment.properties,
    the overview's Metadata (a file of its own: the run's results are not changed).

    allure-pytest writes a container per fixture per test, and a session fixture's container
    names every test of its worker as a child: Allure then lists the farm's session fixtures
    (plan, dispatcher, records) in the set-up and tear-down of every case, ~1.6 KB in each case's
    data file and 13,000 files to read for a nightly run, for nothing a person reads. A fixture
    that failed or broke keeps its container, and so its place in the report. (The farm's runs
    no longer write the others, farm/run/allure/output.py; results written without it, by
    an older run or an allure-pytest it does not recognise, are read the same way.)"""
    try:
        view.mkdir(parents=True)
        with os.scandir(results_dir) as entries:
            for entry in entries:
                if not entry.is_file() or entry.name.endswith(".tmp"):
                    continue
                if entry.name.endswith("-container.json"):
                    with open(entry.path, "rb") as fh:
                        if not _FIXTURE_FAILED.search(fh.read()):
                            continue
                try:
                    os.link(entry.path, view / entry.name)
                except OSError:  # another file system, or links not allowed
                    shutil.copyfile(entry.path, view / entry.name)
        if metadata:
            _put_first(view / "environment.properties", metadata)
    except OSError as exc:  # Allure reads the results as they are
        sys.stderr.write(f"farm report: reading the allure-results whole: {exc}\n")
        return results_dir
    return view


def _put_first(properties: Path, entries: Mapping[str, str]) -> None:
    """environment.properties with `entries` before its own lines; replaced, never written
    through (it is a hard link to the run's own)."""
    try:
        own = properties.read_text(encoding="utf-8")
    except FileNotFoundError:
        own = ""
    properties.unlink(missing_ok=True)
    properties.write_text(properties_text(entries) + own, encoding="utf-8")
