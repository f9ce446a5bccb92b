"""How a command ends, for every entry point of the farm (`farm COMMAND`, `python -m
farm.pool.build`): its exit code from what it returned or raised, each failure one line.

- what the command returns: its exit code;
- a FarmError: each line of its message marked ``error:``, its exit_code (2: never 1, which says
  the operator failed);
- a stop signal (SIGINT, SIGTERM, SIGHUP; farm/util/interrupts.py): one line, 128 + the signal;
- its output's reader gone (`farm cases --json | head`): 141, as a shell's writer killed by
  SIGPIPE, nothing more printed;
- a disk or its permissions refusing a write (farm/util/run_dir.py is_fault): one line, 2.
Anything else is the farm's own failure and propagates (farm/cli entry prints its traceback).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable

from rich.markup import escape

from farm.util import interrupts, run_dir
from farm.util.console import FarmConsole
from farm.util.errors import FarmError
from farm.util.visible import cut, visible


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush is quiet."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def run_command(
    name: str, command: Callable[[], int], redact: Callable[[str], str] = lambda text: text
) -> int:
    """Run ``command`` (named ``farm NAME`` in what is printed) to its exit code. ``redact``
    hides what must not be printed (a store's password) in an error's message."""
    received: list[int] = []
    try:
        with interrupts.stopping() as received:
            code = command()
            sys.stdout.flush()  # a closed pipe is found here, not at exit past this handler
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        code = 128 + (received[-1] if received else signal.SIGINT)
        stop = signal.Signals(code - 128).name
        FarmConsole(stderr=True).print(
            f"[yellow]interrupted[/] ({stop}): farm {name} stopped (exit {code})"
        )
        return code
    except FarmError as exc:
        console = FarmConsole(stderr=True)
        for line in redact(str(exc)).splitlines() or [""]:  # one line per problem, each marked
            console.print(f"[bold red]error:[/] {escape(visible(cut(line)))}", highlight=False)
        return exc.exit_code
    except OSError as exc:
        if not run_dir.is_fault(exc):
            raise
        # A disk or its permissions refused the command (its output, `farm runs > log` on a
        # full disk, has no file name): infrastructure, never exit 1, the operator's failure.
        _quiet_stdout()
        where = exc.filename or "its output"
        with contextlib.suppress(OSError):
            print(f"error: farm {name}: {exc.strerror} ({where})", file=sys.stderr)
        return FarmError.exit_code
