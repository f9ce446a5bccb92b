"""Exploration: cases drawn afresh from a salt, on top of a tier (`farm run --explore [SALT]`).

The draw uses the tiers' own random space (suites.matrix.random_case), from a stream per salt,
family and dtype. The n-th case of a stream is tagged "<salt>.<n>" (Case.explore, part of its
id, so its seed and inputs differ from any tier case of the same shape), which makes every
explored case reproducible anywhere from its id alone: `find` redraws its stream.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import random
import re
from collections.abc import Iterator
from dataclasses import replace

from farm.util.errors import UsageError
from golden import soc

from . import matrix
from .case import DTYPE_SHORT, Case

DEFAULT_COUNT = 300  # cases per exploring run, spread over families and dtypes
SALT_PATTERN = re.compile(r"[A-Za-z0-9-]{1,40}")
_TAG_IN_ID = re.compile(r"_x\.([A-Za-z0-9-]{1,40})\.(\d+)$")


def nightly_salt(today: _dt.date | None = None, run_group: str | None = None) -> str:
    """The default salt: the date, so that each night explores new cases and two runs of one
    night explore the same ones; for a shard of a run group, the group (a CI pipeline's id): its
    shards must draw the same cases, and a nightly started at midnight has shards on both
    dates (their merge refused them as different selections)."""
    if run_group:
        if SALT_PATTERN.fullmatch(run_group):
            return run_group
        return "g" + hashlib.sha256(run_group.encode()).hexdigest()[:12]
    return (today or _dt.date.today()).strftime("%Y%m%d")


def check_salt(salt: str) -> str:
    if not SALT_PATTERN.fullmatch(salt):
        shown = repr(salt) if len(salt) <= 60 else f"{salt[:40]!r}... ({len(salt):,} characters)"
        raise UsageError(
            f"explore salt {shown}: use 1 to 40 letters, digits or '-' (e.g. 20261130)"
        )
    return salt


def _stream(salt: str, family: str, dtype: str) -> Iterator[Case]:
    rng = random.Random(f"explore/{salt}/{family}/{dtype}")
    n = 0
    while True:
        case = matrix.random_case(rng, family, dtype)
        yield replace(case, explore=f"{salt}.{n}", origin=f"explore {salt}")
        n += 1


def draw(salt: str, count: int = DEFAULT_COUNT) -> list[Case]:
    """`count` cases from `salt`, spread evenly over (family, dtype); the same salt and count
    give the same cases on any machine."""
    check_salt(salt)
    groups = [(f, d) for f in matrix.FAMILIES for d in matrix.DTYPES]
    cases = []
    for i, (family, dtype) in enumerate(groups):
        share = count // len(groups) + (1 if i < count % len(groups) else 0)
        stream = _stream(salt, family, dtype)
        cases += [next(stream) for _ in range(share)]
    return cases


def is_explored(case_id: str) -> bool:
    return _TAG_IN_ID.search(case_id) is not None


def find(case_id: str) -> Case | None:
    """The explored case with this id (redrawn from its salt), or None if the id is not an
    explored case's."""
    tag = _TAG_IN_ID.search(case_id)
    if tag is None:
        return None
    salt, n = tag.group(1), int(tag.group(2))
    for family in matrix.FAMILIES:
        for dtype in matrix.DTYPES:
            prefix = f"{soc.FAMILY_SHORT[family]}_{DTYPE_SHORT[dtype]}_"
            if not case_id.startswith(prefix):
                continue
            stream = _stream(salt, family, dtype)
            for _ in range(n):
                next(stream)
            case = next(stream)
            return case if case.id == case_id else None
    return None
