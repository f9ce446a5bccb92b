"""`farm mutate`'s parts below the command: a mutant's cases in forked children (a crash and a
hang are broken cases, the rest still run), what a survivor keeps, the score, the equivalence
fingerprint, the page. The command on the real operator: tests/e2e/test_mutate.py."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from farm.results.mutate_report import render, write_report
from farm.run import mutate, mutate_cases
from farm.run.mutants import Mutant
from farm.run.mutate_cases import CRASH, HANG, Built, CaseResult, run_cases
from suites import matrix

CASES = matrix.expand("smoke")[:6]
UNUSED = Built("unused.so")


def fake_one(plan: dict[int, str]):
    """A stand-in for one case's run: by the case's position, crash, hang, fail (precision),
    policy (refused by an emulation policy) or pass."""
    index = {c.id: i for i, c in enumerate(CASES)}
    categories = {"fail": "precision", "policy": "emulation_policy"}

    def one(case, backend) -> CaseResult:
        what = plan.get(index[case.id], "pass")
        if what == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if what == "hang":
            time.sleep(3600)
        failed = what in categories
        return CaseResult(
            case.id,
            "failed" if failed else "passed",
            categories.get(what),
            what,
            0.5 + index[case.id] / 10,
            0.0,
        )

    return one


def test_a_crash_and_a_hang_are_broken_cases_and_the_other_cases_still_run(monkeypatch):
    monkeypatch.setattr(mutate_cases, "_one", fake_one({1: "crash", 3: "hang", 4: "fail"}))
    results, complete = run_cases(UNUSED, CASES, timeout=2.0)
    assert complete
    assert [r.case_id for r in results] == [c.id for c in CASES]
    assert [(r.outcome, r.category) for r in results] == [
        ("passed", None),
        ("broken", CRASH),
        ("passed", None),
        ("broken", HANG),
        ("failed", "precision"),
        ("passed", None),
    ]
    assert "exit -11" in results[1].message and "no answer in 2 s" in results[3].message


def test_stop_after_ends_a_mutants_run_at_that_many_failing_cases(monkeypatch):
    monkeypatch.setattr(mutate_cases, "_one", fake_one({0: "fail", 2: "crash", 5: "fail"}))
    results, complete = run_cases(UNUSED, CASES, timeout=30.0, stop_after=2)
    assert not complete
    assert [r.outcome for r in results] == ["failed", "passed", "broken"]


def test_a_run_stops_after_max_breaks_broken_cases(monkeypatch):
    monkeypatch.setattr(mutate_cases, "MAX_BREAKS", 2)
    monkeypatch.setattr(mutate_cases, "_one", fake_one({0: "crash", 1: "crash"}))
    results, complete = run_cases(UNUSED, CASES, timeout=30.0)
    assert not complete and [r.category for r in results] == [CRASH, CRASH]


def test_stop_after_counts_only_the_cases_that_fail_through_their_results(monkeypatch):
    plan = {0: "policy", 1: "policy", 2: "fail", 3: "fail", 5: "fail"}
    monkeypatch.setattr(mutate_cases, "_one", fake_one(plan))
    results, complete = run_cases(UNUSED, CASES, timeout=30.0, stop_after=2)
    assert not complete  # the two policy refusals did not stop it; the second precision did
    assert [r.category for r in results] == [
        "emulation_policy",
        "emulation_policy",
        "precision",
        "precision",
    ]


def test_the_child_finds_the_builds_own_acl_runtime_beside_its_library(monkeypatch, tmp_path):
    """On acl the child names the build's acl/lib before anything loads ACL; on native, none."""
    monkeypatch.delenv("LSG_ACL_LIB_DIR", raising=False)

    def one(case, backend) -> CaseResult:
        said = f"{backend} {os.environ['LSG_NATIVE_LIB']} {os.environ.get('LSG_ACL_LIB_DIR')}"
        return CaseResult(case.id, "passed", None, said, None, 0.0)

    monkeypatch.setattr(mutate_cases, "_one", one)
    library = tmp_path / "build" / "liblsg_ascendc_cpu.so"
    acl, _ = run_cases(Built(str(library), "acl"), CASES[:1], timeout=30.0)
    assert acl[0].message == f"acl {library} {tmp_path / 'build' / 'acl' / 'lib'}"
    native, _ = run_cases(Built(str(library)), CASES[:1], timeout=30.0)
    assert native[0].message == f"native {library} None"
    names = [p.name for p in Built(str(library), "acl").libraries()]
    assert names[0] == "liblsg_ascendc_cpu.so" and "libcust_opapi.so" in names
    assert Built(str(library)).libraries() == [library]


