"""`farm cases import`: end to end through the farm's command line."""

from __future__ import annotations

import json

import pytest

from farm.cli import main
from suites import casefile

from . import SAMPLES, convert

RUNS = [
    ("msopst", ["logsoftmaxgrad_msopst.json"], 9, 16, 3, 9),
    ("atk", ["logsoftmaxgrad_atk.json"], 14, 24, 1, 9),
    ("ttk", ["logsoftmaxgrad_ttk.csv", "logsoftmaxgrad_ttk_aclnn.csv"], 16, 20, 4, 9),
    ("aclnn-ut", ["test_aclnn_log_softmax_backward.cpp"], 14, 11, 2, 11),
]


@pytest.mark.parametrize(("fmt", "files", "sources", "cases", "skipped", "noted"), RUNS)
@pytest.mark.parametrize("suffix", [".json", ".yaml", ".csv"])
def test_each_format_end_to_end(
    tmp_path, capsys, fmt, files, sources, cases, skipped, noted, suffix
):
    out = tmp_path / f"cases{suffix}"
    rc = main(
        ["cases", "import", "--format", fmt, *(str(SAMPLES / f) for f in files), "-o", str(out)]
    )
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    lines = printed.out.strip().splitlines()
    assert lines[-1] == (
        f"{sources} source cases → {cases} farm cases, {skipped} not imported, {noted} with notes"
    )
    assert lines[-2] == f"wrote {cases} farm cases to {out}"
    loaded = casefile.load(out)
    made = [c for f in files for c in convert(fmt, f).cases]
    assert [c.id for c in loaded] == [c.id for c in made]
    assert [c.note for c in loaded] == [c.note for c in made]
    assert sum(1 for line in lines if ": not imported: " in line) == skipped


@pytest.mark.parametrize(("fmt", "sample"), [("ttk", "logsoftmaxgrad_ttk.csv"),
                                             ("msopst", "logsoftmaxgrad_msopst.json")])  # fmt: skip
def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path, capsys, fmt, sample):
    """A spreadsheet's "CSV UTF-8" and some Windows editors start the file with one."""
    marked = tmp_path / sample
    marked.write_bytes(b"\xef\xbb\xbf" + (SAMPLES / sample).read_bytes())
    plain, with_mark = tmp_path / "plain.json", tmp_path / "marked.json"
    assert main(["cases", "import", "--format", fmt, str(SAMPLES / sample), "-o", str(plain)]) == 0
    assert main(["cases", "import", "--format", fmt, str(marked), "-o", str(with_mark)]) == 0
    capsys.readouterr()
    assert [c.id for c in casefile.load(with_mark)] == [c.id for c in casefile.load(plain)]


def test_a_source_name_is_printed_without_its_control_characters(tmp_path, capsys):
    """The source's own name, printed in the report, carried an escape sequence straight to the
    terminal (ESC [2J clears it); it is kept escaped, and its case imported as any other."""
    source = tmp_path / "suite.csv"
    text = (SAMPLES / "logsoftmaxgrad_ttk.csv").read_text()
    source.write_text(text.replace("LSG_fp32_001,", "LSG_fp32_001\x1b[2J,", 1))
    assert (
        main(["cases", "import", "--format", "ttk", str(source), "-o", str(tmp_path / "o.json")])
        == 0
    )
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "LSG_fp32_001\\x1b[2J" in out and "not imported: field 'name'" not in out
    origins = [c.origin for c in casefile.load(tmp_path / "o.json")]
    assert any(o.startswith("suite.csv:LSG_fp32_001\\x1b[2J;") for o in origins), origins


def test_the_report_says_per_source_case_what_was_not_expressed(capsys, tmp_path):
    out = tmp_path / "cases.json"
    main(["cases", "import", "--format", "msopst", str(SAMPLES / "logsoftmaxgrad_msopst.json"),
          "-o", str(out)])  # fmt: skip
    text = capsys.readouterr().out
    assert (
        "  Test_LogSoftmaxGrad_005_nz: not imported: grad format FRACTAL_NZ is a private layout "
        "the farm has no form for (it passes ND tensors)"
    ) in text
    assert "  Test_Add_007: not imported: op 'Add' is not LogSoftmaxGrad" in text
    assert (
        "  Test_LogSoftmaxGrad_002_bf16: note [ascend310b]: the source expects acceptance on "
        "ascend310b; the contract (SPEC section 2) rejects it (bf16_unsupported_on_soc): judged "
        "by the contract"
    ) in text
    document = json.loads(out.read_text())
    assert document["source"] == "imported from msopst: logsoftmaxgrad_msopst.json"


