"""The farm's command line: its parser, where a mistake is one line as every other mistake is
(``error: farm run: argument --backend: invalid choice: ...``), not argparse's usage block of a
dozen lines before it (``--help`` shows the usage); the argument types its commands share; and
the output directories they make before any work."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from farm.util.errors import UsageError


class CommandParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (`{self.prog} --help` shows the options)")


def number(text: str) -> float:
    """The number ``text`` says, NaN when it says none (for the caller's check to refuse)."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def whole_number(least: int, counting: str = "a whole number") -> Callable[[str], int]:
    """An argparse type: a whole number of ``least`` or more (a negative --limit was SQL's "no
    limit")."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"{text!r} is not {counting} ({least} or more)")
        return value

    return parse


def make_output_dir(path: Path, option: str) -> None:
    """Make the directory an option names for a command's output, before the command's work:
    one line naming the option where it cannot be made (under a file, a read-only or pseudo
    file system, which root's access checks all pass)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{option} {path}: cannot make the directory ({exc.strerror}); choose another"
        ) from None
