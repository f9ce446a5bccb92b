"""`farm mutate`'s end, in this process with its mutants' runs stood in for (the real ones:
tests/e2e/test_mutate.py): once mutation.json and the page are written, the measurement goes to
the store farm run uses, and the last line says where; a store that cannot take it is one
warning line with the fix, the files stay, and the exit code is what the score says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.cli import mutate_command
from farm.pool import build
from farm.results.store import RunStore
from farm.run import mutate_cases
from farm.run.mutants import Mutant
from farm.run.mutate import Baseline
from farm.util.console import FarmConsole
from suites import matrix
from tests.measures import SURVIVOR, WEAK, outcome

CASES = matrix.expand("smoke")[:4]


class _Built:
    def __init__(self, library: str, backend: str = "native"):
        self.library, self.backend = library, backend

    def libraries(self) -> list[Path]:
        return []


def _mutant(mutant_id: str) -> Mutant:
    file, line, rule = mutant_id.rsplit(":", 2)
    return Mutant(mutant_id, file, int(line), 4, rule, "+", "-")


@pytest.fixture
def stood_in(monkeypatch):
    """The build, the original's run and the mutants' runs stood in for: a survivor and a weak
    kill."""
    outcomes = [
        outcome(
            SURVIVOR,
            "survived",
            closest=[{"case_id": CASES[0].id, "closeness": 0.9, "baseline": 0.2}],
        ),
        outcome(
            WEAK,
            "killed",
            weak=True,
            failing=1,
            failing_cases=[
                {
                    "case_id": CASES[1].id,
                    "outcome": "failed",
                    "category": "precision",
                    "message": "precision: MERE",
                    "closeness": None,
                }
            ],
        ),
    ]
    monkeypatch.setattr(build, "build_native", lambda *a, **kw: Path("liblsg.so"))
    monkeypatch.setattr(mutate_cases, "Built", _Built)
    monkeypatch.setattr(
        mutate_command, "baseline", lambda built, cases, timeout: Baseline(list(cases), [], {})
    )
    monkeypatch.setattr(mutate_command, "run_mutants", lambda *a, **kw: iter(outcomes))


def _mutate(tmp_path: Path, capsys, *options: str) -> tuple[int, list[str], Path]:
    out = tmp_path / "run"
    args = mutate_command._parser().parse_args(["--out", str(out), *options])
    mutants = [_mutant(SURVIVOR), _mutant(WEAK)]
    code = mutate_command._mutate(args, mutants, CASES, FarmConsole(highlight=False))
    return code, capsys.readouterr().out.strip().splitlines(), out


def test_the_end_stores_the_score_in_the_store_and_says_where(stood_in, tmp_path, capsys):
    store = tmp_path / "farm.sqlite"
    code, lines, out = _mutate(tmp_path, capsys, "--store", str(store))
    assert code == 0
    doc = json.loads((out / "mutation.json").read_text())
    assert lines[-1] == f"stored in run store {store}: farm runs show {doc['mutate_id']}"
    with RunStore(store, create=False) as opened:
        measure = opened.get_measure(doc["mutate_id"])
    assert measure is not None and measure.mutate == doc["summary"]
    assert [n.mutant_id for n in measure.mutants] == [SURVIVOR, WEAK]
    assert measure.subset is False and measure.run_dir == str(out)


@pytest.mark.parametrize(("options", "code"), [((), 0), (("--min-score", "90"), 1)])
def test_a_store_that_cannot_be_written_is_one_warning_and_the_exit_code_stays(
    stood_in, tmp_path, capsys, options: tuple[str, ...], code: int
):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    got, lines, out = _mutate(tmp_path, capsys, "--store", str(blocker / "farm.sqlite"), *options)
    assert got == code  # 50 %: below 90 or not, as without a store
    assert lines[-1].startswith("warning: this measurement is not in the run store: ")
    assert f"cannot create run store {blocker / 'farm.sqlite'}" in lines[-1]  # and its fix
    assert f"`farm runs import {out}` stores it then" in lines[-1]
    assert lines[-2].startswith("report: ")  # the lines before it as ever
    assert (out / "mutation.json").is_file() and (out / "report" / "index.html").is_file()


def test_the_default_store_is_farm_runs(stood_in, tmp_path, capsys, monkeypatch):
    store = tmp_path / "team.sqlite"
    monkeypatch.setenv("FARM_STORE", str(store))
    code, lines, _ = _mutate(tmp_path, capsys)
    assert code == 0 and lines[-1].startswith(f"stored in run store {store}: ")
    with RunStore(store, create=False) as opened:
        assert len(opened.measures()) == 1
