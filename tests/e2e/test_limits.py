"""No case takes the pool down by its size: a case too large for its hosts is refused before
anything runs (the orchestrator allocates nothing for it, no agent sees it), and a case whose
allocation still fails on a host is that case's result, not the host's fault."""

from __future__ import annotations

import json
import resource
import shlex
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import Farm
from tests.inventories import local_910b_hosts

# The orchestrator's address space while it validates the memory bomb: far below one of its
# tensors (1.8 TiB), enough for the farm's own imports.
ORCHESTRATOR_LIMIT = 1536 << 20
# The agents' address space on the small hosts: the canary fits, two tensors of 1 GiB do not.
AGENT_LIMIT_KB = 1_500_000
BIG = {"family": "910b", "dtype": "float32", "shape": [16384, 16384], "axes": 1}


def case_file(path: Path, *cases: dict) -> Path:
    path.write_text(json.dumps({"format": "logsoftmaxgrad-cases", "version": 1, "cases": cases}))
    return path


def limited(farm: Farm, *args: str) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ORCHESTRATOR_LIMIT, ORCHESTRATOR_LIMIT))

    return subprocess.run(
        farm.argv(*args),
        cwd=farm.root,
        env=farm.env,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=limit,
    )


def test_the_memory_bomb_is_refused_in_one_line_before_anything_runs(farm, tmp_path):
    bomb = case_file(
        tmp_path / "bomb.json",
        {"family": "910b", "dtype": "float16", "shape": [4, 8], "axes": 1},
        {"family": "910b", "dtype": "float16", "shape": [1000000, 1000000], "axes": 1},
    )
    run = limited(farm, "run", "--cases", str(bomb), "--no-progress", "--no-report")
    assert run.returncode == 2, run.stdout + run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("error: case 910b_f16_1000000x1000000_d1_")
    assert "needs 10.9 TiB in 3 tensors" in line and "over the 8 GiB" in line
    assert "memory_budget" in line and "Traceback" not in run.stdout + run.stderr
    assert not farm.runs.exists() and not farm.store.exists()  # no run, no quarantine, no store

    listing = limited(farm, "cases", "--cases", str(bomb))
    assert listing.returncode == 2 and len(listing.stderr.strip().splitlines()) == 1
    assert "needs 10.9 TiB" in listing.stderr


def small_hosts(tmp_path: Path) -> Path:
    """Two emulated Ascend910B1 hosts whose agents run under an address-space limit, and an
    inventory that says they have far more memory than they do."""
    python = tmp_path / "small-python"
    python.write_text(
        "#!/bin/sh\n"
        f"ulimit -v {AGENT_LIMIT_KB}\nulimit -s 2048\n"
        f'MALLOC_ARENA_MAX=2 exec {shlex.quote(sys.executable)} "$@"\n'
    )
    python.chmod(0o755)
    return local_910b_hosts(
        tmp_path, ("small-1", "small-2"), python, extra='memory_budget = "64GiB"\n'
    )


def test_an_allocation_that_fails_on_the_agent_is_the_cases_result(farm, tmp_path):
    cases = case_file(
        tmp_path / "cases.json",
        {"family": "910b", "dtype": "float32", "shape": [4, 8], "axes": 1},
        # Constant inputs: the agent reaches its second 1 GiB tensor at once.
        dict(BIG, y_dist="fill", y_fill=-1.0, dy_dist="fill", dy_fill=1.0),
    )
    run = farm.run(
        "run",
        "--cases",
        str(cases),
        "--inventory",
        str(small_hosts(tmp_path)),
        "--no-progress",
        "--no-report",
    )
    records = {r["case_id"]: r for r in run.raw_records()}
    assert len(records) == 2, run.text[-3000:]
    big = next(r for cid, r in records.items() if "16384x16384" in cid)
    small = next(r for cid, r in records.items() if "16384x16384" not in cid)
    assert (big["outcome"], big["category"]) == ("broken", "out_of_memory"), big["message"]
    assert big["message"].startswith("the case needs more memory than its host has (")
    assert big["host"] in ("small-1", "small-2")
    assert big.get("attempts", 1) == 1 and not big.get("infra_errors")  # never retried
    assert small["outcome"] == "passed", small["message"]
    assert run.code == 2  # a case that did not run is not a pass
    assert run.quarantine() == {}
