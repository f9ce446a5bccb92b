"""farm.cli.main runs any number of commands in one process (the tests do): importing
farm/cli/run_command.py (farm run does, and tests import it) set the package's attribute
`run_command` to that module, over the name main called, and every later command was a TypeError
('module' object is not callable)."""

from __future__ import annotations

import importlib

import pytest

from farm import cli


def test_a_command_runs_after_farm_run_s_module_was_imported(capsys):
    importlib.import_module("farm.cli.run_command")
    with pytest.raises(SystemExit) as done:
        cli.main(["hosts", "--help"])
    assert done.value.code == 0
    assert "farm hosts" in capsys.readouterr().out
