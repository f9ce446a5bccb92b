"""aclnn unit tests (C++ gtest with the op_api_ut helpers) of aclnnLogSoftmaxBackward, as farm
entries: each TEST_F (or TEST) is a source case.

The test text is read, not compiled (the conventions of the ops-nn / ops-math op_api UTs):

- tensors: ``TensorDesc(shape, dtype, format)`` or ``TensorDesc(shape, dtype, format, strides,
  offset, storageShape)`` (a strided view), with ``.ValueRange(lo, hi)`` (lo == hi: a fill; an
  input without one is drawn from the helper's [-2, 2]), ``.Value(vector{...})`` (not
  expressible: drawn uniform in the values' range, noted) and, on the output,
  ``.Precision(relative, percentage, absolute = 1e-8)``, which is the case's tolerance (rtol,
  max_fail_fraction, atol) when the test calls ``ut.TestPrecision()``; a null tensor is ``nullptr``
  (``(aclTensor*)nullptr``). Shapes and dims may be literals or variables defined in the test
  (``vector<int64_t> shape = {2, 3}; int64_t dim = -1; aclDataType dtype = ACL_FLOAT;``).
- the call: ``OP_API_UT(aclnnLogSoftmaxBackward, INPUT(gradOutput, output, dim), OUTPUT(out))``.
- the expectation: ``EXPECT_EQ(aclRet, ACLNN_SUCCESS)`` (or ACL_SUCCESS) is a pass,
  ``ACLNN_ERR_PARAM_NULLPTR`` a null-tensor rejection, ``ACLNN_ERR_PARAM_INVALID`` a rejection
  with status 161002 (ASSERT_EQ alike; ``EXPECT_NE(aclRet, ACLNN_SUCCESS)`` a rejection); an
  ``if (GetCurrentPlatformInfo().GetSocVersion() == SocVersion::ASCEND910B || ...) {EXPECT..}
  else {EXPECT..}`` gives the expectation per family.
- the SoC: ``SetPlatformSocVersion(SocVersion::X)`` in the test, else in its fixture's
  SetUpTestCase / SetUp: the family of X (a SoC outside the farm's families: not imported);
  none: Ascend910B, where the op_api stub runs a test that sets none (noted).

Not expressible (the case is not imported, with the reason): loops, parameterized tests
(TEST_P), several OP_API_UT calls in one test, values the reader cannot resolve.

Reading is linear in the text, whatever it holds: brackets are matched in one pass per text
(_brackets), searches resume where the last stopped, patterns never backtrack over what they
matched, a name is resolved once. Nesting past suites.limits.NESTING_DEPTH refuses the file, so
what is read once per level (a call's arguments, an if's condition) stays a bounded multiple.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from suites import limits

from .common import (
    FAMILY_FORMS,
    Imported,
    ImportResult,
    NotExpressible,
    Tensor,
    Unreadable,
    check_format,
    family_of_soc,
    farm_dtype,
    make_entry,
    shape_of,
    storage_layout,
    tolerance,
    value_bounds,
)

API = "aclnnLogSoftmaxBackward"
STATUSES = {
    "ACLNN_SUCCESS": 0,
    "ACL_SUCCESS": 0,
    "ACLNN_ERR_PARAM_NULLPTR": 161001,
    "ACLNN_ERR_PARAM_INVALID": 161002,
}
# The op_api UT helpers' defaults (ops-nn tests/ut/op_api: op_api_ut_common TensorDesc, the
# opdev platform stub): an input drawn without ValueRange, Precision's absolute tolerance, and
# the SoC a test runs on when nothing sets one.
DEFAULT_RANGE = (-2.0, 2.0)
DEFAULT_ATOL = 1e-8
DEFAULT_SOC = "Ascend910B"
_TEST = re.compile(r"\b(TEST_F|TEST_P|TEST)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")
_SOC = re.compile(r"SetPlatformSocVersion\s*\(\s*((?:op::)?SocVersion::\w+)\s*\)")
_DEF = re.compile(
    r"(?:^|[;{}\s])(?:const\s+)?(?:auto|TensorDesc|int64_t|int32_t|int|aclDataType|aclFormat|"
    r"(?:std::)?vector\s*<\s*int64_t\s*>)\s*&?\s+(\w+)\s*(=)?\s*(?=[^=])"
)
_STATUS_CHECK = re.compile(r"\b(EXPECT_EQ|ASSERT_EQ|EXPECT_NE|ASSERT_NE)\s*\(")
# Possessive: a long run of digits that is not a number fails in one pass, not in n^2 steps.
_NUMBER = re.compile(r"[-+]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?[fFlLuU]*+")
_INTEGER = re.compile(r"[-+]?\d{1,18}[lLuU]*+")  # an int64 at most: int() has a digit limit


def parse(text: str, source: str) -> ImportResult:
    try:
        return _parse(text, source)
    finally:
        _brackets.cache_clear()  # the texts of one file are not kept past its reading


def _parse(text: str, source: str) -> ImportResult:
    code = _strip_comments(text)
    limits.NESTING_DEPTH.check(_brackets(code).deepest, source)
    tests = list(_TEST.finditer(code))
    if not tests:
        raise Unreadable(
            "no TEST_F or TEST in it: give an aclnn UT source (gtest, OP_API_UT of "
            "aclnnLogSoftmaxBackward)"
        )
    limits.CASES.check(len(tests), source)
    fixtures = _fixture_socs(code)
    result = ImportResult("aclnn-ut")
    for match in tests:
        kind, fixture, test = match.groups()
        name = result.add_case(f"{fixture}.{test}")
        try:
            body, _ = _block(code, match.end() - 1)
            if kind == "TEST_P":
                raise NotExpressible(
                    "a parameterized test (TEST_P): its parameters are elsewhere; import by hand"
                )
            entry, status = _test(name, body, fixtures.get(fixture))
        except NotExpressible as exc:
            result.skipped.append((name, str(exc)))
            continue
        result.imported.append(Imported(name, entry, status))
    return result


# -- C++ text ---------------------------------------------------------------------------


# A comment, or a string or character literal (kept: a "//" inside one is no comment). What is
# never closed runs to the end of the text (a comment) or of the line (a literal), as a compiler
# reads it; possessive repeats never give back what they matched, so this is one linear pass.
_LITERAL = r"\"(?:[^\"\\\n]++|\\.)*+\"?|'(?:[^'\\\n]++|\\.)*+'?"
_COMMENT_OR_LITERAL = re.compile(r"//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+(?:\*/)?|" + _LITERAL, re.S)
_LITERAL_OR_BRACKET = re.compile(_LITERAL + r"|[(){}\[\]]", re.S)


def _strip_comments(text: str) -> str:
    def keep_literals(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("/"):
            return " " + "\n" * s.count("\n")
        return s

    return _COMMENT_OR_LITERAL.sub(keep_literals, text)


_PAIRS = {"(": ")", "{": "}", "[": "]"}
_NEVER_CLOSED = -1


@dataclass(frozen=True)
class _Brackets:
    """Where each bracket of a text closes: its index; _NEVER_CLOSED; or -2 - i when a bracket
    of the wrong kind at i comes first. Brackets in literals do not count."""

    closes: dict[int, int]
    deepest: int


@functools.lru_cache(maxsize=32)
def _brackets(code: str) -> _Brackets:
    """The brackets of a text, matched in one pass (a text is matched once, however many of its
    blocks are asked for: asking each from its start, as a scan, was quadratic)."""
    closes: dict[int, int] = {}
    stack: list[int] = []
    deepest = 0
    for m in _LITERAL_OR_BRACKET.finditer(code):
        ch, at = m.group(0), m.start()
        if ch in _PAIRS:
            stack.append(at)
            deepest = max(deepest, len(stack))
        elif len(ch) == 1 and ch in ")]}" and stack:
            if _PAIRS[code[stack[-1]]] == ch:
                closes[stack.pop()] = at
            else:  # every bracket open here meets this one before its own
                closes.update(dict.fromkeys(stack, -2 - at))
                stack.clear()
    closes.update(dict.fromkeys(stack, _NEVER_CLOSED))
    return _Brackets(closes, deepest)


def _block(code: str, start: int) -> tuple[str, int]:
    """The text inside the bracket at `start` and the index after its closing bracket."""
    end = _brackets(code).closes.get(start)
    if end is None:
        raise NotExpressible("a bracket inside a string or character literal")
    if end == _NEVER_CLOSED:
        raise NotExpressible("a bracket is never closed: the file ends inside it (cut short?)")
    if end < 0:
        raise NotExpressible(f"unbalanced {code[-2 - end]!r} in the test")
    return code[start + 1 : end], end + 1


def _split(args: str) -> list[str]:
    """Top-level comma-separated parts."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in args:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    tail = "".join(current).strip()
    if tail or parts:
        parts.append(tail)
    return parts


