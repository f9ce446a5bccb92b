"""Runs that end any way are recorded as what they were, and user mistakes are usage errors.

A nightly `farm run` on the embedded pool is stopped mid-way by SIGTERM to its pid (what a CI
cancel or a supervisor sends), by Ctrl-C to its process group (a terminal), by two Ctrl-C, or
killed outright; each test asserts the exit code, that the run stopped (far fewer cases stored
than the tier has), that every case that finished is in the store exactly once, what the store
says the run was, and that the store, the records, JUnit, the Allure results and the summary hold
the same cases with the same outcomes (tests/e2e/outcome_sets.py). The signal is sent once the
workers have written a number of records, never after a sleep. Each farm is started with the
dispositions of the stop it is given (tests/dispositions.py): as from a terminal, or ignoring
what a script's background job or nohup ignores, however this suite itself was started."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from farm.run import scratch
from farm.util import proc as procfs
from suites import matrix
from tests.dispositions import disposed, ignored_by, pending_in
from tests.e2e.conftest import REPO
from tests.e2e.outcome_sets import disagreements
from tests.inventories import local_910b_hosts

NIGHTLY = len(matrix.expand("nightly"))
AFTER_SIGNAL = 8  # records a stopping run may still write: one per worker and slot at most
STARTUP_LIMIT = 240  # build, health checks and the first records, on a loaded 2-core machine


def farm_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `farm` under test: its runs, store and temporary files in tmp_path,
    and none of this pytest session's own xdist variables."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = dict(
        os.environ,
        FARM_RUNS=str(tmp_path / "runs"),
        FARM_STORE=str(tmp_path / "s.db"),
        TMPDIR=str(tmp_path / "tmp"),
    )
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT"):
        env.pop(name, None)
    return env


def start(
    tmp_path: Path, *args: str, ignoring: tuple[signal.Signals, ...] = ()
) -> tuple[subprocess.Popen, dict]:
    """`farm run --tier nightly ARGS` in a session of its own, the stop signals at their
    defaults as from a terminal, those in ``ignoring`` ignored."""
    env = farm_env(tmp_path)
    proc = subprocess.Popen(
        disposed(
            [
                sys.executable,
                "-m",
                "farm.cli",
                "run",
                "--tier",
                "nightly",
                "--no-report",
                "--no-progress",
                *args,
            ],
            ignoring,
        ),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return proc, env


def written(tmp_path: Path) -> dict[str, dict]:
    """The records the workers wrote so far, the last one of each case."""
    out: dict[str, dict] = {}
    for path in (tmp_path / "runs").glob("*/records/*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written
            out[record["case_id"]] = record
    return out


def wait_for_records(tmp_path: Path, proc: subprocess.Popen, n: int) -> None:
    deadline = time.monotonic() + STARTUP_LIMIT
    while len(written(tmp_path)) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run wrote no records in time"
        time.sleep(0.3)


def store_run(tmp_path: Path) -> tuple[dict, list[str]]:
    db = sqlite3.connect(tmp_path / "s.db")
    db.row_factory = sqlite3.Row
    try:
        run = dict(db.execute("SELECT * FROM runs ORDER BY started_at DESC LIMIT 1").fetchone())
        ids = [
            r[0] for r in db.execute("SELECT case_id FROM results WHERE run_id=?", (run["run_id"],))
        ]
    finally:
        db.close()
    return run, ids


def run_dir_of(tmp_path: Path, run: dict) -> Path:
    return tmp_path / "runs" / run["run_id"]


def test_sigterm_to_the_pid_stops_the_run_and_every_output_holds_what_finished(tmp_path):
    """The signal reaches the orchestrator alone: its xdist workers must stop too, not run
    every case they were given while the orchestrator stopped listening."""
    proc, _ = start(tmp_path)
    wait_for_records(tmp_path, proc, 40)
    proc.send_signal(signal.SIGTERM)
    at_signal = len(written(tmp_path))
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 143, out + err
    assert "interrupted by SIGTERM" in err and "Traceback" not in err
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("interrupted", 143)
    finished = written(tmp_path)
    assert sorted(ids) == sorted(finished) and len(ids) == len(set(ids)) >= 40
    # Each worker finishes at most the record it was writing: none goes on with its cases.
    assert len(ids) - at_signal <= AFTER_SIGNAL, f"{len(ids) - at_signal} cases after the signal"
    assert disagreements(run_dir_of(tmp_path, run), tmp_path / "s.db") == []


def held_still(pids: list[int]) -> None:
    """Waits until every thread of each of ``pids`` (sent SIGSTOP) is stopped."""

    def state(task: Path) -> str:
        try:
            return (task / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return "gone"

    deadline = time.monotonic() + STARTUP_LIMIT
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            while state(task) not in ("T", "t", "gone"):
                assert time.monotonic() < deadline, f"worker {pid} never stopped"
                time.sleep(0.05)


def passed_on_to(workers: list[int], stop: signal.Signals) -> None:
    """Waits until ``stop`` is pending for each of the held ``workers``: the farm passed it on.
    A signal they ignore is dropped, never pending; the farm, on its way out, then kills them
    (xdist, after 10 s): a worker gone first never had the stop."""
    deadline = time.monotonic() + STARTUP_LIMIT
    for pid in workers:
        while True:
            try:
                if stop in pending_in(pid):
                    break
            except (OSError, LookupError):  # gone, or a zombie (its status has no signals)
                pytest.fail(f"worker {pid} was ended, never given {stop.name} by the farm")
            assert time.monotonic() < deadline, f"the farm never passed {stop.name} on"
            time.sleep(0.05)


@pytest.mark.parametrize(
    "stop, ignoring",
    [
        (signal.SIGTERM, (signal.SIGINT, signal.SIGHUP)),  # `nohup farm run ... &` in a script
        (signal.SIGHUP, (signal.SIGINT,)),  # `farm run ... &` in a script
    ],
    ids=["nohup-in-the-background-SIGTERM", "in-the-background-SIGHUP"],
)
def test_a_stop_to_a_farm_started_ignoring_ctrl_c_reaches_its_workers(tmp_path, stop, ignoring):
    """A farm started in the background of a script (or by nohup there) inherits SIGINT ignored,
    and so do its xdist workers. SIGTERM or SIGHUP to its pid was passed on to them as SIGINT,
    which they ignored: a nightly ran on for ~2,600 more cases. The workers are held still
    (SIGSTOP) while the records are counted and the farm is given the stop, and go on once the
    signal it passes on is waiting for each (then it is the first thing they do): past the
    records they were writing, at most one more per slot, whatever the machine's speed."""
    proc, _ = start(tmp_path, ignoring=ignoring)
    try:
        wait_for_records(tmp_path, proc, 40)
        assert signal.SIGINT in ignored_by(proc.pid)  # the convention: Ctrl-C stays ignored
        workers = xdist_workers(proc.pid)
        assert len(workers) >= 2, workers  # a stop to the pid alone must be passed on to them
        assert all(signal.SIGINT in ignored_by(w) for w in workers)
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        try:
            held_still(workers)
            at_signal = len(written(tmp_path))
            proc.send_signal(stop)
            passed_on_to(workers, stop)
        finally:
            for pid in workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=180)
    except BaseException:  # a farm that does not stop must not run on after its test
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 128 + stop, out + err
    assert f"interrupted by {stop.name}" in err and "Traceback" not in err
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("interrupted", 128 + stop)
    assert sorted(ids) == sorted(written(tmp_path)) and len(ids) == len(set(ids)) >= 40
    run_dir = run_dir_of(tmp_path, run)
    slots = len(json.loads((run_dir / "plan.json").read_text())["slots"])
    assert len(ids) - at_signal <= slots, f"{len(ids) - at_signal} cases after {stop.name}"
    assert disagreements(run_dir, tmp_path / "s.db") == []
    assert json.loads((run_dir / "summary.json").read_text())["exit_code"] == 128 + stop