class _FakeSpace:
    """A workspace whose build is a mutant's (another fingerprint): evaluate runs its cases."""

    original = "the original"

    def put(self, mutant) -> str:
        return "x = 1;"

    def build(self) -> Built:
        return Built("mutant.so", "acl")


def failing(case_id: str, outcome: str, category: str) -> CaseResult:
    return CaseResult(case_id, outcome, category, "", None, 0.0)


@pytest.mark.parametrize(
    ("results", "policy_only", "caught"),
    [
        # every failing case refused by an emulation policy: a kill CANN would not see
        (
            [
                failing("a", "failed", "emulation_policy"),
                failing("b", "failed", "emulation_policy"),
            ],
            True,
            None,
        ),
        # both kinds: the precision failure is named (before a crash that came first)
        (
            [
                failing("a", "failed", "emulation_policy"),
                failing("b", "broken", "crash"),
                failing("c", "failed", "precision"),
            ],
            False,
            "c",
        ),
        # no policy at all: nothing to name
        ([failing("a", "failed", "precision")], False, None),
    ],
)
def test_a_kill_that_rests_on_an_emulation_policy_alone_is_policy_only(
    monkeypatch, results, policy_only, caught
):
    monkeypatch.setattr(mutate, "fingerprint_all", lambda built: "a mutant's")
    monkeypatch.setattr(mutate, "run_cases", lambda built, cases, **kw: (results, True))
    m = Mutant("f.cpp:1:constant.0", "f.cpp", 1, 0, "constant", "1", "2")
    base = mutate.Baseline([], [], {})
    got = mutate.evaluate(_FakeSpace(), m, base, timeout=1.0, stop_after=None).to_dict()  # type: ignore[arg-type]
    assert got["status"] == "killed" and got["failing"] == len(results)
    assert got["policy_only"] is policy_only
    policy = [r.case_id for r in results if r.category == "emulation_policy"]
    assert got["policy_failing"] == len(policy) and got["policy_cases"] == policy
    assert (got["caught_by"] or {}).get("case_id") == caught


def result(case_id: str, closeness: float | None) -> CaseResult:
    return CaseResult(case_id, "passed", None, "", closeness, 0.0)


def test_a_survivor_keeps_the_cases_moved_most_toward_their_limits():
    base = mutate.Baseline([], [], {"a": 0.9, "b": 0.1, "c": 0.2, "d": None, "e": 0.5})
    results = [
        result("a", 0.9),
        result("b", 0.6),
        result("c", 0.25),
        result("d", None),
        result("e", 0.5),
    ]
    kept = mutate.closest(results, base)
    assert [c["case_id"] for c in kept] == ["b", "c", "a"]  # moved 0.5, 0.05, then the nearest
    assert kept[0] == {"case_id": "b", "closeness": 0.6, "baseline": 0.1}


def outcome(
    status: str, failing: int = 0, complete: bool = True, policy: int = 0, caught: str = ""
) -> dict:
    m = Mutant(f"f.cpp:{failing}{policy}{caught}:constant.0", "f.cpp", 1, 0, "constant", "1", "2")
    return mutate.Outcome(
        m,
        status,
        failing=failing,
        complete=complete,
        source_line="x = 1;",
        policy_failing=policy,
        policy_cases=[f"910b_policy_{i}" for i in range(policy)],
        caught_by={"case_id": caught, "outcome": "failed", "category": "precision"}
        if caught
        else None,
    ).to_dict()


def test_the_score_counts_killed_over_the_mutants_that_are_neither_equivalent_nor_stillborn():
    outcomes = [
        outcome("killed", 40),
        outcome("killed", 2),  # weak
        outcome("killed", 2, complete=False),  # stopped early (--stop-after 2): not known weak
        outcome("survived"),
        outcome("equivalent"),
        outcome("stillborn"),
    ]
    s = mutate.summarize(outcomes)
    assert (s["killed"], s["survived"], s["equivalent"], s["stillborn"], s["weak"]) == (
        3,
        1,
        1,
        1,
        1,
    )
    assert s["score"] == 3 / 4 and s["strong_score"] == 2 / 4
    assert s["policy_only"] == 0 and s["results_score"] == 3 / 4
    assert mutate.summarize([outcome("equivalent")])["score"] is None


