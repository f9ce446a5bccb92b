"""Arguments the results commands share (`farm report`, `farm compare`, `farm baseline`): a run
the store does not hold, and --drift-factor."""

from __future__ import annotations

import argparse
import math

from farm.results.compare import DEFAULT_DRIFT_FACTOR
from farm.results.store.location import StoreLocation
from farm.util.argparsing import number
from farm.util.errors import UsageError


def unknown_run(what: str, location: StoreLocation) -> UsageError:
    """'unknown run X': where it was looked for, and how to find the runs there."""
    return UsageError(f"{what} in the store {location}; `farm runs` lists its runs")


def drift_factor(text: str) -> float:
    """--drift-factor: how many times its baseline's error a case's may grow, above 0 (NaN
    would flag no drift at all)."""
    value = number(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a factor above 0 (default {DEFAULT_DRIFT_FACTOR:g})"
        )
    return value
