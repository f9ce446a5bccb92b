"""Regression comparison on synthetic runs: exactly the regressed cases are named."""

from __future__ import annotations

import json
import re

import pytest

from farm.results import commands
from farm.results import compare as cmp
from farm.results import compare_render as render
from farm.results.store import RunStore
from farm.util.errors import StoreError, UsageError

from .conftest import RUN_META, failed, record, rejected_ok

F16_T = 2.0**-10
F32_T = 2.0**-13


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "farm.sqlite") as s:
        yield s


def _run(store, recs, started, exit_code=0, tier="smoke"):
    run_id = store.begin_run({**RUN_META, "tier": tier, "started_at": started})
    store.add_results(run_id, recs)
    store.finish_run(run_id, exit_code)
    return run_id


def _baseline_and_run(store):
    base = [
        record("keep"),
        record("newfail"),
        failed("fixed"),
        failed("still"),
        record("gone"),
        record("brk"),
        # float16, MERE 1e-4 -> 3e-4: ratio 3 > 1.5 and 3e-4 > T/16 (6.1e-5): drift
        record("drift16", dtype="float16", metrics={"mere": 1e-4, "mare": 5e-4}),
        # float32, MERE 1e-8 -> 1e-6: ratio 100 but 1e-6 < T/16 (7.6e-6): noise, no drift
        record("noise32", metrics={"mere": 1e-8}),
        # float32, max_abs 1e-5 -> 1.4e-5: above the floor but ratio 1.4 < 1.5: no drift
        record("small32", metrics={"max_abs": 1e-5}),
        # float32 MARE 0 -> 1e-4: infinite ratio, above floor: drift
        record("zero32", metrics={"mare": 0.0}),
        rejected_ok("rej"),
    ]
    run = [
        record("keep"),
        failed("newfail", category="unexpected_acceptance"),
        record("fixed"),
        failed("still"),
        record("brk", outcome="broken", category="infrastructure", metrics=None),
        record("drift16", dtype="float16", metrics={"mere": 3e-4, "mare": 5e-4}),
        record("noise32", metrics={"mere": 1e-6}),
        record("small32", metrics={"max_abs": 1.4e-5}),
        record("zero32", metrics={"mare": 1e-4}),
        rejected_ok("rej"),
        record("added"),
    ]
    b = _run(store, base, "2026-11-01T10:00:00+00:00", exit_code=1)
    r = _run(store, run, "2026-11-02T10:00:00+00:00", exit_code=1)
    return b, r


def test_compare_names_exactly_the_regressed_cases(store):
    b, r = _baseline_and_run(store)
    c = cmp.compare(store, r, b)
    assert c.baseline_id == b and c.run_id == r
    assert [x.case_id for x in c.new_failures] == ["newfail"]
    assert c.new_failures[0].category == "unexpected_acceptance"
    assert [x.case_id for x in c.fixed] == ["fixed"]
    assert [x.case_id for x in c.still_failing] == ["still"]
    assert [x.case_id for x in c.new_broken] == ["brk"]
    assert [(d.case_id, d.metric) for d in c.drift] == [("drift16", "mere"), ("zero32", "mare")]
    d16 = c.drift[0]
    assert d16.ratio == pytest.approx(3.0) and d16.floor == pytest.approx(F16_T / 16)
    assert c.drift[1].ratio == float("inf")
    assert c.missing_in_run == ["gone"] and c.missing_in_baseline == ["added"]
    assert c.has_regressions
    assert c.regressed_cases == ["drift16", "gone", "newfail", "zero32"]


def test_drift_factor_and_floor_are_configurable(store):
    b, r = _baseline_and_run(store)
    c = cmp.compare(store, r, b, drift_factor=1.3)  # now 1.4x is drift too
    assert ("small32", "max_abs") in {(d.case_id, d.metric) for d in c.drift}
    c = cmp.compare(store, r, b, noise_floor={"float32": {"mere": 1e-7}})
    assert ("noise32", "mere") in {(d.case_id, d.metric) for d in c.drift}
    c = cmp.compare(store, r, b, noise_floor=1.0)  # a floor above everything: no drift at all
    assert c.drift == []
    c = cmp.compare(store, r, b, drift_factor=4.0)
    assert [(d.case_id, d.metric) for d in c.drift] == [("zero32", "mare")]