_CLASS = re.compile(r"\bclass\s+(\w+)\s*:")
_SET_UP = re.compile(r"\b(SetUpTestCase|SetUpTestSuite|SetUp)\s*\(\s*\)")
_BRACE_OR_END = re.compile(r"[{;]")


def _braces_after(code: str, heads: Iterable[re.Match[str]]) -> Iterator[tuple[str, int]]:
    """(name, index of the "{") of each head followed by a "{" before any ";" (as the pattern
    `head[^{;]*{` would match them, without overlap). One scan: a search starts where the last
    one stopped, or after it."""
    stop = -1
    for head in heads:
        if head.start() <= stop:
            continue  # inside the last one's match: finditer would not see it
        if stop < head.end():
            found = _BRACE_OR_END.search(code, head.end())
            stop = found.start() if found else len(code)
        if stop < len(code) and code[stop] == "{":
            yield head.group(1), stop


def _fixture_socs(code: str) -> dict[str, str]:
    """The SoC each fixture's SetUpTestCase / SetUp sets."""
    out: dict[str, str] = {}
    for fixture, brace in _braces_after(code, _CLASS.finditer(code)):
        try:
            body, _ = _block(code, brace)
            for _, setup in _braces_after(body, _SET_UP.finditer(body)):
                socs = _SOC.findall(_block(body, setup)[0])
                if socs:
                    out[fixture] = socs[-1]
        except NotExpressible:  # a fixture that does not parse sets no SoC; its tests say why
            continue
    return out


