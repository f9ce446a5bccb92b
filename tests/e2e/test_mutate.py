"""`farm mutate` end to end, small (the full runs are benchmarks: benchmarks/RESULTS.md, "Issue
59: mutation score"): a handful of mutants of the real sources, each built in a scratch copy of
op/ and run through a slice of the smoke tier on the emulated real kernel.

On the native backend (the C library alone):

    KILLED      views.cpp's contiguous strides made from a product that starts at 0, not 1:
                the slice's four strided float32 cases fail (a kill, not a weak one; through
                acl it survives: the aclnn path makes its contiguous copies without views.cpp's
                strides)
    EQUIVALENT  checked_numel's overflow answer -1 made -2: its callers only ask whether it is
                negative, so the compiler makes the same library of it, byte for byte, and
                nothing runs
    SURVIVOR    the ABI's SoC count made a product: only tests list the SoC table, no case
                (an unreached survivor in op/mutants_explained.toml)
    REVIEWED    the reservation of the normalised axes left out: the vector grows without it
                (every case runs and passes; an equivalent by review in the same file)

On the acl backend (the default: each mutant's own emulated ACL runtime and aclnn layer):

    COPY_BACK   the aclnn layer's copy of a strided out back from the workspace made to hang on
                whether y is strided (copy[1]), not out (copy[2]): the slice's one case with a
                strided out gets NaN where its results should be (a precision failure)
    WORKSPACE   the workspace the aclnn layer asks for made the kernel's minus the copies' (not
                plus): phase two refuses the short workspace in the three cases that copy

and Ctrl-C in the middle leaves no scratch copy behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from farm.pool import build
from farm.results.store import Measure, RunStore
from farm.run import mutants

# Builds two scratch copies of the operator (about 15 s each, quiet) and a mutant each a few
# seconds: among the first files CI hands out (tests/conftest.py), not the last.
pytestmark = pytest.mark.build

SLICE = "910b and f32"
KILLED = "tiling/views.cpp:11:constant.0"
KILLED_BY = {
    "910b_f32_3x5x1_d1_y.uniform_dy.normal_y.strided",
    "910b_f32_3x33_d-1_y.uniform_dy.normal_strided",
    "910b_f32_2x9x5_d1_y.uniform_dy.normal_strided",
    "910b_f32_3x33_d-1_y.uniform_dy.normal_out.strided",
    "910b_f32_3x5_d-1_y.uniform_dy.normal_dy.st0.0.sz1_y.st1.1.sz7",
    "910b_f32_2_d0_y.uniform_dy.normal_dy.strided_y.strided_out.strided",
    "910b_f32_4x8_d-1_y.uniform_dy.normal_dy.strided",
}
EQUIVALENT = "tiling/tiling.cpp:72:constant.1"
# op/mutants_explained.toml: an equivalent by review (a reservation only), and an unreached
# survivor (the ABI's SoC listing, which only tests call)
REVIEWED = "tiling/tiling.cpp:94:statement.0"
SURVIVOR = "tiling/tiling.cpp:102:arithmetic.0"
LAYER = mutants.ACL_LAYER
COPY_BACK = f"{LAYER}:330:constant.0"
COPY_BACK_BY = "910b_f32_3x33_d-1_y.uniform_dy.normal_out.strided"
WORKSPACE = f"{LAYER}:249:arithmetic.0"


def mutate_args(*ids: str, out, backend: str | None = None) -> list[str]:
    """`farm mutate` over the slice of smoke, two jobs, these mutants, into `out`."""
    args = ["mutate", "-k", SLICE, "--jobs", "2", "--out", str(out)]
    args += ["--backend", backend] if backend else []
    for i in ids:
        args += ["--only", i]
    return args


def test_the_mutants_as_named():
    """The ids above are the mutants these tests mean (they move when the sources do)."""
    found = {
        m.id: m for m in mutants.generate(build.OP_DIR, ["tiling/tiling.cpp", "tiling/views.cpp"])
    }
    assert (found[KILLED].old, found[KILLED].new) == ("1", "0")
    tiling = (build.OP_DIR / "tiling" / "tiling.cpp").read_text()
    assert "return -1;" in found[EQUIVALENT].source_line(tiling)
    assert (found[EQUIVALENT].old, found[EQUIVALENT].new) == ("1", "2")
    assert found[REVIEWED].source_line(tiling).strip() == "out.reserve(axes.size());"
    assert found[SURVIVOR].source_line(tiling).strip().startswith("int soc_count()")
    assert (found[SURVIVOR].old, found[SURVIVOR].new) == ("/", "*")
    layer_text = (build.OP_DIR / LAYER).read_text()
    layer = {m.id: m for m in mutants.generate(build.OP_DIR, [LAYER])}
    assert layer[COPY_BACK].source_line(layer_text).strip() == "if (plan->copy[2])"
    assert (layer[COPY_BACK].old, layer[COPY_BACK].new) == ("2", "1")
    assert "plan->total = end + plan->copy_workspace;" in layer[WORKSPACE].source_line(layer_text)
    assert (layer[WORKSPACE].old, layer[WORKSPACE].new) == ("+", "-")


def test_each_backend_mutates_what_its_path_runs(farm):
    """acl, the default backend, runs the aclnn layer: its mutants are listed; on native they
    could only survive, and naming the layer there is a usage error. The native ABI's views
    are the other way round: on acl the aclnn layer copies strided views itself."""
    listed = farm.run("mutate", "--list", "--files", f"op/{LAYER}")
    assert listed.code == 0, listed.text
    assert f"{COPY_BACK}  '2' -> '1'" in listed.out
    native = farm.run("mutate", "--list", "--backend", "native").out
    assert LAYER not in native and mutants.NATIVE_VIEWS in native
    assert mutants.NATIVE_VIEWS not in farm.run("mutate", "--list").out
    refused = farm.run("mutate", "--list", "--backend", "native", "--files", LAYER)
    assert refused.code == 2 and "runs only through the acl backend" in refused.text
    refused = farm.run("mutate", "--list", "--files", mutants.NATIVE_VIEWS)
    assert refused.code == 2 and "runs only through the native backend" in refused.text


def test_aclnn_layer_mutants_are_killed_through_acl_with_their_own_runtime(farm, tmp_path):
    out = tmp_path / "mutate"
    ran = farm.run(*mutate_args(COPY_BACK, WORKSPACE, out=out))
    assert ran.code == 0, ran.text
    doc = json.loads((out / "mutation.json").read_text())
    assert doc["backend"] == "acl"
    by_id = {m["id"]: m for m in doc["mutants"]}
    copy_back = by_id[COPY_BACK]
    assert copy_back["status"] == "killed" and copy_back["failing"] == 1 and copy_back["weak"]
    assert [(c["case_id"], c["category"]) for c in copy_back["failing_cases"]] == [
        (COPY_BACK_BY, "precision")
    ]
    workspace = by_id[WORKSPACE]
    # Every case of the slice with a view the layer copies (a strong kill, >= 3 cases).
    assert workspace["status"] == "killed" and workspace["failing"] >= 3 and not workspace["weak"]
    assert not workspace["policy_only"] and workspace["policy_failing"] == 0
    s = doc["summary"]
    assert (s["killed"], s["survived"], s["policy_only"], s["results_score"]) == (2, 0, 0, 1.0)
    assert "tier smoke -k 910b and f32, backend acl" in (out / "report" / "index.html").read_text()
    assert "backend acl" in ran.out.splitlines()[0]
    # In the store farm run uses ($FARM_STORE): the score, and the weak kill with its case
    measure = _stored(farm, doc["mutate_id"])
    assert (measure.kind, measure.backend, measure.subset, measure.exit_code) == (
        "mutate",
        "acl",
        True,
        0,
    )
    assert measure.mutate == s and measure.run_dir == str(out)
    [note] = measure.mutants
    assert (note.mutant_id, note.what, note.failing) == (COPY_BACK, "weak kill", 1)
    assert [c["case_id"] for c in note.cases] == [COPY_BACK_BY]


def test_a_kill_with_its_cases_an_equivalent_and_a_survivor_on_a_slice_of_smoke(farm, tmp_path):
    out = tmp_path / "mutate"
    ran = farm.run(*mutate_args(KILLED, EQUIVALENT, SURVIVOR, REVIEWED, out=out, backend="native"))
    assert ran.code == 0, ran.text
    doc = json.loads((out / "mutation.json").read_text())
    by_id = {m["id"]: m for m in doc["mutants"]}
    assert set(by_id) == {KILLED, EQUIVALENT, SURVIVOR, REVIEWED}

    killed = by_id[KILLED]
    assert killed["status"] == "killed" and killed["complete"]
    assert killed["failing"] == len(KILLED_BY) and not killed["weak"]
    assert {c["case_id"] for c in killed["failing_cases"]} == KILLED_BY
    assert killed["source_line"].strip() == "int64_t acc = 1;"

    assert by_id[EQUIVALENT]["status"] == "equivalent" and by_id[EQUIVALENT]["failing"] == 0
    assert "equivalent_by" not in by_id[EQUIVALENT]  # the same library
    reviewed = by_id[REVIEWED]  # every case ran and passed; the review says why
    assert (reviewed["status"], reviewed["equivalent_by"]) == ("equivalent", "review")
    assert "reservation" in reviewed["explained"] and reviewed["failing"] == 0
    survivor = by_id[SURVIVOR]
    assert survivor["status"] == "survived" and survivor["failing"] == 0
    assert 0 < len(survivor["closest"]) <= 3
    assert survivor["explained_kind"] == "unreached" and "SoC table" in survivor["explained"]

    s = doc["summary"]
    assert (s["killed"], s["survived"], s["equivalent"], s["stillborn"], s["weak"]) == (
        1,
        1,
        2,
        0,
        0,
    )
    assert s["reviewed_equivalent"] == 1
    assert s["score"] == 0.5 and doc["cases_judged"] == doc["cases"] > 0
    assert s["explained"] == 1 and s["killable_score"] == 1.0
    assert len((out / "mutants.jsonl").read_text().splitlines()) == 4

    page = (out / "report" / "index.html").read_text()
    assert "50.0% of 2 non-equivalent mutants killed" in page
    assert "Survivors (1)" in page and "op/tiling/tiling.cpp:102" in page
    assert "Equivalent by review (1)" in page and "op/tiling/tiling.cpp:94" in page
    assert survivor["closest"][0]["case_id"] in page
    lines = ran.out.strip().splitlines()
    assert "mutation score 50.0% of 2 non-equivalent mutants" in lines[-4]
    assert lines[-3] == "100.0%: the score without the 1 unreached survivors"
    assert lines[-2].startswith(f"report: {out / 'report' / 'index.html'}")
    assert "50.0% through the results" in lines[-4]
    assert f"{KILLED}  '1' -> '0'  {len(KILLED_BY)} failing" in ran.out
    # Last, the store farm run uses: the score and the survivor with its closest cases
    assert lines[-1] == f"stored in run store {farm.store}: farm runs show {doc['mutate_id']}"
    measure = _stored(farm, doc["mutate_id"])
    assert measure.mutate == s and (measure.backend, measure.subset) == ("native", True)
    [note] = measure.mutants
    assert (note.mutant_id, note.explained_kind) == (SURVIVOR, "unreached")
    assert note.cases == survivor["closest"]


def _stored(farm, measure_id: str) -> Measure:
    with RunStore(farm.store, create=False) as store:
        measure = store.get_measure(measure_id)
    assert measure is not None, f"{measure_id} is not in the store"
    return measure


def test_ctrl_c_leaves_no_scratch_copy(farm, tmp_path):
    scratch_dir = tmp_path / "tmp"
    scratch_dir.mkdir()
    ids = [m.id for m in mutants.generate(build.OP_DIR, ["tiling/views.cpp"])][:6]
    args = mutate_args(*ids, out=tmp_path / "out", backend="native")
    proc = subprocess.Popen(
        farm.argv(*args),
        cwd=farm.root,
        env={**farm.env, "TMPDIR": str(scratch_dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # with SIGINT as a terminal's job has it: a suite started in the background (nohup, &)
        # hands its children SIGINT ignored, which the farm keeps (farm/util/interrupts.py)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
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
