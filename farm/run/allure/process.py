"""The Allure 3 process: the command that runs the pinned Allure 3 (reports/node_modules, `npm ci`
in reports/) through reports/generate.mjs, and its start and end.

`AllureProcess` starts generate.mjs with `--stdin` before the run's results exist: `farm run`
starts it as its cases begin (farm/run/session_plugins.py AllurePrewarm), so that Allure's modules
are loaded by the time the report is made (farm/results/report_generate.py hands it the results
through `run_generate`). Without one waiting, `run_generate` starts generate.mjs on the results,
holding a stop that comes while it starts until the process is there to be killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from farm.util import interrupts
from farm.util.children import dying_with_this_process
from farm.util.errors import ToolMissing
from farm.util.paths import REPO_ROOT

REPORTS_DIR = REPO_ROOT / "reports"
SETUP_FIX = "bash .ci/setup.sh run"


def generate_command(reports_dir: Path = REPORTS_DIR) -> list[str]:
    """The command that makes a report with the pinned Allure 3 (reports/generate.mjs);
    ToolMissing when node or Allure is missing."""
    node, _ = allure_command(reports_dir)
    return [node, str(Path(reports_dir) / "generate.mjs")]


def allure_command(reports_dir: Path = REPORTS_DIR) -> list[str]:
    """The command that runs the pinned Allure 3 CLI; ToolMissing when node or it is missing."""
    cli = Path(reports_dir) / "node_modules" / "allure" / "cli.js"
    node = shutil.which("node")
    if node is None:
        raise ToolMissing(f"node (Node.js 20+, for Allure 3) is not installed: run `{SETUP_FIX}`")
    if not cli.is_file():
        raise ToolMissing(
            f"Allure 3 ({cli}) is not installed: run `{SETUP_FIX}` (or `npm ci` in {reports_dir})"
        )
    return [node, str(cli)]


class AllureProcess:
    """`node reports/generate.mjs --stdin`, started before the run's results exist: Allure's
    modules load (~1.5 s of CPU) while the cases run, not after the last one. `generate` hands
    it the results and the settings; a report that is not made leaves it to `discard`."""

    def __init__(self, reports_dir: Path = REPORTS_DIR):
        self.reports_dir = Path(reports_dir)
        self._proc: subprocess.Popen | None = subprocess.Popen(
            [*generate_command(self.reports_dir), "--stdin"],
            cwd=str(self.reports_dir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def take(self) -> subprocess.Popen | None:
        """The waiting process, once (None when it has exited meanwhile: start a new one)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is not None:
            reap(proc)
            return None
        return proc

    def discard(self) -> None:
        """End it unused: its input closes, and it exits writing nothing."""
        proc = self.take()
        if proc is not None:
            reap(proc)


def reap(proc: subprocess.Popen) -> None:
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        proc.kill()
        proc.wait()


def run_generate(
    cmd: list[str],
    results: Path,
    changes: Mapping[str, str | None],
    reports_dir: Path,
    timeout: float,
    allure: AllureProcess | None,
) -> tuple[int, str, str]:
    """generate.mjs on `results` with the environment changed by `changes` (None: unset), by
    `allure` when it is waiting for the same reports_dir, else by a new process:
    (exit code, stdout, stderr)."""
    proc = allure.take() if allure is not None else None
    if proc is not None and allure is not None and allure.reports_dir == Path(reports_dir):
        request = json.dumps({"results": str(results), "env": dict(changes)}) + "\n"
        try:
            out, err = proc.communicate(request, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
        except BaseException:  # a stop: it must not go on writing into a work dir being removed
            proc.kill()
            proc.wait()
            raise
        return proc.returncode, out, err
    if proc is not None:
        reap(proc)
    env = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    with killed_on_stop([*cmd, str(results)], cwd=str(reports_dir), env=env) as started:
        try:
            out, err = started.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            started.kill()
            out, err = started.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
    return started.returncode, out, err


@contextlib.contextmanager
def killed_on_stop(argv: list[str], **kwargs: Any) -> Iterator[subprocess.Popen]:
    """``argv`` started with its output piped, and killed if a stop (KeyboardInterrupt) ends the
    block. A stop that comes while it starts (between the fork and the block, where
    subprocess.run has no process to kill yet) is held and given again inside the block, where
    the process is there to be killed: while it starts, the stop signals only note themselves
    (Python runs handlers in the main thread, whichever thread the signal came to)."""
    main = threading.current_thread() is threading.main_thread()
    came: list[int] = []
    held = interrupts.catch(lambda signum, frame: came.append(signum)) if main else {}
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=dying_with_this_process(),  # ends with this process (farm/util/children.py)
            **kwargs,
        )
    finally:
        for s, previous in held.items():
            signal.signal(s, previous)
    try:
        for signum in came:  # given again, to the handlers that were there: a stop lands here
            signal.raise_signal(signum)
        yield proc
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def allure_available(reports_dir: Path = REPORTS_DIR) -> bool:
    try:
        allure_command(reports_dir)
    except ToolMissing:
        return False
    return True
