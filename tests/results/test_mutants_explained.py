"""The survivors no case can kill (farm/results/mutants_explained.py): matched with the reviewed
entries by file, source text and, when given, the edit's rule id; a bad file refused in one line;
every entry of op/mutants_explained.toml names a line its source has."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.results.mutants_explained import explain, load
from farm.util.errors import UsageError

OP = Path(__file__).resolve().parents[2] / "op"


def _survivor(id_: str, text: str, status: str = "survived") -> dict:
    return {"id": id_, "file": id_.split(":")[0], "source_line": f"    {text}", "status": status}


def test_a_survivor_is_explained_by_its_file_and_text_and_the_rules_named(tmp_path: Path):
    path = tmp_path / "explained.toml"
    path.write_text(
        '[[survivor]]\nfile = "a.cpp"\ntext = "x = 1;"\nkind = "unreached"\nwhy = "dead"\n\n'
        '[[survivor]]\nfile = "a.cpp"\ntext = "if (n < 3) f();"\nrules = ["relational.0"]\n'
        'kind = "unreached"\nwhy = "n is never 3"\n'
    )
    outcomes = [
        _survivor("a.cpp:4:constant.0", "x = 1;"),
        _survivor("b.cpp:4:constant.0", "x = 1;"),  # another file
        _survivor("a.cpp:9:relational.0", "if (n < 3) f();"),
        _survivor("a.cpp:9:constant.0", "if (n < 3) f();"),  # a rule the entry does not name
        _survivor("a.cpp:4:statement.0", "x = 1;", status="killed"),
    ]
    assert explain(outcomes, load(path)) == 2
    assert [o.get("explained") for o in outcomes] == ["dead", None, "n is never 3", None, None]


def test_a_reviewed_equivalent_is_counted_with_the_equivalents_an_unreached_one_stays(
    tmp_path: Path,
):
    """A survivor no call can tell from the operator is an equivalent mutant the library
    comparison missed (out of the score); one that differs where no case reaches stays a
    survivor (in the score, out of the killable score)."""
    from farm.run.mutate import summarize

    path = tmp_path / "explained.toml"
    path.write_text(
        '[[survivor]]\nfile = "a.cpp"\ntext = "int n = 0;"\nkind = "equivalent"\n'
        'why = "written over before any read"\n\n'
        '[[survivor]]\nfile = "a.cpp"\ntext = "g();"\nkind = "unreached"\nwhy = "graph mode"\n'
    )
    outcomes = [
        _survivor("a.cpp:1:constant.0", "int n = 0;"),
        _survivor("a.cpp:2:statement.0", "g();"),
        _survivor("a.cpp:3:statement.0", "f();", status="killed"),
        _survivor("a.cpp:4:statement.0", "h();"),
    ]
    assert explain(outcomes, load(path)) == 2
    assert [o["status"] for o in outcomes] == ["equivalent", "survived", "killed", "survived"]
    assert outcomes[0]["equivalent_by"] == "review"
    s = summarize(outcomes)
    assert (s["judged"], s["equivalent"], s["reviewed_equivalent"], s["explained"]) == (3, 1, 1, 1)
    assert s["score"] == 1 / 3 and s["killable_score"] == 1 / 2


def test_a_bad_entry_is_refused_naming_it(tmp_path: Path):
    path = tmp_path / "explained.toml"
    path.write_text('[[survivor]]\nfile = "a.cpp"\ntext = "x = 1;"\n')
    with pytest.raises(UsageError, match="entry 1 lacks why"):
        load(path)
    path.write_text('[[survivor]]\nfile = "a.cpp"\ntext = "x;"\nrules = "constant.0"\nwhy = "w"\n')
    with pytest.raises(UsageError, match="entry 1's rules must be a list"):
        load(path)
    path.write_text('[[survivor]]\nfile = "a.cpp"\ntext = "x;"\nkind = "dead"\nwhy = "w"\n')
    with pytest.raises(UsageError, match="entry 1's kind must be one of equivalent, unreached"):
        load(path)
    assert load(tmp_path / "none.toml") == []


def test_every_entry_of_the_reviewed_file_names_a_line_of_its_source():
    entries = load(OP / "mutants_explained.toml")
    assert entries
    for e in entries:
        lines = [ln.strip() for ln in (OP / e.file).read_text().splitlines()]
        assert e.text in lines, f"{e.file}: no line reads {e.text!r}: update or remove the entry"
