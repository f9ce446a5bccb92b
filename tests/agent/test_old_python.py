"""A host python older than the agent needs is one line naming the fix (the handshake shows the
agent's stderr), not a traceback from the first module that uses a newer API."""

from __future__ import annotations

import subprocess
import sys

from farm.util.paths import REPO_ROOT


def test_an_older_python_is_refused_before_anything_is_imported(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.version_info = (3, 8, 10, 'final', 0)\nsys.version = '3.8.10 (x)'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "farm.agent", "--workdir", str(tmp_path / "w")],
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (
        f"lsg-agent: python 3.8.10 ({sys.executable}) is older than the 3.10 the agent needs; "
        'set the host\'s python in the inventory (python = "/path/to/python3.10 or newer")\n'
    )
    assert not (tmp_path / "w").exists()
