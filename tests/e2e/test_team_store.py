"""A team's farm: four `farm run`s at once from four runners (each its own runs directory) on one
SSH lab and one PostgreSQL store. Every run finishes with every case of its selection exactly
once, `farm runs` lists all four, and the store's password appears in no output, file or row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from farm.results.store import RunStore
from tests.e2e.conftest import Farm
from tests.e2e.report_fixtures import K_EXPR, selected_cases
from tests.postgres import fresh_schema
from tests.requirements import need_allure

pytestmark = [pytest.mark.e2e, pytest.mark.ssh]
RUNNERS = 4


@pytest.fixture(scope="module")
def team(lab, tmp_path_factory):
    need_allure()
    root = tmp_path_factory.mktemp("team")
    with fresh_schema() as url:
        farms = []
        for i in range(RUNNERS):
            farm = Farm(root / f"runner-{i}")
            farm.store_url = url  # the shared store
            farms.append(farm)
        argv: tuple[str, ...] = ("run", "--tier", "smoke", "--no-report", "--no-progress")
        argv += ("--inventory", str(lab.inventory_path), "--", "-k", K_EXPR)
        procs = [farm.start(*argv) for farm in farms]
        results = [farm.finish(proc) for farm, proc in zip(farms, procs, strict=True)]
        yield url, farms, results


def _password(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


def test_four_runs_at_once_each_hold_every_case_exactly_once(team):
    url, _, results = team
    want = sorted(c.id for c in selected_cases())
    assert [r.code for r in results] == [0] * RUNNERS, [r.text[-2000:] for r in results]
    with RunStore(url, create=False) as store:
        runs = store.runs(limit=None)
        assert len(runs) == RUNNERS and all(r["status"] == "finished" for r in runs)
        assert {r.run_dir.name for r in results} == {r["run_id"] for r in runs}
        for run in runs:
            ids = [row["case_id"] for row in store.result_rows(run["run_id"])]
            assert ids == want, run["run_id"]
            assert run["counts"]["total"] == len(want)
    listing = subprocess.run(
        [sys.executable, "-m", "farm.cli", "runs", "--store", url, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert {r["run_id"] for r in json.loads(listing.stdout)} == {r["run_id"] for r in runs}
    assert _password(url) not in listing.stdout + listing.stderr


def test_the_password_is_in_no_output_file_report_or_store_row(team):
    url, farms, results = team
    secret = _password(url)
    report = farms[0].run("report", results[0].run_dir.name, "--store", url)
    assert report.code == 0, report.text[-2000:]
    for text in [r.text for r in results] + [report.text]:
        assert secret not in text
    for farm in farms:
        for path in Path(farm.root).rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()"
            )
        ]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                assert secret not in repr(row), table
