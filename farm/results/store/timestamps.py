"""The store's timestamps: ISO 8601 with the local offset, to the second (they sort as text)."""

from __future__ import annotations

import datetime as _dt


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def stamp() -> str:
    """The local time as a run or bisect id begins: 20261129-151200."""
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
