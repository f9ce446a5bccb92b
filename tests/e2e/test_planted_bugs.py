"""A product failure is final: `farm run --plant-bug` fails exactly the cases the bug breaks, on
the first attempt, exit 1, and no host is blamed (quarantined) for it; on the twin
(`--target twin`) and on the emulated real kernel (the default target).

Which cases a bug breaks follows from the matrix's own design:

* ``tail`` drops the unaligned remainder of a row's last UB chunk. The chunk-row cases 2x9824
  fill whole UB blocks (9824 elements is one block of the REDUCE_TAIL plan, suites/matrix.py),
  2x9825 leave a one-element tail: those fail, the others pass. (The fp32/fp16 ones, judged by
  mixed-tolerance: the bf16 ones need torch for benchmark-ratio, seconds of start-up.)
* ``seed_noreduce`` computes the seed's ``(dy - 1) * exp(y)`` on the no-reduce path. For
  4x1x33 reduced over its extent-1 axis with a valid y (= 0), the right answer is 0 and the
  planted one dy - 1: every accepted case fails. The bf16 case on Ascend310B is still rejected,
  as it must be, and passes.

The twin's failures are precision failures. So are the real kernel's for seed_noreduce; its tail
bug is stopped by the emulated device first (the dropped remainder of the output is never
written, which the device refuses): a kernel fault, the same cases.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import select


@pytest.fixture(scope="module", autouse=True)
def real_package_newest_afterwards():
    """Planted runs leave their archive as the newest in dist/op, which `farm.pool.deploy.
    find_op_package` (used by other tests) would take for the operator: rebuild the real one."""
    yield
    from farm.pool import build

    build.build_package()
    build.build_package("twin")


PLANTED = {
    # bug: (-k expression, which of its accepted cases must fail)
    "tail": ("x98 and mixed-tolerance", lambda c: "x9825_" in c.id),
    "seed_noreduce": ("4x1x33", lambda c: True),
}
# (target, bug) -> the category of its failures
CATEGORY = {
    ("twin", "tail"): "precision",
    ("twin", "seed_noreduce"): "precision",
    # The real kernel's tail bug leaves output elements unwritten: the emulated device refuses
    # that by the farm's contract (every element written once), a rule CANN does not check.
    ("ascendc-cpu", "tail"): "emulation_policy",
    ("ascendc-cpu", "seed_noreduce"): "precision",
}


@pytest.mark.parametrize("target, bug", sorted(CATEGORY))
def test_planted_bug_fails_its_cases_once(farm, target, bug):
    k, breaks = PLANTED[bug]
    category = CATEGORY[target, bug]
    cases = select(k)
    must_fail = {c.id for c in cases if c.accepted and breaks(c)}
    assert must_fail and len(must_fail) < len(cases)

    result = farm.run_tier("--jobs", "2", "--target", target, "--plant-bug", bug, k=k)

    assert result.code == 1, result.text  # product failures, nothing degraded
    records = result.assert_one_result_per_case(cases)
    failed = {cid for cid, r in records.items() if r["outcome"] == "failed"}
    assert failed == must_fail
    for cid, r in records.items():
        # Never retried: one attempt, no infrastructure error on the way.
        assert (r["attempts"], r["infra_errors"]) == (1, []), cid
        if cid in must_fail and category == "precision":
            assert r["category"] == "precision" and r["verdict"]["passed"] is False, r
            assert r["message"].startswith("FAIL"), r["message"]
        elif cid in must_fail:
            assert (r["category"], r["status"], r["reason"]) == (category, 561000, category), r
            assert r["message"].startswith("the emulated device refused the kernel"), r
            assert "CANN accepts this" in r["message"], r
        else:
            assert r["outcome"] == "passed", r
    assert result.summary["categories"] == {category: len(must_fail)}
    assert result.summary["target"] == target
    # A wrong operator is not a bad host: the canary does not quarantine anyone for it.
    assert result.summary["unhealthy_hosts"] == {}
    assert result.summary["quarantined_during_run"] == {}
    assert result.quarantine() == {}
    assert all(row["state"] != "bad" for row in farm.hosts().values())

    if (target, bug) == ("twin", "tail"):
        pytest_selection_on_the_planted_pool(farm, result, k, must_fail)
    elif target == "ascendc-cpu":
        # The planted build is now the newest archive in dist/op; a plain `pytest suites/` still
        # tests the real operator (it builds it, as farm run does), so the cases pass there.
        proc = farm.pytest("suites/", "-k", k, "-p", "no:xdist", "-q")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert f"{len(cases)} passed" in proc.stdout


def pytest_selection_on_the_planted_pool(farm, result, k, must_fail):
    """pytest's own -x and --lf on the farm's suites: `pytest suites/ --farm-plan` on the pool
    the planted run prepared (its own run directory), the failures being real ones."""
    plan = json.loads((result.run_dir / "plan.json").read_text())
    plan["run_dir"] = str(farm.root / "pytest-run")
    path = farm.root / "plan.json"
    path.write_text(json.dumps(plan))
    base = ("suites/", "--farm-plan", str(path), "-k", k, "-p", "no:xdist", "-q")

    def outcome(proc) -> dict[str, int]:
        """The summary line's counts of passed and failed items (-k deselects the rest)."""
        counts = re.findall(r"(\d+) (passed|failed)", proc.stdout.splitlines()[-1])
        return {word: int(n) for n, word in counts}

    # -x: the session stops at the first failure.
    stop = farm.pytest(*base, "-x", "-rf", cache=True)
    assert stop.returncode == 1, stop.stdout[-2000:]
    assert outcome(stop)["failed"] == 1  # (cases before it may have passed)
    assert "stopping after 1 failures" in stop.stdout
    (failed_id,) = re.findall(r"FAILED \S+\[(\S+)\]", stop.stdout)
    assert failed_id in must_fail
    # --lf: exactly the case that failed last time runs again, and fails again.
    last_failed = farm.pytest(*base, "--lf", "-rf", cache=True)
    assert last_failed.returncode == 1, last_failed.stdout[-2000:]
    assert outcome(last_failed) == {"failed": 1}
    assert re.findall(r"FAILED \S+\[(\S+)\]", last_failed.stdout) == [failed_id]


def test_stop_at_first_failure_is_not_an_infrastructure_problem(farm):
    """`farm run -- -x`: pytest stops after the first product failure (under xdist it calls that
    "interrupted"). The run holds the cases that ran, exit 1; the others were not run, not lost."""
    k = "4x1x33"
    cases = select(k)
    result = farm.run_tier("--jobs", "2", "--plant-bug", "seed_noreduce", k=k, extra=["-x"])

    assert result.code == 1, result.text
    raw = result.raw_records()
    # Each worker stops at its first failure, so some of the five failing cases never ran.
    assert 1 <= len(raw) < len(cases)
    assert result.summary["cases"] == len(raw) == len({r["case_id"] for r in raw})
    assert "broken" not in result.summary["outcomes"]
    failed = [r for r in raw if r["outcome"] == "failed"]
    assert failed and all((r["category"], r["attempts"]) == ("precision", 1) for r in failed)
    assert "pytest stopped early (-x)" in " ".join(result.err.split())
    assert len(result.store_rows()) == len(raw)
