"""`farm run` reaches its module: farm/cli/__init__.py once imported `run_command` (the function
of farm/util/command_end.py) into the package's namespace, where `from farm.cli import
run_command` in cmd_run then found the function, not the module farm/cli/run_command.py, and every
`farm run` ended with "the farm itself failed" ('function' object has no attribute 'run')."""

from __future__ import annotations

import subprocess
import sys

from farm.util.paths import REPO_ROOT


def test_the_run_command_module_is_not_shadowed_by_a_function():
    # A fresh interpreter: in this one another test may have imported the module already.
    code = (
        "import types, farm.cli\n"
        "from farm.cli import run_command\n"
        "assert isinstance(run_command, types.ModuleType), run_command\n"
        "assert callable(run_command.run)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
