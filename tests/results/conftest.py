"""Shared helpers of the run store / compare / Allure tests: synthetic records and runs, and the
skip-or-fail rule for tests that need external tools (node + reports/node_modules, chromium).

With FARM_REQUIRE_ALL=1 (CI sets it) a missing tool fails the test instead of skipping it.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from farm.util.paths import REPO_ROOT
from tests.requirements import need, need_allure, need_chromium  # noqa: F401  (re-exported)

BASE: dict[str, Any] = {
    "case_id": "c0",
    "family": "ascend910b",
    "dtype": "float32",
    "shape": [4, 1024],
    "axes": [-1],
    "api": "dim",
    "schedule": "REDUCE_TAIL",
    "y_dist": "uniform",
    "dy_dist": "normal",
    "special": "none",
    "layout": "contiguous",
    "seed": 1234,
    "expect": {"kind": "precision", "standard": "experimental", "level": None},
    "outcome": "passed",
    "category": None,
    "message": "experimental: MERE 1e-07 < T, MARE 1e-06 < 10T",
    "status": 0,
    "reason": None,
    "op_message": "",
    "metrics": {
        "n": 4096,
        "mere": 1e-7,
        "mare": 1e-6,
        "rmse": 1e-7,
        "max_abs": 1e-6,
        "max_rel": 1e-6,
        "ulp_max": 1,
        "ulp_mean": 0.2,
        "nan_inf_ok": True,
        "worst": [
            {"index": [0, 5], "actual": 0.5, "golden": 0.4999999, "abs_err": 1e-7, "rel_err": 2e-7},
            {
                "index": [3, 17],
                "actual": -1.25,
                "golden": -1.2499998,
                "abs_err": 2e-7,
                "rel_err": 1.6e-7,
            },
        ],
        "hist": {
            "edges": [-10.0, -9.0, -8.0, -7.0, -6.0, -5.0],
            "counts": [10, 200, 3000, 800, 86],
            "zeros": 0,
            "nonfinite": 0,
            "n": 4096,
        },
    },
    "standards": {"experimental": {"passed": True, "reason": "ok"}},
    "tiling": {
        "schedule": "REDUCE_TAIL",
        "key": 769,
        "cores_used": 4,
        "rows_per_core": 1,
        "chunks": 1,
    },
    "host": "emu-a2-0",
    "soc": "Ascend910B3",
    "slot": "emu-a2-0:0",
    "attempts": 1,
    "timings": {"backend_s": 0.01, "golden_s": 0.002, "total_s": 0.02, "wall_s": 0.03},
}


def record(case_id: str, **over) -> dict:
    """A synthetic result record; `metrics=` may be a dict merged into the default metrics."""
    r = copy.deepcopy(BASE)
    r["case_id"] = case_id
    m = over.pop("metrics", ...)
    if m is None:
        r["metrics"] = None
    elif m is not ...:
        r["metrics"].update(m)
    r.update(over)
    return r


def failed(case_id: str, category: str = "precision", **over) -> dict:
    over.setdefault("message", f"{category}: synthetic failure of {case_id}")
    return record(case_id, outcome="failed", category=category, **over)


def rejected_ok(case_id: str, **over) -> dict:
    return record(
        case_id,
        expect={"kind": "reject", "reason": "dtype_mismatch", "status": 161002},
        status=161002,
        reason="dtype_mismatch",
        metrics=None,
        tiling=None,
        schedule="REDUCE_TAIL",
        message="rejected as expected",
        **over,
    )


RUN_META = {
    "tier": "smoke",
    "package_version": "0.1.0",
    "package_sha256": "ab" * 32,
    "target": "twin",
    "git_commit": "0123456789abcdef0123456789abcdef01234567",
    "inventory": [
        {"name": "emu-a2-0", "soc": "Ascend910B3", "family": "ascend910b"},
        {"name": "emu-310-0", "soc": "Ascend310B1", "family": "ascend310b"},
    ],
    "backend": "native",
    "farm_version": "0.1.0",
}


# --------------------------------------------------------------------------- stores on disk

# Where bytes written into a store_with_results(path, 3000) file land in its results pages:
# past its header, schema and version, so that only a whole read of the file finds them.
DEEP_INSIDE = slice(-40000, -20000)
FIRST_PAGES = slice(5000, 9000)


def store_with_results(path: Path, n: int = 200) -> None:
    """A SQLite run store at `path` holding one run of `n` synthetic records."""
    from farm.results.store import RunStore

    with RunStore(path) as store:
        store.add_results(store.begin_run(RUN_META), [record(f"c{i}") for i in range(n)])


def garble(path: Path, where: slice) -> None:
    """Bytes of 0xff written into the file in place, as a failing disk or another program
    would; first past the file system's clock tick since its last change (a few ms), so that
    its size and times move on as a later write's do."""
    time.sleep(0.05)
    data = bytearray(path.read_bytes())
    data[where] = b"\xff" * len(data[where])
    path.write_bytes(bytes(data))