# -- one test ---------------------------------------------------------------------------


@dataclass
class _Test:
    body: str
    defs: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # What a text resolves to, and the number a resolved text is: a name used many times (a
    # shape of a thousand `n`s) is read once.
    _resolved: dict[str, str] = field(default_factory=dict, repr=False)
    _numbers: dict[str, float | None] = field(default_factory=dict, repr=False)

    def resolve(self, expr: str) -> str:
        if expr in self._resolved:
            return self._resolved[expr]
        seen: set[str] = set()  # a chain of names is followed in a loop, not a recursion
        text = expr
        while True:
            text = _uncast(text.strip())
            while text.startswith("(") and text.endswith(")") and _block(text, 0)[1] == len(text):
                text = _uncast(text[1:-1].strip())  # at most NESTING_DEPTH times
            if text not in self.defs or text in seen:  # the names defined are words
                break
            seen.add(text)
            text = self.defs[text]
        self._resolved[expr] = text
        return text

    def integer(self, expr: str, what: str) -> int:
        text = self.resolve(expr)
        if _INTEGER.fullmatch(text):
            return int(text.rstrip("lLuU"))
        raise NotExpressible(f"{what} {_shown(expr)} is not an integer the reader can resolve")

    def number(self, expr: str, what: str) -> float:
        text = self.resolve(expr)
        if text not in self._numbers:
            self._numbers[text] = float(text.rstrip("fFlLuU")) if _NUMBER.fullmatch(text) else None
        value = self._numbers[text]
        if value is None:
            raise NotExpressible(f"{what} {_shown(expr)} is not a number the reader can resolve")
        return value

    def _listed(self, expr: str, what: str) -> list[str]:
        text = self.resolve(expr)
        vector = _VECTOR.match(text)
        text = text[vector.end() :].strip() if vector else text
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1].strip()
        if not (text.startswith("{") and text.endswith("}")):
            raise NotExpressible(f"{what} {_shown(expr)} is not a list the reader can resolve")
        return _split(text[1:-1])

    def ints(self, expr: str, what: str) -> tuple[int, ...]:
        return shape_of([self.integer(p, what) for p in self._listed(expr, what)], what)

    def numbers(self, expr: str, what: str) -> list[float]:
        return [self.number(p, what) for p in self._listed(expr, what)]