def test_strict_counts_broken_cases(store):
    b, r = _baseline_and_run(store)
    c = cmp.compare(store, r, b, strict=True)
    assert "brk" in c.regressed_cases


def test_identical_runs_have_no_regressions(store):
    recs = [record("a"), failed("b"), rejected_ok("c")]
    b = _run(store, recs, "2026-11-01T10:00:00+00:00", exit_code=1)
    r = _run(store, recs, "2026-11-02T10:00:00+00:00", exit_code=1)
    c = cmp.compare(store, r, b)
    assert not c.has_regressions and c.regressed_cases == []
    assert [x.case_id for x in c.still_failing] == ["b"]


def test_default_baseline_is_last_green_and_none_without_one(store):
    g = _run(store, [record("a"), record("b")], "2026-11-01T10:00:00+00:00")
    r = _run(store, [record("a"), failed("b")], "2026-11-02T10:00:00+00:00", exit_code=1)
    c = cmp.compare(store, r)
    assert c.baseline_id == g and [x.case_id for x in c.new_failures] == ["b"]
    c = cmp.compare(store, g)  # the first green run has nothing before it
    assert c.baseline_id is None and not c.has_regressions
    assert c.per_dtype[0].n == 2


def test_per_dtype_summaries(store):
    recs = [
        record("a", metrics={"mere": 1e-7, "mare": 1e-6}),
        record("b", metrics={"mere": 3e-7, "mare": 4e-6}),
        failed("c", metrics={"mere": 2e-6, "mare": 2e-3}),
        record("d", dtype="float16", metrics={"mere": 2e-4, "mare": 1e-3}),
        record(
            "e",
            dtype="float16",
            family="ascend310b",
            outcome="broken",
            category="infrastructure",
            metrics=None,
        ),
        rejected_ok("f", dtype="bfloat16", family="ascend310b"),
    ]
    r = _run(store, recs, "2026-11-02T10:00:00+00:00", exit_code=1)
    c = cmp.compare(store, r)
    by = {(s.family, s.dtype): s for s in c.per_dtype}
    assert set(by) == {
        ("ascend910b", "float32"),
        ("ascend910b", "float16"),
        ("ascend310b", "float16"),
        ("ascend310b", "bfloat16"),
    }
    f32 = by[("ascend910b", "float32")]
    assert (f32.n, f32.passed, f32.failed, f32.broken) == (3, 2, 1, 0)
    assert f32.pass_rate == pytest.approx(2 / 3)
    assert f32.mere_median == pytest.approx(3e-7) and f32.mere_max == pytest.approx(2e-6)
    assert f32.mare_median == pytest.approx(4e-6) and f32.mare_max == pytest.approx(2e-3)
    e = by[("ascend310b", "float16")]
    assert (e.n, e.broken, e.pass_rate, e.mere_median) == (1, 1, 0.0, None)
    assert by[("ascend310b", "bfloat16")].pass_rate == 1.0


def test_the_reports_comparison_fits_its_frame(store):
    """The report shows the comparison in a frame as wide as its overview: a case id without
    a space ran the table past the frame's right edge, cut there. The table fits the width and
    its cells wrap anywhere."""
    b, r = _baseline_and_run(store)
    page = render.to_html(cmp.compare(store, r, b))
    style = page[page.index("<style>") : page.index("</style>")]
    assert "table{border-collapse:collapse;margin-bottom:16px;max-width:100%}" in style
    assert "overflow-wrap:anywhere" in style.split("td,th{")[1].split("}")[0]


