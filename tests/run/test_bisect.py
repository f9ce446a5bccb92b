"""`farm bisect`: the search (which commits are built, how many, what it concludes with skipped
commits), the case selection, and the command over a small git repository with the build and the
pool replaced by fakes (the real build and pool: tests/e2e/test_bisect.py)."""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
from pathlib import Path

import pytest

from farm.cli import main as farm
from farm.pool import build
from farm.results.store import RunStore
from farm.run import bisect
from farm.run.bisect import BAD, GOOD, SKIP, BisectError, Search, Step, max_builds
from farm.util.errors import BuildError, UsageError
from suites import matrix

# -- the search --------------------------------------------------------------------------------


def judge_by(verdicts: dict[str, str], built: list[str]):
    """A judge that answers from `verdicts` (sha -> verdict) and notes what it built."""

    def judge(sha: str, role: str) -> Step:
        built.append(sha)
        return Step(
            sha, f"subject of {sha}", role, verdicts[sha], failing=["x"] * (verdicts[sha] == BAD)
        )

    return judge


def history(n: int, first_bad: int, skipped=()) -> tuple[list[str], dict[str, str]]:
    commits = [f"c{i}" for i in range(n)]
    verdicts = {"g": GOOD}
    for i, sha in enumerate(commits):
        verdicts[sha] = SKIP if i in skipped else (BAD if i >= first_bad else GOOD)
    return commits, verdicts


def test_the_builds_of_a_search_halve_the_range():
    commits, verdicts = history(16, first_bad=5)
    built: list[str] = []
    result = bisect.search("g", commits, judge_by(verdicts, built))
    # The endpoints first, then the middles: 7 (bad), 3 (good), 5 (bad), 4 (good).
    assert built == ["g", "c15", "c7", "c3", "c5", "c4"]
    assert (result.status, result.first_bad, result.candidates) == ("found", "c5", ("c5",))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 31, 32, 33, 100, 1000])
