"""Case files: what `farm cases --json` writes reads back as the same cases in every format, and a
bad file is refused whole, one line per bad field, before anything runs."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import replace

import pytest

from golden.layouts import View
from golden.tolerance import Tolerance
from suites import casefile, casefile_parse, matrix
from suites.case import Case
from suites.casefile import CaseFileError

SMOKE = matrix.expand("smoke")


def _same(a: list[Case], b: list[Case]) -> None:
    """The same cases, field for field."""
    assert [c.id for c in a] == [c.id for c in b]

    def fields(c: Case) -> dict:
        return {k: v for k, v in c.to_dict().items() if k != "origin"}

    assert [fields(c) for c in a] == [fields(c) for c in b]


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".csv"])
def test_every_smoke_case_round_trips(tmp_path, suffix):
    path = casefile.dump(SMOKE, tmp_path / f"smoke{suffix}", source="tier smoke")
    back = casefile.load(path)
    _same(back, SMOKE)
    assert [c.origin for c in back] == [c.origin for c in SMOKE]  # the sections they came from


def test_a_bare_list_is_version_one(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps([c.to_dict() for c in SMOKE[:5]]))
    _same(casefile.load(path), SMOKE[:5])


def test_entries_need_only_dtype_shape_axes_and_expand_over_families(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        "  - {dtype: float16, shape: [4, 300], axes: -1}\n"
        "  - {family: Ascend910B3, dtype: float32, shape: [2, 3, 5], axes: [1, 2]}\n"
        "  - {family: [310b, ascend910b], dtype: float32, shape: [], axes: 0}\n"
    )
    cases = casefile.load(path)
    assert [(c.family, c.api, c.shape, c.axes) for c in cases] == [
        ("ascend910b", "dim", (4, 300), (-1,)),
        ("ascend310b", "dim", (4, 300), (-1,)),
        ("ascend910b", "axes", (2, 3, 5), (1, 2)),
        ("ascend310b", "dim", (), (0,)),
        ("ascend910b", "dim", (), (0,)),
    ]


def test_what_outside_suites_need(tmp_path):
    entry = {
        "family": "910b",
        "dtype": "float16",
        "shape": [3, 5, 7],
        "axes": [1, 2],
        "y_dist": "range",
        "y_range": [-1000, 1000],
        "dy_dist": "fill",
        "dy_fill": "-inf",
        "dy_layout": {"strides": [70, 14, 2], "storage": 220, "offset": 1},
        "tolerance": {"rtol": 0.001, "atol": 1e-5},
        "name": "from-a-model",
    }
    path = tmp_path / "outside.json"
    path.write_text(json.dumps({"format": casefile.FORMAT, "version": 1, "cases": [entry]}))
    (case,) = casefile.load(path)
    assert case.y_range == (-1000.0, 1000.0) and case.dy_fill == -math.inf
    assert case.dy_layout == View((70, 14, 2), 220, 1)
    assert case.tolerance == Tolerance(0.001, 1e-5, 0.0)
    assert case.expectation()["tolerance"] == {
        "rtol": 0.001,
        "atol": 1e-5,
        "max_fail_fraction": 0.0,
    }
    assert "tol.r0.001.a1e-05.f0" in case.id
    assert case.origin == "outside.json:from-a-model"


def test_descriptor_only_dtypes_are_rejection_cases():
    case = Case("ascend910b", "complex64", (2, 8), (1,))
    assert not case.accepted and case.expected.reason == "dtype_unsupported"
    mixed = Case("ascend910b", "float32", (2, 8), (1,), out_dtype="complex128")
    assert mixed.expected.reason == "dtype_mismatch" and "odt.c128" in mixed.id


def test_a_source_expectation_that_departs_from_the_contract_is_noted(tmp_path):
    path = tmp_path / "outside.yaml"
    path.write_text(
        "- {dtype: bfloat16, shape: [4, 16], axes: 1, expect: accept}\n"
        "- {dtype: float32, shape: [4, 16], axes: 1, y_shape: [4, 17], "
        "expect: {Ascend910B4: accept, ascend310b: reject}}\n"
    )
    bf910, bf310, mis910, mis310 = casefile.load(path)
    assert bf910.note == "" and bf910.accepted
    assert not bf310.accepted and bf310.expected.reason == "bf16_unsupported_on_soc"
    assert "expects acceptance on ascend310b" in bf310.note
    assert "rejects it (bf16_unsupported_on_soc)" in bf310.note
    assert "expects acceptance on ascend910b" in mis910.note
    assert mis310.note == ""  # the source expects the rejection the contract makes
    assert bf310.to_dict()["note"] == bf310.note


def test_csv_shorthand_and_comments(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text(
        "# my model's shapes\n"
        "family,dtype,shape,axes,y_dist,y_range,tolerance\n"
        'ascend910b,float16,8x4096,-1,range,"[-5, 5]","{""rtol"": 0.001}"\n'
        "\n"
        "910b,float32,scalar,0,,,\n"
    )
    first, second = casefile.load(path)
    assert first.shape == (8, 4096) and first.y_range == (-5.0, 5.0)
    assert first.tolerance == Tolerance(rtol=0.001)
    assert second.shape == () and second.y_dist == "uniform"


def _problems(tmp_path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CaseFileError) as err:
        casefile.load(path)
    lines = str(err.value).splitlines()
    assert all(line.startswith(str(path)) for line in lines), lines
    return lines


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])  # Unix, Windows, old Mac
def test_a_json_files_lines_are_counted_whatever_its_line_ends(tmp_path, line_end):
    """The file is read as bytes within the size limit and its line ends made a text file's:
    a JSON file of old Mac line ends said every bad entry was on line 1."""
    text = (
        '{"format": "logsoftmaxgrad-cases", "version": 1, "cases": [\n'
        ' {"dtype": "float16", "shape": [2, 3], "axes": 1},\n'
        ' {"dtype": "float16", "shap": [2, 3], "axes": 1}\n'
        "]}\n"
    )
    path = tmp_path / "ends.json"
    path.write_bytes(text.replace("\n", line_end).encode())
    with pytest.raises(CaseFileError, match=r"ends.json: case 1 \(line 3\): unknown field 'shap'"):
        casefile.load(path)


def test_each_bad_field_is_one_line_naming_file_entry_field_and_fix(tmp_path):
    lines = _problems(
        tmp_path,
        "bad.yaml",
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        "  - {dtype: float16, shap: [2, 3], axes: 1}\n"  # unknown field (line 4)
        "  - {dtype: float16, shape: '2x3', axes: 1}\n"  # wrong type
        "  - dtype: float32\n"  # shape/stride mismatch, and a bad tolerance
        "    shape: [2, 3]\n"
        "    axes: 1\n"
        "    dy_layout: {strides: [1, 2], storage: 4}\n"
        "    tolerance: {rtol: -1}\n"
        "  - {dtype: float32, shape: [2, 3], axes: 1}\n",  # fine, and still not run
    )
    assert lines == [
        f"{tmp_path}/bad.yaml: case 0 (line 4): unknown field 'shap' (did you mean 'shape'?)",
        f"{tmp_path}/bad.yaml: case 0 (line 4): field 'shape' is missing (every case needs "
        "dtype, shape, axes)",
        f"{tmp_path}/bad.yaml: case 1 (line 5): field 'shape': '2x3' is not a list of integers",
        f"{tmp_path}/bad.yaml: case 2 (line 6): tolerance.rtol -1 (use a finite number >= 0)",
        f"{tmp_path}/bad.yaml: case 2 (line 6): dy_layout st1.2.sz4: the view reaches element 5 "
        "of a storage of 4 elements (strides [1, 2], offset 0, shape [2, 3])",
    ]


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("cases.txt", "x", "unknown case file format '.txt' (use .json, .yaml, .yml or .csv"),
        ("bad.json", "[{", "line 1: not JSON"),
        ("bad.yaml", "cases: [", "not YAML"),
        ("new.json", '{"format": "logsoftmaxgrad-cases", "version": 2, "cases": []}', "upgrade"),
        ("other.json", '{"format": "msopst", "version": 1, "cases": []}', "format 'msopst'"),
        ("empty.json", "[]", "no cases in it"),
        ("scalar.json", "3", "expected a list of cases"),
        ("bad.csv", "dtype,shap,axes\n", "column 'shap': unknown field 'shap'"),
        ("extra.csv", "dtype,shape,axes\nfloat32,2x3,1,oops\n", "beyond the header"),
        (
            "family.json",
            '[{"family": "Ascend999", "dtype": "float32", "shape": [2], "axes": 0}]',
            "field 'family': 'Ascend999' is not a family or SoC",
        ),
        (
            "id.json",
            '[{"family": "910b", "dtype": "float32", "shape": [2], "axes": 0, "id": "x"}]',
            "id 'x' does not match its fields",
        ),
        (
            "expect.json",
            '[{"dtype": "float32", "shape": [2], "axes": 0, "expect": "reject:nope"}]',
            "reason 'nope' is unknown",
        ),
        (
            "dist.json",
            '[{"dtype": "float32", "shape": [2], "axes": 0, "y_dist": "range"}]',
            "y_range None with y_dist 'range'",
        ),
    ],
)
def test_unreadable_files_are_one_clear_line(tmp_path, name, text, expected):
    lines = _problems(tmp_path, name, text)
    assert any(expected in line for line in lines), lines


def test_a_missing_file_names_its_path(tmp_path):
    with pytest.raises(CaseFileError, match="no such case file"):
        casefile.load(tmp_path / "nope.json")


def test_several_files_are_checked_whole_and_a_case_is_kept_once(tmp_path):
    a = casefile.dump(SMOKE[:3], tmp_path / "a.json")
    b = casefile.dump(SMOKE[2:5], tmp_path / "b.yaml")
    _same(casefile.load_many([a, b]), SMOKE[:5])
    bad = tmp_path / "c.json"
    bad.write_text('[{"dtype": "float32"}]')
    with pytest.raises(CaseFileError) as err:
        casefile.load_many([a, bad, tmp_path / "gone.csv"])
    text = str(err.value)
    assert "c.json: case 0" in text and "gone.csv: no such case file" in text


def test_a_scalar_perturbation_is_a_shape_mismatch():
    # () is a shape of its own, not "the same as dy" (an imported UT with a 0-d y, say).
    for case, key in (
        (Case("ascend910b", "float32", (2, 3), (-1,), y_shape=()), "y_shape"),
        (Case("ascend910b", "float32", (2, 3), (-1,), out_shape=()), "out_shape"),
    ):
        assert case.expected.reason == "shape_mismatch", key


def test_the_same_case_twice_in_one_file_is_kept_once(tmp_path):
    path = casefile.dump([SMOKE[0], SMOKE[1], SMOKE[0]], tmp_path / "twice.json")
    assert [c.id for c in casefile.load(path)] == [SMOKE[0].id, SMOKE[1].id]


def test_the_same_case_saying_something_else_is_refused_not_dropped(tmp_path):
    """Kept once, the second entry's note (or expectation) was lost without a word: most often
    a copied entry whose edit was forgotten."""
    lines = _problems(
        tmp_path,
        "copied.yaml",
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        "  - {dtype: float32, shape: [4, 64], axes: -1, note: the first}\n"
        "  - {family: 910b, dtype: float32, shape: [4, 64], axes: -1}\n"  # the same: kept once
        "  - {dtype: float32, shape: [4, 64], axes: -1, note: 'meant for [8, 64]'}\n",
    )
    assert lines == [
        f"{tmp_path}/copied.yaml: case 2 (line 6): the same case as case 0 "
        "(910b_f32_4x64_d-1_y.uniform_dy.normal) with another note: one entry of it would be "
        "lost; merge them, or change the field that was meant to differ",
    ]


# Text a spreadsheet evaluates when a cell starts with it (OWASP, "CSV Injection").
FORMULAS = [
    '=HYPERLINK("http://x","y")',
    "@SUM(A1:A9)",
    "+1+1",
    "-2+3",
    "\tleading tab",
    "\rleading return",
    "'already quoted",
    "''two quotes",
]


def test_csv_cells_a_spreadsheet_would_evaluate_are_text_and_read_back(tmp_path):
    import csv
    from dataclasses import replace

    base = next(c for c in SMOKE if c.axes == (-1,) and c.y_dist == "uniform")
    cases = [  # one shape each: a note is no part of a case's id
        replace(base, shape=(3, 17 + i), note=text, origin=text) for i, text in enumerate(FORMULAS)
    ]
    cases.append(replace(base, note="plain", y_dist="fill", y_fill=-1.0))
    path = casefile.dump(cases, tmp_path / "cases.csv")
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row, text in zip(rows, FORMULAS, strict=False):
        assert row["note"] == row["origin"] == "'" + text  # shown as text, never run
    assert rows[-1]["axes"] == "[-1]" and rows[-1]["y_fill"] == "-1.0"  # numbers stay numbers
    assert rows[-1]["note"] == "plain"
    back = casefile.load(path)
    assert [c.note for c in back] == [*FORMULAS, "plain"]
    assert [c.origin for c in back][: len(FORMULAS)] == FORMULAS
    assert back[-1].y_fill == -1.0


def test_a_hand_written_quote_is_kept_unless_it_escapes_a_formula(tmp_path):
    path = tmp_path / "hand.csv"
    path.write_text("dtype,shape,axes,note\nfloat32,2x3,-1,'quoted'\nfloat32,2x4,-1,'=A1\n")
    first, _, second, _ = casefile.load(path)
    assert first.note == "'quoted'"
    assert second.note == "=A1"


def test_an_id_that_does_not_match_its_fields_is_refused_with_both_ids(tmp_path):
    made = casefile.load(_written(tmp_path, "ok.yaml", "  - {family: 910b, dtype: float32, "
                                  "shape: [2, 3], axes: -1}\n"))[0]  # fmt: skip
    lines = _problems(
        tmp_path,
        "ids.yaml",
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        "  - {family: 910b, dtype: float32, shape: [2, 3], axes: -1, id: not_this}\n"
        f"  - {{dtype: float32, shape: [2, 3], axes: -1, id: {made.id}}}\n"  # every family
        f"  - {{family: 910b, dtype: float32, shape: [2, 3], axes: -1, id: {made.id}}}\n",
    )
    assert lines == [
        f"{tmp_path}/ids.yaml: case 0 (line 4): id 'not_this' does not match its fields, which "
        f"make {made.id}; fix the fields or drop the id",
        f"{tmp_path}/ids.yaml: case 1 (line 5): id {made.id!r} does not match its fields, which "
        f"make {made.id.replace('910b', '310b', 1)} on ascend310b; an id names one case: give "
        "the entry its family, or drop the id",
    ]


def _written(tmp_path, name: str, cases: str):
    path = tmp_path / name
    path.write_text("format: logsoftmaxgrad-cases\nversion: 1\ncases:\n" + cases)
    return path


def test_json_problems_name_the_entrys_line(tmp_path):
    lines = _problems(
        tmp_path,
        "bad.json",
        '{"format": "logsoftmaxgrad-cases", "version": 1,\n "cases": [\n'
        '  {"dtype": "float32", "shape": [2], "axes": 0},\n'
        '  {"dtype": "float32",\n   "shap": [2], "axes": 0}\n]}\n',
    )
    assert lines[0] == (
        f"{tmp_path}/bad.json: case 1 (line 4): unknown field 'shap' (did you mean 'shape'?)"
    )


def test_a_key_that_is_not_text_is_an_unknown_field(tmp_path):
    lines = _problems(
        tmp_path,
        "keys.yaml",
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        "  - {1: 2, null: 3, dtype: float32, shape: [2], axes: 0}\n",
    )
    assert lines == [
        f"{tmp_path}/keys.yaml: case 0 (line 4): unknown field 1 (see docs/case-files.md for "
        "the fields)",
        f"{tmp_path}/keys.yaml: case 0 (line 4): unknown field None (see docs/case-files.md for "
        "the fields)",
    ]


def test_a_good_file_is_not_read_again_for_its_lines(tmp_path, monkeypatch):
    """Entries' lines serve only messages: a JSON file without a problem is parsed once (YAML's
    come with its nodes)."""
    path = casefile.dump(SMOKE[:20], tmp_path / "good.json")

    def never(*args, **kwargs):
        raise AssertionError("the lines were looked for")

    monkeypatch.setattr(casefile_parse, "_json_with_starts", never)
    _same(casefile.load(path), SMOKE[:20])


def test_a_bad_entry_after_many_good_ones_is_named_by_its_line(tmp_path):
    """The lines are found after the fact, when there is a problem: still the entry's own."""
    text = json.dumps(casefile.document(SMOKE[:30]), indent=1)
    last = text.rindex('"shape"')
    text = text[:last] + '"shap"' + text[last + len('"shape"') :]
    line = text[: text.rindex("{", 0, last)].count("\n") + 1
    lines = _problems(tmp_path, "late.json", text)
    assert lines[0] == (
        f"{tmp_path}/late.json: case 29 (line {line}): unknown field 'shap' (did you mean 'shape'?)"
    )


