"""Coverage of a tier: how many cases touch each rank, dtype, schedule, family, and so on."""

from __future__ import annotations

from collections import Counter

from golden import layouts

from .case import Case, number_text


def _range(bounds) -> str | None:
    return None if bounds is None else f"[{number_text(bounds[0])}, {number_text(bounds[1])}]"


def _fill(value) -> str | None:
    return None if value is None else number_text(value)


DIMENSIONS = {
    "family": lambda c: c.family,
    "dtype": lambda c: c.dtype,
    "family x dtype": lambda c: f"{c.family} {c.dtype}",
    "rank": lambda c: str(len(c.shape)),
    "schedule": lambda c: c.schedule,
    "api": lambda c: c.api,
    "y distribution": lambda c: c.y_dist,
    "dy distribution": lambda c: c.dy_dist,
    "y value range": lambda c: _range(c.y_range),
    "dy value range": lambda c: _range(c.dy_range),
    "y fill": lambda c: _fill(c.y_fill),
    "dy fill": lambda c: _fill(c.dy_fill),
    "special values": lambda c: c.special,
    "special placement": lambda c: None if c.special == "none" else c.special_at,
    "layout": lambda c: c.layout,
    "dy layout": lambda c: layouts.describe(c.dy_layout, c.tensor_shape("dy")),
    "y layout": lambda c: layouts.describe(c.y_layout, c.tensor_shape("y")),
    "out layout": lambda c: layouts.describe(c.out_layout, c.tensor_shape("out")),
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
