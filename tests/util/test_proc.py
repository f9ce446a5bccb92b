"""farm/util/proc.py, the farm's one reader of /proc: its answers, and "unknown" where /proc does
not say. A test of the layout holds that nothing else in farm/, golden/, suites/ names /proc."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

from farm.util import proc

ROOT = Path(__file__).resolve().parents[2]


def test_cpu_features_are_read_only_when_every_cpu_has_the_same(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nflags\t\t: fpu avx2\n\nprocessor\t: 1\nflags\t\t: fpu avx2\n"
    )
    assert proc.cpu_features(str(cpuinfo)) == "fpu avx2"
    cpuinfo.write_text(
        "processor\t: 0\nFeatures\t: fp asimd\n\nprocessor\t: 1\nFeatures\t: fp asimd sve\n"
    )
    assert proc.cpu_features(str(cpuinfo)) is None
    cpuinfo.write_text("processor\t: 0\n")
    assert proc.cpu_features(str(cpuinfo)) is None
    assert proc.cpu_features(str(tmp_path / "absent")) is None


def test_meminfo_in_bytes_and_none_for_what_it_does_not_say(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:        3956812 kB\nMemFree: 1 kB\nMemAvailable:    1873304 kB\n")
    assert proc.meminfo(str(meminfo)) == (3956812 * 1024, 1873304 * 1024)
    meminfo.write_text("MemTotal:        3956812 kB\n")
    assert proc.meminfo(str(meminfo)) == (3956812 * 1024, None)
    assert proc.meminfo(str(tmp_path / "absent")) == (None, None)


def test_a_child_and_its_descendants_are_seen_then_gone():
    # A shell that starts a sleeping grandchild: both below this process, in parents-first order.
    child = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 60
        while len(proc.descendants(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        tree = proc.descendants(child.pid)
        assert tree[0] == child.pid and len(tree) == 2
        assert child.pid in proc.children(os.getpid())
        assert proc.alive(child.pid) and proc.start_time(child.pid)
        assert proc.cmdline(child.pid) == ["sh", "-c", "sleep 30 & wait"]
        assert proc.command_name(child.pid) == "sh"
    finally:
        for pid in reversed(proc.descendants(child.pid)):
            os.kill(pid, 9)
        child.wait()
    assert not proc.alive(child.pid)
    assert proc.start_time(child.pid) is None and proc.cmdline(child.pid) is None


def test_own_descriptors_and_namespace():
    r, w = os.pipe()
    try:
        assert {r, w} <= set(proc.own_descriptors())
    finally:
        os.close(r)
        os.close(w)
    assert proc.pid_namespace().startswith("pid:[")


def _proc_strings(path: Path) -> list[int]:
    """Lines of string constants naming /proc, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and ("/proc/" in node.value or node.value == "/proc")
    ]


def test_nothing_else_reads_proc():
    home = ROOT / "farm" / "util" / "proc.py"
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in ("farm", "golden", "suites")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != home
        for line in _proc_strings(path)
    ]
    assert not found, f"/proc is read outside farm/util/proc.py: {found}"
    assert _proc_strings(home), "the check finds the home's own /proc strings"


def test_every_farm_module_the_agent_imports_ships_with_it():
    """The agent runs from its bundle alone: each farm module it loads (this one included) must be
    under one of BUNDLE_PATHS."""
    from farm.pool.deploy import BUNDLE_PATHS

    code = (
        "import sys, farm.agent.__main__, farm.agent.server, farm.agent.hostops, "
        "farm.agent.machine\n"
        "print('\\n'.join(m.__file__ for n, m in sys.modules.items() "
        "if n.split('.')[0] in ('farm', 'golden') and getattr(m, '__file__', None)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    loaded = {Path(f).resolve().relative_to(ROOT).as_posix() for f in out.stdout.split()}
    assert "farm/util/proc.py" in loaded
    outside = [f for f in loaded if not any(f == p or f.startswith(p + "/") for p in BUNDLE_PATHS)]
    assert not outside, f"the agent imports modules its bundle lacks: {outside}"
