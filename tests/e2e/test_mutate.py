"""`farm mutate` end to end, small (the full runs are benchmarks: benchmarks/RESULTS.md, "Issue
59: mutation score"): a handful of mutants of the real sources, each built in a scratch copy of
op/ and run through a slice of the smoke tier on the emulated real kernel.

    KILLED      views.cpp's contiguous strides made from a product that starts at 0, not 1:
                the slice's three strided float32 cases fail (a kill, not a weak one)
    EQUIVALENT  checked_numel's overflow answer -1 made -2: its callers only ask whether it is
                negative, so the compiler makes the same library of it, byte for byte, and
                nothing runs
    SURVIVOR    checked_numel's product started at 2: only compared with the limits, twice the
                element count of the slice's cases is still far inside them

and Ctrl-C in the middle leaves no scratch copy behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from farm.pool import build
from farm.run import mutants

# Builds two scratch copies of the operator (about 15 s each, quiet) and a mutant each a few
# seconds: among the first files CI hands out (tests/conftest.py), not the last.
pytestmark = pytest.mark.build

SLICE = "910b and f32"
KILLED = "tiling/views.cpp:11:constant.0"
KILLED_BY = {
    "910b_f32_3x33_d-1_y.uniform_dy.normal_strided",
    "910b_f32_2x9x5_d1_y.uniform_dy.normal_strided",
    "910b_f32_3x33_d-1_y.uniform_dy.normal_out.strided",
    "910b_f32_3x5x1_d1_y.uniform_dy.normal_y.strided",
    "910b_f32_3x5_d-1_y.uniform_dy.normal_dy.st0.0.sz1_y.st1.1.sz7",
    "910b_f32_2_d0_y.uniform_dy.normal_dy.strided_y.strided_out.strided",
    "910b_f32_4x8_d-1_y.uniform_dy.normal_dy.strided",
}
EQUIVALENT = "tiling/tiling.cpp:72:constant.1"
# explained in op/mutants_explained.toml: a reservation only
SURVIVOR = "tiling/tiling.cpp:94:statement.0"


def test_the_mutants_as_named():
    """The ids above are the mutants these tests mean (they move when the sources do)."""
    found = {
        m.id: m for m in mutants.generate(build.OP_DIR, ["tiling/tiling.cpp", "tiling/views.cpp"])
    }
    assert (found[KILLED].old, found[KILLED].new) == ("1", "0")
    tiling = (build.OP_DIR / "tiling" / "tiling.cpp").read_text()
    assert "return -1;" in found[EQUIVALENT].source_line(tiling)
    assert (found[EQUIVALENT].old, found[EQUIVALENT].new) == ("1", "2")
    assert found[SURVIVOR].source_line(tiling).strip() == "out.reserve(axes.size());"


def test_a_kill_with_its_cases_an_equivalent_and_a_survivor_on_a_slice_of_smoke(farm, tmp_path):
    out = tmp_path / "mutate"
    ran = farm.run(
        "mutate",
        "-k",
        SLICE,
        "--only",
        KILLED,
        "--only",
        EQUIVALENT,
        "--only",
        SURVIVOR,
        "--jobs",
        "2",
        "--out",
        str(out),
    )
    assert ran.code == 0, ran.text
    doc = json.loads((out / "mutation.json").read_text())
    by_id = {m["id"]: m for m in doc["mutants"]}
    assert set(by_id) == {KILLED, EQUIVALENT, SURVIVOR}

    killed = by_id[KILLED]
    assert killed["status"] == "killed" and killed["complete"]
    assert killed["failing"] == len(KILLED_BY) and not killed["weak"]
    assert {c["case_id"] for c in killed["failing_cases"]} == KILLED_BY
    assert killed["source_line"].strip() == "int64_t acc = 1;"

    assert by_id[EQUIVALENT]["status"] == "equivalent" and by_id[EQUIVALENT]["failing"] == 0
    survivor = by_id[SURVIVOR]
    assert survivor["status"] == "survived" and survivor["failing"] == 0
    assert 0 < len(survivor["closest"]) <= 3
    assert "reservation" in survivor["explained"]

    s = doc["summary"]
    assert (s["killed"], s["survived"], s["equivalent"], s["stillborn"], s["weak"]) == (
        1,
        1,
        1,
        0,
        0,
    )
    assert s["score"] == 0.5 and doc["cases_judged"] == doc["cases"] > 0
    assert s["explained"] == 1 and s["killable_score"] == 1.0
    assert len((out / "mutants.jsonl").read_text().splitlines()) == 3

    page = (out / "report" / "index.html").read_text()
    assert "50.0% of 2 non-equivalent mutants killed" in page
    assert "Survivors (1)" in page and "op/tiling/tiling.cpp:94" in page
    assert survivor["closest"][0]["case_id"] in page
    lines = ran.out.strip().splitlines()
    assert "mutation score 50.0% of 2 non-equivalent mutants" in lines[-3]
    assert lines[-2] == "100.0%: the score without the 1 explained survivors"
    assert lines[-1].startswith(f"report: {out / 'report' / 'index.html'}")
    assert f"{KILLED}  '1' -> '0'  {len(KILLED_BY)} failing" in ran.out


def test_ctrl_c_leaves_no_scratch_copy(farm, tmp_path):
    scratch_dir = tmp_path / "tmp"
    scratch_dir.mkdir()
    ids = [m.id for m in mutants.generate(build.OP_DIR, ["tiling/views.cpp"])][:6]
    args = ["mutate", "-k", SLICE, "--jobs", "2", "--out", str(tmp_path / "out")]
    for i in ids:
        args += ["--only", i]
    proc = subprocess.Popen(
        farm.argv(*args),
        cwd=farm.root,
        env={**farm.env, "TMPDIR": str(scratch_dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the first mutant done: the jobs are at work on the others
            if line.startswith(f"[1/{len(ids)}]"):
                break
        else:
            pytest.fail("farm mutate ended before its first mutant")
        assert list(scratch_dir.glob("farm-mutate-*")), "each job works in a scratch copy"
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the command and its jobs
        assert proc.wait(timeout=120) == 128 + signal.SIGINT
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert list(scratch_dir.glob("farm-mutate-*")) == []
