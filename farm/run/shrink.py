"""The search of `farm shrink` (farm/cli/shrink_command.py): greedy, over the smaller forms of a
failing case (suites/shrink.py), the first that fails the same way (``Signature``: the category,
and a rejection case's status) becoming the case, until none does or ``max_tries`` candidates
have run. A broken outcome is run once more; broken twice stops the search (``ShrinkBroken``).
``repro_command``: the line that reruns a shrunk case (farm/results/shrink_links.py too).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.util import targets
from farm.util.errors import FarmError
from suites import shrink as shrinking
from suites.case import Case

DEFAULT_MAX_TRIES = 200

Record = Mapping[str, Any]
Runner = Callable[[Case], Record]


class ShrinkBroken(FarmError):
    """A case or candidate came back broken (infrastructure) twice: the search cannot go on.
    `search`: where the search was when it stopped (None: before it began)."""

    search: Search | None = None


@dataclass(frozen=True)
class Signature:
    """How a case fails: what a smaller form must match to count as the same failure."""

    category: str | None
    status: int | None = None  # a rejection case's status; None for an accepted case

    @classmethod
    def of(cls, case: Case, record: Record) -> Signature | None:
        """The failure of `record`, or None when it did not fail."""
        if record.get("outcome") != "failed":
            return None
        return cls(record.get("category"), None if case.accepted else record.get("status"))

    @property
    def text(self) -> str:
        category = self.category or "uncategorised"
        return category if self.status is None else f"{category}, status {self.status}"


@dataclass
class Try:
    """One candidate run: its place in the search, the case, and the verdict."""

    n: int
    case: Case
    verdict: str  # "same": fails the same way; "passed"; "different": fails another way
    record: Record

    def to_json(self) -> dict:
        return {
            "n": self.n,
            "id": self.case.id,
            "shape": list(self.case.shape),
            "elements": shrinking.elements(self.case),
            "verdict": self.verdict,
            "outcome": self.record.get("outcome"),
            "category": self.record.get("category"),
            "status": self.record.get("status"),
        }


@dataclass
class Search:
    original: Case
    signature: Signature
    shrunk: Case
    tries: list[Try] = field(default_factory=list)
    exhausted: bool = False  # stopped at --max-tries with candidates left

    @property
    def tried(self) -> int:
        return len(self.tries)

    @property
    def steps(self) -> int:
        """Candidates taken (each failed the same way)."""
        return sum(t.verdict == "same" for t in self.tries)


def run_sure(run: Runner, case: Case, best: Case | None = None) -> Record:
    """`run(case)`, once more when it is broken; broken twice is ShrinkBroken."""
    record = run(case)
    if record.get("outcome") != "broken":
        return record
    record = run(case)
    if record.get("outcome") != "broken":
        return record
    so_far = (
        f"; the smallest failing form so far is {best.id} ({shrinking.describe(best)})"
        if best is not None
        else ""
    )
    raise ShrinkBroken(
        f"case {case.id} came back broken twice ({record.get('category')}: "
        f"{record.get('message')}): an infrastructure problem, not a verdict; check the pool "
        f"(`farm hosts --check`) and shrink again{so_far}"
    )


def search(
    case: Case,
    signature: Signature,
    run: Runner,
    *,
    max_tries: int = DEFAULT_MAX_TRIES,
    candidates: Callable[[Case], Iterable[Case]] = shrinking.candidates,
    on_try: Callable[[Try], None] | None = None,
) -> Search:
    """Greedy: from `case` (known to fail with `signature`), take the first candidate that fails
    the same way and start again from it, until none does or `max_tries` candidates were run.
    A candidate is run at most once (the same case gives the same verdict)."""
    found = Search(case, signature, case)
    seen = {case.id}
    while True:
        progressed = False
        for candidate in candidates(found.shrunk):
            if candidate.id in seen:
                continue
            if found.tried >= max_tries:
                found.exhausted = True
                return found
            seen.add(candidate.id)
            try:
                record = run_sure(run, candidate, found.shrunk)
            except ShrinkBroken as exc:
                exc.search = found
                raise
            got = Signature.of(candidate, record)
            verdict = "passed" if got is None else ("same" if got == signature else "different")
            step = Try(found.tried + 1, candidate, verdict, record)
            found.tries.append(step)
            if on_try is not None:
                on_try(step)
            if verdict == "same":
                found.shrunk = candidate
                progressed = True
                break
        if not progressed:
            return found


def repro_command(
    case_id: str,
    case_file: Path | str,
    *,
    target: str = "",
    plant_bug: str = "",
    inventory: str | None = None,
    backend: str | None = None,
) -> str:
    """The one line that reruns a shrunk case (`farm repro`), on the package it failed on."""
    from farm.pool import build

    argv = ["farm", "repro", case_id, "--cases", str(case_file)]
    if target and target != build.DEFAULT_TARGET:
        argv += ["--target", target]
    if plant_bug:
        argv += ["--plant-bug", plant_bug]
    if inventory:
        argv += ["--inventory", inventory]
    if backend and backend != targets.default_backend(target or None):
        argv += ["--backend", backend]
    return shlex.join(argv)
