"""A red run ends with what to do next: a planted-bug smoke run (`farm run --plant-bug
trunc_narrow`, the cast to float16 and bfloat16 truncates) prints its report line, the
comparison in one line and its gate, then its triage as the last block: one group for the one
cause, holding every failure, in the contract's words, with its rerun, shrink and bisect."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.e2e.conftest import RUN_TIMEOUT

pytestmark = pytest.mark.build  # builds (or finds built) the planted kernel

HEADER = "triage   what the failures share:"


def test_the_last_block_of_a_red_run_is_its_triage_one_group_per_cause(farm):
    # As a terminal shows it: the farm's lines (stderr) and the report's (stdout) in one stream.
    args = ["run", "--tier", "smoke", "--no-progress", "--plant-bug", "trunc_narrow"]
    proc = subprocess.run(
        farm.argv(*args),
        cwd=farm.root,
        env=farm.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    result = farm.result(proc.returncode, proc.stdout, "")
    assert result.code == 1, result.text
    failed = result.summary["outcomes"]["failed"]
    assert failed > 0

    lines = result.out.rstrip("\n").splitlines()
    # Below the triage, only the two lines for a script: where the run is stored, its id last.
    assert lines[-2].startswith("store    ") and lines[-1].startswith("run_id="), lines[-2:]
    start = lines.index(HEADER)
    block = lines[start + 1 : -2]
    # The last block: nothing after it but its own lines (a group's line, then its commands).
    assert all(re.match(r"\d+\. |   (rerun|shrink|bisect): ", line) for line in block), block
    groups = [line for line in block if re.match(r"\d+\. ", line)]
    # One cause, one group, and it holds every failure (the covering group first).
    assert len(groups) == 1, groups
    assert groups[0].startswith(f"1. {failed:,} of {failed:,} failures ({failed:,} precision): ")
    assert "2-byte dtype" in groups[0] and "(narrow_dtype)" in groups[0], groups[0]
    assert [line.split(":", 1)[0] for line in block[1:]] == [
        "   rerun",
        "   shrink",
        "   bisect",
    ]
    assert "--plant-bug trunc_narrow" in block[1], block[1]

    # Above it: the report, the comparison in one line (no tables), the gate.
    before = lines[:start]
    report = next(i for i, line in enumerate(before) if line.startswith("report: "))
    assert before[report + 1].startswith(f"run {result.made_dir.name}: no baseline")
    assert before[-1].startswith("quality gate: ")
    assert not any(line.startswith(("New failures (", "Per family and dtype")) for line in lines)
