"""aclnn unit tests (C++ gtest with the op_api_ut helpers) of aclnnLogSoftmaxBackward, as farm
entries: each TEST_F (or TEST) is a source case.

The test text is read, not compiled (the conventions of the ops-nn / ops-math op_api UTs):

- tensors: ``TensorDesc(shape, dtype, format)`` or ``TensorDesc(shape, dtype, format, strides,
  offset, storageShape)`` (a strided view), with ``.ValueRange(lo, hi)`` (lo == hi: a fill),
  ``.Value(vector{...})`` (not expressible: drawn uniform in the values' range, noted) and, on
  the output, ``.Precision(rtol, atol)``, which is the case's tolerance when the test calls
  ``ut.TestPrecision()`` (fail fraction 0: every element); a null tensor is ``nullptr``
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
  none: every family.

Not expressible (the case is not imported, with the reason): loops, parameterized tests
(TEST_P), several OP_API_UT calls in one test, values the reader cannot resolve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

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
_TEST = re.compile(r"\b(TEST_F|TEST_P|TEST)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")
_SOC = re.compile(r"SetPlatformSocVersion\s*\(\s*((?:op::)?SocVersion::\w+)\s*\)")
_DEF = re.compile(
    r"(?:^|[;{}\s])(?:const\s+)?(?:auto|TensorDesc|int64_t|int32_t|int|aclDataType|aclFormat|"
    r"(?:std::)?vector\s*<\s*int64_t\s*>)\s*&?\s+(\w+)\s*(=)?\s*(?=[^=])"
)
_STATUS_CHECK = re.compile(r"\b(EXPECT_EQ|ASSERT_EQ|EXPECT_NE|ASSERT_NE)\s*\(")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[fFlLuU]*")


def parse(text: str, source: str) -> ImportResult:
    code = _strip_comments(text)
    tests = list(_TEST.finditer(code))
    if not tests:
        raise Unreadable(
            "no TEST_F or TEST in it: give an aclnn UT source (gtest, OP_API_UT of "
            "aclnnLogSoftmaxBackward)"
        )
    fixtures = _fixture_socs(code)
    result = ImportResult("aclnn-ut")
    for match in tests:
        kind, fixture, test = match.groups()
        name = result.add_case(f"{fixture}.{test}")
        body, _ = _block(code, match.end() - 1)
        try:
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


def _strip_comments(text: str) -> str:
    pattern = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", re.S)

    def keep_strings(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("/"):
            return " " + "\n" * s.count("\n")
        return s

    return pattern.sub(keep_strings, text)


_PAIRS = {"(": ")", "{": "}", "[": "]"}


def _block(code: str, start: int) -> tuple[str, int]:
    """The text inside the bracket at `start` and the index after its closing bracket."""
    stack = []
    i = start
    while i < len(code):
        ch = code[i]
        if ch in "\"'":
            end = code.find(ch, i + 1)
            while end > 0 and code[end - 1] == "\\":
                end = code.find(ch, end + 1)
            i = end if end > 0 else len(code)
        elif ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif ch in _PAIRS.values():
            if not stack or stack.pop() != ch:
                raise NotExpressible(f"unbalanced {ch!r} in the test")
            if not stack:
                return code[start + 1 : i], i + 1
        i += 1
    raise NotExpressible("a bracket is never closed")


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


def _fixture_socs(code: str) -> dict[str, str]:
    """The SoC each fixture's SetUpTestCase / SetUp sets."""
    out: dict[str, str] = {}
    for match in re.finditer(r"\bclass\s+(\w+)\s*:[^{;]*\{", code):
        try:
            body, _ = _block(code, match.end() - 1)
        except NotExpressible:
            continue
        for setup in re.finditer(r"\b(SetUpTestCase|SetUpTestSuite|SetUp)\s*\(\s*\)[^{;]*\{", body):
            inner, _ = _block(body, setup.end() - 1)
            socs = _SOC.findall(inner)
            if socs:
                out[match.group(1)] = socs[-1]
    return out


# -- one test ---------------------------------------------------------------------------


