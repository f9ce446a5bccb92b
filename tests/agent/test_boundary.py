"""The agent bundle's boundary: what ships imports nothing of the orchestrator.

What ships to a host is farm/agent + golden and the two ground-floor modules they stand on,
farm/util/errors.py and farm/util/proc.py (farm/pool/deploy.py BUNDLE_PATHS). A host has python3,
numpy and ml_dtypes; torch only where the torch backend or the benchmark-ratio standard runs, so
torch may be imported inside a function, never at module level.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from farm.pool.deploy import BUNDLE_PATHS

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted(
    p
    for root in BUNDLE_PATHS
    for p in ((REPO / root).rglob("*.py") if (REPO / root).is_dir() else [REPO / root])
    if "__pycache__" not in p.parts and p.suffix == ".py"
)
# The shipped modules by name (farm/util/errors.py -> farm.util.errors; a package by its name).
SHIPPED_MODULES = {
    ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__") for p in SHIPPED
}
THIRD_PARTY = {"numpy", "ml_dtypes"}
LAZY_ONLY = {"torch", "torch_npu"}


def imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at module level) for every import in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "farm":  # `from farm.util import proc`: farm.util.proc
                found += [(_imported(node.module, a.name), id(node) in top) for a in node.names]
            else:
                found.append((node.module, id(node) in top))
    return found


def _imported(package: str, name: str) -> str:
    """What ``from package import name`` imports: the module package.name where there is one."""
    candidate = REPO / package.replace(".", "/") / name
    if candidate.with_suffix(".py").exists() or candidate.is_dir():
        return f"{package}.{name}"
    return f"{package}.{name}" if package == "farm" else package


def allowed(module: str, top_level: bool) -> bool:
    root = module.split(".")[0]
    if module == "farm.__version__" or module.startswith(("farm.agent", "golden")):
        return True
    if module in SHIPPED_MODULES:
        return True
    if root == "farm":
        return False
    if root in sys.stdlib_module_names or root in THIRD_PARTY or root == "__future__":
        return True
    return root in LAZY_ONLY and not top_level


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_code_imports_only_the_agent_golden_and_its_dependencies(path):
    bad = [
        (m, "module level" if top else "in a function")
        for m, top in imports(path)
        if not allowed(m, top)
    ]
    assert bad == [], f"{path.relative_to(REPO)} imports outside the agent bundle: {bad}"


def test_the_boundary_check_sees_a_forbidden_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import torch\nfrom farm.pool import deploy\nfrom farm.util import console\n"
        "from farm.util import proc\n\ndef f():\n    import torch\n"
    )
    verdicts = [allowed(m, top) for m, top in imports(planted)]
    assert verdicts == [False, False, False, True, True]