def test_yaml_is_read_as_yaml_1_2_reads_it_as_json_and_the_schema_editors_do(tmp_path):
    """PyYAML reads YAML 1.1: 1e-3 is text there, 010 is 8, yes is True, 12:30 is 750 and
    2024-01-01 a date. The farm reads the core schema of YAML 1.2, as JSON does and the editors
    checking a file against its schema; quoted, a number stays text."""
    entries = (
        "{dtype: float16, shape: [4, 64], axes: -1, y_dist: range, y_range: [-1e2, .5E1], "
        "tolerance: {rtol: 1e-3, atol: 1.0e-5, max_fail_fraction: 0}}",
        "{dtype: float16, shape: [010, 64], axes: -1, y_dist: fill, y_fill: 1E+1, note: yes}",
        "{dtype: float32, shape: [2, 3], axes: 0, name: 2024-01-01, note: 12:30}",
    )
    path = tmp_path / "mine.yaml"
    path.write_text(
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        + "".join(f"  - {e}\n" for e in entries)
    )
    tolerance = {"rtol": 0.001, "atol": 1e-05, "max_fail_fraction": 0}
    as_json = [
        {"dtype": "float16", "shape": [4, 64], "axes": -1, "y_dist": "range"}
        | {"y_range": [-100, 5], "tolerance": tolerance},
        {"dtype": "float16", "shape": [10, 64], "axes": -1, "y_dist": "fill"}
        | {"y_fill": 10, "note": "yes"},
        {"dtype": "float32", "shape": [2, 3], "axes": 0, "name": "2024-01-01", "note": "12:30"},
    ]
    same = tmp_path / "mine.json"
    same.write_text(json.dumps(as_json))
    _same(casefile.load(path), casefile.load(same))

    path.write_text(path.read_text().replace("y_fill: 1E+1", "y_fill: '1e1'"))
    with pytest.raises(CaseFileError, match=r"field 'y_fill': '1e1' is not a number"):
        casefile.load(path)


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".csv"])
def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path, suffix):
    """A spreadsheet's "CSV UTF-8" and some Windows editors start the file with one."""
    path = casefile.dump(SMOKE[:6], tmp_path / f"smoke{suffix}", source="tier smoke")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    _same(casefile.load(path), SMOKE[:6])


