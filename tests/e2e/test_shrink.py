"""`farm shrink` end to end on the embedded pool: a vocabulary-sized case that a planted bug
fails is shrunk to a few elements, stored for the package, written into a case file, reproduced
by the printed repro line, and linked from the report of the run it failed in.

The bug is ``trunc_narrow`` on the emulated real kernel: the fp32 -> fp16 output cast truncates,
which the error bound catches on every row length (a precision failure), so the search can go
all the way down. One `farm shrink` (one pool session), about 20 candidates: seconds.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import time

from suites import casefile
from suites.case import Case

BUG = "trunc_narrow"
VOCAB = Case(
    "ascend910b", "float16", (2, 152064), (1,), dy_dist="uniform", standard="mixed-tolerance"
)


def test_a_vocabulary_case_of_a_planted_bug_shrinks_to_a_few_elements(farm):
    cases = casefile.dump([VOCAB], farm.root / "vocab.json")
    ran = farm.run("run", "--cases", str(cases), "--plant-bug", BUG, "--no-report", "--no-progress")
    assert ran.code == 1, ran.text  # the planted bug fails it: a product failure
    (record,) = ran.raw_records()
    assert (record["case_id"], record["category"]) == (VOCAB.id, "precision")

    # `farm repro ID` of the planted run's failure, told nothing of the bug, fails again: it
    # reruns on the run's package and says so in one line (it passed without a word).
    again = farm.run("repro", VOCAB.id, "--cases", str(cases), "--json")
    assert again.code == 1, again.text
    assert json.loads(again.out)["plant_bug"] == BUG
    assert f"on the planted bug {BUG}" in again.err and "--plant-bug none" in again.err

    started = time.monotonic()
    shrunk = farm.run("shrink", VOCAB.id, "--cases", str(cases), "--plant-bug", BUG, "--json")
    seconds = time.monotonic() - started
    assert shrunk.code == 0, shrunk.text
    found = json.loads(shrunk.out)
    print(
        f"shrunk {VOCAB.id} -> {found['shrunk_id']}: {found['numel_before']} -> "
        f"{found['numel_after']} elements, {found['tried']} candidates, {seconds:.1f} s"
    )
    assert found["case_id"] == VOCAB.id and found["category"] == "precision"
    assert found["numel_before"] == 2 * 152064
    assert 0 < found["numel_after"] <= 300
    assert found["tried"] <= 200 and not found["exhausted"]
    assert "fails the same way" in shrunk.err  # the progress, on stderr beside --json

    # Written: a case file that holds the shrunk case (it is in no tier).
    (written,) = casefile.load(found["case_file"])
    assert written.id == found["shrunk_id"] and written.numel == found["numel_after"]
    assert found["case_file"].startswith(str(farm.runs / "shrinks"))

    # Stored, for the package the run failed on (the same planted build).
    db = sqlite3.connect(farm.store)
    try:
        (sha,) = db.execute("SELECT package_sha256 FROM runs").fetchone()
        rows = db.execute("SELECT case_id, shrunk_id, category, tried FROM shrinks").fetchall()
    finally:
        db.close()
    assert sha == found["package_sha256"]
    assert rows == [(VOCAB.id, found["shrunk_id"], "precision", found["tried"])]

    # The printed repro line reproduces it: the same failure on the planted package.
    argv = shlex.split(found["repro"])
    assert argv[:3] == ["farm", "repro", found["shrunk_id"]] and "--plant-bug" in argv
    again = farm.run(*argv[1:], "--json")
    assert again.code == 1, again.text
    repro = json.loads(again.out)["record"]
    assert (repro["outcome"], repro["category"]) == ("failed", "precision")

    # The report of the run links the failing case to its shrunk form (added to the run's
    # allure-results before Allure runs; without Allure installed the report itself fails).
    farm.run("report", ran.run_dir.name, "--no-history")
    results = [
        json.loads(p.read_text()) for p in (ran.run_dir / "allure-results").glob("*-result.json")
    ]
    (result,) = [r for r in results if r["name"] == VOCAB.id]
    assert "shrunk form" in [a["name"] for a in result["attachments"]]
    assert found["repro"] in result["description"]


def test_a_case_that_does_not_fail_has_nothing_to_shrink(farm):
    case_id = "910b_f16_1x32000_d1_y.uniform_dy.uniform_mixed-tolerance"  # smoke tier
    result = farm.run("shrink", case_id)
    assert result.code == 1, result.text
    assert "nothing to shrink" in result.out
    assert not (farm.runs / "shrinks").exists()


def test_usage_errors_exit_2(farm):
    unknown = farm.run("shrink", "910b_f32_no_such_case")
    assert unknown.code == 2 and "no case" in unknown.err
    negative = farm.run("shrink", VOCAB.id, "--max-tries", "-1")
    assert negative.code == 2 and "--max-tries" in negative.err