_VECTOR = re.compile(r"(?:std::)?vector\s*+<[^>]*+>\s*+")


def _cut(text: str) -> str:
    """Source text as a message or note shows it: cut short (a crafted file's line can be huge)."""
    return text if len(text) <= 80 else f"{text[:77]}..."


def _shown(text: str) -> str:
    return repr(_cut(text))


_CAST = re.compile(
    r"^\(\s*(?:const\s+)?(?:aclTensor|int64_t|int32_t|int|aclDataType)\s*\*?\s*\)\s*"
)


def _uncast(expr: str) -> str:
    cast = _CAST.match(expr)
    expr = expr[cast.end() :] if cast else expr
    m = re.fullmatch(r"static_cast\s*<[^>]*>\s*\((.*)\)", expr, re.S)
    return m.group(1).strip() if m else expr


_STATEMENT_MARKS = re.compile(r"[;(){}\[\]]")


def _definitions(body: str) -> dict[str, str]:
    """Each name the test defines and the text it is given: up to the ";" that ends its
    statement (or the end of the block it is in). One pass over the body for all of them."""
    found = [(m.group(1), m.end()) for m in _DEF.finditer(body)]
    ends = [len(body)] * len(found)
    waiting: list[list[int]] = [[]]  # per open bracket level, the definitions not yet ended
    next_def = 0
    for mark in _STATEMENT_MARKS.finditer(body):
        at, ch = mark.start(), mark.group(0)
        while next_def < len(found) and found[next_def][1] <= at:
            waiting[-1].append(next_def)
            next_def += 1
        if ch in "({[":
            waiting.append([])
            continue
        if ch == ";" or len(waiting) == 1:  # a statement ends (or a stray closing bracket)
            ended, waiting[-1] = waiting[-1], []
        else:  # a block closes: what was defined in it ends with it
            ended = waiting.pop()
        for k in ended:
            ends[k] = at
    return {name: body[start:end].strip() for (name, start), end in zip(found, ends, strict=True)}


def _test(name: str, body: str, fixture_soc: str | None) -> tuple[dict[str, Any], Any]:
    if re.search(r"\b(for|while)\s*\(", body):
        raise NotExpressible("the test loops (for / while): its calls cannot be read; by hand")
    calls = list(re.finditer(r"\bOP_API_UT\s*\(", body))
    if not calls:
        raise NotExpressible("no OP_API_UT call")
    if len(calls) > 1:
        raise NotExpressible(f"{len(calls)} OP_API_UT calls in one test: import them by hand")
    t = _Test(body, _definitions(body))
    args = _split(_block(body, calls[0].end() - 1)[0])
    if not args or args[0] != API:
        raise NotExpressible(f"calls {_cut(args[0]) if args else '?'}, not {API}")
    ins = _io(args, "INPUT")
    outs = _io(args, "OUTPUT")
    if len(ins) != 3 or len(outs) != 1:
        raise NotExpressible(
            f"INPUT has {len(ins)} and OUTPUT {len(outs)} arguments; {API} takes INPUT(gradOutput, "
            "output, dim), OUTPUT(out)"
        )
    precise = re.search(r"\.\s*TestPrecision\s*\(", body) is not None
    tensors: dict[str, Tensor] = {}
    tol = None
    for role, label, expr in (("dy", "gradOutput", ins[0]), ("y", "output", ins[1]),
                              ("out", "out", outs[0])):  # fmt: skip
        tensor, precision = _tensor(t, expr, label)
        tensors[role] = tensor
        if role == "out" and precision is not None:
            relative, percentage, absolute = precision
            if precise:
                tol = tolerance(relative, absolute, percentage, "Precision")
            else:
                t.notes.append(
                    f"Precision({relative:g}, {percentage:g}, {absolute:g}) is set but "
                    "ut.TestPrecision() is not called: no tolerance imported"
                )
    dim = t.integer(ins[2], "dim")
    socs = _SOC.findall(body[: calls[0].start()]) or ([fixture_soc] if fixture_soc else [])
    if socs:
        family = family_of_soc(socs[-1])
        if family is None:
            raise NotExpressible(
                f"runs on {socs[-1].split('::')[-1]}, not a SoC of the farm's families "
                f"({', '.join(FAMILY_FORMS)})"
            )
    else:
        family = family_of_soc(DEFAULT_SOC)
        t.notes.append(
            f"sets no SoC: the UT runs on {DEFAULT_SOC}, the op_api stub's default; imported "
            f"on {family} only"
        )
    expect, status = _expectation(t, family)
    entry = make_entry(name, {k: tensors[k] for k in ("dy", "y", "out")}, [dim], "dim",
                       t.notes, expect, family, tol)  # fmt: skip
    return entry, status


