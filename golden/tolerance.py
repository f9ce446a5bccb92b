"""A case's own tolerance: what an outside suite accepts of a result, judged beside the farm's
standards (golden/judge.py "case-tolerance").

An element passes when |out - golden| <= atol + rtol * |golden| (NaN matches NaN, inf matches the
same inf), and the case passes when at most max_fail_fraction of its elements fail. Outside
suites bring these with their cases (msopst's precision tolerances, ATK's and TTK's rtol/atol);
suites/case.py carries one per case, and its id part (suites.case.tolerance_text).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

TOLERANCE_KEYS = ("rtol", "atol", "max_fail_fraction")


@dataclass(frozen=True)
class Tolerance:
    """rtol, atol and the largest fraction of elements allowed outside them (each 0 unless
    given)."""

    rtol: float = 0.0
    atol: float = 0.0
    max_fail_fraction: float = 0.0

    def problems(self) -> list[str]:
        wrong = []
        for key in TOLERANCE_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                wrong.append(f"tolerance.{key} {value!r} (use a number)")
            elif not (math.isfinite(value) and value >= 0):
                wrong.append(f"tolerance.{key} {value!r} (use a finite number >= 0)")
        if not wrong and self.max_fail_fraction > 1:
            wrong.append(f"tolerance.max_fail_fraction {self.max_fail_fraction} (use 0 to 1)")
        return wrong

    def to_json(self) -> dict[str, float]:
        return {key: getattr(self, key) for key in TOLERANCE_KEYS}

    @classmethod
    def parse(cls, value: Any) -> Tolerance:
        """From its JSON form {"rtol", "atol", "max_fail_fraction"} (any subset; 0 otherwise);
        ValueError names an unknown key."""
        if isinstance(value, Tolerance):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"tolerance {value!r} (use {{'rtol': .., 'atol': .., ...}})")
        unknown = sorted(set(value) - set(TOLERANCE_KEYS))
        if unknown:
            raise ValueError(
                f"tolerance has unknown key(s) {', '.join(unknown)} "
                f"(use {', '.join(TOLERANCE_KEYS)})"
            )
        return cls(**value)