def test_names_are_printed_as_text_not_markup(tmp_path, capsys):
    source = tmp_path / "odd.json"
    case = {"case_name": "[bold]x[/bold]", "op": "Softmax", "input_desc": [], "output_desc": []}
    source.write_text(json.dumps([case]))
    rc = main(
        ["cases", "import", "--format", "msopst", str(source), "-o", str(tmp_path / "o.json")]
    )
    text = capsys.readouterr().out
    assert rc == 2  # every case listed, but nothing to run: nothing written, as for a bad file
    assert "[bold]x[/bold]: not imported: op 'Softmax' is not LogSoftmaxGrad" in text
    assert "no case could be imported" in text and not (tmp_path / "o.json").exists()
    assert text.strip().splitlines()[-1] == (
        "1 source cases → 0 farm cases, 1 not imported, 0 with notes"
    )


def test_a_farm_case_made_twice_is_kept_once_with_both_notes(tmp_path, capsys):
    desc = {"format": "ND", "type": "float16", "shape": [4, 4], "value_range": [[-1, 1]]}
    case = {
        "case_name": "A",
        "op": "LogSoftmaxGrad",
        "input_desc": [dict(desc, name="grad"), dict(desc, name="x")],
        "output_desc": [{"name": "y", "format": "ND", "type": "float16", "shape": [4, 4]}],
    }
    twin = dict(case, case_name="B", st_mode="pt_python_train", priority=1)
    source = tmp_path / "twins.json"
    source.write_text(json.dumps([case, twin]))
    out = tmp_path / "o.json"
    assert main(["cases", "import", "--format", "msopst", str(source), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "B: [ascend910b] the same farm case as A: kept once (notes joined)" in text
    loaded = casefile.load(out)
    assert len(loaded) == 2
    assert all(c.note == "field 'priority' not read" for c in loaded)
    # every source case is in the written file: the kept case's origin names both
    assert all(c.origin == "twins.json:A; twins.json:B" for c in loaded)


def test_a_case_made_by_two_files_keeps_both_origins(tmp_path, capsys):
    sample = SAMPLES / "logsoftmaxgrad_atk.json"
    again = tmp_path / "again.json"
    again.write_text(sample.read_text())
    out = tmp_path / "o.json"
    argv = ["cases", "import", "--format", "atk", str(sample), str(again), "-o", str(out)]
    assert main(argv) == 0
    first = next(c for c in casefile.load(out) if c.origin.startswith("logsoftmaxgrad_atk.json"))
    assert first.origin == "; ".join(
        f"{f}:LogSoftmaxBackward#{i}" for f in ("logsoftmaxgrad_atk.json", "again.json")
        for i in (0, 13)
    )  # fmt: skip


@pytest.mark.parametrize(
    ("fmt", "sample", "edit", "line"),
    [
        ("ttk", "logsoftmaxgrad_ttk_renamed.csv", None,
         "no 'input_shapes' column in the header ('input_shape' is there: renamed? name it "
         "'input_shapes'): TTK's kernel mode needs it for every case"),
        ("atk", "logsoftmaxgrad_atk.json", ('"inputs"', '"input_list"'),
         "no 'inputs' key in any case ('input_list' is there: renamed? name it 'inputs'): an ATK "
         "case lists its tensors and attributes in inputs"),
        ("msopst", "logsoftmaxgrad_msopst.json", ('"input_desc"', '"inputs_desc"'),
         "no 'input_desc' key in any case ('inputs_desc' is there: renamed? name it "
         "'input_desc'): an msopst case describes its tensors in input_desc and output_desc"),
    ],
)  # fmt: skip
def test_a_renamed_required_field_is_one_line_and_exit_2(tmp_path, capsys, fmt, sample, edit, line):
    source = SAMPLES / sample
    if edit is not None:
        source = tmp_path / sample
        source.write_text((SAMPLES / sample).read_text().replace(*edit))
    out = tmp_path / "o.json"
    assert main(["cases", "import", "--format", fmt, str(source), "-o", str(out)]) == 2
    printed = capsys.readouterr()
    assert printed.err.strip().splitlines() == [f"error: {source}: {line}"]
    assert printed.out == "" and not out.exists()


def test_a_truncated_ut_imports_its_whole_tests_and_lists_the_cut_one(tmp_path, capsys):
    out = tmp_path / "o.json"
    # The sample UT cut short inside its second test, as a copy broken off mid-write would be.
    lines = (SAMPLES / "test_aclnn_log_softmax_backward.cpp").read_text().splitlines(True)
    source = tmp_path / "test_aclnn_truncated.cpp"
    source.write_text("".join(lines[:40]) + lines[40].split("ValueRange")[0])
    assert main(["cases", "import", "--format", "aclnn-ut", str(source), "-o", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    cut = "l2_log_softmax_backward_test.case_002_float16_variables"
    assert (
        f"  {cut}: not imported: a bracket is never closed: the file ends inside it (cut short?)"
        in lines
    )
    assert lines[-1] == "2 source cases → 1 farm cases, 1 not imported, 1 with notes"
    # cut inside its first test: nothing to write, exit 2, the test listed in one line
    first = tmp_path / "first.cpp"
    first.write_text(source.read_text().split("ValueRange(-10, 0)")[0])
    assert main(["cases", "import", "--format", "aclnn-ut", str(first), "-o", str(out)]) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line for line in lines if ": not imported: " in line] == [
        "  l2_log_softmax_backward_test.case_001_float32: not imported: a bracket is never "
        "closed: the file ends inside it (cut short?)"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--format", "junit", "x.json", "-o", "o.json"],
         "error: unknown format 'junit' (use --format with one of: ttk, atk, msopst, aclnn-ut)"),
        (["x.json", "-o", "o.json"],
         "error: no --format given (use --format with one of: ttk, atk, msopst, aclnn-ut)"),
        (["--format", "atk", "-o", "o.json"],
         "error: no FILE given (name the atk case files to import)"),
        (["--format", "atk", "{samples}/logsoftmaxgrad_atk.json"],
         "error: no -o FILE given (the case file to write: .json, .yaml or .csv)"),
        (["--format", "atk", "{samples}/nothere.json", "-o", "{tmp}/o.json"],
         "error: {samples}/nothere.json: no such file (check the path)"),
        (["--format", "msopst", "{samples}/logsoftmaxgrad_ttk.csv", "-o", "{tmp}/o.json"],
         "error: {samples}/logsoftmaxgrad_ttk.csv: line 1: not JSON (Expecting value): give an "
         "msopst case file (a JSON list of cases with case_name, op, input_desc, output_desc)"),
        (["--format", "atk", "{samples}/logsoftmaxgrad_ttk.csv", "-o", "{tmp}/o.json"],
         "error: {samples}/logsoftmaxgrad_ttk.csv: line 1: not JSON (Expecting value): give an "
         'ATK case file (a JSON list of cases, or {"cases": [...]})'),
        (["--format", "ttk", "{samples}/logsoftmaxgrad_atk.json", "-o", "{tmp}/o.json"],
         "error: {samples}/logsoftmaxgrad_atk.json: not a TTK case CSV: the header has neither "
         "op_name (kernel mode) nor api_name (ACLNN mode); the first row must name the columns"),
        (["--format", "aclnn-ut", "{samples}/logsoftmaxgrad_atk.json", "-o", "{tmp}/o.json"],
         "error: {samples}/logsoftmaxgrad_atk.json: no TEST_F or TEST in it: give an aclnn UT "
         "source (gtest, OP_API_UT of aclnnLogSoftmaxBackward)"),
        (["--format", "atk", "{samples}/logsoftmaxgrad_atk.json", "-o", "{tmp}/o.txt"],
         "error: {tmp}/o.txt: unknown case file format '.txt' (use .json, .yaml, .yml or .csv; "
         "to convert an outside suite's file, `farm cases import`)"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    def fill(text: str) -> str:
        return text.replace("{samples}", str(SAMPLES)).replace("{tmp}", str(tmp_path))

    rc = main(["cases", "import", *map(fill, argv)])
    printed = capsys.readouterr()
    assert rc == 2
    assert printed.err.strip().splitlines() == [fill(message)]
    assert printed.out == ""
    assert list(tmp_path.iterdir()) == []


def test_the_output_is_never_a_file_being_imported(tmp_path, capsys):
    source = tmp_path / "suite.csv"
    source.write_bytes((SAMPLES / "logsoftmaxgrad_ttk.csv").read_bytes())
    (tmp_path / "cases").mkdir()
    same = tmp_path / "cases" / ".." / "suite.csv"  # however the path is written
    assert main(["cases", "import", "--format", "ttk", str(source), "-o", str(same)]) == 2
    assert capsys.readouterr().err == (
        f"error: {same}: -o names a file being imported; writing there would replace the source "
        "suite's cases (write the case file to another path)\n"
    )
    assert source.read_bytes() == (SAMPLES / "logsoftmaxgrad_ttk.csv").read_bytes()


def test_a_bad_file_among_good_ones_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "o.json"
    rc = main(["cases", "import", "--format", "msopst",
               str(SAMPLES / "logsoftmaxgrad_msopst.json"), str(bad), "-o", str(out)])  # fmt: skip
    assert rc == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {bad}: line 1: not JSON (Expecting property name enclosed in double quotes): "
        "give an msopst case file (a JSON list of cases with case_name, op, input_desc, "
        "output_desc)"
    ]
    assert not out.exists()