def _io(args: list[str], kind: str) -> list[str]:
    for arg in args[1:]:
        m = re.fullmatch(rf"{kind}\s*\((.*)\)", arg, re.S)
        if m:
            return _split(m.group(1))
    return []


_METHOD = re.compile(r"\s*+\.\s*+(\w++)\s*+\(")
_SPACE = re.compile(r"\s*+")


def _tensor(t: _Test, expr: str, label: str) -> tuple[Tensor, tuple[float, float, float] | None]:
    text = t.resolve(expr)
    if text in ("nullptr", "NULL", "0"):
        return Tensor(missing=True), None
    m = re.match(r"TensorDesc\s*\(", text)
    if not m:
        raise NotExpressible(f"{label} {_shown(expr)} is not a TensorDesc the reader can resolve")
    inner, end = _block(text, m.end() - 1)
    args = _split(inner)
    if len(args) not in (3, 6):
        raise NotExpressible(
            f"{label} TensorDesc({_cut(inner)}) has {len(args)} arguments (3 or 6)"
        )
    shape = t.ints(args[0], f"{label} shape")
    check_format(t.resolve(args[2]), label, t.notes)
    tensor = Tensor(farm_dtype(t.resolve(args[1]), f"{label} dtype"), shape)
    if len(args) == 6:
        strides = t.ints(args[3], f"{label} strides")
        if len(strides) != len(shape):
            raise NotExpressible(f"{label} strides {list(strides)} do not fit shape {list(shape)}")
        offset = t.integer(args[4], f"{label} offset")
        storage = t.ints(args[5], f"{label} storage shape")
        tensor.layout = storage_layout(shape, strides, offset, storage)
    precision = None
    at = end  # the methods are read in place: slicing off each one was quadratic in a chain
    while not _SPACE.fullmatch(text, at):
        call = _METHOD.match(text, at)
        if not call:
            raise NotExpressible(f"{label}: cannot read {_shown(text[at:].strip())}")
        margs, at = _block(text, call.end() - 1)
        method, parts = call.group(1), _split(margs)
        if method == "ValueRange" and len(parts) == 2 and label != "out":
            lo, hi = (t.number(p, f"{label} ValueRange") for p in parts)
            tensor.values = value_bounds(lo, hi, f"{label} ValueRange")
        elif method == "Value" and len(parts) == 1 and label != "out":
            values = t.numbers(parts[0], f"{label} Value")
            if not values:
                raise NotExpressible(f"{label} Value is empty")
            lo, hi = min(values), max(values)
            if lo != hi:
                t.notes.append(
                    f"{label} Value list not expressible: drawn uniform in its range "
                    f"[{lo:g}, {hi:g}]"
                )
            tensor.values = value_bounds(lo, hi, f"{label} Value")
        elif method == "Precision" and len(parts) in (2, 3):
            # (relative, percentage, absolute = 1e-8): the comparison's rtol, the fraction of
            # elements allowed past it and its atol (op_api_ut_common TensorDesc::Precision)
            values = [t.number(p, "Precision") for p in parts]
            precision = (values[0], values[1], values[2] if len(values) == 3 else DEFAULT_ATOL)
        elif method in ("ValueRange", "Value") and label == "out":
            continue  # the output's values are the operator's to write
        else:
            t.notes.append(f"{label}.{method}({_cut(margs.strip())}) not read")
    if label != "out" and tensor.values is None:
        tensor.values = DEFAULT_RANGE  # what the UT draws an input from without ValueRange
    return tensor, precision


