"""``python -m farm.pool.build``: `farm build` (command.py's main) without the farm command
around it, which sits above the pool; it ends as every farm command does
(farm/util/command_end.py)."""

from __future__ import annotations

import sys

from farm.pool.build.command import main
from farm.util.command_end import run_command

if __name__ == "__main__":
    sys.exit(run_command("build", lambda: main(sys.argv[1:])))
