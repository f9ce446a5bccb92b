"""`farm bisect` end to end: a planted bug introduced in one commit of a scratch repository is
found in log2(n) builds of the real operator (the default target, the emulated real kernel) on the
embedded pool; a commit that does not build is skipped; every step is stored.

The scratch repository holds a copy of this checkout's op/ (all the build needs: CMake's
project, the kernel, the emulation, the tiling, VERSION) as its base commit, then N small
commits: a note in op/README.md each; commit K also plants ``seed_noreduce`` in the kernel the
way the build plants it (op/ascendc_cpu/planted_bugs.json's text edits, here committed); commit
S breaks the build (an #error in op/tiling/views.cpp) and S + 1 repairs it. Two cases judge each
commit: a NO_REDUCE case the bug fails and a REDUCE_TAIL case it does not.

One build directory serves every step (CMake rebuilds what a commit changed): about 30 s on 2
cores, most of it the first build.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from farm.pool import build

# It builds the operator at every step (~100 s in all): among the first files CI hands out
# (tests/conftest.py), not the last.
pytestmark = pytest.mark.build

N, K, S = 12, 8, 9  # commits after the base; the one that plants the bug; the one that breaks
NOREDUCE = "910b_f32_4x1x33_d1_y.uniform_dy.normal"  # fails under seed_noreduce
TAIL = "910b_f32_3x17_d-1_y.uniform_dy.normal"  # passes under it
BUG = "seed_noreduce"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_history(repo: Path) -> list[str]:
    """The base commit and N commits after it; their shas, oldest first."""
    shutil.copytree(build.OP_DIR, repo / "op", ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Bisect Test")
    git(repo, "config", "user.email", "bisect@example.com")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base: the operator as it is")
    shas = [git(repo, "rev-parse", "HEAD")]
    readme, views = repo / "op" / "README.md", repo / "op" / "tiling" / "views.cpp"
    for i in range(1, N + 1):
        readme.write_text(readme.read_text() + f"\n<!-- note {i} -->\n")
        subject = f"commit {i}: a note in op/README.md"
        if i == K:
            for edit in build.planted_bugs()[BUG]:
                path = repo / "op" / edit["file"]
                text = path.read_text()
                assert text.count(edit["old"]) == 1, edit["file"]
                path.write_text(text.replace(edit["old"], edit["new"]))
            subject = f"commit {i}: NO_REDUCE in fewer operations"
        if i == S:
            views.write_text('#error "half-way through a change"\n' + views.read_text())
            subject = f"commit {i}: views, half-way"
        if i == S + 1:
            views.write_text(views.read_text().split("\n", 1)[1])
            subject = f"commit {i}: views, done"
        git(repo, "commit", "-q", "-am", subject)
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


def manifest_commit(package: str) -> str:
    with tarfile.open(package, "r:gz") as tar:
        member = tar.extractfile("manifest.json")
        assert member is not None
        manifest = json.loads(member.read())
    assert not manifest["git_dirty"] and manifest["target"] == "ascendc-cpu"
    return manifest["git_commit"]


def test_a_planted_bug_is_found_in_log2_n_builds(farm, tmp_path):
    repo = tmp_path / "repo"
    shas = make_history(repo)
    started = time.monotonic()
    ran = farm.run(
        "bisect", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--json", NOREDUCE, TAIL
    )
    seconds = time.monotonic() - started
    assert ran.code == 0, ran.text
    out = json.loads(ran.out)
    steps = out["steps"]
    skipped = [s for s in steps if s["verdict"] == "skip"]
    print(
        f"bisect over {N} commits: {out['builds']} builds ({len(skipped)} skipped), "
        f"{seconds:.1f} s; steps: "
        + ", ".join(f"{s['sha'][:7]} {s['verdict']} {s['seconds']:.1f}s" for s in steps)
    )

    # Commit K, named with what fails there.
    assert out["status"] == "found" and out["commits"] == N
    first = out["first_bad"]
    assert (
        first["sha"] == shas[K] and first["subject"] == f"commit {K}: NO_REDUCE in fewer operations"
    )
    assert first["failing"] == [NOREDUCE]
    assert first["author"].startswith("Bisect Test <bisect@example.com>")
    assert first["stat"].startswith("2 files changed")

    # log2(n) builds: the two endpoint checks, ceil(log2 N) steps, one more per skipped commit.
    assert out["builds"] == len(steps) <= 2 + math.ceil(math.log2(N)) + len(skipped)
    assert [s["role"] for s in steps[:2]] == ["good endpoint", "bad endpoint"]
    assert [s["sha"] for s in steps[:2]] == [shas[0], shas[-1]]
    assert len({s["sha"] for s in steps}) == len(steps)
    # The commit that does not build is skipped, with the compiler's error.
    assert [s["sha"] for s in skipped] == [shas[S]]
    assert "op/tiling/views.cpp" in skipped[0]["build_error"]
    assert "half-way through a change" in skipped[0]["build_error"]
    # Each verdict is the commit's own: bad from K on, and each package built from its commit.
    for step in steps:
        if step["verdict"] != "skip":
            want = "bad" if shas.index(step["sha"]) >= K else "good"
            assert step["verdict"] == want, step
            assert step.get("failing", []) == ([NOREDUCE] if want == "bad" else [])
            assert manifest_commit(step["package"]) == step["sha"]
    assert "does not build: op/tiling/views.cpp" in ran.err  # the live lines, beside --json

    # Stored: the bisect and every step.
    shown = farm.run("bisect", "--show", "--json")
    assert shown.code == 0, shown.text
    stored = json.loads(shown.out)
    assert (stored["bisect_id"], stored["status"], stored["first_bad"]) == (
        out["bisect_id"],
        "found",
        shas[K],
    )
    assert (stored["good"], stored["bad"]) == (shas[0], shas[-1])
    assert [(s["commit_sha"], s["verdict"]) for s in stored["steps"]] == [
        (s["sha"], s["verdict"]) for s in steps
    ]
    assert stored["selection"]["cases"] == [NOREDUCE, TAIL]
    text = farm.run("bisect", "--show").out
    assert shas[K] in text and "first bad" in text and "does not build" in text

    # The scratch worktree is gone; the repository's own checkout never moved.
    assert git(repo, "worktree", "list").count("\n") == 0
    assert git(repo, "rev-parse", "HEAD") == shas[-1] and git(repo, "status", "--porcelain") == ""
