"""The farm's rich console: its messages one line each, and what it does when the reader of
its output goes away.

`farm cases | head`, `farm run 2>&1 | head -20`: the pipe breaks (EPIPE). rich's own answer is
SystemExit(1), and 1 is the farm's "the operator failed". Here the pipe's descriptors are
pointed at /dev/null (nothing more can reach its reader, and a later write must not fail again)
and the command stops as a shell's writer stops on SIGPIPE: a command that stores what it did
(farm run, farm bisect) stores it and exits 141 (farm/util/interrupts.py output_gone); any other
ends with exit 141 (farm/cli/__init__.py)."""

from __future__ import annotations

import contextlib
import io

from rich.console import Console

from farm.util import interrupts


class FarmConsole(Console):
    def __init__(self, *args, **kwargs) -> None:
        # A message stays one line at any width (a path or a command in a CI log is copied and
        # searched whole; rich wraps at 80 columns where the output is no terminal).
        kwargs.setdefault("soft_wrap", True)
        super().__init__(*args, **kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        with contextlib.suppress(AttributeError, OSError, io.UnsupportedOperation):
            interrupts.off_the_pipe(self.file.fileno())  # a StringIO (tests) has no descriptor
        interrupts.output_gone()
