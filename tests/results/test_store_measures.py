"""The measurements of `farm mutate` and `farm coverage` in the run store, on SQLite and on
PostgreSQL (each test that takes `store` or `store_spec` runs on both): a mutation run's summary
with its survivors' and weak kills' notes, and a coverage's figures, written and read back;
listed newest first, a tier's trend oldest first; a store that cannot take one said in one line.
Synthetic documents: what farm/cli/mutate_command.py and coverage_command.py write."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from farm.results import measured, store_command
from farm.results.store import SCHEMA_VERSION, Measure, RunStore, schema_version
from farm.results.store.measure_rows import MutantNote
from farm.util.errors import UsageError
from tests.measures import (
    CLOSEST,
    EQUIVALENT,
    POLICY,
    STRONG,
    SURVIVOR,
    UNREACHED,
    WEAK,
    coverage_result,
    coverage_runs,
    mutation_doc,
)

from .conftest import RUN_META

# --------------------------------------------------------------------------- written, read back


def test_a_mutation_runs_summary_and_notes_are_read_back_as_written(store, tmp_path):
    doc = mutation_doc()
    written = measured.mutate_measure(doc, tmp_path / "m")
    store.add_measure(written)
    read = store.get_measure(doc["mutate_id"])
    assert read is not None
    assert read == written
    assert read.mutate == doc["summary"]
    assert (read.kind, read.tier, read.backend, read.exit_code, read.subset) == (
        "mutate",
        "smoke",
        "acl",
        0,
        False,
    )
    assert read.started_at == "2026-12-07T10:15:00+00:00"  # its id's UTC time
    assert read.ended_at == "2026-12-07T10:16:35+00:00"  # and its 95 s
    assert read.run_dir == str(tmp_path / "m") and read.git_commit == doc["git_commit"]
    # The mutants a person looks at, survivors first; a strong kill and an equivalent are not kept
    by_id = {n.mutant_id: n for n in read.mutants}
    assert [n.mutant_id for n in read.mutants] == [SURVIVOR, UNREACHED, WEAK, POLICY]
    assert by_id[SURVIVOR].cases == CLOSEST and by_id[SURVIVOR].what == "survived"
    assert (by_id[UNREACHED].explained_kind, by_id[UNREACHED].explained_why) == (
        "unreached",
        "only tests list the SoC table",
    )
    weak = by_id[WEAK]
    assert (weak.status, weak.weak, weak.failing, weak.what) == ("killed", True, 1, "weak kill")
    assert weak.cases == [
        {
            "case_id": "c_out_strided",
            "outcome": "failed",
            "category": "precision",
            "message": "precision: MERE 3e-3 > T",  # its first line
        }
    ]
    assert by_id[POLICY].what == "policy-only kill" and len(by_id[POLICY].cases) == 4
    assert (weak.file, weak.line, weak.rule, weak.source_line) == (
        "ascendc/op_api/aclnn_log_softmax_backward.cpp",
        330,
        "constant.0",
        "x = a + b;",
    )
    assert json.loads(json.dumps(read.to_json()))["mutants"][0]["id"] == SURVIVOR


def test_a_coverages_figures_are_read_back_with_its_runs_package_and_commit(store, tmp_path):
    runs = coverage_runs(store)
    result = coverage_result(runs)
    written = measured.coverage_measure(result, tmp_path / "coverage", store)
    store.add_measure(written)
    read = store.get_measure(f"coverage-{runs['acl']}")
    assert read == written
    c = read.coverage
    assert (c["lines"]["percent"], c["branches"]["percent"], c["functions"]["covered"]) == (
        93.0,
        70.0,
        99,
    )
    assert (c["uncovered"], c["unexplained"], c["stale"], c["accounted"]) == (2, 1, 1, False)
    assert (c["fewer_cases"], c["branches_reached"], c["min_cases"], c["cases"]) == (12, 700, 3, 61)
    assert c["runs"] == runs
    assert read.backend == "acl,native" and read.exit_code == 1  # an unexplained line
    assert read.package_sha256 == RUN_META["package_sha256"]
    assert read.git_commit == RUN_META["git_commit"]
    assert read.started_at == "2026-12-07T10:00:00+00:00"
    assert read.ended_at == "2026-12-07T10:05:00+00:00"
    assert read.meta == {"merged": False} and read.mutants == ()
    # --merged counts no cases per branch
    merged = measured.coverage_measure(
        coverage_result(runs, per_case=None, cases=None, accounted=True, unexplained=0),
        tmp_path,
        store,
    )
    assert merged.coverage["fewer_cases"] is None and merged.exit_code == 0


def test_a_measurement_stored_again_replaces_itself_and_its_notes(store, tmp_path):
    doc = mutation_doc()
    store.add_measure(measured.mutate_measure(doc, tmp_path))
    again = copy.deepcopy(doc)
    again["mutants"] = [m for m in again["mutants"] if m["id"] != SURVIVOR]
    again["summary"]["survived"] = 1
    store.add_measure(measured.mutate_measure(again, tmp_path))
    read = store.get_measure(doc["mutate_id"])
    assert read is not None and read.mutate["survived"] == 1
    assert SURVIVOR not in {n.mutant_id for n in read.mutants}
    assert len(store.measures(limit=None)) == 1


def test_what_makes_a_mutation_run_a_subset_and_its_exit_code(tmp_path):
    for over, subset in (
        ({}, False),
        ({"k": "910b"}, True),
        ({"selection": {"only": [SURVIVOR]}}, True),
        ({"selection": {"limit": 5}}, True),
        ({"selection": {"rules": "relational"}}, True),
        ({"selection": {"files": ["op/tiling/tiling.cpp"]}}, True),
        ({"backend": "native", "selection": {"files": []}}, False),
    ):
        assert measured.mutate_subset(mutation_doc(**over)) is subset, over
    assert measured.mutate_exit(mutation_doc(min_score=95)) == 1  # 60 % < 95 %
    assert measured.mutate_exit(mutation_doc(min_score=50)) == 0
    assert measured.mutate_exit(mutation_doc(errors=["a job died"])) == 1
    # a document of a farm before the store kept these: what its id and seconds say
    old = mutation_doc(mutate_id="m1")
    for key in ("git_commit", "selection", "min_score"):
        old.pop(key)
    m = measured.mutate_measure(old, tmp_path)
    assert m.git_commit is None and not m.subset and m.started_at and m.exit_code == 0


def test_only_the_mutants_a_person_looks_at_get_a_note():
    doc = mutation_doc()
    notes = {o["id"]: MutantNote.from_outcome(o) for o in doc["mutants"]}
    assert notes[STRONG] is None and notes[EQUIVALENT] is None
    assert all(notes[i] is not None for i in (SURVIVOR, UNREACHED, WEAK, POLICY))


# --------------------------------------------------------------------------- listed, trend


def test_measurements_are_listed_newest_first_by_tier_and_kind(store, tmp_path):
    ids = []
    for n, tier in enumerate(("smoke", "nightly", "smoke")):
        doc = mutation_doc(mutate_id=f"mutate-2026120{n + 1}-101500-1", tier=tier)
        store.add_measure(measured.mutate_measure(doc, tmp_path))
        ids.append(doc["mutate_id"])
    runs = coverage_runs(store, started="2026-12-05T10:00:00+00:00")
    store.add_measure(measured.coverage_measure(coverage_result(runs), tmp_path, store))
    cov = f"coverage-{runs['acl']}"
    assert [m.measure_id for m in store.measures()] == [cov, ids[2], ids[1], ids[0]]
    assert [m.measure_id for m in store.measures(tier="smoke", kind="mutate")] == [ids[2], ids[0]]
    assert [m.measure_id for m in store.measures(limit=1)] == [cov]
    assert all(m.mutants == () for m in store.measures())  # the listing reads no notes


def test_a_tiers_trend_is_its_whole_measurements_oldest_first_per_backend(store, tmp_path):
    def add(day: int, score: float, **over: Any) -> str:
        doc = mutation_doc(mutate_id=f"mutate-202612{day:02}-101500-1", **over)
        doc["summary"]["score"] = score
        store.add_measure(measured.mutate_measure(doc, tmp_path))
        return doc["mutate_id"]

    first, second = add(1, 0.5), add(3, 0.7)
    add(2, 0.9, k="910b")  # a subset: not the tier's figure
    add(4, 0.1, backend="native")
    fourth = add(5, 0.8)
    trend = store.measure_trend("mutate", "smoke", "acl")
    assert [m.measure_id for m in trend] == [first, second, fourth]
    assert [m.mutate["score"] for m in trend] == [0.5, 0.7, 0.8]
    assert [m.measure_id for m in store.measure_trend("mutate", "smoke", "acl", n=2)] == [
        second,
        fourth,
    ]
    assert len(store.measure_trend("mutate", "smoke")) == 4  # every backend
    assert store.measure_trend("coverage", "smoke") == []


# --------------------------------------------------------------------------- a command's end


def test_record_stores_it_and_names_the_tiers_previous(store_spec, tmp_path):
    first = mutation_doc(mutate_id="mutate-20261201-101500-1")
    measure, line = measured.record(
        lambda _: measured.mutate_measure(first, tmp_path), tmp_path, store_spec
    )
    assert measure is not None and line.startswith("stored in run store ")
    assert line.endswith("farm runs show mutate-20261201-101500-1")
    doc = mutation_doc(mutate_id="mutate-20261202-101500-1")
    measure, line = measured.record(
        lambda _: measured.mutate_measure(doc, tmp_path), tmp_path, store_spec
    )
    assert "the tier's previous: score 60.0%, strong 40.0% (mutate-20261201-101500-1)" in line
    with RunStore(store_spec, create=False) as store:
        assert [m.measure_id for m in store.measures()] == [doc["mutate_id"], first["mutate_id"]]


def test_a_store_that_cannot_be_written_is_one_line_and_the_files_stay(tmp_path):
    files = tmp_path / "mutate"
    files.mkdir()
    (files / "mutation.json").write_text(json.dumps(mutation_doc()))
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    spec = str(blocker / "farm.sqlite")  # its directory cannot be made: a file is there
    measure, line = measured.record(
        lambda _: measured.mutate_measure(mutation_doc(), files), files, spec
    )
    assert measure is None
    assert "\n" not in line and line.startswith("warning: this measurement is not in the run")
    assert str(blocker) in line and "directory" in line  # the store's own fix
    assert f"its files are in {files} (`farm runs import {files}` stores it then)" in line
    assert (files / "mutation.json").is_file()


def test_a_role_that_may_only_read_leaves_the_measurement_unstored_in_one_line(tmp_path):
    from tests.postgres import fresh_schema, reader_role

    with fresh_schema() as url:
        RunStore(url).close()
        with reader_role(url) as reader:
            measure, line = measured.record(
                lambda _: measured.mutate_measure(mutation_doc(), tmp_path), tmp_path, reader
            )
        assert measure is None and "\n" not in line
        assert "may only read" in line and "farm runs import" in line
        with RunStore(url, create=False) as store:
            assert store.measures() == []


def test_a_coverage_whose_runs_are_elsewhere_is_not_stored(store_spec, tmp_path):
    result = coverage_result({"acl": "r-gone", "native": "r-gone-too"})
    with pytest.raises(UsageError, match="r-gone, r-gone-too\\) are not in run store"):
        measured.store_measure(
            lambda store: measured.coverage_measure(result, tmp_path, store), store_spec
        )


# --------------------------------------------------------------------------- import, migrate


def test_import_takes_a_mutation_run_directory_or_a_coverage(store_spec, tmp_path):
    run_dir = tmp_path / "runs" / "mutate" / "mutate-20261207-101500-4242"
    run_dir.mkdir(parents=True)
    (run_dir / "mutation.json").write_text(json.dumps(mutation_doc()))
    measure, line = measured.import_measure(run_dir, store_spec)
    assert measure.measure_id == "mutate-20261207-101500-4242" and "farm runs show" in line
    with RunStore(store_spec) as store:
        runs = coverage_runs(store)
    coverage = tmp_path / runs["acl"] / "coverage"
    coverage.mkdir(parents=True)
    (coverage / "coverage.json").write_text(json.dumps(coverage_result(runs)))
    for given in (coverage.parent, coverage, coverage / "coverage.json"):
        measure, _ = measured.import_measure(given, store_spec)
        assert measure.measure_id == f"coverage-{runs['acl']}" and measure.run_dir == str(coverage)
    with RunStore(store_spec) as store:
        assert len(store.measures()) == 2
    with pytest.raises(UsageError, match="no mutation.json or coverage/coverage.json there"):
        measured.import_measure(tmp_path, store_spec)
    (run_dir / "mutation.json").write_text('{"tier": "smoke"}')
    with pytest.raises(UsageError, match="not what farm mutate writes"):
        measured.import_measure(run_dir, store_spec)


def test_a_v7_store_opens_with_no_measurement_and_takes_them(store_spec, tmp_path):
    from farm.results.store import migrate, store_location
    from farm.results.store.dialects import connect

    db = connect(store_location(store_spec))
    try:
        migrate(db, target=7)
    finally:
        db.close()
    with RunStore(store_spec) as store:
        assert schema_version(store.db) == SCHEMA_VERSION == 8
        assert store.measures() == []
        store.add_measure(measured.mutate_measure(mutation_doc(), tmp_path))
        assert len(store.measures()) == 1


def test_farm_store_migrate_copies_the_measurements(store_spec, tmp_path, capsys):
    source = tmp_path / "source.sqlite"
    with RunStore(source) as store:
        runs = coverage_runs(store)
        store.add_measure(measured.coverage_measure(coverage_result(runs), tmp_path, store))
        store.add_measure(measured.mutate_measure(mutation_doc(), tmp_path))
        want = [store.get_measure(m.measure_id) for m in store.measures()]
    target = store_spec if "://" in store_spec else str(tmp_path / "target.sqlite")
    assert store_command.main(["migrate", "--from", str(source), "--to", target]) == 0
    assert "measures 2, measure_mutants 4" in capsys.readouterr().out
    with RunStore(target, create=False) as store:
        assert [store.get_measure(m.measure_id) for m in store.measures()] == want


def test_a_prune_leaves_the_measurements(store, tmp_path):
    runs = coverage_runs(store, started="2020-01-01T10:00:00+00:00")
    store.add_measure(measured.coverage_measure(coverage_result(runs), tmp_path, store))
    store.add_measure(measured.mutate_measure(mutation_doc(), tmp_path))
    doomed, _ = store.prune(lambda listed: [r["run_id"] for r in listed])
    assert doomed  # one of the two runs at least (the newest finished one stays)
    assert len(store.measures()) == 2


def test_store_info_counts_the_measurements(tmp_path, capsys):
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        store.add_measure(measured.mutate_measure(mutation_doc(), tmp_path))
    assert store_command.main(["info", "--store", str(path)]) == 0
    assert "measures 1, measure_mutants 4" in capsys.readouterr().out


def test_a_measurement_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="measurement kind 'bench'"):
        Measure("x", "bench", "smoke", "2026-12-07T10:00:00+00:00", mutation_doc()["summary"])


def test_a_relative_run_directory_is_kept_whole(monkeypatch, tmp_path):
    """`farm runs` may be run from anywhere: --out runs/x is kept as the path it meant."""
    monkeypatch.chdir(tmp_path)
    assert measured.mutate_measure(mutation_doc(), "out/m").run_dir == str(tmp_path / "out/m")
