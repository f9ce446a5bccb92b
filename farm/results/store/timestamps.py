"""The store's timestamps: ISO 8601 in UTC, to the second. They sort as text, and the store
sorts runs by them (newest first, the last green baseline), whichever machine wrote them: a
team's store has runners and laptops in several time zones, and times with their own offsets
("23:27+08:00" is before "16:00+00:00") or none would sort by the clock of each."""

from __future__ import annotations

import datetime as _dt


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def stamp() -> str:
    """The local time as a run or bisect id begins: 20261129-151200."""
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
