"""End-to-end fixtures: `farm run` (and `pytest suites/`) as subprocesses, isolated from the
developer's runs/ directory, over the embedded pool or a real SSH lab on loopback.

Every run gets its own FARM_RUNS (run directories, quarantine state) and FARM_STORE (SQLite). The
SSH lab (two Ascend910B1 hosts a2-01, a2-02 with 2 devices; one Ascend310B1 a200-01 with 1) is up
once per session; a test that breaks a host names it in ``broken_hosts`` and it is reset
(thawed, restarted, declared identity = inventory, nothing hidden) afterwards.

SSH tests skip without sshd, unless FARM_REQUIRE_SSH is set: then they fail
(tests/pool/conftest.py).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from farm.results.store.rows import dumps
from suites import matrix

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 600  # a hung run fails the test instead of hanging CI
SMOKE = matrix.expand("smoke")


def select(expr: str, cases=SMOKE) -> list:
    """The cases pytest's ``-k expr`` selects, for expressions made of case-id words joined by
    ``and`` (what these tests use): every word must occur in the case id."""
    words = [w.strip().lower() for w in expr.split(" and ")]
    assert all(w and " " not in w for w in words), f"only 'a and b' expressions: {expr!r}"
    return [c for c in cases if all(w in c.id.lower() for w in words)]


@dataclass
class FarmResult:
    code: int
    out: str
    err: str
    runs: Path
    store: Path
    run_dir: Path | None = None
    summary: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.out + self.err

    @property
    def made_dir(self) -> Path:
        """The run directory of a run that made one."""
        assert self.run_dir is not None, f"the run made no run directory:\n{self.text}"
        return self.run_dir

    def raw_records(self) -> list[dict]:
        """What the workers wrote, before the runner fills in lost cases."""
        out = []
        for path in sorted((self.made_dir / "records").glob("*.jsonl")):
            out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return out

    def records_by_worker(self) -> dict[str, list[dict]]:
        return {
            p.stem: [json.loads(x) for x in p.read_text().splitlines() if x.strip()]
            for p in sorted((self.made_dir / "records").glob("*.jsonl"))
        }

    def store_rows(self) -> list[dict]:
        db = sqlite3.connect(self.store)
        db.row_factory = sqlite3.Row
        try:
            return [
                dict(r)
                for r in db.execute(
                    "SELECT case_id, outcome, category, host, attempts, record_json "
                    "FROM results WHERE run_id=?",
                    (self.made_dir.name,),
                )
            ]
        finally:
            db.close()

    def store_run(self) -> dict | None:
        db = sqlite3.connect(self.store)
        db.row_factory = sqlite3.Row
        try:
            row = db.execute(
                "SELECT run_id, exit_code FROM runs WHERE run_id=?", (self.made_dir.name,)
            ).fetchone()
            return dict(row) if row else None
        finally:
            db.close()

    def quarantine(self) -> dict:
        path = self.runs / "state" / "quarantine.json"
        return json.loads(path.read_text())["hosts"] if path.exists() else {}

    def assert_one_result_per_case(self, cases) -> dict[str, dict]:
        """Exactly one record per case of the run: in the workers' raw records (nothing lost,
        nothing doubled, no stray), in summary.json and in the store. Returns id -> record."""
        want = sorted(c.id for c in cases)
        raw = Counter(r["case_id"] for r in self.raw_records())
        doubled = sorted(cid for cid, n in raw.items() if n > 1)
        assert not doubled, f"cases with more than one record: {doubled[:5]}"
        assert sorted(raw) == want, (
            f"lost: {sorted(set(want) - set(raw))[:5]}; stray: {sorted(set(raw) - set(want))[:5]}"
        )
        assert self.summary["cases"] == len(want)
        assert sum(self.summary["outcomes"].values()) == len(want)
        rows = self.store_rows()
        assert sorted(r["case_id"] for r in rows) == want
        run = self.store_run()
        assert run is not None and run["exit_code"] == self.code
        by_id = {r["case_id"]: r for r in self.raw_records()}
        # The store keeps each record as its worker's line (RecordFiles.texts): the record in
        # the store's JSON form, byte for byte.
        assert all(r["record_json"] == dumps(by_id[r["case_id"]]) for r in rows)
        return by_id


def _run_dirs(runs: Path) -> list[Path]:
    if not runs.is_dir():
        return []
    # Run directories are named from their start time; repro, shrink and bisect work elsewhere.
    return sorted(p for p in runs.iterdir() if p.is_dir() and p.name[:1].isdigit())


class Farm:
    """Runs the farm CLI (or pytest) as a subprocess in one isolated runs directory."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.runs = root / "runs"
        self.store = root / "farm.sqlite"
        self.store_url: str | None = None  # a PostgreSQL store the runs use instead of the file

    @property
    def env(self) -> dict:
        env = dict(os.environ)
        env.update(FARM_RUNS=str(self.runs), FARM_STORE=self.store_url or str(self.store))
        env.pop("PYTEST_ADDOPTS", None)
        env.pop("PYTEST_XDIST_WORKER", None)
        env.pop("PYTEST_XDIST_WORKER_COUNT", None)
        return env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "farm.cli", *args]

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            self.argv(*args),
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(self, proc: subprocess.Popen, timeout: float = RUN_TIMEOUT) -> FarmResult:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"farm did not finish within {timeout} s:\n{out[-3000:]}\n{err[-3000:]}")
        return self.result(proc.returncode, out, err)

    def result(self, code: int, out: str, err: str) -> FarmResult:
        dirs = _run_dirs(self.runs)
        result = FarmResult(code, out, err, self.runs, self.store)
        if dirs:
            result.run_dir = dirs[-1]
            summary = result.run_dir / "summary.json"
            if summary.exists():
                result.summary = json.loads(summary.read_text())
        return result

    def run(self, *args: str, timeout: float = RUN_TIMEOUT) -> FarmResult:
        return self.finish(self.start(*args), timeout)

    def run_tier(self, *options: str, k: str | None = None, extra=()) -> FarmResult:
        """`farm run --tier smoke --no-report --no-progress OPTIONS [-- -k K EXTRA]`."""
        args = ["run", "--tier", "smoke", "--no-report", "--no-progress", *options]
        tail = (["-k", k] if k else []) + list(extra)
        return self.run(*args, *(["--", *tail] if tail else []))

    def start_tier(self, *options: str, k: str | None = None) -> subprocess.Popen:
        args = ["run", "--tier", "smoke", "--no-report", "--no-progress", *options]
        return self.start(*args, *(["--", "-k", k] if k else []))

    def pytest(
        self, *args: str, timeout: float = RUN_TIMEOUT, cache: bool = False
    ) -> subprocess.CompletedProcess:
        """`pytest ARGS` in the repository; with `cache`, pytest's cache (--lf) lives under this
        farm's root, not in the checkout."""
        options = ["-o", f"cache_dir={self.root / 'pytest-cache'}"] if cache else []
        options += [] if cache else ["-p", "no:cacheprovider"]
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", *options, *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return proc

    def hosts(self, inventory: str | None = None) -> dict[str, dict]:
        """`farm hosts [--inventory FILE]` as the CLI prints it: host -> {column: text}."""
        args = ["hosts"] + (["--inventory", inventory] if inventory else [])
        result = self.run(*args, timeout=120)
        assert result.code == 0, result.text
        # Piped, it prints aligned columns, a line a host: each cell starts under its header.
        header, *lines = result.out.splitlines()
        names = header.split()
        starts = [m.start() for m in re.finditer(r"\S+", header)]
        rows = {}
        for line in lines:
            ends = [*starts[1:], None]
            cells = {n: line[a:b].strip() for n, a, b in zip(names, starts, ends, strict=True)}
            rows[cells["host"]] = cells
        return rows

    def wait_for_records(self, proc: subprocess.Popen, at_least: int, where=None) -> Path:
        """Block until the running farm's workers have written `at_least` records (that satisfy
        `where(record)`, if given); returns the run directory. Fails (never hangs) if the run
        ends first."""
        deadline = time.monotonic() + RUN_TIMEOUT
        while time.monotonic() < deadline:
            for run_dir in _run_dirs(self.runs):
                if _count_records(run_dir, where) >= at_least:
                    return run_dir
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(
                    f"farm ended (exit {proc.returncode}) before {at_least} records:\n"
                    f"{out[-3000:]}\n{err[-3000:]}"
                )
            time.sleep(0.05)
        proc.kill()
        pytest.fail(f"no {at_least} records within {RUN_TIMEOUT} s")


def _count_records(run_dir: Path, where) -> int:
    n = 0
    for path in (run_dir / "records").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            if where is None:
                n += 1
                continue
            try:
                record = json.loads(line)
            except ValueError:  # a line being written
                continue
            n += bool(where(record))
    return n


@pytest.fixture
def farm(tmp_path) -> Farm:
    return Farm(tmp_path)


# -- the SSH lab ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def lab(ssh_lab):
    return ssh_lab


@pytest.fixture
def broken_hosts(restore_lab_host):
    """Hosts a test breaks; each is put right afterwards (tests/conftest.py)."""
    return restore_lab_host


@pytest.fixture
def lab_inventory(lab) -> str:
    return str(lab.inventory_path)