def test_ctrl_c_to_the_process_group_leaves_every_output_holding_what_finished(tmp_path):
    proc, _ = start(tmp_path)
    wait_for_records(tmp_path, proc, 40)
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the orchestrator and its workers
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("interrupted", 130)
    assert sorted(ids) == sorted(written(tmp_path)) and len(ids) < NIGHTLY // 4
    assert disagreements(run_dir_of(tmp_path, run), tmp_path / "s.db") == []


def test_two_ctrl_c_store_once_without_a_traceback(tmp_path):
    proc, _ = start(tmp_path)
    wait_for_records(tmp_path, proc, 40)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    run, ids = store_run(tmp_path)
    assert run["status"] == "interrupted" and len(ids) == len(set(ids)) > 0
    assert disagreements(run_dir_of(tmp_path, run), tmp_path / "s.db") == []


def test_a_killed_run_is_found_by_the_next_command_and_marked_aborted(tmp_path):
    proc, env = start(tmp_path)
    wait_for_records(tmp_path, proc, 40)
    os.killpg(proc.pid, signal.SIGKILL)  # the orchestrator and its workers, no goodbye
    proc.communicate(timeout=60)
    finished = written(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "farm.cli", "runs"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "marked aborted" in out.stderr
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("aborted", 2)
    assert sorted(ids) == sorted(finished)
    assert "(aborted)" in out.stdout
    # Its JUnit staging outlived it, named so that the next run removes it.
    left = scratch.left_by_the_dead(scratch.JUNIT, tmp_path / "tmp")
    assert len(left) == 1, left


@pytest.mark.parametrize(
    "args, needle",
    [
        (("--case-timeout", "0"), "--case-timeout: '0' is not a number of seconds above 0"),
        # An infinite timeout broke every case as a worker that died (the waits overflowed).
        (("--case-timeout", "inf"), "--case-timeout: 'inf' is not a number of seconds above 0"),
        (("--", "-k", "310b and ("), "is not a valid expression"),
    ],
)
def test_user_mistakes_are_one_line_and_nothing_runs_or_is_stored(tmp_path, args, needle):
    proc, _ = start(tmp_path, *args)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "runs").exists()


