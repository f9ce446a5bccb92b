"""The coverage build's per-case counters (farm/agent/coverage_dump.py with
op/ascendc_cpu/abi/coverage_dump.cpp): a library compiled with --coverage and the same dump,
loaded as the package's native library, writes each case's counters into that case's own
directory and starts the next case from zero; nothing happens without $LSG_COVERAGE_DIR or with
a library that has no dump."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from farm.agent import coverage_dump
from farm.util.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="needs g++")

BRANCHY = """
extern "C" __attribute__((visibility("default"))) int lsg_branchy(int x) {
    if (x > 0) return 1;
    return 2;
}
"""


def _library(tmp: Path, with_dump: bool = True) -> Path:
    src = tmp / "branchy.cpp"
    src.write_text(BRANCHY)
    sources = [str(src)]
    if with_dump:
        sources.append(str(REPO_ROOT / "op" / "ascendc_cpu" / "abi" / "coverage_dump.cpp"))
    lib = tmp / "lib" / "liblsg_ascendc_cpu.so"
    lib.parent.mkdir()
    flags = ["-O0", "-fPIC", "-fvisibility=hidden"] + (["--coverage"] if with_dump else [])
    objects = []
    for source in sources:  # one object each: branchy.o's counters are branchy.gcda
        obj = tmp / (Path(source).stem + ".o")
        subprocess.run(["g++", *flags, "-c", source, "-o", str(obj)], check=True, cwd=tmp)
        objects.append(str(obj))
    link = ["-shared"] + (["--coverage"] if with_dump else [])
    subprocess.run(["g++", *link, *objects, "-o", str(lib)], check=True, cwd=tmp)
    return lib


def _counts(gcda: Path, tmp: Path) -> str:
    """gcov's counts of lsg_branchy's two returns from one case's counters."""
    note = gcda.with_suffix(".gcno")
    shutil.copyfile(tmp / "branchy.gcno", note)
    out = subprocess.run(
        ["gcov", "--stdout", str(gcda)], capture_output=True, text=True, cwd=gcda.parent
    ).stdout
    rows = [ln.split(":") for ln in out.splitlines() if ln.count(":") >= 2]
    lines = {row[1].strip(): row[0].strip() for row in rows}
    return f"{lines['3']}/{lines['4']}"


def test_each_case_gets_its_own_counters(tmp_path, monkeypatch):
    lib = _library(tmp_path)
    monkeypatch.setenv("LSG_NATIVE_LIB", str(lib))
    monkeypatch.setenv(coverage_dump.ENV_DIR, str(tmp_path / "counters"))
    loaded = ctypes.CDLL(str(lib))
    loaded.lsg_branchy(1)
    assert coverage_dump.after_case("case-a") == 1
    loaded.lsg_branchy(-1)
    loaded.lsg_branchy(-2)
    assert coverage_dump.after_case("case-b") == 1
    found = {}
    for name in ("case-a", "case-b"):
        case_dir = tmp_path / "counters" / coverage_dump.case_dir_name(name)
        assert (case_dir / coverage_dump.CASE_ID_FILE).read_text() == name
        (gcda,) = case_dir.rglob("branchy.gcda")
        found[name] = _counts(gcda, tmp_path)
    # line 3 (the test, return 1) and line 4 (return 2): the first case ran line 3 once and
    # never line 4; the second ran both twice (2*: line 3's `return 1` not taken), its own calls
    # alone (with the first case's, line 3 would read 3)
    assert found == {"case-a": "1/#####", "case-b": "2*/2"}


def test_nothing_without_the_variable_or_the_dump(tmp_path, monkeypatch):
    lib = _library(tmp_path, with_dump=False)
    monkeypatch.setenv("LSG_NATIVE_LIB", str(lib))
    monkeypatch.delenv(coverage_dump.ENV_DIR, raising=False)
    ctypes.CDLL(str(lib)).lsg_branchy(1)
    assert coverage_dump.after_case("case-a") == 0
    monkeypatch.setenv(coverage_dump.ENV_DIR, str(tmp_path / "counters"))
    assert coverage_dump.after_case("case-a") == 0  # loaded, but not the coverage build
    assert not (tmp_path / "counters").exists()


def test_an_unloaded_library_is_not_loaded(tmp_path, monkeypatch):
    lib = _library(tmp_path)
    monkeypatch.setenv("LSG_NATIVE_LIB", str(lib))
    monkeypatch.setenv(coverage_dump.ENV_DIR, str(tmp_path / "counters"))
    assert coverage_dump.after_case("case-a") == 0
    assert not (tmp_path / "counters").exists()