def test_renderings_name_the_regressions(store):
    b, r = _baseline_and_run(store)
    c = cmp.compare(store, r, b)
    text = render.to_text(c)
    assert "REGRESSIONS" in text and "newfail" in text and "drift16" in text
    md = render.to_markdown(c)
    assert "### New failures (1)" in md and "| newfail |" in md
    html = render.to_html(c)
    assert "<td>newfail</td>" in html and "REGRESSIONS" in html
    data = json.loads(c.to_json())
    assert data["has_regressions"] and data["regressed_cases"] == c.regressed_cases
    assert data["drift"][1]["ratio"] == float("inf") or data["drift"][1]["ratio"] > 1e300
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    render.render_rich(c, Console(file=buf, width=160, force_terminal=False))
    assert "newfail" in buf.getvalue() and "Per family and dtype" in buf.getvalue()


def test_cli_commands(store, tmp_path, capsys):
    b, r = _baseline_and_run(store)
    path = str(store.path)
    assert commands.main_runs(["--store", path]) == 0
    out = capsys.readouterr().out
    assert b in out and r in out
    assert commands.main_runs(["--store", path, "--json"]) == 0
    assert {x["run_id"] for x in json.loads(capsys.readouterr().out)} == {b, r}

    # The baseline run was red, so without an explicit baseline there is none.
    assert commands.main_compare(["--store", path, "--format", "text"]) == 0
    assert "no baseline" in capsys.readouterr().out
    with pytest.raises(UsageError, match="it exited 1 .* --force"):  # red: no baseline
        commands.main_baseline(["--store", path, "set", b])
    assert commands.main_baseline(["--store", path, "set", b, "--force"]) == 0
    assert commands.main_baseline(["--store", path, "show"]) == 0
    assert f"smoke: {b} (explicit)" in capsys.readouterr().out
    assert commands.main_compare(["--store", path, "--format", "text"]) == 1  # latest run vs b
    assert "newfail" in capsys.readouterr().out
    out_file = tmp_path / "cmp.json"
    assert (
        commands.main_compare(
            ["--store", path, r, "--baseline", b, "--format", "json", "-o", str(out_file)]
        )
        == 1
    )
    assert json.loads(out_file.read_text())["regressed_cases"] == [
        "drift16",
        "gone",
        "newfail",
        "zero32",
    ]
    capsys.readouterr()
    assert (
        commands.main_compare(
            [
                "--store",
                path,
                r,
                "--baseline",
                b,
                "--drift-factor",
                "2",
                "--noise-floor",
                "float32:mare=1",
                "--format",
                "json",
            ]
        )
        == 1
    )
    data = json.loads(capsys.readouterr().out)
    assert [d["case_id"] for d in data["drift"]] == ["drift16"]  # zero32 now under its floor
    assert data["drift_factor"] == 2.0
    assert commands.main_compare(["--store", path, b, "--baseline", b, "--format", "text"]) == 0
    for unknown in (["nope"], [r, "--baseline", "nope"]):
        with pytest.raises(UsageError, match="unknown (baseline )?run 'nope' in the store"):
            commands.main_compare(["--store", path, *unknown])
    with pytest.raises(UsageError, match="unknown run 'nope' in the store .*`farm runs` lists"):
        commands.main_baseline(["--store", path, "set", "nope"])
    assert commands.main_baseline(["--store", path, "clear", "--tier", "smoke"]) == 0
    assert commands.main_compare(["--store", path]) == 0  # rich output path, no baseline again


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (["--noise-floor", "abc"], "--noise-floor abc: 'abc' is not a number >= 0"),
        (["--noise-floor", "float32:nope=1"], "--noise-floor float32:nope=1: unknown metric"),
        (["--noise-floor", "floa16=1"], "--noise-floor floa16=1: unknown dtype 'floa16'"),
        (["--noise-floor", "float16=nan"], "--noise-floor float16=nan: 'nan' is not a number"),
        (["--noise-floor", "float16=-1"], "--noise-floor float16=-1: '-1' is not a number"),
    ],
)
def test_a_bad_floor_is_a_usage_error_naming_it(store, bad, message):
    b, r = _baseline_and_run(store)
    with pytest.raises(UsageError, match=re.escape(message)):
        commands.main_compare(["--store", str(store.path), r, "--baseline", b, *bad])


