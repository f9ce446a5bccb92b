"""A process of the farm that is about to end freezes its objects first, so that the
interpreter's finalization does not walk them with the cyclic garbage collector while someone
waits for the exit: the `farm` command, an agent, a farm run's pytest-xdist worker. A process
that goes on (a test calling `farm.cli.main`, a plain pytest session) does not."""

from __future__ import annotations

import gc
import subprocess
import sys
from types import SimpleNamespace
from typing import cast

import pytest

from farm import cli
from farm.run import plugin
from farm.run.plan import Plan


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()  # this test process goes on: its objects are collected as before


def session(farm: bool, worker: bool):
    stash = pytest.Stash()
    if farm:
        stash[plugin.PLAN] = cast(Plan, SimpleNamespace())  # a farm run's: only its presence counts
    config = SimpleNamespace(stash=stash)
    if worker:
        config.workerinput = {"workerid": "gw0"}
    return SimpleNamespace(config=config)


def test_a_farm_runs_worker_freezes_at_its_sessions_end(unfrozen):
    for farm, worker in ((False, True), (True, False)):
        plugin.pytest_sessionfinish(session(farm, worker))
        assert gc.get_freeze_count() == 0, (farm, worker)
    plugin.pytest_sessionfinish(session(True, True))
    assert gc.get_freeze_count() > 0


def test_the_farm_command_freezes_after_main_and_main_does_not(unfrozen, monkeypatch):
    assert cli.main(["--version"]) == 0
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(cli, "main", lambda: 3)
    assert cli.entry() == 3
    assert gc.get_freeze_count() > 0


def test_an_agent_freezes_before_it_exits():
    code = (
        "import gc, runpy, sys\n"
        "try:\n"
        "    runpy.run_module('farm.agent', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    sys.stderr.write(f'exit {e.code} frozen {gc.get_freeze_count() > 0}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr.strip().splitlines()[-1] == "exit 0 frozen True", done.stderr