def xdist_workers(pid: int) -> list[int]:
    """The pytest-xdist workers `farm run` (pid) started: its children running execnet's
    bootstrap (`python -c "import sys;exec(eval(sys.stdin.readline()))"`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == pid and any(b"exec(eval(sys.stdin.readline()))" in a for a in argv):
            found.append(int(entry.name))
    return found


def test_a_worker_killed_alone_is_replaced_said_and_every_output_agrees(tmp_path):
    """SIGKILL to one xdist worker (what the OOM killer does): xdist starts another, which runs
    its cases, the one it was running included. Every case gets one verdict and every output
    says the same one (JUnit had xdist's crash report, an error, for a case stored as passed);
    the run says which worker went."""
    selected = [c for c in matrix.expand("nightly") if "_f32_" in c.id]
    proc, _ = start(tmp_path, "--jobs", "2", "--", "-k", "_f32_")
    wait_for_records(tmp_path, proc, 40)
    workers = xdist_workers(proc.pid)
    assert len(workers) == 2, workers
    os.kill(workers[0], signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    assert "note: pytest worker gw" in err and "went down" in err
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("finished", 0)
    assert sorted(ids) == sorted(c.id for c in selected)
    run_dir = run_dir_of(tmp_path, run)
    assert disagreements(run_dir, tmp_path / "s.db") == []
    summary = json.loads((run_dir / "summary.json").read_text())
    assert len(summary["workers_lost"]) == 1 and "went down" in summary["workers_lost"][0]


# Runs the farm with the pty as its controlling terminal and its stdin, stdout and stderr, as a
# shell in a terminal window or an SSH session does: a session leader that opens a terminal gets it.
ON_A_TERMINAL = """
import os, sys
tty = os.open(sys.argv[1], os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(tty, fd)
os.execvp(sys.argv[2], sys.argv[2:])
"""
FARM = [sys.executable, "-m", "farm.cli"]


def on_a_terminal(tmp_path: Path, *command: str) -> tuple[subprocess.Popen, int]:
    """``command`` on a new terminal (a pty) in a session of its own; the terminal's master."""
    master, slave = os.openpty()
    env = dict(farm_env(tmp_path), PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        disposed([sys.executable, "-c", ON_A_TERMINAL, os.ttyname(slave), *command]),
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(slave)
    return proc, master


def close_the_terminal_after(tmp_path: Path, proc: subprocess.Popen, master: int, n: int) -> str:
    """Reads the terminal as it fills, as a window does, until the run wrote ``n`` records;
    then closes it (the terminal hangs up). What it showed."""
    shown = bytearray()
    try:
        deadline = time.monotonic() + STARTUP_LIMIT
        while len(written(tmp_path)) < n:
            assert proc.poll() is None, bytes(shown).decode(errors="replace")
            assert time.monotonic() < deadline, "the run wrote no records in time"
            if select.select([master], [], [], 0.3)[0]:
                try:
                    shown += os.read(master, 65536)
                except OSError:  # EIO: no process has the terminal open yet
                    time.sleep(0.3)
    finally:
        os.close(master)
    return bytes(shown[-3000:]).decode(errors="replace")


def test_a_closed_terminal_stops_the_run_and_every_output_holds_what_finished(tmp_path):
    """The terminal window closed, or the SSH session under it dropped: the kernel sends SIGHUP
    to the run's process group and its terminal is gone (each later write to it fails). The run
    ended where it stood: no summary, no JUnit, the store's run left 'running' until the next
    command. It stops as from SIGTERM, stores what finished, and writes every output."""
    proc, master = on_a_terminal(tmp_path, *FARM, "run", "--tier", "nightly")
    shown = close_the_terminal_after(tmp_path, proc, master, 40)
    proc.wait(timeout=180)
    assert proc.returncode == 128 + signal.SIGHUP, shown
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("interrupted", 128 + signal.SIGHUP)
    assert sorted(ids) == sorted(written(tmp_path)) and len(ids) < NIGHTLY // 4
    run_dir = run_dir_of(tmp_path, run)
    assert disagreements(run_dir, tmp_path / "s.db") == []
    assert json.loads((run_dir / "summary.json").read_text())["exit_code"] == 129


def test_a_run_started_with_nohup_goes_on_when_its_terminal_closes(tmp_path):
    """nohup starts the run with SIGHUP ignored, and its output in nohup.out: closing the
    terminal must not stop it (a handler of the farm's own would have replaced the ignore)."""
    proc, master = on_a_terminal(tmp_path, "nohup", *FARM, "run", "--tier", "smoke")
    close_the_terminal_after(tmp_path, proc, master, 20)
    proc.wait(timeout=600)
    log = (tmp_path / "nohup.out").read_text(errors="replace")
    assert proc.returncode == 0, log
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("finished", 0)
    assert sorted(ids) == sorted(c.id for c in matrix.expand("smoke"))
    assert "all passed (exit 0)" in log


# `farm run` with one of its steps made to send a signal to the run's own process: the signal
# comes at that step, whatever the machine's speed.
SIGNAL_AT_STEP = """
import os, signal, sys, time
module, name, signum = sys.argv[1], sys.argv[2], int(sys.argv[3])
import importlib
target = importlib.import_module(module)
step = getattr(target, name)
def signalled(*args, **kwargs):
    os.kill(os.getpid(), signum)
    time.sleep(0.5)  # the handler runs here, in the step
    return step(*args, **kwargs)
setattr(target, name, signalled)
from farm.cli import entry
sys.argv = ["farm", *sys.argv[4:]]
sys.exit(entry())
"""


def signalled_run(tmp_path: Path, module: str, name: str, signum: int, *args: str):
    env = farm_env(tmp_path)
    argv = [sys.executable, "-c", SIGNAL_AT_STEP, module, name, str(int(signum))]
    return subprocess.run(
        disposed([*argv, "run", "--tier", "smoke", "--no-progress", *args]),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_signal_after_the_last_case_before_the_store_stops_the_run_stored_whole(tmp_path):
    """SIGTERM as the session ends, before the run is stored (its records being read): the run
    died there, 'running' in the store until the next command, with no summary or JUnit. It is
    stored, every case that ran in it, and marked interrupted as any stopped run."""
    done = signalled_run(
        tmp_path, "farm.cli.run_command", "collect_records", signal.SIGTERM, "--no-report"
    )
    assert done.returncode == 143, done.stdout + done.stderr
    assert "SIGTERM: storing the results first" in done.stderr, done.stderr
    assert "interrupted by SIGTERM" in done.stderr and "Traceback" not in done.stderr
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("interrupted", 143)
    assert sorted(ids) == sorted(c.id for c in matrix.expand("smoke"))
    run_dir = run_dir_of(tmp_path, run)
    assert disagreements(run_dir, tmp_path / "s.db") == []
    assert json.loads((run_dir / "summary.json").read_text())["exit_code"] == 143


def test_ctrl_c_during_the_report_leaves_the_run_as_stored_and_its_exit_code(tmp_path):
    """Ctrl-C while the report is made: the run is stored, judged and summarised (exit 0 in the
    store and the summary); the command exited 130 all the same. It stops the report and ends
    with the run's own exit code, saying how to make the report."""
    done = signalled_run(tmp_path, "farm.results.report", "make_report", signal.SIGINT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SIGINT: no report was made" in done.stderr and "Traceback" not in done.stderr
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("finished", 0)
    run_dir = run_dir_of(tmp_path, run)
    assert json.loads((run_dir / "summary.json").read_text())["exit_code"] == 0
    assert disagreements(run_dir, tmp_path / "s.db") == []
    assert f"farm report {run['run_id']}" in done.stderr


def test_a_signal_while_allure_makes_the_report_ends_allure_with_the_command(tmp_path):
    """SIGTERM to `farm run` while its Allure (started with the cases) makes the report: the
    command ended and left Allure running, writing into a work directory being removed. Allure
    here is a `node` that takes the report's request, says so and waits: the signal comes while
    the report is being made, whatever the machine's speed."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "node").write_text(
        # Every stop signal ignored (a child may: every child of `farm run &` in a script
        # ignores SIGINT): the signal farm run passes on to its children does not end it.
        '#!/bin/sh\ntrap "" INT TERM HUP\necho $$ >> "$NODE_PIDS"\nread request\n'
        'touch "$NODE_ASKED"\n'
        "exec sleep 600\n"
    )
    (fake / "node").chmod(0o755)
    pids, asked = tmp_path / "node.pids", tmp_path / "node.asked"
    env = dict(
        farm_env(tmp_path),
        PATH=f"{fake}:{os.environ['PATH']}",
        NODE_PIDS=str(pids),
        NODE_ASKED=str(asked),
    )
    proc = subprocess.Popen(
        disposed([*FARM, "run", "--tier", "smoke", "--no-progress"]),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while not asked.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the report was never asked for"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err  # the run passed and is stored; only its report is skipped
    assert "SIGTERM: no report was made" in err and "Traceback" not in err
    # Killed: gone, or a zombie its new parent has yet to collect (it runs no more).
    assert not [pid for pid in map(int, pids.read_text().split()) if procfs.alive(pid)]
    run, _ = store_run(tmp_path)
    assert not [p.name for p in run_dir_of(tmp_path, run).iterdir() if "report" in p.name]


@pytest.fixture
def mute_host(tmp_path):
    """An inventory of one SSH host that takes the connection and never says a word (a hung
    sshd, a host gone half-way), with an hour to connect; and the event of its first connection."""
    import paramiko

    server = socket.create_server(("127.0.0.1", 0))
    connected = threading.Event()
    held = []

    def accept():
        with contextlib.suppress(OSError):
            while True:
                held.append(server.accept()[0])
                connected.set()

    threading.Thread(target=accept, daemon=True).start()
    key = tmp_path / "id_rsa"
    paramiko.RSAKey.generate(2048).write_private_key_file(str(key))
    inventory = tmp_path / "mute.toml"
    inventory.write_text(
        f'[[host]]\nname = "mute"\ntransport = "ssh"\naddress = "127.0.0.1"\n'
        f'port = {server.getsockname()[1]}\nuser = "farm"\nkey = "{key}"\n'
        f'host_key_policy = "accept-new"\nknown_hosts = "{tmp_path / "known_hosts"}"\n'
        'connect_timeout = 3600.0\nsoc = "Ascend910B1"\ndevices = 1\npython = "python3"\n'
        f'workdir = "{tmp_path / "mute-work"}"\n'
    )
    yield inventory, connected
    server.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize(
    "command, stop",
    [
        (("hosts", "--check"), signal.SIGTERM),
        (("run", "--tier", "smoke", "--no-report"), signal.SIGINT),
        (("run", "--tier", "smoke", "--no-report"), signal.SIGTERM),
    ],
    ids=["hosts-SIGTERM", "run-SIGINT", "run-SIGTERM"],
)
def test_a_stop_while_a_host_does_not_answer_ends_the_command_at_once(
    tmp_path, mute_host, command, stop
):
    """A stop while the hosts are checked, one of them taking the connection and saying
    nothing: the command waited out the SSH connect's whole timeout (the thread pool's exit, then
    the interpreter's, waited for it) before it ended."""
    inventory, connected = mute_host
    proc = subprocess.Popen(
        disposed([*FARM, *command, "--inventory", str(inventory)]),
        cwd=REPO,
        env=farm_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if not connected.wait(STARTUP_LIMIT):
        proc.kill()
        raise AssertionError(proc.communicate())
    proc.send_signal(stop)
    try:
        _, err = proc.communicate(timeout=STARTUP_LIMIT)  # the timeout it waited out: an hour
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"farm {command[0]} waited for the host after {stop.name}")
    assert proc.returncode == 128 + stop, err
    assert f"({stop.name}): farm {command[0]} stopped" in err and "Traceback" not in err
    assert not (tmp_path / "s.db").exists() or store_run_count(tmp_path) == 0


def store_run_count(tmp_path: Path) -> int:
    db = sqlite3.connect(tmp_path / "s.db")
    try:
        return db.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        db.close()


def reader_goes_away(tmp_path: Path, after: str, *args: str) -> subprocess.Popen:
    """`farm run ARGS 2>&1 | head`: the output read up to the line holding ``after``, then the
    pipe's reader goes away. The process, ended."""
    env = farm_env(tmp_path)
    proc = subprocess.Popen(
        [*FARM, "run", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if after in line:
            break
    else:
        pytest.fail(f"the run never printed {after!r}")
    proc.stdout.close()
    proc.wait(timeout=600)
    return proc


def test_a_pipe_whose_reader_went_away_stops_the_run_as_sigpipe_with_every_output(tmp_path):
    """`farm run --tier smoke 2>&1 | head`: the run's next line after the hosts (in a pipe, the
    live progress' last frame) found the pipe closed; rich exited 1, "the operator failed",
    with the run stored nowhere. It stops as on SIGPIPE: stored, every output agreeing, 141."""
    proc = reader_goes_away(tmp_path, "emu-310b-01", "--tier", "smoke", "--no-report")
    assert proc.returncode == 128 + signal.SIGPIPE
    run, ids = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("interrupted", 141)
    assert sorted(ids) == sorted(written(tmp_path))
    run_dir = run_dir_of(tmp_path, run)
    assert disagreements(run_dir, tmp_path / "s.db") == []
    assert json.loads((run_dir / "summary.json").read_text())["exit_code"] == 141


def test_a_pipe_closed_before_the_run_began_leaves_no_run_and_no_directory(tmp_path):
    """The pool checked and the plan made, the run not begun: its next line (a family without
    a host) found the pipe closed. The run's directory, holding its plan alone, was left."""
    inventory = local_910b_hosts(tmp_path, ("solo",))
    args = ("--tier", "smoke", "--no-report", "--inventory", str(inventory))
    proc = reader_goes_away(tmp_path, "host     solo", *args)
    assert proc.returncode == 128 + signal.SIGPIPE
    assert not list((tmp_path / "runs").glob("*-smoke-*"))
    if (tmp_path / "s.db").exists():
        db = sqlite3.connect(tmp_path / "s.db")
        try:
            assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        finally:
            db.close()


def test_a_report_whose_lines_find_stdout_closed_keeps_the_runs_exit_code(tmp_path):
    """`farm run | head -1`: the report's lines are farm run's only ones on stdout, printed once
    the run was stored, summarised and its report made. Their closed pipe made the command exit
    141 while the store and the summary said 0."""
    env = farm_env(tmp_path)
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line: every write to it fails
    try:
        done = subprocess.run(
            [*FARM, "run", "--tier", "smoke", "--no-progress"],
            cwd=REPO,
            env=env,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    run, _ = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("finished", 0)
    assert (run_dir_of(tmp_path, run) / "report" / "index.html").is_file()


def test_a_run_started_without_stdout_or_stdin_exits_with_its_own_code(tmp_path):
    """`farm run <&- >&-` (a supervisor that closes them): the run passed and was stored as
    such, and the command exited 2, the farm's own failure: its last flush met sys.stdout None.
    And the first file it opened took the closed number, which its workers wrote to."""
    argv = " ".join(shlex.quote(a) for a in [*FARM, "run", "--tier", "smoke", "--no-report"])
    done = subprocess.run(
        ["sh", "-c", f'exec {argv} --no-progress -- -k "910b and f32 and 2x" <&- >&-'],
        cwd=REPO,
        env=farm_env(tmp_path),
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    run, _ = store_run(tmp_path)
    assert (run["status"], run["exit_code"]) == ("finished", 0)