def test_every_first_bad_commit_is_found_in_ceil_log2_n_builds(n):
    for first_bad in range(n) if n <= 100 else (0, 1, n // 3, n - 2, n - 1):
        commits, verdicts = history(n, first_bad)
        built: list[str] = []
        steps: list[Step] = []
        result = bisect.search("g", commits, judge_by(verdicts, built), steps.append)
        assert result.first_bad == commits[first_bad]
        assert built[:2] == ["g", commits[-1]]  # the endpoints are checked first
        assert len(built) == len(set(built))  # no commit twice
        assert len(built) - 2 <= math.ceil(math.log2(n)) if n > 1 else len(built) == 2
        assert [s.sha for s in steps] == built
        assert [s.role for s in steps[:2]] == [bisect.ENDPOINT_GOOD, bisect.ENDPOINT_BAD]


def test_max_builds():
    assert [max_builds(n) for n in (1, 2, 3, 4, 5, 8, 9, 12, 16)] == [0, 1, 2, 2, 3, 3, 4, 4, 4]


def test_a_skipped_middle_is_replaced_by_its_neighbour():
    commits, verdicts = history(16, first_bad=5, skipped={7})
    built: list[str] = []
    result = bisect.search("g", commits, judge_by(verdicts, built))
    assert built[2:4] == ["c7", "c6"]  # 7 does not build: 6, beside it
    assert result.first_bad == "c5"


def test_skipped_commits_cost_their_builds_and_at_most_one_more_halving():
    """Every history up to 11 commits, every first bad commit, every set of commits that do not
    build: the answer holds the first bad commit (found exactly when the skips allow), and the
    builds are ceil(log2 n) + the skipped ones built + 1 at most (a skipped middle splits the
    range one off the half: on 16 commits, 7 + 9 instead of 8 + 8)."""
    for n in range(1, 12):
        for first_bad in range(n):
            for r in range(n):
                for skipped in itertools.combinations(range(n - 1), r):
                    commits, verdicts = history(n, first_bad, set(skipped))
                    built: list[str] = []
                    result = bisect.search("g", commits, judge_by(verdicts, built))
                    skips = sum(verdicts[c] == SKIP for c in built)
                    assert len(built) - 2 <= max_builds(n) + skips + (skips > 0)
                    assert commits[first_bad] in result.candidates
                    if result.status == "found":
                        assert result.candidates == (commits[first_bad],)
                    else:  # only skipped commits before the first known bad one
                        *before, last = result.candidates
                        assert before and all(verdicts[c] == SKIP for c in before)
                        assert verdicts[last] == BAD


def test_only_skipped_commits_left_is_an_inconclusive_range():
    commits, verdicts = history(8, first_bad=4, skipped={3, 4})
    built: list[str] = []
    result = bisect.search("g", commits, judge_by(verdicts, built))
    assert result.status == "inconclusive" and result.first_bad is None
    assert result.candidates == ("c3", "c4", "c5")  # 3 and 4 do not build; 5 is bad
    assert {"c3", "c4", "c5", "c2"} <= set(built)


def test_search_state():
    find = Search(["a", "b", "c", "d"])
    assert (find.lo, find.hi, find.left, find.builds_left()) == (-1, 3, 4, 2)
    assert find.next() == 1
    find.record(1, GOOD)
    assert find.next() == 2 and find.untested() == [2]
    find.record(2, SKIP)
    assert find.done and find.next() is None
    assert find.result().candidates == ("c", "d")
    with pytest.raises(ValueError, match="outside"):
        find.record(0, BAD)
    with pytest.raises(ValueError, match="nothing to search"):
        Search([])
    with pytest.raises(ValueError, match="verdict"):
        Search(["a", "b", "c"]).record(1, "maybe")


@pytest.mark.parametrize(
    "good, bad, message",
    [
        (BAD, BAD, "--good commit g .* already fails the selected cases"),
        (SKIP, BAD, "--good commit g .* does not build: the last line"),
        (GOOD, GOOD, "--bad commit c3 .* passes every selected case"),
        (GOOD, SKIP, "--bad commit c3 .* does not build"),
    ],
)
def test_endpoints_that_are_not_good_and_bad_stop_the_bisect(good, bad, message):
    commits = ["c0", "c1", "c2", "c3"]
    built: list[str] = []

    def judge(sha, role):
        built.append(sha)
        verdict = good if sha == "g" else bad
        return Step(sha, "s", role, verdict, build_error="...\nthe last line" * (verdict == SKIP))

    with pytest.raises(BisectError, match=message):
        bisect.search("g", commits, judge)
    assert built == (["g"] if good != GOOD else ["g", "c3"])  # no step after a bad endpoint


# -- the case selection ------------------------------------------------------------------------

SMOKE = matrix.expand("smoke")
NOREDUCE = "910b_f32_4x1x33_d1_y.uniform_dy.normal"
TAIL = "910b_f32_3x17_d-1_y.uniform_dy.normal"


def test_k_is_pytests_expression_over_substrings_of_the_id():
    assert bisect.matches("f32 and 4x1x33", NOREDUCE)
    assert not bisect.matches("f32 and not 4x1x33", NOREDUCE)
    assert bisect.matches("f16 or d-1", TAIL)
    assert not bisect.matches("F32", NOREDUCE)  # a substring, as the brief's evaluate says
    with pytest.raises(UsageError, match=re.escape("-k 'f32 and ('")):
        bisect.matches("f32 and (", NOREDUCE)


def test_selection_by_k_over_a_tier():
    cases, selection = bisect.select("910b_f32 and d1_", None, [], [])
    assert [c.id for c in cases] == [c.id for c in SMOKE if "910b_f32" in c.id and "d1_" in c.id]
    assert selection == {
        "cases": [c.id for c in cases],
        "files": [],
        "k": "910b_f32 and d1_",
        "tier": "smoke",
    }
    with pytest.raises(UsageError, match="selects no case of tier smoke"):
        bisect.select("no_such_case", None, [], [])
    with pytest.raises(UsageError, match="unknown tier"):
        bisect.select("f32", "weekly", [], [])


def test_selection_by_ids_and_by_file(tmp_path):
    from suites import casefile

    cases, selection = bisect.select(None, None, [], [NOREDUCE, TAIL, NOREDUCE])
    assert [c.id for c in cases] == [NOREDUCE, TAIL]
    assert selection["cases"] == [NOREDUCE, TAIL]
    path = casefile.dump([c for c in SMOKE if c.id in (NOREDUCE, TAIL)], tmp_path / "two.json")
    cases, selection = bisect.select("d-1", None, [str(path)], [])
    assert [c.id for c in cases] == [TAIL] and selection["files"] == [str(path)]
    for k, tier, files, ids, message in [
        (None, None, [], [], "select the cases"),
        ("f32", None, [], [NOREDUCE], "either by id or with -k"),
        (None, "smoke", [], [NOREDUCE], "--tier selects cases with -k"),
        ("f32", "smoke", [str(path)], [], "with --cases, the files' cases"),
    ]:
        with pytest.raises(UsageError, match=message):
            bisect.select(k, tier, files, ids)


# -- the command, over a git repository, with a fake build and a fake pool ---------------------
#
# Each commit's op/state.txt says what its operator is: "ok" passes every case; "bug" fails the
# NO_REDUCE case; "nobuild" does not build; "broken" comes back broken from the pool; "flaky" is
# broken once per case, then passes; "interrupt" is Ctrl-C while its cases run.


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(root: Path, states: list[str]) -> list[str]:
    """A repository whose first commit has states[0], each later one the next; the shas."""
    repo = root / "repo"
    (repo / "op").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Bisect Test")
    git(repo, "config", "user.email", "bisect@example.com")
    shas = []
    for i, state in enumerate(states):
        (repo / "op" / "state.txt").write_text(state + "\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}: {state}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


class Fakes:
    def __init__(self):
        self.builds: list[dict] = []
        self.runs: list[tuple[str, str]] = []


@pytest.fixture
def fakes(monkeypatch, tmp_path) -> Fakes:
    seen = Fakes()

    def build_package(target, out_dir, build_dir=None, source_dir=None, plant_bug=""):
        state = (Path(source_dir) / "state.txt").read_text().strip()
        seen.builds.append(
            {
                "target": target,
                "build_dir": Path(build_dir),
                "source_dir": Path(source_dir),
                "out_dir": Path(out_dir),
                "state": state,
            }
        )
        if state == "nobuild":
            raise BuildError("cmake build failed (exit 2): cmake --build\nviews.cpp:1: #error no")
        Path(build_dir).mkdir(parents=True, exist_ok=True)
        package = Path(out_dir) / "pkg.tar.gz"
        package.parent.mkdir(parents=True, exist_ok=True)
        package.write_text(state)
        return package

    class PoolSession:
        def __init__(self, inventory=None, *, target=None, package=None, run_dir=None, **kw):
            self.state = Path(package).read_text()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def families(self):
            return {c.family for c in SMOKE}

        def run(self, case):
            seen.runs.append((self.state, case.id))
            if self.state == "interrupt":
                raise KeyboardInterrupt
            broken = self.state == "broken" or (
                self.state == "flaky" and seen.runs.count((self.state, case.id)) == 1
            )
            if broken:
                return {"outcome": "broken", "category": "infrastructure", "message": "lost"}
            fails = self.state == "bug" and case.id == NOREDUCE
            return {"outcome": "failed" if fails else "passed", "category": None, "message": ""}

    monkeypatch.setattr(build, "build_package", build_package)
    monkeypatch.setattr("farm.run.session.PoolSession", PoolSession)
    monkeypatch.setattr("farm.util.paths.RUNS_DIR", tmp_path / "runs")
    return seen


def run_bisect(tmp_path, capsys, *args: str) -> tuple[int, dict | None, str]:
    code = farm(
        [
            "bisect",
            "--repo",
            str(tmp_path / "repo"),
            "--store",
            str(tmp_path / "s.sqlite"),
            "--json",
            *args,
            NOREDUCE,
            TAIL,
        ]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def stored(tmp_path) -> tuple[dict, list[dict]]:
    with RunStore(tmp_path / "s.sqlite") as store:
        (row,) = store.bisects()
        return row, store.bisect_steps(row["bisect_id"])


def assert_clean(tmp_path, fakes: Fakes, head: str):
    """The repository's own checkout untouched, the worktree and the build directory gone."""
    repo = tmp_path / "repo"
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    for b in fakes.builds:
        assert not b["source_dir"].exists() and not b["build_dir"].exists()


def test_the_first_bad_commit_is_found_and_every_step_stored(tmp_path, capsys, fakes):
    states = ["ok"] + ["ok"] * 6 + ["bug"] * 6  # 12 commits after the base; the 7th is bad
    shas = make_repo(tmp_path, states)
    code, out, err = run_bisect(tmp_path, capsys, "--good", shas[0], "--bad", "main")
    assert code == 0, err
    assert out is not None, err  # --json: the result on stdout
    assert out["status"] == "found" and out["commits"] == 12
    first = out["first_bad"]
    assert first["sha"] == shas[7] and first["subject"] == "commit 7: bug"
    assert first["failing"] == [NOREDUCE]
    assert first["author"].startswith("Bisect Test <bisect@example.com>")
    assert first["stat"] == "1 file changed, 1 insertion(+), 1 deletion(-)"
    assert out["builds"] == len(fakes.builds) <= 2 + math.ceil(math.log2(12))
    # One worktree and one build directory for every step (CMake rebuilds what changed), a
    # package directory per step.
    assert len({b["build_dir"] for b in fakes.builds}) == 1
    assert len({b["source_dir"] for b in fakes.builds}) == 1
    assert len({b["out_dir"] for b in fakes.builds}) == len(fakes.builds)
    assert all(b["target"] == "ascendc-cpu" for b in fakes.builds)
    assert fakes.builds[0]["source_dir"].parent != tmp_path / "repo"
    # The live lines, on stderr beside --json.
    assert err.count("good endpoint") == 1
    assert "bad endpoint" in err and f"1 failing: {NOREDUCE}" in err

    row, steps = stored(tmp_path)
    assert (row["status"], row["first_bad"], row["good"], row["bad"]) == (
        "found",
        shas[7],
        shas[0],
        shas[-1],
    )
    assert row["selection"]["cases"] == [NOREDUCE, TAIL]
    assert [s["commit_sha"] for s in steps] == [s["sha"] for s in out["steps"]]
    assert [s["verdict"] for s in steps][:2] == ["good", "bad"]
    for s in steps:
        assert s["subject"] == git(tmp_path / "repo", "log", "-1", "--format=%s", s["commit_sha"])
        assert s["detail"]["seconds"] >= 0
        assert s["detail"].get("failing", []) == ([NOREDUCE] if s["verdict"] == "bad" else [])
    assert_clean(tmp_path, fakes, shas[-1])

    # --show: the newest, and by id.
    assert farm(["bisect", "--show", "--store", str(tmp_path / "s.sqlite")]) == 0
    text = capsys.readouterr().out
    assert row["bisect_id"] in text and shas[7] in text and "good endpoint" in text
    assert (
        farm(
            ["bisect", "--show", row["bisect_id"], "--json", "--store", str(tmp_path / "s.sqlite")]
        )
        == 0
    )
    shown = json.loads(capsys.readouterr().out)
    assert shown["first_bad"] == shas[7] and len(shown["steps"]) == len(steps)
    assert farm(["bisect", "--show", "nope", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "no bisect 'nope'" in capsys.readouterr().err


def test_a_commit_that_does_not_build_is_skipped(tmp_path, capsys, fakes):
    # base ok; 1-4 ok; 5 nobuild; 6 ok; 7 bug ...: the middle (5) is skipped, its neighbour taken.
    states = ["ok", "ok", "ok", "ok", "ok", "nobuild", "ok", "bug", "bug", "bug", "bug"]
    shas = make_repo(tmp_path, states)
    code, out, err = run_bisect(tmp_path, capsys, "--good", shas[0], "--bad", shas[-1])
    assert code == 0, err
    assert out is not None, err  # --json: the result on stdout
    assert out["first_bad"]["sha"] == shas[7]
    skipped = [s for s in out["steps"] if s["verdict"] == "skip"]
    assert [s["sha"] for s in skipped] == [shas[5]]
    assert "#error no" in skipped[0]["build_error"] and "does not build" in err
    assert out["builds"] <= 2 + max_builds(10) + 1
    _, steps = stored(tmp_path)
    assert [s["verdict"] for s in steps].count("skip") == 1
    assert_clean(tmp_path, fakes, shas[-1])


def test_skipped_commits_next_to_the_first_bad_one_leave_a_range(tmp_path, capsys, fakes):
    states = ["ok", "ok", "ok", "nobuild", "nobuild", "bug", "bug", "bug"]
    shas = make_repo(tmp_path, states)
    code, out, err = run_bisect(tmp_path, capsys, "--good", shas[0], "--bad", shas[-1])
    assert code == 1, err
    assert out is not None, err  # --json: the result on stdout
    assert out["status"] == "inconclusive" and out["first_bad"] is None
    assert [c["sha"] for c in out["candidates"]] == shas[3:6]
    assert [c["verdict"] for c in out["candidates"]] == ["skip", "skip", "bad"]
    row, _ = stored(tmp_path)
    assert row["status"] == "inconclusive" and row["first_bad"] is None
    assert "one of 3 commits" in row["message"]


@pytest.mark.parametrize(
    "states, message",
    [
        (["bug", "bug", "bug"], "the --good commit .* already fails the selected cases"),
        (["ok", "ok", "ok"], "the --bad commit .* passes every selected case"),
        (["nobuild", "bug", "bug"], "the --good commit .* does not build: views.cpp:1: #error"),
    ],
)
def test_endpoints_are_checked_first(tmp_path, capsys, fakes, states, message):
    shas = make_repo(tmp_path, states)
    code, out, err = run_bisect(tmp_path, capsys, "--good", shas[0], "--bad", shas[-1])
    assert code == 2
    assert out is not None, err  # --json: the result on stdout
    assert re.search(message, " ".join(err.split())), err
    row, steps = stored(tmp_path)
    assert row["status"] == "failed" and re.search(message, row["message"])
    assert len(steps) == len(fakes.builds) <= 2
    assert out["status"] == "failed"
    assert_clean(tmp_path, fakes, shas[-1])


def test_a_case_broken_twice_stops_the_bisect_a_broken_once_is_retried(tmp_path, capsys, fakes):
    shas = make_repo(tmp_path, ["ok", "ok", "flaky", "broken", "bug"])
    code, out, err = run_bisect(tmp_path, capsys, "--good", shas[0], "--bad", shas[-1])
    assert code == 2
    assert "came back broken twice" in err and "infrastructure problem, not a verdict" in err
    flaky = [r for r in fakes.runs if r[0] == "flaky"]
    assert len(flaky) == 4  # each of the two cases: broken, then passed
    row, steps = stored(tmp_path)
    assert row["status"] == "failed" and "broken twice" in row["message"]
    # The broken commit is no step: it was never called good or bad.
    assert shas[3] not in [s["commit_sha"] for s in steps]
    assert {s["commit_sha"]: s["verdict"] for s in steps}[shas[2]] == "good"
    assert_clean(tmp_path, fakes, shas[-1])


def test_ctrl_c_stores_the_bisect_as_interrupted_and_removes_the_worktree(tmp_path, capsys, fakes):
    shas = make_repo(tmp_path, ["ok", "ok", "interrupt", "bug", "bug"])
    code, _, err = run_bisect(tmp_path, capsys, "--good", shas[0], "--bad", shas[-1])
    assert code == 130
    assert "interrupted by SIGINT after 2 steps" in err
    row, steps = stored(tmp_path)
    assert row["status"] == "interrupted" and len(steps) == 2
    assert_clean(tmp_path, fakes, shas[-1])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--good", "HEAD", "--bad", "HEAD~2"], "is not an ancestor of --bad"),
        (["--good", "HEAD", "--bad", "HEAD"], "the same commit"),
        (["--good", "nosuch", "--bad", "HEAD"], "--good nosuch: no such commit"),
        (["--good", "HEAD~1"], "--good REV and --bad REV are both needed"),
    ],
)
def test_usage_errors_start_nothing(tmp_path, capsys, fakes, args, message):
    make_repo(tmp_path, ["ok", "ok", "bug"])
    code, _, err = run_bisect(tmp_path, capsys, *args)
    assert code == 2 and message in " ".join(err.split())
    assert not fakes.builds and not (tmp_path / "s.sqlite").exists()


def test_a_repo_that_is_not_a_git_repository(tmp_path, capsys, fakes):
    (tmp_path / "repo").mkdir()
    code, _, err = run_bisect(tmp_path, capsys, "--good", "a", "--bad", "b")
    assert code == 2 and "not a git repository" in err


def test_show_without_a_bisect(tmp_path, capsys):
    RunStore(tmp_path / "s.sqlite").close()
    assert farm(["bisect", "--show", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "no bisect in the store yet" in capsys.readouterr().err


def test_build_from_another_source_dir_needs_its_own_build_dir(tmp_path):
    with pytest.raises(BuildError, match="needs its own build_dir"):
        build.build_native("twin", source_dir=tmp_path)


def test_a_package_from_another_source_dir_describes_that_tree(tmp_path):
    """What build_package(source_dir=...) puts in the archive's name and manifest comes from the
    other tree (a worktree at a commit); the defaults still describe this checkout's op/."""
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(build.OP_DIR, repo / "op", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "op" / "VERSION").write_text("9.9.9\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    src = repo / "op"
    assert build.op_version(src) == "9.9.9" != build.op_version()
    assert build.archive_name("twin", source_dir=src) == "logsoftmaxgrad-9.9.9-twin.tar.gz"
    for target in build.NATIVE_TARGETS:
        assert build.headers(target) == build.HEADERS[target]
        theirs = build.headers(target, src)
        assert [h.name for h in theirs] == [h.name for h in build.HEADERS[target]]
        assert all(h.is_file() and src.resolve() in h.parents for h in theirs)
    assert build.soc_profiles(src) == build.soc_profiles()
    assert build.emulation_present(src) == build.emulation_present()
    sha = git(repo, "rev-parse", "HEAD")
    assert build.git_state(src) == {"git_commit": sha, "git_dirty": False}
    (src / "README.md").write_text("changed")
    assert build.git_state(src) == {"git_commit": sha, "git_dirty": True}
    manifest = build.manifest("twin", {"lib/x.so": b"x"}, source_dir=src)
    assert (manifest["version"], manifest["git_commit"]) == ("9.9.9", sha)


def test_the_line_that_says_why_a_build_failed():
    output = (
        "cmake build failed (exit 2): cmake --build b\n[ 10%] Building CXX object x.o\n"
        'op/tiling/views.cpp:1:2: error: #error "half-way"\n'
        "gmake[2]: *** [x.o] Error 1\ngmake: *** [Makefile:203: all] Error 2"
    )
    assert bisect.build_error_line(output) == 'op/tiling/views.cpp:1:2: error: #error "half-way"'
    assert bisect.build_error_line("CMake Error at CMakeLists.txt:3\nmore") == (
        "CMake Error at CMakeLists.txt:3"
    )
    assert bisect.build_error_line("one\ntwo\n") == "two"
    assert bisect.build_error_line("") == "no output"