@pytest.mark.parametrize("separator", [";", "\t"])
def test_a_csv_of_semicolons_or_tabs_reads_as_one_of_commas(tmp_path, separator):
    """What a spreadsheet writes in a locale whose decimal mark is a comma; the header row,
    whose field names hold no separator, says which."""
    rows = [
        ["dtype", "shape", "axes", "y_dist", "y_range", "note"],
        ["float16", "8x64", "-1", "range", "[-5, 5]", "a note, with a comma; and a semicolon"],
        ["float32", "2x3x4", "1", "", "", ""],
    ]
    files = {}
    for name, delimiter in [("commas", ","), ("other", separator)]:
        text = io.StringIO()
        text.write("# from a spreadsheet\n")
        csv.writer(text, delimiter=delimiter).writerows(rows)
        files[name] = tmp_path / f"{name}.csv"
        files[name].write_text(text.getvalue())
    _same(casefile.load(files["other"]), casefile.load(files["commas"]))
    assert casefile.load(files["other"])[0].note == rows[1][-1]


def test_a_key_given_twice_is_refused_not_the_last_one_kept(tmp_path):
    """JSON and YAML parsers keep a repeated key's last value without a word: a copied line
    changed a case, a second `cases:` dropped every case before it."""
    entry = '{"dtype": "float32", "shape": [2, 3], "axes": 1, "dtype": "float16", '
    entry += '"tolerance": {"rtol": 0.1, "rtol": 0.2, "atol": 0}}'
    path = tmp_path / "twice.json"
    path.write_text(f'{{"format": "{casefile.FORMAT}", "version": 1, "cases": [{entry}]}}')
    assert _problems(tmp_path, "twice.json", path.read_text()) == [
        f"{path}: case 0 (line 1): field 'dtype' given twice (only the last would count; keep one)",
        f"{path}: case 0 (line 1): field 'tolerance': key 'rtol' given twice (only the last "
        "would count; keep one)",
    ]
    two_lists = "format: logsoftmaxgrad-cases\nversion: 1\ncases: [{dtype: float32, shape: [2], "
    two_lists += "axes: 0}]\ncases: [{dtype: float16, shape: [2], axes: 0}]\n"
    assert _problems(tmp_path, "lists.yaml", two_lists) == [
        f"{tmp_path}/lists.yaml: top-level key 'cases' is there twice (keep one; merge lists)"
    ]
    csv_text = "dtype,shape,axes,shape\nfloat16,2x3,1,4x4\n"
    assert _problems(tmp_path, "columns.csv", csv_text) == [
        f"{tmp_path}/columns.csv: line 1: column 'shape' is there twice (keep one)"
    ]
    # A YAML merge's key given again in the mapping overrides it, as YAML says: not twice.
    merged = "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
    merged += "  - &a {dtype: float32, shape: [2, 3], axes: 1}\n  - {<<: *a, dtype: float16}\n"
    (tmp_path / "merged.yaml").write_text(merged)
    assert [c.dtype for c in casefile.load(tmp_path / "merged.yaml")][::2] == ["float32", "float16"]


