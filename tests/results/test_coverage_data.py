"""The gcov data `farm coverage` reads (farm/results/coverage_data.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from farm.results import coverage_data


def test_notes_of_objects_no_target_owns_are_dropped_before_gcovr(tmp_path: Path):
    """A source added before the kernel renumbered the kernel's object targets
    (lsg_acpu_obj9_* became lsg_acpu_obj10_*); the old directories' notes stayed in the build
    and gcovr counted the kernel twice: 143 lines "unexplained" at once. Only notes of the
    build's current targets are read."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p C)\nadd_library(now OBJECT a.c)\n"
    )
    (source / "a.c").write_text("int a(void) { return 1; }\n")
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(source), "-B", str(build)], check=True, capture_output=True)
    current = build / "CMakeFiles" / "now.dir" / "a.c.gcno"
    gone = build / "CMakeFiles" / "before.dir" / "a.c.gcno"  # a target renamed since
    moved = build / "CMakeFiles" / "now.dir" / "b.c.gcno"  # a source the target no longer has
    for note in (current, gone, gone.with_suffix(".gcda"), moved):
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_bytes(b"gcov")
    assert sorted(coverage_data.drop_stale_notes(build)) == sorted(
        [gone, gone.with_suffix(".gcda"), moved]
    )
    assert current.exists() and not gone.exists() and not moved.exists()
