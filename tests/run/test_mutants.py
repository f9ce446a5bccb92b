"""The mutants of `farm mutate` (farm/run/mutants.py): each rule makes the edit it should, and
none touches a comment, a preprocessor line, a string or a logging statement; ids are stable
and an edit applies only to the line it was made from. The runs: tests/e2e/test_mutate.py."""

from __future__ import annotations

import pytest

from farm.pool import build
from farm.run import mutants
from farm.run.mutants import Mutant, mutants_of


def edits(code: str, rule: str) -> list[tuple[str, str, str]]:
    """(the line after the edit, old, new) of each mutant `rule` makes of a one-line source."""
    return [(m.apply(code), m.old, m.new) for m in mutants_of("x.cpp", code, [rule])]


@pytest.mark.parametrize(
    ("code", "rule", "expected"),
    [
        (
            "Cast(o, f, RoundMode::CAST_RINT, n);",
            "round_mode",
            ["Cast(o, f, RoundMode::CAST_ROUND, n);", "Cast(o, f, RoundMode::CAST_TRUNC, n);"],
        ),
        (
            "Cast(f, r, RoundMode::CAST_NONE, n);",
            "round_mode",
            ["Cast(f, r, RoundMode::CAST_RINT, n);"],
        ),
        ("if (a < b) x();", "relational", ["if (a <= b) x();"]),
        (
            "if (a >= b && c != d) x();",
            "relational",
            ["if (a > b && c != d) x();", "if (a >= b && c == d) x();"],
        ),
        ("if (a && b) x();", "logical", ["if (a || b) x();"]),
        ("if (!ok) x();", "negation", ["if (ok) x();"]),
        ("v = a + b * c;", "arithmetic", ["v = a - b * c;", "v = a + b / c;"]),
        (
            "Adds(yf, yf, 1.0f, n);",
            "length",
            ["Adds(yf, yf, 1.0f, n + 1);", "Adds(yf, yf, 1.0f, n - 1);"],
        ),
        (
            "CopyIn(q, gm, at, n);",
            "length",
            [
                "CopyIn(q, gm, at + 1, n);",
                "CopyIn(q, gm, at - 1, n);",
                "CopyIn(q, gm, at, n + 1);",
                "CopyIn(q, gm, at, n - 1);",
            ],
        ),
        (
            "DataCopyPad(raw[t_.blockElems], gm[at], p, pad);",
            "offset",
            [
                "DataCopyPad(raw[t_.blockElems + 1], gm[at], p, pad);",
                "DataCopyPad(raw[t_.blockElems], gm[at + 1], p, pad);",
            ],
        ),
        ("x = 0;", "constant", ["x = 1;"]),
        ("x = 1;", "constant", ["x = 0;", "x = 2;"]),
        ("x = 32u;", "constant", ["x = 31u;", "x = 33u;"]),
        ("Muls(y, y, -1.0f, n);", "constant", ["Muls(y, y, -0.0f, n);"]),
        ("float s = 0.0f;", "constant", ["float s = 1.0f;"]),
        ("PipeBarrier<PIPE_V>();", "sync", [""]),
        ("SetFlag<HardEvent::V_S>(e);", "sync", [""]),
        ("q.EnQue(raw);", "queue", [""]),
        ("q.FreeTensor(raw);", "queue", [""]),
        (
            "LocalTensor<T> t = q.template DeQue<T>();",
            "queue",
            ["LocalTensor<T> t = q.template AllocTensor<T>();"],
        ),
        ("return true;", "return_bool", ["return false;"]),
        ("    sum += d.GetValue(0);", "statement", ["    "]),
        ("    t.ub_blocks = blocks(t.schedule);", "statement", ["    "]),
        ("    Exp(yf, yf, n);", "statement", ["    "]),
    ],
)
def test_each_rule_makes_its_edit(code, rule, expected):
    assert [after for after, _, _ in edits(code, rule)] == expected


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        (
            "LocalTensor<float> f = raw.template ReinterpretCast<float>();",
            "relational",
        ),  # templates
        ("const int64_t n = ChunkLen(c);", "statement"),  # a declaration: removing it cannot build
        ("return a;", "statement"),
        ("int32_t x;", "constant"),  # digits inside a name
        ("out << a;", "relational"),  # a shift
        ("void CopyIn(Q& que, int64_t at, int64_t n) {", "length"),  # parameters, not arguments
    ],
)
def test_what_a_rule_leaves_alone(code, rule):
    assert edits(code, rule) == []


def test_comments_preprocessor_strings_and_logging_are_never_mutated():
    source = "\n".join(
        [
            "// if (a < b) return 1;",
            "#define N 32",
            "#include <vector>",
            "/* x = a + 1;",
            "   y = b - 2; */",
            'v.message = "need " + std::to_string(n + 1) +',
            '            " elements";',
            'printf("%d", a + 1);',
            "v.message = std::move(words);",
            "c = '1';",
            "x = a + 1;  // the one line to mutate: + and 1",
        ]
    )
    found = mutants_of("x.cpp", source)
    # Line 10: the character literal's 1 is no constant, and a removal would have to hold it.
    assert {m.line for m in found} == {11}
    assert {(m.rule, m.old, m.new) for m in found if m.line == 11} >= {
        ("arithmetic", "+", "-"),
        ("constant", "1", "0"),
        ("constant", "1", "2"),
    }


def test_a_function_that_returns_a_string_builds_a_message_and_is_never_mutated():
    source = "\n".join(
        [
            "static std::string label(int d) {",
            "    std::string s = name(d);",
            "    for (int i = 0; i < d; ++i) s += tail(i);",
            "    return s;",
            "}",
            "int twice(int d) { return d * 2; }",
        ]
    )
    assert {m.line for m in mutants_of("x.cpp", source)} == {6}


def test_ids_name_file_line_rule_and_ordinal_and_keep_every_line_number():
    source = "a = 1;\n\nif (x < y && y < z) f();\n"
    found = mutants_of("t.cpp", source)
    ids = [m.id for m in found]
    assert len(ids) == len(set(ids))
    assert "t.cpp:3:relational.0" in ids and "t.cpp:3:relational.1" in ids
    assert "t.cpp:1:constant.1" in ids
    for m in found:
        assert m.apply(source).count("\n") == source.count("\n")


def test_the_same_edit_by_two_rules_is_one_mutant():
    found = mutants_of("k.cpp", "    PipeBarrier<PIPE_V>();")
    assert [(m.rule, m.new) for m in found] == [("sync", "")]  # not "statement" again


def test_an_edit_applies_only_to_the_text_it_was_made_from():
    m = mutants_of("t.cpp", "if (a < b) f();", ["relational"])[0]
    with pytest.raises(ValueError, match="does not hold"):
        m.apply("if (a == b) f();")
    with pytest.raises(ValueError, match="has no line 3"):
        Mutant("t.cpp:3:x.0", "t.cpp", 3, 0, "x", "a", "b").apply("a")
    assert Mutant.from_dict(m.to_dict()) == m


def test_the_real_sources_give_the_same_mutants_every_time_in_every_rule():
    first = mutants.generate(build.OP_DIR)
    assert first == mutants.generate(build.OP_DIR)
    assert {m.file for m in first} == set(mutants.SOURCES)
    assert {m.rule for m in first} == set(mutants.RULES)
    for m in first:  # each edits its own line of the real source, and makes a change
        text = (build.OP_DIR / m.file).read_text()
        assert m.old != m.new
        assert m.apply(text) != text
