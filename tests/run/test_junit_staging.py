"""A run's JUnit staging directory left by a process that died is removed by the next run; one
whose process lives, or whose owner cannot be told, is kept."""

from __future__ import annotations

import subprocess
import sys
import tempfile

from farm.results.store.owners import process_owner
from farm.run import junit_staging


def test_the_dead_ones_are_swept_and_the_living_and_unknown_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    child = subprocess.run(
        [sys.executable, "-c", "from farm.run import junit_staging; print(junit_staging.make())"],
        capture_output=True,
        text=True,
        check=True,
        env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        cwd=junit_staging.__file__.rsplit("/farm/", 1)[0],
    )
    dead = tmp_path / child.stdout.strip()
    (dead / "junit.xml").write_text("<testsuites/>")
    living = junit_staging.make()
    host, pid, _, namespace = process_owner().split(":", 3)
    kept = [
        living,
        tmp_path / "farm-junit-abc123_x",  # an older farm's: no owner in its name
        tmp_path / f"farm-junit-other-host:{pid}:1:{namespace}-abc",  # another machine's
        tmp_path / f"farm-junit-{host}:{pid}::{namespace}-abc",  # no /proc: no start time
        tmp_path / f"farm-junit-{host}:{pid}:1:pid:[1]-abc",  # another pid namespace's
    ]
    for path in kept[1:]:
        path.mkdir()
    assert dead.parent == tmp_path and dead.is_dir()

    assert junit_staging.left_by_the_dead() == [dead]
    junit_staging.sweep()

    assert not dead.exists()
    assert all(path.is_dir() for path in kept)
