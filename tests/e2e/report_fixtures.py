"""Three real `farm run`s of a slice of the smoke tier, shared by the report end-to-end tests.

Run 1 builds the real operator, run 2 the operator with the planted tail bug
(`farm run --plant-bug tail`: the last chunk of a row is computed in whole 32-byte blocks only,
its unaligned remainder never written), run 3 the real one again. All three go into one run store
and the store's Allure history in a temporary directory (FARM_RUNS / FARM_STORE), never runs/.
Each run ends by generating its own report, as `farm run` does.

What run 2 must break is derived here independently of the farm: every selected case is run
in-process through farm.agent.backends.native with the good library and with the tail-bug library,
and a case is *expected to regress* when the two outputs differ (bit for bit, NaN-aware). The
farm's own verdicts, comparison and report are then checked against that set.

The slice (`farm run --tier smoke -- -k ...`) is chosen to hold, on both SoC families: cases the
tail bug breaks with finite errors (3x17, a REDUCE_TAIL row of 17 elements) and with every element
unwritten (2x3x4x2 on dim -2), cases it cannot touch (1x32000 rows are whole 32-byte blocks), a
case the operator must reject (normal_no.dy: dy missing) and passes sampled for a plot.

The runs are made once per test session, shared by the three test modules (and by pytest-xdist
workers, see make_runs), and take about a minute and a half on two cores.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.requirements import need, need_allure, need_chromium  # noqa: F401  (re-exported)

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "reports" / "artifacts"

# pytest -k words, each matched (case-insensitively) as a substring of the test ids.
SLICE = ("3x17_d-1", "1x32000_d1", "2x3x4x2_d-2", "normal_no.dy")
K_EXPR = " or ".join(SLICE)
# The SoC of each family in the embedded pool (farm.pool.inventory's default pool).
POOL_SOC = {"ascend910b": "Ascend910B1", "ascend310b": "Ascend310B1"}
POOL_HOSTS = {
    "emu-a2-01": "Ascend910B1 (ascend910b)",
    "emu-a2-02": "Ascend910B1 (ascend910b)",
    "emu-310b-01": "Ascend310B1 (ascend310b)",
}
# CI variables for executor.json (farm.run.allure.environment.executor_info reads GitHub's first).
CI_ENV = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.example",
    "GITHUB_REPOSITORY": "lsg/farm",
    "GITHUB_WORKFLOW": "e2e",
}
RUN_TIMEOUT = 600

# --------------------------------------------------------------------------- the runs


@dataclass
class FarmRun:
    n: int
    run_id: str
    run_dir: Path
    code: int
    output: str
    summary: dict

    @property
    def results(self) -> Path:
        return self.run_dir / "allure-results"

    @property
    def report(self) -> Path:
        return self.run_dir / "report"


@dataclass
class Runs:
    root: Path
    store: Path
    env: dict
    selected: list  # the Case objects of the slice
    expected: set  # case ids the tail bug must break (derived from the twin directly)
    runs: list = field(default_factory=list)

    def history_lines(self) -> list[str]:
        """The smoke tier's Allure history, as the store keeps it."""
        from farm.results.store import RunStore

        with RunStore(self.store, create=False) as store:
            return store.history_lines("smoke")

    def farm(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            farm_command(*args),
            cwd=str(REPO_ROOT),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def farm_command(*args: str) -> list[str]:
    """The `farm` console script of this interpreter's environment, else `python -m farm.cli`."""
    script = Path(sys.executable).with_name("farm")
    if script.is_file():
        return [str(script), *args]
    return [sys.executable, "-m", "farm.cli", *args]


def selected_cases() -> list:
    """The smoke cases `-k K_EXPR` selects: those whose id contains one of the SLICE words."""
    from suites import matrix

    return [c for c in matrix.expand("smoke") if any(w.lower() in c.id.lower() for w in SLICE)]


def tail_bug_breaks(cases) -> set[str]:
    """Case ids whose output on the tail-bug twin differs from the real twin's (NaN-aware, bit
    for bit), each run on its family's SoC with the inputs the agent makes from the case."""
    from farm.agent.backends import native
    from farm.agent.execute import make_call_inputs
    from farm.pool import build
    from tests.op import twin_abi

    good = build.build_twin(build.default_build_dir())
    bad = build.build_twin(build.default_build_dir("tail"), plant_bug="tail")
    assert twin_abi.build_info(bad).startswith("plant_bug=tail;")
    broken = set()
    for case in cases:
        d = case.to_dict()
        dy, y = make_call_inputs(d)
        outs = []
        for lib in (good, bad):
            r = native.run(
                dy,
                y,
                tuple(case.axes),
                POOL_SOC[case.family],
                out_dtype=native.numpy_dtype(d.get("out_dtype") or case.dtype),
                out_shape=d.get("out_shape"),
                missing=d.get("missing"),
                library=lib,
            )
            outs.append((r.status, None if r.out is None else np.ascontiguousarray(r.out)))
        (sa, a), (sb, b) = outs
        same = sa == sb and (
            (a is None and b is None)
            or (a is not None and b is not None and a.tobytes() == b.tobytes())
        )
        if not same:
            broken.add(case.id)
    return broken


def _run_env(root: Path) -> dict:
    env = dict(os.environ)
    # The outer pytest's options and plugins are not the inner run's.
    for k in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_XDIST_WORKER", "COLUMNS"):
        env.pop(k, None)
    env.update(
        FARM_RUNS=str(root / "runs"),
        FARM_STORE=str(root / "runs" / "farm.sqlite"),
        MPLBACKEND="Agg",
        NO_COLOR="1",
        **CI_ENV,
    )
    return env


def _one_run(runs: Runs, n: int, plant_bug: str) -> FarmRun:
    from farm.results.store import RunStore

    env = dict(runs.env, GITHUB_RUN_ID=str(9000 + n), GITHUB_RUN_NUMBER=str(n))
    # The twin: the cases the tail bug breaks are derived from it directly (tail_bug_breaks).
    args = ["run", "--tier", "smoke", "--no-progress", "--target", "twin"]
    if plant_bug:
        args += ["--plant-bug", plant_bug]
    proc = subprocess.run(
        farm_command(*args, "--", "-k", K_EXPR),
        cwd=str(REPO_ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    output = proc.stdout + proc.stderr
    with RunStore(runs.store) as store:
        latest = store.latest_run(tier="smoke")
    known = {r.run_id for r in runs.runs}
    assert latest is not None and latest["run_id"] not in known, (
        f"run {n} recorded no new run in the store (exit {proc.returncode}):\n{output[-4000:]}"
    )
    run_dir = Path(latest["run_dir"])
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return FarmRun(n, latest["run_id"], run_dir, proc.returncode, output, summary)


_CACHE: dict[str, Runs] = {}


def make_runs(tmp_path_factory) -> Runs:
    """Runs 1 (good), 2 (tail bug), 3 (good) of the slice: made once per test session.

    Each run ends by generating its report; without node and reports/node_modules it has none,
    and the tests that read reports skip (or fail, with FARM_REQUIRE_ALL=1: need_allure).

    Once per session even under pytest-xdist (CI runs `pytest -n 2`): the first worker to get
    here makes them in a directory all the session's workers share, under a file lock; the
    others wait for it and read what it wrote (runs.json), or its error."""
    if "runs" in _CACHE:
        return _CACHE["runs"]
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "e2e-report"
    with _locked(shared / "e2e-report.lock"):
        done, failed = root / "runs.json", root / "error.txt"
        if failed.is_file():
            pytest.fail(f"making the runs failed (in another worker):\n{failed.read_text()}")
        if done.is_file():
            runs = _load(json.loads(done.read_text()))
        else:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            try:
                runs = _make(root)
            except BaseException as exc:
                failed.write_text(f"{type(exc).__name__}: {exc}")
                raise
            done.write_text(json.dumps(_dump(runs)))
    _CACHE["runs"] = runs
    return runs


@contextlib.contextmanager
def _locked(path: Path):
    import fcntl

    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _make(root: Path) -> Runs:
    cases = selected_cases()
    runs = Runs(
        root=root,
        store=root / "runs" / "farm.sqlite",
        env=_run_env(root),
        selected=cases,
        expected=tail_bug_breaks(cases),
    )
    for n, bug in ((1, ""), (2, "tail"), (3, "")):
        runs.runs.append(_one_run(runs, n, bug))
    return runs


def _dump(runs: Runs) -> dict:
    return {
        "root": str(runs.root),
        "selected": [c.id for c in runs.selected],
        "expected": sorted(runs.expected),
        "runs": [
            {
                "n": r.n,
                "run_id": r.run_id,
                "run_dir": str(r.run_dir),
                "code": r.code,
                "output": r.output,
                "summary": r.summary,
            }
            for r in runs.runs
        ],
    }


def _load(data: dict) -> Runs:
    root = Path(data["root"])
    by_id = {c.id: c for c in selected_cases()}
    runs = Runs(
        root=root,
        store=root / "runs" / "farm.sqlite",
        env=_run_env(root),
        selected=[by_id[cid] for cid in data["selected"]],
        expected=set(data["expected"]),
    )
    runs.runs = [FarmRun(**dict(r, run_dir=Path(r["run_dir"]))) for r in data["runs"]]
    return runs


# --------------------------------------------------------------------------- reading results


def allure_results(results_dir: Path) -> dict[str, dict]:
    """The allure-results of a farm run by case id (the Allure test name is the case id)."""
    out = {}
    for f in Path(results_dir).glob("*-result.json"):
        r = json.loads(f.read_text())
        out[r["name"]] = r
    return out


def report_tests(report_dir: Path) -> dict[str, dict]:
    """The report's per-test data files (data/test-results/*.json) by case id."""
    out = {}
    for f in (Path(report_dir) / "data" / "test-results").glob("*.json"):
        tr = json.loads(f.read_text())
        out[tr["name"]] = tr
    return out


def global_attachment(report_dir: Path, name: str) -> Path:
    """A global attachment of a report (the regression summary, the trend) by its name."""
    globals_ = json.loads((Path(report_dir) / "widgets" / "globals.json").read_text())
    att = next(a for a in globals_["attachments"] if a["name"] == name)
    return Path(report_dir) / "data" / "attachments" / f"{att['id']}{att['ext']}"


def param(result: dict, name: str) -> dict | None:
    return next((p for p in result.get("parameters", []) if p["name"] == name), None)


def labels(result: dict, name: str) -> list[str]:
    return [lab["value"] for lab in result.get("labels", []) if lab["name"] == name]


# --------------------------------------------------------------------------- serving a report
