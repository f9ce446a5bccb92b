"""`farm run` ends in a form a script reads: its run id alone on stdout's last line
(run_id=<id>), its summary copied where --json-summary says, and the store it went to, its
password masked (farm/cli/run_command.py say_the_run)."""

from __future__ import annotations

import io
import json

from rich.console import Console

from farm.cli.run_command import say_the_run
from farm.results.store import parse_location
from farm.run.metadata import new_run_id
from farm.run.outputs import write_summary
from farm.run.plan import Plan


def _plan(tmp_path) -> Plan:
    run_id = new_run_id("smoke")
    (tmp_path / run_id).mkdir()
    return Plan(run_id, tmp_path / run_id, "smoke", "native", inventory={}, slots=[], hosts={})


def test_the_run_id_is_the_last_line_and_the_summary_is_where_asked(tmp_path, capsys):
    plan = _plan(tmp_path)
    write_summary(plan, [], 1, {})
    err = io.StringIO()
    wanted = tmp_path / "ci" / "farm-summary.json"
    wanted.parent.mkdir()
    say_the_run(
        Console(file=err, width=200), plan, parse_location(tmp_path / "s.sqlite"), 1, str(wanted)
    )
    assert capsys.readouterr().out.splitlines()[-1] == f"run_id={plan.run_id}"
    assert wanted.read_bytes() == (plan.run_dir / "summary.json").read_bytes()
    assert json.loads(wanted.read_text())["run_id"] == plan.run_id
    assert f"store    {tmp_path / 's.sqlite'}" in err.getvalue()


def test_a_run_without_a_summary_still_names_itself(tmp_path, capsys):
    plan = _plan(tmp_path)  # a run whose runs directory refused its summary
    wanted = tmp_path / "farm-summary.json"
    say_the_run(
        Console(file=io.StringIO()), plan, parse_location(tmp_path / "s.sqlite"), 2, str(wanted)
    )
    assert json.loads(wanted.read_text()) == {
        "run_id": plan.run_id,
        "run_dir": str(plan.run_dir),
        "exit_code": 2,
    }
    assert capsys.readouterr().out == f"run_id={plan.run_id}\n"


def test_the_store_line_masks_its_password(tmp_path, capsys):
    err = io.StringIO()
    store = parse_location("postgresql://farm:s3cret-pw@db.example:5432/farm")
    say_the_run(Console(file=err, width=200), _plan(tmp_path), store, 0, None)
    assert "store    postgresql://farm:***@db.example:5432/farm" in err.getvalue()
    assert "s3cret" not in err.getvalue() + capsys.readouterr().out


def test_an_unwritable_json_summary_is_one_line(tmp_path, capsys):
    plan = _plan(tmp_path)
    err = io.StringIO()
    missing = tmp_path / "no" / "such" / "dir" / "s.json"
    say_the_run(
        Console(file=err, width=1000), plan, parse_location(tmp_path / "s.sqlite"), 0, str(missing)
    )
    (line,) = err.getvalue().splitlines()[1:]
    assert line.startswith(f"error: --json-summary {missing}: ") and "summary is" in line
    assert capsys.readouterr().out == f"run_id={plan.run_id}\n"
