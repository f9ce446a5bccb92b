"""Coverage of a tier: how many cases touch each rank, dtype, schedule, family, and so on."""

from __future__ import annotations

from collections import Counter

from .case import Case

DIMENSIONS = {
    "family": lambda c: c.family,
    "dtype": lambda c: c.dtype,
    "family x dtype": lambda c: f"{c.family} {c.dtype}",
    "rank": lambda c: str(len(c.shape)),
    "schedule": lambda c: c.schedule,
    "api": lambda c: c.api,
    "y distribution": lambda c: c.y_dist,
    "dy distribution": lambda c: c.dy_dist,
    "special values": lambda c: c.special,
    "layout": lambda c: c.layout,
    "expectation": lambda c: (
        f"{c.standard}{'.' + c.level if c.level else ''}" if c.accepted else "reject"
    ),
    "rejection reason": lambda c: (
        None if c.accepted else f"{c.expected.reason} ({c.expected.status})"
    ),
    "section": lambda c: c.origin,
}


def coverage(cases: list[Case]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for name, key in DIMENSIONS.items():
        counts = Counter(k for k in map(key, cases) if k is not None)
        out[name] = dict(sorted(counts.items(), key=lambda kv: _natural(kv[0])))
    return out


def totals(cases: list[Case]) -> dict[str, int]:
    return {
        "cases": len(cases),
        "accepted": sum(c.accepted for c in cases),
        "rejected": sum(not c.accepted for c in cases),
        "output elements": sum(c.numel for c in cases if c.accepted),
    }


def _natural(key: str):
    return (0, int(key)) if key.isdigit() else (1, key)
