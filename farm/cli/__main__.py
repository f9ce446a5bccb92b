"""``python -m farm.cli``: the farm command, as the installed ``farm`` script runs it."""

import sys

from farm.cli import entry

sys.exit(entry())