@pytest.mark.parametrize("factor", ["0", "-2", "nan", "inf", "x"])
def test_a_drift_factor_not_above_zero_is_refused_by_name(store, capsys, factor):
    """NaN was taken: no comparison with it is ever true, so no case ever drifted."""
    b, r = _baseline_and_run(store)
    with pytest.raises(UsageError, match=f"argument --drift-factor: '{factor}' is not a factor"):
        commands.main_compare(["--store", str(store.path), r, "--baseline", b,
                               "--drift-factor", factor])  # fmt: skip


def test_a_bare_floor_is_every_dtypes_wherever_it_is_given():
    later = commands._parse_floor(["float16=1e-3", "float16:mere=2", "0.5"])
    first = commands._parse_floor(["0.5", "float16=1e-3", "float16:mere=2"])
    assert later == first
    assert later is not None  # floors were given
    assert later["float16"] == {"mere": 2.0, "mare": 1e-3, "rmse": 1e-3, "max_abs": 1e-3}
    assert later["float32"] == later["*"] == dict.fromkeys(later["float32"], 0.5)


def test_the_comparison_is_pure_logic():
    """compare.py holds the comparison only: no renderer, no command line, no terminal."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(cmp.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert not imported & {"argparse", "html", "rich", "sys"}, imported
    assert not imported & {"farm.results.compare_render", "farm.results.commands"}
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert not names & {"to_text", "to_html", "to_markdown", "render_rich", "plain_table"}
    assert not {n for n in names if n.startswith("main")}


def test_compare_on_empty_store(tmp_path, capsys):
    RunStore(tmp_path / "empty.sqlite").close()
    assert commands.main_compare(["--store", str(tmp_path / "empty.sqlite")]) == 2
    assert commands.main_runs(["--store", str(tmp_path / "empty.sqlite")]) == 0
    # A store that does not exist is a mistake (a typo), not a new empty store.
    with pytest.raises(StoreError, match="no run store"):
        commands.main_runs(["--store", str(tmp_path / "typo.sqlite")])
    assert not (tmp_path / "typo.sqlite").exists()


def test_compare_rows_accepts_full_records():
    base = [record("a", metrics={"mere": 1e-4}, dtype="float16"), record("b")]
    run = [record("a", metrics={"mere": 5e-4}, dtype="float16"), failed("b")]
    c = cmp.compare_rows(run, base, run_id="r", baseline_id="b0")
    assert [(d.case_id, d.metric) for d in c.drift] == [("a", "mere")]
    assert [x.case_id for x in c.new_failures] == ["b"]
    assert cmp.compare_rows(run, None).baseline_id is None


def _suite_run(store, recs, started, tier, label, explore=None):
    selection = {"tier": None, "files": [], "explore": explore}
    meta = {**RUN_META, "tier": tier, "label": label, "selection": selection}
    run_id = store.begin_run({**meta, "started_at": started})
    store.add_results(run_id, recs)
    store.finish_run(run_id, 0)
    return run_id


def test_runs_of_different_case_files_say_so_and_do_not_count_the_others_cases(store, capsys):
    """The issue: two case files' runs, 198 cases "missing" and a regression, without a word
    that the suites differ."""
    shared = [record("both"), record("both-drift", dtype="float16", metrics={"mere": 1e-4})]
    b = _suite_run(
        store,
        [*shared, *(record(f"only-a-{i}") for i in range(198))],
        "2026-11-01T10:00:00+00:00",
        "cases:a",
        "cases from a.json",
    )
    r = _suite_run(
        store,
        [
            record("both"),
            record("both-drift", dtype="float16", metrics={"mere": 3e-4}),
            record("only-b"),
        ],  # fmt: skip
        "2026-11-02T10:00:00+00:00",
        "cases:b",
        "cases from b.json",
    )
    c = cmp.compare(store, r, b)
    run_suite, baseline_suite = c.run_suite, c.baseline_suite
    assert run_suite is not None and baseline_suite is not None  # both runs name their suite
    assert c.suites_differ and run_suite.key == "cases:b" and baseline_suite.key == "cases:a"
    assert c.missing_in_run == [] and c.missing_in_baseline == []
    assert c.not_in_both_suites == sorted([f"only-a-{i}" for i in range(198)] + ["only-b"])
    assert c.regressed_cases == ["both-drift"]  # the cases both ran are still compared
    line = (
        "the runs are of different suites (cases from b.json vs cases from a.json): 199 cases "
        "are only in one of them"
    )
    text = render.to_text(c)
    assert text.splitlines()[0] == line
    assert "0 missing;" in text.splitlines()[1] and "199 not in both suites" in text
    assert "Not in both suites, not compared (199)" in text
    assert f"<p id='suites' style='font-weight:bold'>{line}</p>" in render.to_html(c)
    assert f"**{line}**" in render.to_markdown(c)
    assert json.loads(c.to_json())["suites_differ"] is True

    path = str(store.path)
    both_green = [record("both"), record("only-a")]
    a2 = _suite_run(store, both_green, "2026-11-03T10:00:00+00:00", "cases:a", "cases from a.json")
    b2 = _suite_run(store, [record("both")], "2026-11-04T10:00:00+00:00", "cases:b", "b")
    capsys.readouterr()
    assert commands.main_compare(["--store", path, b2, "--baseline", a2, "--format", "text"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "the runs are of different suites (b vs cases from a.json): 1 cases are only in one of them"
    )


def test_runs_of_one_suite_still_count_a_missing_case(store):
    b = _suite_run(store, [record("x"), record("y")], "2026-11-01T10:00:00+00:00", "nightly", "n")
    r = _suite_run(store, [record("x")], "2026-11-02T10:00:00+00:00", "nightly", "n")
    c = cmp.compare(store, r, b)
    assert not c.suites_differ and c.missing_in_run == ["y"] and c.regressed_cases == ["y"]
    assert render.suites_line(c) == "" and render.to_text(c).startswith(f"run {r} vs baseline")


def test_cases_explored_from_another_salt_are_not_in_both_suites(store):
    explored_a = "910b_f32_2x3_d-1_y.uniform_dy.normal_x.2026-12-01.0"
    explored_b = "910b_f32_4x5_d-1_y.uniform_dy.normal_x.2026-12-02.0"
    b = _suite_run(
        store,
        [record("tier-case"), record("gone"), record(explored_a)],
        "2026-11-01T10:00:00+00:00",
        "nightly",
        "tier nightly + 300 explored (salt 2026-12-01)",
        explore="2026-12-01",
    )
    r = _suite_run(
        store,
        [record("tier-case"), record(explored_b)],
        "2026-11-02T10:00:00+00:00",
        "nightly",
        "tier nightly + 300 explored (salt 2026-12-02)",
        explore="2026-12-02",
    )
    c = cmp.compare(store, r, b)
    assert c.suites_differ
    assert c.not_in_both_suites == sorted([explored_a, explored_b])
    assert c.missing_in_run == ["gone"] and c.regressed_cases == ["gone"]  # a tier case is missed


@pytest.mark.parametrize(
    ("main", "argv", "message"),
    [
        (
            "main_runs",
            ["--limit", "-2"],
            "argument --limit: '-2' is not a whole number (1 or more)",
        ),
        (
            "main_compare",
            ["--limit", "-1"],
            "argument --limit: '-1' is not a whole number (0 or more)",
        ),
    ],
)
def test_a_negative_limit_is_refused_not_taken_for_none(store, capsys, main, argv, message):
    """SQL takes LIMIT -2 for no limit: `farm runs --limit -2` listed every run."""
    with pytest.raises(UsageError, match=re.escape(message)):
        getattr(commands, main)(["--store", str(store.path), *argv])


def test_an_output_that_cannot_be_written_is_one_line(store, tmp_path):
    """It was a traceback ending in IsADirectoryError."""
    b, r = _baseline_and_run(store)
    with pytest.raises(UsageError, match=rf"-o {tmp_path}: cannot write it \(Is a directory\)"):
        commands.main_compare(
            [
                "--store",
                str(store.path),
                r,
                "--baseline",
                b,
                "--format",
                "json",
                "-o",
                str(tmp_path),
            ]
        )
