"""``python -m farm.pool.build``: `farm build` (command.py's main) without the farm command
around it, which sits above the pool; it ends as `farm build` does: a mistake is one line
(``error: farm build: ...``, exit 2), a stop signal ends it with 128 + the signal, a closed pipe
with 141, and a disk that refuses a write is one line too, exit 2."""

from __future__ import annotations

import errno
import os
import signal
import sys

from rich.markup import escape

from farm.pool.build.command import main
from farm.util import interrupts
from farm.util.console import FarmConsole
from farm.util.errors import FarmError
from farm.util.visible import cut, visible

# A disk or its permissions refusing a write: infrastructure, not the build's bug (the same
# errnos as farm/run/run_dir.py FAULT_ERRNOS, which the farm command reads).
REFUSED_WRITES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def run(argv: list[str]) -> int:
    received: list[int] = []
    try:
        with interrupts.stopping() as received:
            code = main(argv)
            sys.stdout.flush()  # a closed pipe is found here, not at exit past this handler
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        code = 128 + (received[-1] if received else signal.SIGINT)
        name = signal.Signals(code - 128).name
        FarmConsole(stderr=True).print(
            f"[yellow]interrupted[/] ({name}): farm build stopped (exit {code})"
        )
        return code
    except FarmError as exc:
        console = FarmConsole(stderr=True)
        for line in str(exc).splitlines() or [""]:  # one line per problem, each marked
            console.print(f"[bold red]error:[/] {escape(visible(cut(line)))}", highlight=False)
        return exc.exit_code
    except OSError as exc:
        if exc.errno not in REFUSED_WRITES:
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        where = exc.filename or "its output"
        print(f"error: farm build: {exc.strerror} ({where})", file=sys.stderr)
        return FarmError.exit_code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
