"""The importers' inputs under the case-file limits (suites/limits.py), and the aclnn UT reader
linear in its text.

Nothing here times anything. The UT reader's linearity is shown by structure: its scanning
patterns have no repeat that can backtrack, and each text's brackets are matched once (counted);
a crafted 400 KB file (each test an input the old reader took quadratic or recursive time on)
is imported in a subprocess under a 1 GiB address-space limit, whose timeout only catches a
hang."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from farm.cli import main
from suites import limits
from suites.importers import FORMATS, aclnn_ut, atk, msopst
from suites.limits import LimitExceeded

REPO = Path(__file__).resolve().parents[3]
TENSOR = "TensorDesc({2, 3}, ACL_FLOAT, ACL_FORMAT_ND)"


def ut(name: str, before: str = "", dim: str = "-1", grad: str = TENSOR) -> str:
    """One TEST_F of the call, with `before` in its body and the given dim and gradOutput."""
    return (
        f"TEST_F(l2_test, {name}) {{\n{before}\n  auto g = {grad};\n  auto o = {TENSOR};\n"
        f"  auto x = {TENSOR};\n  int64_t d = {dim};\n"
        "  auto ut = OP_API_UT(aclnnLogSoftmaxBackward, INPUT(g, o, d), OUTPUT(x));\n"
        "  EXPECT_EQ(ut.TestGetWorkspaceSize(&ws), ACLNN_SUCCESS);\n}\n"
    )


def crafted(size: int) -> str:
    """Tests that each took the old reader quadratic time (or a recursion) in their size."""
    n = size // 8
    chain = "".join(f"  int64_t a{i} = a{i + 1};\n" for i in range(n // 24)) + "  int64_t a"
    chain += f"{n // 24} = -1;"
    return "".join(
        [
            ut("escaped_quotes") + '"' + '\\"' * (n // 2) + "\n",  # a literal never closed
            ut("long_number", grad=f"{TENSOR}.ValueRange({'1' * n}x, 2)"),
            ut("long_integer", grad="TensorDesc({" + "1" * n + "}, ACL_FLOAT, ACL_FORMAT_ND)"),
            ut("definition_chain", chain, dim="a0"),
            ut("chained_methods", grad=TENSOR + ".Unknown()" * (n // 10)),
            ut("definitions_without_end", "  int64_t a" * (n // 10) + ";"),
            "class fixture :" * (n // 16) + "\n",
            ut(
                "names_used_often",
                "  int64_t e = 2;",
                grad="TensorDesc({" + "e, " * (n // 3) + "e}, ACL_FLOAT, ACL_FORMAT_ND)",
            ),  # fmt: skip
            "TEST_F(l2_test, never_closed) {\n" + "  {" * 30,
        ]
    )


def _no_backtracking(pattern: re.Pattern[str]) -> list[str]:
    """The repeats of a pattern that can give back what they matched (unbounded, not
    possessive): none means each attempt at a position is linear in what it reads."""
    from re import _constants, _parser  # type: ignore[attr-defined]

    found = []

    def walk(items) -> None:
        for op, arg in items:
            if op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT):
                low, high, sub = arg
                if high == _constants.MAXREPEAT:
                    found.append(f"{op} {low}..")
                walk(sub)
            elif op == _constants.POSSESSIVE_REPEAT:
                walk(arg[2])
            elif op in (_constants.SUBPATTERN, _constants.ATOMIC_GROUP):
                walk(arg[-1])
            elif op == _constants.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
                walk(arg[1])

    walk(_parser.parse(pattern.pattern, pattern.flags))
    return found


@pytest.mark.parametrize(
    "pattern",
    [
        aclnn_ut._COMMENT_OR_LITERAL,
        aclnn_ut._LITERAL_OR_BRACKET,
        aclnn_ut._NUMBER,
        aclnn_ut._INTEGER,
        aclnn_ut._METHOD,
        aclnn_ut._VECTOR,
        limits._JSON_STRING,
    ],
    ids=lambda p: p.pattern[:30],
)
def test_the_scanning_patterns_never_backtrack(pattern):
    assert _no_backtracking(pattern) == []


def test_the_old_number_pattern_is_what_this_check_catches():
    old = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[fFlLuU]*")  # n^2 on "1111...x"
    assert _no_backtracking(old)


def test_each_text_has_its_brackets_matched_once(monkeypatch):
    text = crafted(100_000)
    matched: list[int] = []
    original = aclnn_ut._brackets.__wrapped__

    def counting(code: str):
        matched.append(len(code))
        return original(code)

    monkeypatch.setattr(aclnn_ut, "_brackets", aclnn_ut.functools.lru_cache(maxsize=32)(counting))
    result = aclnn_ut.parse(text, "crafted.cpp")
    # The file, each test's body, each tensor's text: every character in a few texts at most.
    assert sum(matched) <= 4 * len(text), (sum(matched), len(text))
    assert len(result.source_cases) == 8
    skipped = dict(result.skipped)
    assert skipped["l2_test.never_closed"] == (
        "a bracket is never closed: the file ends inside it (cut short?)"
    )
    assert "is not an integer the reader can resolve" in skipped["l2_test.long_integer"]
    assert "'1111111" in skipped["l2_test.long_integer"]  # quoted, cut short
    assert len(skipped["l2_test.long_integer"]) < 200
    imported = {i.name: i.entry for i in result.imported}
    assert imported["l2_test.definition_chain"]["axes"] == [-1]  # 500 names, followed in a loop
    assert imported["l2_test.names_used_often"]["shape"] == [2] * (100_000 // 8 // 3 + 1)


def _ceiling() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def bounded_import(fmt: str, source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "farm.cli", "cases", "import", "--format", fmt, str(source),
         "-o", str(out)],
        cwd=REPO,
        env={**os.environ, "COLUMNS": "300", "OPENBLAS_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=120,  # a hang: the old reader took hours on this file
        preexec_fn=_ceiling,
    )  # fmt: skip


def test_a_crafted_400_kb_ut_file_is_imported_in_bounded_memory(tmp_path):
    source = tmp_path / "crafted.cpp"
    source.write_text(crafted(400_000))
    assert source.stat().st_size > 400_000
    out = bounded_import("aclnn-ut", source, tmp_path / "out.json")
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    assert out.returncode == 0, out.stderr[-3000:]
    assert "8 source cases → " in out.stdout
    assert json.loads((tmp_path / "out.json").read_text())["cases"]


def test_a_ut_nested_past_the_limit_is_refused_in_one_line(tmp_path, capsys):
    source = tmp_path / "deep.cpp"
    source.write_text(ut("deep", dim="(" * 100_000 + "-1" + ")" * 100_000))
    rc = main(
        ["cases", "import", "--format", "aclnn-ut", str(source), "-o", str(tmp_path / "o.json")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err == [
        f"error: {source}: 100,001 levels of nesting, over the limit of 64; no case file or "
        "suite input needs more: check how it was made"
    ]


DEEP = 1_000_000


@pytest.mark.parametrize(
    ("fmt", "module", "text"),
    [
        ("msopst", msopst, '[{"case_name": "x", "op": "LogSoftmaxGrad", "attr": ' + "[" * DEEP),
        ("atk", atk, '{"cases": [{"name": "x", "inputs": ' + "[" * DEEP + "]" * DEEP + "}]}"),
    ],
)
def test_deep_json_is_refused_before_it_is_parsed(tmp_path, monkeypatch, capsys, fmt, module, text):
    source = tmp_path / "deep.json"
    source.write_text(text)

    def never(*args, **kwargs):
        raise AssertionError("json was reached")

    monkeypatch.setattr(module.json, "loads", never)
    rc = main(["cases", "import", "--format", fmt, str(source), "-o", str(tmp_path / "o.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "levels of nesting, over the limit of 64" in err[0], err


def test_deep_msopst_json_in_a_subprocess_is_one_line(tmp_path):
    source = tmp_path / "deep.json"
    source.write_text("[" * DEEP + "]" * DEEP)
    out = bounded_import("msopst", source, tmp_path / "o.json")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_msopst_lists_that_cross_past_the_limit_are_not_made():
    desc = {"format": ["ND"] * 100, "type": ["float32"] * 100, "shape": [[2, 3]] * 100,
            "value_range": [[0, 1]] * 100, "data_distribute": ["uniform"] * 100}  # fmt: skip
    case = {"case_name": "crossed", "op": "LogSoftmaxGrad", "input_desc": [desc, desc],
            "output_desc": [{"format": "ND", "type": "float32", "shape": [2, 3]}]}  # fmt: skip
    result = msopst.parse(json.dumps([case]), "x.json")  # 10^10 variants if they were made
    assert result.skipped == [
        ("crossed", "its lists cross into 10,000,000,000 variants, more than the 100,000 cases a "
         "file may hold (set FARM_MAX_INPUT_CASES to raise it)"),
    ]  # fmt: skip


@pytest.mark.parametrize("fmt", ["msopst", "atk", "ttk", "aclnn-ut"])
def test_too_many_source_cases_are_refused(monkeypatch, fmt):
    monkeypatch.setenv("FARM_MAX_INPUT_CASES", "3")
    text = {
        "msopst": json.dumps([{"case_name": f"c{i}", "op": "Softmax"} for i in range(4)]),
        "atk": json.dumps([{"name": "x", "id": i} for i in range(4)]),
        "ttk": "testcase_name,op_name\n" + "".join(f"c{i},log_softmax_grad\n" for i in range(4)),
        "aclnn-ut": "".join(ut(f"c{i}") for i in range(4)),
    }[fmt]
    with pytest.raises(
        LimitExceeded, match=r"^x: (4 cases, over the limit of 3|more than the limit)"
    ):
        FORMATS[fmt](text, "x")


def test_the_files_of_one_import_together_are_held_to_the_limit(tmp_path, monkeypatch, capsys):
    """Each file within the limit, an import of many of them was not (nor converted first)."""
    monkeypatch.setenv("FARM_MAX_INPUT_CASES", "3")
    files = []
    for i in range(2):
        files.append(tmp_path / f"part{i}.cpp")
        files[-1].write_text(ut(f"a{i}") + ut(f"b{i}"))
    out = tmp_path / "o.json"
    rc = main(["cases", "import", "--format", "aclnn-ut", *map(str, files), "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and not out.exists()
    assert err == [
        "error: the 2 aclnn-ut files together: 4 cases, over the limit of 3; if it is meant to "
        "be this big, set FARM_MAX_INPUT_CASES (e.g. FARM_MAX_INPUT_CASES=12)"
    ]
    monkeypatch.setenv("FARM_MAX_INPUT_CASES", "4")
    assert main(["cases", "import", "--format", "aclnn-ut", *map(str, files), "-o", str(out)]) == 0


def test_a_ttk_literal_nested_past_pythons_parser_is_not_imported():
    from suites.importers import ttk

    header = "testcase_name,op_name,input_dtypes,output_shapes,output_dtypes,input_shapes"
    text = f"{header}\ndeep,log_softmax_grad,,,," + "-" * 100_000 + "1\n"
    result = ttk.parse(text, "x.csv")
    ((name, reason),) = result.skipped
    assert name == "deep" and "is not a Python literal" in reason and len(reason) < 200


def test_an_importer_input_over_the_size_limit_is_not_read(tmp_path, monkeypatch, capsys):
    source = tmp_path / "big.json"
    source.write_text("[]" + " " * 2000)
    monkeypatch.setenv("FARM_MAX_INPUT_BYTES", "1000")

    def never(*args, **kwargs):
        raise AssertionError("the file was read")

    monkeypatch.setattr(Path, "read_text", never)
    rc = main(["cases", "import", "--format", "atk", str(source), "-o", str(tmp_path / "o.json")])
    assert rc == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {source}: 2,002 bytes, over the limit of 1,000; if it is meant to be this big, "
        "set FARM_MAX_INPUT_BYTES (e.g. FARM_MAX_INPUT_BYTES=4000)"
    ]


@pytest.mark.parametrize("fmt", ["msopst", "atk"])
def test_a_json_integer_past_pythons_digits_is_unreadable(fmt):
    from suites.importers import Unreadable

    with pytest.raises(Unreadable, match="an integer of 5,000 digits; no field takes one past 40"):
        FORMATS[fmt]('[{"case_name": "x", "attr": ' + "1" * 5000 + "}]", "x.json")
