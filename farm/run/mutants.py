"""The mutants of `farm mutate`: small edits of the operator's real sources made by regex rules
that fit Ascend C, each one edit of one line, with an id that names it for good (file, line,
rule and its ordinal on that line), so that a survivor can be looked up and run again
(`farm mutate --only ID`).

The rules (RULES, in this order; the first rule to make an edit keeps it):
    round_mode     RoundMode::CAST_* swapped (RINT <-> ROUND/TRUNC, NONE -> RINT, ...)
    relational     < <= > >= == != swapped (a comparison has a space on either side; a
                   template's < has none, so it is never taken for one)
    logical        && <-> ||
    negation       a unary ! removed
    arithmetic     + <-> -, * <-> / (binary: spaces on either side)
    length         the count (last argument) of a vector or copy call, and the offset and
                   length of the kernel's CopyIn/CopyOut, +1 and -1
    offset         a subscript [e] -> [e + 1]
    constant       an integer literal: 0 -> 1, 1 -> 0 and 2, n -> n - 1 and n + 1; a float
                   literal: non-zero -> 0, zero -> 1
    sync           PipeBarrier / SetFlag / WaitFlag / SyncAll statements removed
    queue          EnQue / FreeTensor statements removed; DeQue <-> AllocTensor
    return_bool    return true <-> return false
    statement      a one-line call or assignment statement removed

Never mutated: comments, preprocessor lines (#include, #define, ...), string and character
literals, every line of a statement that holds a string literal or a logging call, and the
bodies of functions that return a std::string (a message's words only reach people, never the
numbers or the verdicts a case is judged by). An edit keeps
the line count, so that every other line keeps its number (and its id).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

# The sources a mutant may edit (paths under op/): the kernel, the host's OpDef and tiling
# function, the op-api checks and the shared tiling, as compiled into liblsg_ascendc_cpu.so
# (op/CMakeLists.txt LSG_ACPU_SOURCES) and, with the aclnn layer, into the emulated ACL runtime's
# libcust_opapi.so. Each backend's cases can kill only what its path runs (docs/mutate.md):
# the aclnn layer (ACL_LAYER) runs only through acl; the native ABI's strided views
# (NATIVE_VIEWS: copies of a strided tensor through the kernel's workspace) only through native,
# since on acl the aclnn layer copies every strided view with aclnnInplaceCopy before the
# generated entry, which takes contiguous tensors only (op/acl_emu/README.md).
SHARED_SOURCES = (
    "ascendc/op_kernel/log_softmax_grad.cpp",
    "ascendc/op_host/log_softmax_grad.cpp",
    "ascendc/op_api/log_softmax_backward_checks.cpp",
    "tiling/tiling.cpp",
)
NATIVE_VIEWS = "tiling/views.cpp"
ACL_LAYER = "ascendc/op_api/aclnn_log_softmax_backward.cpp"
SOURCES = (*SHARED_SOURCES, NATIVE_VIEWS)  # the native backend's
ALL_SOURCES = (*SHARED_SOURCES, NATIVE_VIEWS, ACL_LAYER)
ONLY_THROUGH = {ACL_LAYER: "acl", NATIVE_VIEWS: "native"}


def sources_for(backend: str) -> tuple[str, ...]:
    """The sources whose mutants the cases on `backend` can kill."""
    return tuple(f for f in ALL_SOURCES if ONLY_THROUGH.get(f, backend) == backend)


@dataclass(frozen=True)
class Mutant:
    """One edit: `old` at column `col` of line `line` (1-based) of op/`file` becomes `new`."""

    id: str
    file: str
    line: int
    col: int
    rule: str
    old: str
    new: str

    def apply(self, text: str) -> str:
        """`text` (the file) with this edit made; a ValueError when the line does not hold
        `old` where the mutant says (the sources changed since it was made)."""
        lines = text.split("\n")
        if not 0 < self.line <= len(lines):
            raise ValueError(f"mutant {self.id}: op/{self.file} has no line {self.line}")
        line = lines[self.line - 1]
        if line[self.col : self.col + len(self.old)] != self.old:
            raise ValueError(
                f"mutant {self.id}: line {self.line} of op/{self.file} does not hold "
                f"{self.old!r} at column {self.col}; list the mutants again"
            )
        lines[self.line - 1] = line[: self.col] + self.new + line[self.col + len(self.old) :]
        return "\n".join(lines)

    def source_line(self, text: str) -> str:
        return text.split("\n")[self.line - 1]

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict) -> Mutant:
        return Mutant(**{k: data[k] for k in Mutant.__dataclass_fields__})


# -- reading C++: what is code ---------------------------------------------------------------

_MESSAGE_FUNCTION = re.compile(r"^\s*(?:static\s+|inline\s+)*std::string\s+\w+\s*\(")
# Logging calls, and a verdict's message (the words that go with a status, never judged).
_LOGGING = re.compile(
    r"\b(\w*printf|puts|OP_LOG\w*|LOG[A-Z_]*|std::(cerr|cout|clog)|\w*\.message)\b"
)


@dataclass(frozen=True)
class CodeLine:
    """A source line with comments and the insides of literals blanked (same length, so that a
    column of the code is a column of the line); `mutable` is False for a line that no rule
    may touch."""

    number: int
    text: str
    code: str
    mutable: bool


def code_lines(text: str) -> list[CodeLine]:
    """Every line of a C++ source, as the rules see it."""
    masked, has_string = _mask(text)
    lines, codes = text.split("\n"), masked.split("\n")
    skip = [False] * len(lines)
    # A statement runs from a line after one that ends in ; { } or : (or a directive) to the
    # next that does; a string literal or a logging call anywhere in it skips all of its lines.
    start = 0
    for i, code in enumerate(codes):
        stripped = code.strip()
        if stripped.startswith("#"):
            skip[i] = True
            start = i + 1
            continue
        if not stripped:
            if start == i:
                start = i + 1
            continue
        if stripped[-1] in ";{}:" or i == len(codes) - 1:
            group = range(start, i + 1)
            if any(has_string[j] or _LOGGING.search(codes[j]) for j in group):
                for j in group:
                    skip[j] = True
            start = i + 1
    # A function that returns a std::string builds a message: its whole body is words.
    i = 0
    while i < len(codes):
        if _MESSAGE_FUNCTION.match(codes[i]):
            depth, opened, j = 0, False, i
            while j < len(codes) and not (opened and depth == 0):
                depth += codes[j].count("{") - codes[j].count("}")
                opened = opened or "{" in codes[j]
                skip[j] = True
                j += 1
            i = j
        else:
            i += 1
    return [
        CodeLine(i + 1, lines[i], codes[i], not skip[i] and bool(codes[i].strip()))
        for i in range(len(lines))
    ]


def _mask(text: str) -> tuple[str, list[bool]]:
    """`text` with comments and the contents of string and character literals replaced by
    spaces (newlines kept), and for each line whether it holds a string literal."""
    out = []
    has_string = [False] * (text.count("\n") + 1)
    line, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            chunk = text[i:end]
            out.append("".join(ch if ch == "\n" else " " for ch in chunk))
            line += chunk.count("\n")
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            if c == '"':
                has_string[line] = True
            out.append(c + " " * (end - i - 2) + (text[end - 1] if end - i > 1 else ""))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out), has_string


# -- the rules ---------------------------------------------------------------------------------

Edit = tuple[int, str, str]  # (column, old, new)
Rule = Callable[[str], Iterable[Edit]]


def _swaps(pattern: str, table: dict[str, Sequence[str]]) -> Rule:
    regex = re.compile(pattern)

    def rule(code: str) -> Iterable[Edit]:
        for m in regex.finditer(code):
            for new in table.get(m.group(1), ()):
                yield m.start(1), m.group(1), new

    return rule


_CASTS = {
    "RINT": ("ROUND", "TRUNC"),
    "ROUND": ("RINT",),
    "TRUNC": ("RINT",),
    "FLOOR": ("CEIL",),
    "CEIL": ("FLOOR",),
    "NONE": ("RINT",),
    "ODD": ("RINT",),
}
round_mode = _swaps(
    r"RoundMode::(CAST_[A-Z]+)\b",
    {f"CAST_{k}": tuple(f"CAST_{v}" for v in vs) for k, vs in _CASTS.items()},
)
relational = _swaps(
    r"(?<=\s)(<=|>=|==|!=|<|>)(?=\s)",
    {"<": ("<=",), "<=": ("<",), ">": (">=",), ">=": (">",), "==": ("!=",), "!=": ("==",)},
)
logical = _swaps(r"(?<=\s)(&&|\|\|)(?=\s)", {"&&": ("||",), "||": ("&&",)})
arithmetic = _swaps(r"(?<=\s)([-+*/])(?=\s)", {"+": ("-",), "-": ("+",), "*": ("/",), "/": ("*",)})
return_bool = _swaps(r"\breturn\s+(true|false)\b", {"true": ("false",), "false": ("true",)})
_NEGATION = re.compile(r"(?<=[(\s])!(?=[\w(])")


def negation(code: str) -> Iterable[Edit]:
    for m in _NEGATION.finditer(code):
        yield m.start(), "!", ""


# Calls whose arguments at these positions are a length or an offset (negative: from the end).
_LENGTH_ARGS = {
    **{
        name: (-1,)
        for name in (
            "Add",
            "Sub",
            "Mul",
            "Div",
            "Muls",
            "Adds",
            "Exp",
            "Ln",
            "Cast",
            "Duplicate",
            "ReduceSum",
        )
    },
    "CopyIn": (2, 3),
    "CopyOut": (1, 2),
}
_CALL = re.compile(r"\b(" + "|".join(_LENGTH_ARGS) + r")\b(<[^()]*>)?\(")


_DECLARED = re.compile(r"^[\w:<>]+[\s*&]+\w+$")  # a parameter of the function's definition


def length(code: str) -> Iterable[Edit]:
    for m in _CALL.finditer(code):
        spans = _arguments(code, m.end() - 1)
        if spans is None:
            continue
        picked = {p if p >= 0 else len(spans) + p for p in _LENGTH_ARGS[m.group(1)]}
        for index in sorted(picked):
            if 0 <= index < len(spans):
                start, end = spans[index]
                arg = code[start:end]
                if arg and not arg.startswith("RoundMode") and not _DECLARED.match(arg):
                    yield start, arg, f"{arg} + 1"
                    yield start, arg, f"{arg} - 1"


def _arguments(code: str, open_at: int) -> list[tuple[int, int]] | None:
    """The spans (stripped) of a call's arguments from its "(" at `open_at`; None when the
    call does not close on this line."""
    depth, start, spans = 0, open_at + 1, []
    for i in range(open_at, len(code)):
        c = code[i]
        if c in "([{<" and not (c == "<" and code[i - 1 : i] == " "):
            depth += 1
        elif c in ")]}>" and not (c == ">" and code[i - 1 : i] in (" ", "-")):
            depth -= 1
            if depth == 0:
                spans.append((start, i))
                break
        elif c == "," and depth == 1:
            spans.append((start, i))
            start = i + 1
    else:
        return None
    out = []
    for s, e in spans:
        text = code[s:e]
        lead = len(text) - len(text.lstrip())
        out.append((s + lead, s + lead + len(text.strip())))
    return out


_SUBSCRIPT = re.compile(r"(?<=[\w\])])\[([^\[\]]+)\]")


def offset(code: str) -> Iterable[Edit]:
    for m in _SUBSCRIPT.finditer(code):
        inner = m.group(1)
        if inner.strip():
            yield m.start(1), inner, f"{inner} + 1"


_INT = re.compile(r"(?<![\w.])(\d+)([uUlL]*)(?![\w.])")
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?)([fF]?)(?![\w.])")


def constant(code: str) -> Iterable[Edit]:
    for m in _INT.finditer(code):
        value = int(m.group(1))
        news = {0: (1,), 1: (0, 2)}.get(value, (value - 1, value + 1))
        for new in news:
            yield m.start(1), m.group(1), str(new)
    for m in _FLOAT.finditer(code):
        zero = float(m.group(1)) == 0.0
        yield m.start(1), m.group(1), "1.0" if zero else "0.0"


def _removal(pattern: str) -> Rule:
    regex = re.compile(pattern)

    def rule(code: str) -> Iterable[Edit]:
        for m in regex.finditer(code):
            yield m.start(), m.group(0), ""

    return rule


sync = _removal(r"\b(PipeBarrier|SetFlag|WaitFlag|SyncAll)\b(<[^;]*?>)?\([^;]*\);")
_QUEUE_SWAP = _swaps(r"\.(?:template\s+)?(DeQue|AllocTensor)<", {"DeQue": ("AllocTensor",)})
_QUEUE_REMOVE = _removal(r"\b\w+\.(EnQue|FreeTensor)\([^;]*\);")


def queue(code: str) -> Iterable[Edit]:
    yield from _QUEUE_REMOVE(code)
    yield from _QUEUE_SWAP(code)


# A whole line that is one call (`f(...);`, `a.b(...);`) or one assignment to a plain name
# (`x = ...;`, `x += ...;`, `a.b[i] = ...;`), never a declaration (a type before the name).
_STATEMENT = re.compile(
    r"^\s*((?:[\w.:]|->)+(?:<[\w:, ]*>)?\(.*\);|(?:[\w.]|->|\[[^\]]*\])+\s*[-+*/|&]?=[^=].*;)\s*$"
)
_KEYWORDS = ("return", "if", "for", "while", "switch", "case", "delete", "new", "throw")


def statement(code: str) -> Iterable[Edit]:
    m = _STATEMENT.match(code)
    if m and not m.group(1).startswith(_KEYWORDS):
        yield m.start(1), m.group(1), ""


RULES: dict[str, Rule] = {
    "round_mode": round_mode,
    "relational": relational,
    "logical": logical,
    "negation": negation,
    "arithmetic": arithmetic,
    "length": length,
    "offset": offset,
    "constant": constant,
    "sync": sync,
    "queue": queue,
    "return_bool": return_bool,
    "statement": statement,
}


# -- the mutants of a source -------------------------------------------------------------------


def mutants_of(file: str, text: str, rules: Sequence[str] | None = None) -> list[Mutant]:
    """The mutants of op/`file` whose text is `text`, in line order; each edit once (the first
    rule to make it keeps it)."""
    chosen = [(name, RULES[name]) for name in (rules or RULES)]
    out: list[Mutant] = []
    for line in code_lines(text):
        if not line.mutable:
            continue
        seen: set[tuple[int, str, str]] = set()
        for name, rule in chosen:
            ordinal = 0
            for col, old, new in rule(line.code):
                edit = (col, old, new)
                if edit in seen or old == new:
                    continue
                seen.add(edit)
                # The edit of the real line (the code's columns are the line's).
                if line.text[col : col + len(old)] != old:
                    continue  # a comment inside the span: not an edit of code alone
                out.append(
                    Mutant(
                        f"{file}:{line.number}:{name}.{ordinal}",
                        file,
                        line.number,
                        col,
                        name,
                        old,
                        new,
                    )
                )
                ordinal += 1
    return out


def generate(
    op_dir: Path, files: Sequence[str] = SOURCES, rules: Sequence[str] | None = None
) -> list[Mutant]:
    """Every mutant of `files` (paths under `op_dir`), file by file in the order given."""
    out: list[Mutant] = []
    for file in files:
        out += mutants_of(file, (op_dir / file).read_text(), rules)
    return out
