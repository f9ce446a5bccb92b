"""--case-timeout, as every command that runs cases takes it (farm run, repro, shrink, bisect,
the pytest plugin); how it grows with a case's size is farm/run/dispatch.py case_timeout."""

from __future__ import annotations

import argparse

from farm.util.argparsing import number

# A day: longer is no timeout at all, and past the waits' own limits (poll's milliseconds: 24.8
# days) an infinite one broke every case as a worker that died.
MAX_CASE_TIMEOUT = 86_400.0


def case_timeout_seconds(text: str) -> float:
    """Seconds above 0, at most MAX_CASE_TIMEOUT (an argparse type)."""
    value = number(text)
    if not 0 < value <= MAX_CASE_TIMEOUT:  # NaN and inf too
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds above 0 and at most {MAX_CASE_TIMEOUT:,.0f}"
        )
    return value
