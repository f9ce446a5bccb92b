"""A runs directory that refuses writes: read-only, full from the start, filling mid-run, full
only when the report is written, and with the store inside it.

Each `farm run` must end with one error line naming the directory, the problem and the fix,
exit 2, keep every record it could write and store it, never leave the run `running`, and leave
outputs (store, records, JUnit, Allure results, summary) that hold the same cases
(tests/e2e/outcome_sets.py); an output the directory refused is absent, never partial.

The disk is not really filled: FARM_FAULT_RUNS_DIR (farm/run/fault_injection.py) makes every
write under the runs directory fail with the errno, in the orchestrator and its workers alike,
from the start, from the report step on, or once a file exists, which the test creates when the
workers have written a number of records (a point it controls, not a sleep). Root ignores
chmod, and CI runs as root: a directory closed by its permissions is the injected EACCES.
"""

from __future__ import annotations

import sqlite3
import subprocess

import pytest

from farm.run import fault_injection
from farm.run.allure import process as allure_process
from tests.e2e.conftest import Farm
from tests.e2e.outcome_sets import disagreements

SELECTION = "f32"  # about 130 smoke cases: enough for the disk to fill half-way
MID_RUN = 8  # records written before the disk "fills"


def start(
    farm: Farm, fault: str | None, *, report_too: bool = False, k: str = SELECTION, env=None
) -> subprocess.Popen:
    """`farm run` of the smoke cases matching ``k`` with the runs directory refusing writes as
    ``fault`` says (None: not at all)."""
    env = dict(env or farm.env)
    if fault is not None:
        env[fault_injection.ENV] = fault
    args = ["run", "--tier", "smoke", "--no-progress", *([] if report_too else ["--no-report"])]
    return subprocess.Popen(
        farm.argv(*args, "--", "-k", k),
        cwd=farm.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def errors_of(result) -> list[str]:
    return [line for line in result.err.splitlines() if line.startswith("error:")]


def assert_one_line(result, problem: str) -> str:
    assert result.code == 2, result.text
    assert "Traceback" not in result.text and "INTERNALERROR" not in result.text, result.text
    (line,) = errors_of(result)
    assert f"runs directory {result.runs} {problem}" in line, line
    return line


def run_status(store, run_id: str) -> tuple[str, int | None, int]:
    db = sqlite3.connect(store)
    try:
        status, code = db.execute(
            "SELECT status, exit_code FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        (n,) = db.execute("SELECT COUNT(*) FROM results WHERE run_id=?", (run_id,)).fetchone()
    finally:
        db.close()
    return status, code, n


@pytest.mark.parametrize(
    "errno_name, problem, fix",
    [
        ("ENOSPC", "is full", "free space"),
        ("EROFS", "is on a read-only file system", "mount it writable"),
        # A directory its permissions close (root, as CI runs, writes through chmod: injected).
        ("EACCES", "is not writable", "check its permissions"),
    ],
)
def test_a_runs_directory_refusing_from_the_start_is_one_line_and_nothing_runs(
    farm, errno_name, problem, fix
):
    result = farm.finish(start(farm, errno_name))
    line = assert_one_line(result, problem)
    assert fix in line and "FARM_RUNS" in line
    assert result.run_dir is None  # no run began: nothing is stored or left running
    assert not farm.store.exists() or run_count(farm.store) == 0


def run_count(store) -> int:
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    finally:
        db.close()


def test_a_runs_directory_filling_mid_run_keeps_what_was_written(farm):
    full = farm.root / "disk-full"
    proc = start(farm, f"ENOSPC:{full}")
    run_dir = farm.wait_for_records(proc, MID_RUN)
    full.touch()  # the disk fills here
    result = farm.finish(proc)
    line = assert_one_line(result, "is full")
    left_out = set(line.rsplit("not written: ", 1)[1].rstrip(")").split(", "))
    assert {"JUnit", "summary"} <= left_out, line
    status, code, stored = run_status(farm.store, run_dir.name)
    assert (status, code) == ("aborted", 2)
    assert MID_RUN <= stored < 130  # every record written is stored, and the run stopped
    # The Allure results are left out too when a stored case's result was still to be written
    # once the disk was full (how far a worker got before the fill is the machine's speed).
    absent = {"junit", "summary"} | ({"allure"} if "Allure results" in left_out else set())
    assert disagreements(run_dir, farm.store, absent_ok=frozenset(absent)) == []


def test_a_store_in_the_filling_runs_directory_is_closed_by_the_next_command(farm):
    """The store lives in the runs directory (no FARM_STORE): it cannot take the results
    either; once there is space again the next farm command imports the records."""
    full = farm.root / "disk-full"
    env = dict(farm.env, **{fault_injection.ENV: f"ENOSPC:{full}"})
    del env["FARM_STORE"]  # the default: farm.sqlite in the runs directory
    farm.store = farm.runs / "farm.sqlite"
    proc = start(farm, None, env=env)
    run_dir = farm.wait_for_records(proc, MID_RUN)
    full.touch()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2 and "Traceback" not in err, err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert f"run store {farm.store}" in line and "disk is full" in line, line
    full.unlink()  # space again
    env.pop(fault_injection.ENV)
    listed = subprocess.run(
        farm.argv("runs"), cwd=farm.root, env=env, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0 and "marked aborted" in listed.stderr, listed.stderr
    status, code, stored = run_status(farm.store, run_dir.name)
    assert (status, code) == ("aborted", 2) and stored >= MID_RUN
    # The Allure results could not hold every stored case, so none are left.
    assert (
        disagreements(run_dir, farm.store, absent_ok=frozenset({"junit", "summary", "allure"}))
        == []
    )


@pytest.mark.skipif(
    not allure_process.allure_available(), reason="no Allure 3: the report step stops first"
)
def test_a_runs_directory_full_only_at_report_time_stores_the_results(farm):
    result = farm.finish(start(farm, f"ENOSPC:{fault_injection.REPORT}", report_too=True))
    line = assert_one_line(result, "is full")
    assert f"farm report {result.run_dir.name}" in line
    status, code, stored = run_status(farm.store, result.run_dir.name)
    assert status == "finished" and stored == result.summary["cases"] > 0
    assert result.code == 2  # degraded: the run has no report
    assert not (result.run_dir / "report").exists()
    assert disagreements(result.run_dir, farm.store) == []


@pytest.mark.skipif(
    not allure_process.allure_available(), reason="no Allure 3: the report step stops first"
)
def test_a_disk_that_fills_while_allure_writes_the_report_is_one_line(farm, tmp_path):
    """A real full disk (a tmpfs in a private mount namespace, as root: CI) with room for the
    report's own small files but not for what Allure writes: `farm report` says one line naming
    the directory and the fix, never node's ENOSPC stacks."""
    import os
    import shlex
    import shutil

    from tests.requirements import need

    need(
        os.geteuid() == 0 and shutil.which("unshare") is not None,
        "root and unshare, to mount a full tmpfs (CI runs as root)",
    )
    made = farm.run(
        "run", "--tier", "smoke", "--no-report", "--no-progress", "--", "-k", "3x17_d-1"
    )
    assert made.code == 0 and made.run_dir is not None, made.text[-2000:]
    run_id = made.run_dir.name
    mnt = tmp_path / "small"
    mnt.mkdir()
    fill = f"head -c 1700k /dev/zero > {shlex.quote(str(mnt))}/filler"
    report_cmd = " ".join(
        shlex.quote(a) for a in farm.argv("report", run_id, "--out", str(mnt / "report"))
    )
    script = f"mount -t tmpfs -o size=2m none {shlex.quote(str(mnt))} && {fill} && {report_cmd}"
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        cwd=farm.root,
        env=farm.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        f"error: directory {mnt} is full: free space on that disk, or use another place, then "
        f"make the report with farm report {run_id} (the run's results are stored)"
    ], proc.stderr
    assert "ENOSPC" not in proc.stdout + proc.stderr