def _status_of(block: str) -> list[tuple[str, Any]]:
    """(expect, status) of each status check in a block of the test."""
    found: list[tuple[str, Any]] = []
    for m in _STATUS_CHECK.finditer(block):
        parts = _split(_block(block, m.end() - 1)[0])
        names = [p for p in parts if re.fullmatch(r"ACL(NN)?_\w+", p)]
        if not names:
            continue
        constant, check = names[0], m.group(1)
        if check.endswith("_NE"):
            if STATUSES.get(constant) == 0:
                found.append(("reject", None))
            continue
        status = STATUSES.get(constant)
        if status == 0:
            found.append(("accept", 0))
        elif status == 161001:
            found.append(("reject:null_tensor", status))
        else:
            found.append(("reject", status if status else constant))
    return found


def _expectation(t: _Test, family: str | None) -> tuple[Any, Any]:
    for branch in re.finditer(r"\bif\s*\(", t.body):
        cond, after = _block(t.body, branch.end() - 1)
        if "SocVersion" in cond:
            return _soc_branches(t, cond, t.body, after, family)
    checks = _status_of(t.body)
    if not checks:
        t.notes.append("the test checks no status: no expectation imported")
        return None, None
    if len({c[0] for c in checks}) > 1:
        shown = ", ".join(c[0] for c in checks)
        t.notes.append(f"the test checks several statuses ({shown}): the first taken")
    return _expect_text(t, checks[0])


def _expect_text(t: _Test, check: tuple[str, Any]) -> tuple[str, Any]:
    expect, status = check
    if isinstance(status, str):
        t.notes.append(f"the source expects {status}, a status the contract does not give")
        return expect, None
    return expect, status


def _branch(text: str) -> tuple[str, str]:
    """A branch of an if: a {block} or one statement; and the text after it."""
    text = text.lstrip()
    if text.startswith("{"):
        inner, end = _block(text, 0)
        return inner, text[end:].lstrip()
    end = text.find(";")
    if end < 0:
        raise NotExpressible("an if branch never ends")
    return text[: end + 1], text[end + 1 :].lstrip()


def _soc_branches(
    t: _Test, cond: str, body: str, after: int, family: str | None
) -> tuple[Any, Any]:
    then, rest = _branch(body[after:])
    otherwise = ""
    if rest.startswith("else"):
        tail = rest[4:].lstrip()
        if tail.startswith("if"):
            t.notes.append("an else-if on the SoC not read: no expectation imported")
            return None, None
        otherwise, _ = _branch(tail)
    parts = re.split(r"\|\||&&", cond)
    ops = set(re.findall(r"(==|!=)", cond))
    socs = re.findall(r"SocVersion::(\w+)", cond)
    joins = set(re.findall(r"\|\||&&", cond))
    if (
        len(socs) != len(parts)
        or len(ops) != 1
        or len(joins) > 1
        or (joins and joins != ({"||"} if ops == {"=="} else {"&&"}))
    ):
        t.notes.append(
            f"the SoC condition ({_cut(' '.join(cond.split()))}) not read: no expectation"
        )
        return None, None
    named = {family_of_soc(s) for s in socs}
    first, second = _status_of(then), _status_of(otherwise)
    per: dict[str, Any] = {}
    statuses: dict[str, Any] = {}
    for fam in FAMILY_FORMS if family is None else (family,):
        inside = (fam in named) == (ops == {"=="})
        checks = first if inside else second
        if checks:
            per[fam], statuses[fam] = _expect_text(t, checks[0])
    if not per:
        t.notes.append("the SoC branches check no status: no expectation imported")
        return None, None
    if family is not None:
        return per[family], statuses[family]
    return per, statuses
