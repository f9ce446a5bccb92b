"""The farm's command-line parser: a mistake on the command line is one line, as every other
mistake is (``error: farm run: argument --backend: invalid choice: ...``), not argparse's usage
block of a dozen lines before it; ``--help`` shows the usage."""

from __future__ import annotations

import argparse
from typing import NoReturn

from farm.errors import UsageError


class CommandParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (`{self.prog} --help` shows the options)")