def test_policy_only_kills_are_counted_apart_and_named_in_the_last_lines(tmp_path: Path):
    from farm.cli.mutate_command import _summary_lines

    outcomes = [
        outcome("killed", 4, policy=4),  # policy-only
        outcome("killed", 5, policy=2, caught="910b_f32_caught"),
        outcome("killed", 9),
        outcome("survived"),
    ]
    s = mutate.summarize(outcomes)
    assert (s["killed"], s["policy_only"]) == (3, 1)
    assert s["score"] == 3 / 4 and s["results_score"] == 2 / 4
    lines = _summary_lines(s, 1.0, tmp_path, tmp_path / "index.html", outcomes)
    assert "3 killed (0 weak: fewer than 3 failing cases; 1 policy-only)" in lines[0]
    assert "50.0% through the results" in lines[1]
    assert "the score without the 0 unreached survivors" in lines[2]
    assert "policy-only[/] f.cpp:44:constant.0" in lines[3] and "910b_policy_0" in lines[3]
    assert "910b_f32_caught (precision)" in lines[4]
    assert lines[-1].startswith("report: ")


def test_equivalent_code_has_one_fingerprint_and_other_code_another(tmp_path: Path):
    def library(name: str, body: str) -> Path:
        src = tmp_path / f"{name}.cpp"
        src.write_text(body)
        out = tmp_path / name / "lib.so"
        out.parent.mkdir()
        subprocess.run(
            ["c++", "-O2", "-shared", "-fPIC", "-Wl,--build-id=sha1", "-o", str(out), str(src)],
            check=True,
        )
        return out

    a = library("a", 'extern "C" int f(int x) { return x + 1; }\n')
    spaced = library("b", '// a comment\nextern "C" int f(int x) {\n  return x + 1;\n}\n')
    other = library("c", 'extern "C" int f(int x) { return x + 2; }\n')
    assert mutate.fingerprint(a) == mutate.fingerprint(spaced)
    assert mutate.fingerprint(a) != mutate.fingerprint(other)
    assert not list(tmp_path.glob("*/*.stripped"))


def test_the_page_shows_the_score_the_survivors_with_their_closest_cases_and_the_weak_kills(
    tmp_path: Path,
):
    survivor = outcome("survived")
    survivor["closest"] = [{"case_id": "910b_f32_case", "closeness": 0.42, "baseline": 0.4}]
    policy_only = outcome("killed", 3, policy=3)
    both = outcome("killed", 7, policy=3, caught="910b_f32_caught")
    weak = outcome("killed", 1)
    weak["failing_cases"] = [
        {"case_id": "310b_f16_case", "outcome": "failed", "category": "precision"}
    ]
    doc = {
        "mutate_id": "mutate-x",
        "tier": "smoke",
        "k": None,
        "cases": 290,
        "cases_judged": 290,
        "baseline_failing": [],
        "weak_kill": 3,
        "seconds": 12.0,
        "summary": mutate.summarize([survivor, weak, outcome("killed", 9)]),
        "errors": [],
        "mutants": [survivor, weak, policy_only, both],
    }
    page = write_report(doc, tmp_path / "report")
    text = page.read_text()
    assert text == render(doc)
    assert "66.7% of 2 non-equivalent mutants killed" not in text  # 2 of 3 judged
    assert "66.7% of 3 non-equivalent mutants killed" in text
    assert (
        "Survivors (1)" in text and "910b_f32_case</code> 0.42 of its limit (original 0.4)" in text
    )
    assert "Weak kills (1)" in text and "310b_f16_case" in text
    assert "op/f.cpp:1" in text and "x = 1;" in text
    assert "Policy-only kills (1)" in text and "910b_policy_2" in text
    assert "caught through the results (1)" in text
    assert "910b_f32_caught</code> failed (precision)" in text


@pytest.mark.parametrize("status", mutate.STATUSES)
def test_every_status_has_a_colour_in_the_progress_lines(status):
    from farm.cli.mutate_command import _COLOURS

    assert status in _COLOURS