def test_text_with_a_control_character_is_refused(tmp_path):
    """A note or name is shown on terminals and in reports: an escape sequence in an outside
    file would act on the terminal of whoever runs or repros the case. Tab and line ends stay."""
    lines = _problems(
        tmp_path,
        "control.json",
        '[{"dtype": "float32", "shape": [2, 3], "axes": 1, "note": "red\\u001b[31m"},'
        ' {"dtype": "float32", "shape": [2, 4], "axes": 1, "note": "a\\tb\\r\\nc"}]',
    )
    assert lines == [
        f"{tmp_path}/control.json: case 0 (line 1): field 'note': 'red\\x1b[31m' holds the "
        "control character '\\x1b', which a terminal would act on; remove it"
    ]


def test_a_file_not_in_utf8_names_the_fix(tmp_path):
    """PowerShell 5's `farm cases --json > cases.json` writes UTF-16."""
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([SMOKE[0].to_dict()]), encoding="utf-16")
    with pytest.raises(CaseFileError, match=rf"^{path}: UTF-16 text; save it as UTF-8$"):
        casefile.load(path)
    path.write_bytes(b'[{"dtype": "float32", "note": "caf\xe9"}]')
    with pytest.raises(CaseFileError, match=rf"^{path}: not UTF-8 text; save it as UTF-8$"):
        casefile.load(path)