@dataclass
class _Test:
    body: str
    defs: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def resolve(self, expr: str, seen: tuple[str, ...] = ()) -> str:
        expr = _uncast(expr.strip())
        while expr.startswith("(") and expr.endswith(")") and _block(expr, 0)[1] == len(expr):
            expr = _uncast(expr[1:-1].strip())
        if re.fullmatch(r"\w+", expr) and expr in self.defs and expr not in seen:
            return self.resolve(self.defs[expr], (*seen, expr))
        return expr

    def integer(self, expr: str, what: str) -> int:
        text = self.resolve(expr)
        if re.fullmatch(r"[-+]?\d+[lLuU]*", text):
            return int(text.rstrip("lLuU"))
        raise NotExpressible(f"{what} {expr!r} is not an integer the reader can resolve")

    def number(self, expr: str, what: str) -> float:
        text = self.resolve(expr)
        if _NUMBER.fullmatch(text):
            return float(text.rstrip("fFlLuU"))
        raise NotExpressible(f"{what} {expr!r} is not a number the reader can resolve")

    def ints(self, expr: str, what: str) -> tuple[int, ...]:
        text = self.resolve(expr)
        text = re.sub(r"^(?:std::)?vector\s*<[^>]*>\s*", "", text).strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1].strip()
        if not (text.startswith("{") and text.endswith("}")):
            raise NotExpressible(f"{what} {expr!r} is not a list the reader can resolve")
        return shape_of([self.integer(p, what) for p in _split(text[1:-1])], what)

    def numbers(self, expr: str, what: str) -> list[float]:
        text = self.resolve(expr)
        text = re.sub(r"^(?:std::)?vector\s*<[^>]*>\s*", "", text).strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1].strip()
        if not (text.startswith("{") and text.endswith("}")):
            raise NotExpressible(f"{what} {expr!r} is not a list the reader can resolve")
        return [self.number(p, what) for p in _split(text[1:-1])]


_CAST = re.compile(
    r"^\(\s*(?:const\s+)?(?:aclTensor|int64_t|int32_t|int|aclDataType)\s*\*?\s*\)\s*"
)


def _uncast(expr: str) -> str:
    expr = _CAST.sub("", expr)
    m = re.fullmatch(r"static_cast\s*<[^>]*>\s*\((.*)\)", expr, re.S)
    return m.group(1).strip() if m else expr


def _definitions(body: str) -> dict[str, str]:
    defs: dict[str, str] = {}
    for m in _DEF.finditer(body):
        i = m.end()
        depth, j = 0, i
        while j < len(body):
            ch = body[j]
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            elif ch == ";" and depth == 0:
                break
            j += 1
        defs[m.group(1)] = body[i:j].strip()
    return defs


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
        raise NotExpressible(f"calls {args[0] if args else '?'}, not {API}")
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
            if precise:
                tol = tolerance(precision[0], precision[1], 0, "Precision")
            else:
                t.notes.append(
                    f"Precision({precision[0]:g}, {precision[1]:g}) is set but ut.TestPrecision() "
                    "is not called: no tolerance imported"
                )
    dim = t.integer(ins[2], "dim")
    socs = _SOC.findall(body[: calls[0].start()]) or ([fixture_soc] if fixture_soc else [])
    family = None
    if socs:
        family = family_of_soc(socs[-1])
        if family is None:
            raise NotExpressible(
                f"runs on {socs[-1].split('::')[-1]}, not a SoC of the farm's families "
                f"({', '.join(FAMILY_FORMS)})"
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


def _tensor(t: _Test, expr: str, label: str) -> tuple[Tensor, tuple[float, float] | None]:
    text = t.resolve(expr)
    if text in ("nullptr", "NULL", "0"):
        return Tensor(missing=True), None
    m = re.match(r"TensorDesc\s*\(", text)
    if not m:
        raise NotExpressible(f"{label} {expr!r} is not a TensorDesc the reader can resolve")
    inner, end = _block(text, m.end() - 1)
    args = _split(inner)
    if len(args) not in (3, 6):
        raise NotExpressible(f"{label} TensorDesc({inner}) has {len(args)} arguments (3 or 6)")
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
    rest = text[end:]
    while rest.strip():
        call = re.match(r"\s*\.\s*(\w+)\s*\(", rest)
        if not call:
            raise NotExpressible(f"{label}: cannot read {rest.strip()!r}")
        margs, stop = _block(rest, call.end() - 1)
        method, parts = call.group(1), _split(margs)
        rest = rest[stop:]
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
        elif method == "Precision" and len(parts) == 2:
            precision = (t.number(parts[0], "Precision"), t.number(parts[1], "Precision"))
        elif method in ("ValueRange", "Value") and label == "out":
            continue  # the output's values are the operator's to write
        else:
            t.notes.append(f"{label}.{method}({margs.strip()}) not read")
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
        t.notes.append(f"the SoC condition ({' '.join(cond.split())}) not read: no expectation")
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
