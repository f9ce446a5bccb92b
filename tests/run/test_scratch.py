"""A command's scratch directory left by a process that died is removed by the next command of
the kind; one whose process lives, or whose owner cannot be told, is kept."""

from __future__ import annotations

import subprocess
import sys
import tempfile

import pytest

from farm.run import scratch


@pytest.mark.parametrize("prefix", [scratch.JUNIT, scratch.BISECT])
def test_the_dead_ones_are_swept_and_the_living_and_unknown_kept(tmp_path, monkeypatch, prefix):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    child = subprocess.run(
        [sys.executable, "-c", f"from farm.run import scratch; print(scratch.make({prefix!r}))"],
        capture_output=True,
        text=True,
        check=True,
        env={"TMPDIR": str(tmp_path)},
        cwd=scratch.__file__.rsplit("/farm/", 1)[0],
    )
    dead = tmp_path / child.stdout.strip()
    (dead / "junit.xml").write_text("<testsuites/>")
    living = scratch.make(prefix)
    other = scratch.make(scratch.BISECT if prefix == scratch.JUNIT else scratch.JUNIT)
    host, _, _, namespace = living.name[len(prefix) :].rpartition("-")[0].split(".")
    assert ":" not in living.name and "[" not in living.name  # a name make and cmake take
    kept = [
        living,
        other,  # another kind's: its own command sweeps it
        tmp_path / f"{prefix}abc123_x",  # an older farm's: no owner in its name
        tmp_path / f"{prefix}0badc0de.1.1.{namespace}-abc",  # another machine's
        tmp_path / f"{prefix}{host}.1..{namespace}-abc",  # no /proc: no start time
        tmp_path / f"{prefix}{host}.1.1.1-abc",  # another pid namespace's
    ]
    for path in kept[2:]:
        path.mkdir()
    assert dead.parent == tmp_path and dead.is_dir()

    assert scratch.left_by_the_dead(prefix) == [dead]
    scratch.sweep(prefix)

    assert not dead.exists()
    assert all(path.is_dir() for path in kept)