def test_a_case_file_that_cannot_be_written_is_one_line(tmp_path):
    (tmp_path / "taken.json").mkdir()
    with pytest.raises(CaseFileError, match=r"taken.json: a directory; name the case file"):
        casefile.dump(SMOKE[:2], tmp_path / "taken.json")
    (tmp_path / "a-file").write_text("")  # a parent that cannot be a directory (root or not)
    with pytest.raises(CaseFileError, match=r"a-file/c.json: cannot write the case file \("):
        casefile.dump(SMOKE[:2], tmp_path / "a-file" / "c.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "taken.json"]


def test_yaml_the_farm_writes_reads_back_the_same_in_pyyaml(tmp_path):
    """Text that either YAML would read as something else is quoted when written."""
    import yaml

    texts = ["1e5", "yes", "010", "12:30", "2024-01-01", "-0x1f", "null", "~"]
    cases = [replace(c, note=t) for c, t in zip(SMOKE, texts, strict=False)]
    path = casefile.dump(cases, tmp_path / "notes.yaml", source="t")
    assert [c.note for c in casefile.load(path)] == texts
    assert [e["note"] for e in yaml.safe_load(path.read_text())["cases"]] == texts


def test_yaml_merge_keys_tags_and_shared_values_read_as_pyyaml_reads_them(tmp_path):
    """The memoised loader gives what yaml.safe_load gives: merges, explicit tags, a number
    that is text when quoted."""
    import yaml

    text = (
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        "  - &base {dtype: float32, shape: [2, 3], axes: -1, note: '1'}\n"
        "  - {<<: *base, dtype: float16, note: !!str 2}\n"
        "  - {<<: *base, shape: [4, 3], note: plain}\n"
    )
    path = tmp_path / "merged.yaml"
    path.write_text(text)
    cases = casefile.load(path)
    expected = [e for e in yaml.safe_load(text)["cases"] for _ in ("910b", "310b")]
    assert [(c.dtype, list(c.shape), c.note) for c in cases] == [
        (e["dtype"], e["shape"], e["note"]) for e in expected
    ]
    assert [c.note for c in cases[::2]] == ["1", "2", "plain"]