# --------------------------------------------------------------------------- allure sessions

_SESSION_TEST = """
import json
import os
import sys

import pytest

from farm.run.allure.categories import failure_message
from farm.run.allure.glue import annotate

RECORDS = {r["case_id"] + "@" + r["family"]: r
           for r in json.load(open(os.environ["FARM_TEST_RECORDS"]))}


class InfrastructureBroken(RuntimeError):
    pass


@pytest.fixture(scope="module", autouse=True)
def loaded_modules():
    yield
    # What the test items imported, for the tests that check annotate draws nothing.
    with open("modules.json", "w") as fh:
        json.dump(sorted(sys.modules), fh)


@pytest.mark.parametrize("key", sorted(RECORDS))
def test_case(key):
    rec = RECORDS[key]
    annotate(rec)
    if rec["outcome"] == "broken":
        raise InfrastructureBroken(failure_message(rec))
    assert rec["outcome"] == "passed", failure_message(rec)
"""


def run_allure_session(workdir, records, name="run") -> Path:
    """Run a tiny pytest session whose tests annotate `records`; return its allure-results.

    Beside them (its parent directory) `modules.json` lists the modules the session had loaded
    once its test items ran. The results are as the test items leave them: the error-distribution
    plots are drawn later, by the report step (farm.run.case_plots.render_case_plots)."""
    workdir = Path(workdir)
    d = workdir / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "records.json").write_text(json.dumps(records))
    (d / "test_synthetic_cases.py").write_text(_SESSION_TEST)
    results = d / "allure-results"
    env = dict(
        os.environ,
        FARM_TEST_RECORDS=str(d / "records.json"),
        PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        MPLBACKEND="Agg",
    )
    env.pop("PYTEST_ADDOPTS", None)  # the outer run's options (-n, --alluredir) are not ours
    env.pop("PYTEST_PLUGINS", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-p",
            "no:randomly",
            f"--alluredir={results}",
            "--rootdir",
            str(d),
            str(d / "test_synthetic_cases.py"),
        ],
        cwd=str(d),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    n_bad = sum(r["outcome"] != "passed" for r in records)
    if n_bad == 0:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 1, proc.stdout + proc.stderr
    return results


@pytest.fixture(params=["sqlite", "postgresql"])
def store_spec(request, tmp_path, monkeypatch):
    """Where a test's run store is: a SQLite file in tmp_path, or a fresh schema on the
    PostgreSQL server (tests/postgres.py). Either way a run's directory is looked for in
    tmp_path when the run does not record one."""
    if request.param == "sqlite":
        yield str(tmp_path / "farm.sqlite")
        return
    from tests.postgres import fresh_schema

    monkeypatch.setattr("farm.results.store.location.RUNS_DIR", tmp_path)
    with fresh_schema() as url:
        yield url


@pytest.fixture
def store(store_spec):
    from farm.results.store import RunStore

    with RunStore(store_spec) as s:
        yield s