def test_closeness_is_the_nearest_gated_standard_to_its_limit_and_margin_only_the_failed():
    from farm.run.margins import closeness, margin
    from golden.dtypes import MIXED_MAX_ABS, T

    t = T["float32"]
    metrics = {
        "dtype": "float32",
        "mere": 0.5 * t,  # experimental: 0.5 of its limit
        "mare": 0.1 * t,
        "mixed_ok_fraction": 1.0,
        "max_abs": 0.25 * MIXED_MAX_ABS["float32"],  # mixed-tolerance: 0.25
        "nonfinite_ok": True,
    }
    standards = {
        "experimental": {"passed": True, "gated": True, "reason": ""},
        "mixed-tolerance": {"passed": True, "gated": True, "reason": ""},
    }
    passed = {"category": None, "dtype": "float32", "metrics": metrics, "standards": standards}
    assert closeness(passed) == pytest.approx(0.5)
    ungated = dict(standards, experimental={"passed": True, "gated": False, "reason": ""})
    assert closeness(dict(passed, standards=ungated)) == pytest.approx(0.25)
    assert closeness({"metrics": None, "standards": {}}) is None  # a rejection: no numbers

    failed_metrics = dict(metrics, mere=3 * t)
    failed = dict(
        passed,
        category="precision",
        metrics=failed_metrics,
        standards=dict(standards, experimental={"passed": False, "gated": True, "reason": ""}),
    )
    assert margin(failed) == pytest.approx(3.0)  # the failed standard alone
    assert margin(dict(failed, category="kernel_fault")) == float("inf")


def test_an_explained_survivor_is_counted_apart_from_the_score_over_the_killable():
    explained = {**outcome("survived"), "explained": "the emulated device does not enforce it"}
    outcomes = [outcome("killed", 5), outcome("killed", 4), outcome("survived"), explained]
    s = mutate.summarize(outcomes)
    assert (s["survived"], s["explained"]) == (2, 1)
    assert s["score"] == 2 / 4 and s["killable_score"] == 2 / 3
    assert mutate.summarize([explained])["killable_score"] is None


def test_the_judging_code_is_imported_before_any_child_is_forked():
    """A merge in the middle of a long `farm mutate` made its children import a newer farm
    (lazily, after the fork), which the scratch builds of the start did not fit: every case
    broke and every mutant counted killed. preload() imports every module a case may run in the
    parent, and no library: each child loads its own build's."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from farm.run.mutate_cases import preload\n"
        "preload()\n"
        "needed = ('farm.agent.execute', 'farm.agent.backends.acl', 'farm.agent.backends.native',"
        " 'farm.agent.layer_checks', 'farm.run.session', 'farm.run.margins', 'suites.tiling',"
        " 'suites.workspace', 'golden.inference')\n"
        "print(sorted(set(needed) - set(sys.modules)))\n"
        "maps = open('/proc/self/maps').read()\n"
        "libs = {ln.split()[-1] for ln in maps.splitlines() if 'lsg' in ln or 'ascendcl' in ln}\n"
        "print(sorted(libs))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == ["[]", "[]"], out


def test_a_kill_by_the_output_policies_alone_is_run_again_without_them(monkeypatch):
    """52 kills of the smoke tier rested on the emulated device's output policies alone (the
    kernel stopped before its results existed): their policy cases run again without those
    policies (as CANN's device runs), and a case that then fails through its results is named;
    a kill none of them catches so stays policy-only."""
    cases = matrix.expand("smoke")[:3]
    base = mutate.Baseline(cases, [], {})
    policy = [CaseResult(c.id, "failed", "emulation_policy", "refused", None, 0.0) for c in cases]
    seen: list[tuple[list[str], dict | None]] = []

    def rerun(built, selected, *, timeout, env=None):
        seen.append(([c.id for c in selected], env))
        return [CaseResult(selected[1].id, "failed", "precision", "NaN", None, 0.0)], True

    monkeypatch.setattr(mutate, "run_cases", rerun)
    built = Built("lib.so", "acl")
    caught = mutate.caught_without_policy(built, base, policy, 10.0)
    assert caught is not None and caught["case_id"] == cases[1].id
    assert caught["without_policy"] and caught["category"] == "precision"
    assert seen == [([c.id for c in cases], mutate_cases.OUTPUT_POLICY_OFF)]

    monkeypatch.setattr(mutate, "run_cases", lambda *a, **k: ([], True))
    assert mutate.caught_without_policy(built, base, policy, 10.0) is None
    m = Mutant("f.cpp:1:statement.0", "f.cpp", 1, 0, "statement", "x;", "")
    kill = mutate.Outcome(m, mutate.KILLED, failing=3, policy_failing=3)
    assert kill.policy_only
    kill.caught_by = caught
    assert not kill.policy_only
