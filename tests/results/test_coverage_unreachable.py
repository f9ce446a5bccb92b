"""The accounting of what no case reaches (farm/results/coverage_unreachable.py): gcovr's lines
and branches taken together per source line, matched with the explanations by text, stale
explanations found, and a bad explanations file refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.results.coverage_unreachable import Entry, account, load, read_sources, uncovered
from farm.util.errors import UsageError

SOURCE = {
    "tiling/x.cpp": [
        "int f(int a) {",  # 1
        "    if (a > 0) return 1;",  # 2
        "    return 2;",  # 3
        "}",  # 4
        "int g() { return 0; }",  # 5
    ]
}


def _line(number, count, branches=(), function="f"):
    return {
        "line_number": number,
        "function_name": function,
        "count": count,
        "branches": [{"branchno": i, "count": c} for i, c in enumerate(branches)],
    }


def _gcovr(*lines):
    return {"files": [{"file": "tiling/x.cpp", "lines": list(lines)}]}


def test_a_branch_taken_by_any_instance_of_its_line_is_taken():
    # Two instances of line 2 (a template's): each takes one branch, together both.
    doc = _gcovr(
        _line(1, 2),
        _line(2, 1, (1, 0), "f<int>"),
        _line(2, 1, (0, 1), "f<float>"),
        _line(3, 1),
        _line(5, 0, (), "g"),
    )
    found = uncovered(doc, SOURCE)
    assert [(u.line, u.line_missed, u.branches, u.of) for u in found] == [(5, True, 0, 0)]
    assert found[0].text == "int g() { return 0; }"


def test_a_partly_taken_line_is_listed_with_its_missed_branches():
    found = uncovered(_gcovr(_line(2, 3, (3, 0)), _line(3, 3)), SOURCE)
    assert [(u.line, u.line_missed, u.branches, u.of) for u in found] == [(2, False, 1, 2)]
    assert found[0].describe() == "1 of 2 branches never taken"


def test_excluded_lines_are_not_uncovered():
    line = _line(5, 0, (), "g") | {"gcovr/excluded": True}
    assert uncovered(_gcovr(line), SOURCE) == []


def test_explained_unexplained_and_stale():
    items = uncovered(_gcovr(_line(2, 3, (3, 0)), _line(3, 3), _line(5, 0)), SOURCE)
    entries = [
        Entry("tiling/x.cpp", "if (a > 0) return 1;", "a is never negative"),
        Entry("tiling/x.cpp", "return 2;", "covered: stale"),
        Entry("tiling/x.cpp", "return 3;", "no such line"),
        Entry("tiling/gone.cpp", "return 2;", "no such file"),
    ]
    got = account(items, entries, SOURCE)
    assert [(i.line, e.why) for i, e in got.explained] == [(2, "a is never negative")]
    assert [i.line for i in got.unexplained] == [5]
    stale = {e.text + "@" + e.file: why for e, why in got.stale}
    assert stale == {
        "return 2;@tiling/x.cpp": "every line that reads so is covered: remove the entry",
        "return 3;@tiling/x.cpp": "no line of its file reads so",
        "return 2;@tiling/gone.cpp": "its file is not among the measured sources",
    }
    assert not got.ok


def test_all_explained_is_ok():
    items = uncovered(_gcovr(_line(5, 0)), SOURCE)
    got = account(items, [Entry("tiling/x.cpp", "int g() { return 0; }", "unused")], SOURCE)
    assert got.ok and len(got.explained) == 1


def test_the_text_matches_without_indentation(tmp_path: Path):
    path = tmp_path / "u.toml"
    path.write_text(
        '[[unreachable]]\nfile = "tiling/x.cpp"\ntext = "   if (a > 0) return 1;  "\n'
        'why = "never negative"\n'
    )
    entries = load(path)
    assert entries == [Entry("tiling/x.cpp", "if (a > 0) return 1;", "never negative")]
    items = uncovered(_gcovr(_line(2, 1, (1, 0))), SOURCE)
    assert account(items, entries, SOURCE).ok


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[unreachable]]\nfile = "a"\ntext = "b"\n', "entry 1 lacks why"),
        ("[[unreachable]\n", "not TOML"),
        (
            '[[unreachable]]\nfile = "a"\ntext = "b"\nwhy = "c"\n' * 2,
            "entry 2 repeats a: 'b'",
        ),
    ],
)
def test_a_bad_file_is_one_line(tmp_path: Path, text: str, message: str):
    path = tmp_path / "u.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message) as caught:
        load(path)
    assert "\n" not in str(caught.value)


def test_no_file_is_no_entries(tmp_path: Path):
    assert load(tmp_path / "absent.toml") == []


def test_the_checked_in_explanations_parse_and_name_real_sources():
    from farm.results.coverage_data import OP_DIR, real_source
    from farm.util.paths import REPO_ROOT

    entries = load(REPO_ROOT / "op" / "coverage_unreachable.toml")
    sources = read_sources(OP_DIR, sorted({e.file for e in entries}))
    for e in entries:
        assert real_source(e.file), e
        assert e.text in [ln.strip() for ln in sources[e.file]], e


def test_gcovr_missing_is_one_line(monkeypatch):
    from farm.results import coverage_data

    monkeypatch.setattr(coverage_data.sys, "executable", "/bin/false")
    with pytest.raises(UsageError, match=r"gcovr is not installed for /bin/false: pip install"):
        coverage_data.gcovr_available()


@pytest.mark.parametrize(
    "kwargs",
    [{"target": "twin"}, {"plant_bug": "tail"}, {"sanitize": True}, {"arch": "aarch64"}],
)
def test_the_coverage_build_is_the_real_operator_here_only(kwargs):
    """A coverage build of anything but this checkout's ascendc-cpu for this machine is refused
    before CMake runs (its counters are written under this machine's build paths)."""
    from farm.pool.build import HOST_ARCH, build_native
    from farm.util.errors import BuildError

    if kwargs.get("arch") == HOST_ARCH:
        kwargs = {"arch": "x86_64"}
    args = {"target": "ascendc-cpu", **kwargs}
    with pytest.raises(BuildError, match="coverage build is of this checkout's ascendc-cpu"):
        build_native(args.pop("target"), coverage=True, **args)
