"""The layers are checks, not prose: pyproject.toml's import-linter contracts (run by
.ci/lint.sh) hold on this tree, fail when one import runs up a floor or closes a cycle (inside a
function too), and ARCHITECTURE.md draws the same floors."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("farm", "golden", "suites")


def _floors() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return layers["layers"]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The three packages' Python sources, the contracts and their contract type, elsewhere."""
    root = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__", "*.so")
        )
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    shutil.copy(ROOT / "tests" / "import_contracts.py", root / "tests")
    shutil.copy(ROOT / "pyproject.toml", root)
    return root


def test_the_tree_keeps_its_layers_and_has_no_cycle():
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_one_import_up_a_floor_fails(copy):
    golden = copy / "golden" / "dtypes.py"
    text = golden.read_text(encoding="utf-8")
    try:
        golden.write_text(text + "\n\ndef _up():\n    from farm.cli import main  # noqa\n")
        done = _lint(copy)
    finally:
        golden.write_text(text)
    assert done.returncode == 1
    assert "golden is not allowed to import farm.cli" in done.stdout
    assert "golden.dtypes -> farm.cli" in done.stdout


def test_a_cycle_inside_one_floor_fails(copy):
    a, b = copy / "golden" / "_cycle_a.py", copy / "golden" / "_cycle_b.py"
    try:
        a.write_text("def f():\n    from golden import _cycle_b  # noqa\n")
        b.write_text("from golden import _cycle_a  # noqa\n")
        done = _lint(copy)
    finally:
        a.unlink()
        b.unlink()
    assert done.returncode == 1
    assert "2 modules import each other: golden._cycle_a, golden._cycle_b" in done.stdout


def test_architecture_draws_the_floors_the_contract_holds():
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- floors -->\n```\n(.*?)```", text, re.S)
    assert block, "ARCHITECTURE.md lost its floors block (<!-- floors --> then a fenced block)"
    drawn = [line.split()[0] for line in block[1].splitlines() if line.strip()]
    assert drawn == _floors()
