"""What the importers share: the typed result of a parse, the conversion into farm cases, and
the vocabulary the parsers use (dtypes, SoCs, numbers, shapes, tolerances, entries)."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from farm.util.visible import visible
from suites import casefile, limits
from suites.case import DEPARTS, DTYPE_SHORT, Case, value_json

# -- results ----------------------------------------------------------------------------


@dataclass
class Imported:
    """One farm entry (a dict in the case-file format) and the source case it comes from."""

    source_case: str  # the source's case: what the tally counts
    entry: dict[str, Any]  # its "name" is the source case, or its sub-case
    # The aclnn status the source expects, where it names one (per family: a dict).
    status: int | dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str(self.entry.get("name") or self.source_case)


@dataclass
class ImportResult:
    """What a parser made of one file: every source case, the entries made from them, and
    the source cases (or sub-cases) it could not import, each with the reason."""

    format: str
    source_cases: list[str] = field(default_factory=list)
    imported: list[Imported] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    parent: dict[str, str] = field(default_factory=dict)  # a sub-case's source case
    _names: set[str] = field(default_factory=set, repr=False)  # source_cases, to look up

    def __post_init__(self) -> None:
        self._names.update(self.source_cases)

    def source_of(self, name: str) -> str:
        """The source case an entry or sub-case name belongs to."""
        return self.parent.get(name, name)

    @property
    def entries(self) -> list[dict[str, Any]]:
        return [item.entry for item in self.imported]

    @property
    def notes(self) -> list[tuple[str, str]]:
        """(entry name, note) of every entry whose note says what differs from its source."""
        return [(i.name, i.entry["note"]) for i in self.imported if i.entry.get("note")]

    def add_case(self, name: str) -> str:
        """Count a source case; a name seen before gets its position (" #3") appended, a
        control character in it its escape (the name is shown on terminals and kept)."""
        name = visible(name)
        if name in self._names:  # a set: a file of many cases is not read in quadratic time
            name = f"{name} #{len(self.source_cases) + 1}"
        self.source_cases.append(name)
        self._names.add(name)
        return name

    def convert(self, source: str) -> Conversion:
        """The farm cases, via suites.casefile (validation, families, the contract's verdict
        and its departure notes). An entry the case-file rules refuse is not imported and is
        listed with their reasons; a farm case made twice is kept once (with both notes)."""
        out = Conversion(self)
        by_id: dict[str, int] = {}
        for item in self.imported:
            try:
                cases = casefile.entries_to_cases([item.entry], source)
            except casefile.CaseFileError as exc:
                reasons = [_strip_where(line, source) for line in str(exc).splitlines()]
                out.skipped.append((item.name, "; ".join(reasons)))
                continue
            for case in cases:
                case = _status_note(case, item)
                if case.id in by_id:
                    at = by_id[case.id]
                    out.merged.append((item.name, case.family, out.case_names[at]))
                    out.cases[at] = merged(out.cases[at], case)
                    continue
                by_id[case.id] = len(out.cases)
                out.cases.append(case)
                out.case_names.append(item.name)
        return out


@dataclass
class Conversion:
    """An ImportResult made into farm cases."""

    result: ImportResult
    cases: list[Case] = field(default_factory=list)
    case_names: list[str] = field(default_factory=list)  # the entry name of each case
    skipped: list[tuple[str, str]] = field(default_factory=list)  # refused by casefile
    merged: list[tuple[str, str, str]] = field(default_factory=list)  # (name, family, same as)

    @property
    def all_skipped(self) -> list[tuple[str, str]]:
        return self.result.skipped + self.skipped


ORIGINS_JOIN = "; "  # between the origins of source cases that make one farm case
MORE = "; and more"  # ends a note or origin that had no room for another source's


def merged(kept: Case, twin: Case) -> Case:
    """A farm case made twice kept once: both notes, and both origins, so that every source
    case is found in the written file and the report (each origin names its file and case),
    up to limits.MAX_TEXT_CHARS of each (thousands of source cases can make one farm case)."""
    note = kept.note
    if twin.note and twin.note not in kept.note:
        note = _joined(kept.note, twin.note)
    origins = kept.origin.split(ORIGINS_JOIN)
    origin = kept.origin
    if twin.origin and twin.origin not in origins:
        origin = _joined(kept.origin, twin.origin)
    return replace(kept, note=note, origin=origin)


def _joined(kept: str, more: str) -> str:
    """``kept``, then ``more`` where the two fit in limits.MAX_TEXT_CHARS, else MORE once."""
    if not kept:
        return more
    if kept.endswith(MORE):
        return kept
    joined = f"{kept}{ORIGINS_JOIN}{more}"
    return joined if len(joined) <= limits.MAX_TEXT_CHARS else kept + MORE


def _strip_where(line: str, source: str) -> str:
    """casefile's "<source>: case 0: <problem>" without the position (one entry at a time)."""
    return re.sub(rf"^{re.escape(source)}: case \d+( \(line \d+\))?: ", "", line)


_STATUS_NAMES = {
    0: "ACLNN_SUCCESS",
    161001: "ACLNN_ERR_PARAM_NULLPTR",
    161002: "ACLNN_ERR_PARAM_INVALID",
}


def _status_note(case: Case, item: Imported) -> Case:
    """A rejection the source expects with another status than the contract's (casefile
    compares reasons; a plain "reject" with a status is compared here)."""
    status = item.status.get(case.family) if isinstance(item.status, dict) else item.status
    stated = item.entry.get("expect")
    if isinstance(stated, dict):
        stated = stated.get(case.family)
    if not isinstance(status, int) or status == 0 or stated != "reject" or case.accepted:
        return case
    if case.expected.status == status:
        return case
    want = _STATUS_NAMES.get(status, str(status))
    note = (
        f"the source expects status {status} ({want}) on {case.family}; the contract "
        f"(SPEC section 2) gives {case.expected.status} ({case.expected.reason}): {DEPARTS}"
    )
    return replace(case, note=f"{case.note}; {note}" if case.note else note)


# -- the shared vocabulary of the parsers -----------------------------------------------


class Unreadable(ValueError):
    """The file cannot be read at all; the message says what is wrong and the fix."""


class NotExpressible(ValueError):
    """A source case (or sub-case) the farm cannot express; the message says why."""


def load_json(text: str, source: str, give: str) -> Any:
    """An outside JSON file, read as the case files are (suites/casefile.py): its integers and
    nesting bounded, and each object that gives a key twice marked for :func:`given_twice`
    (json keeps the last one silently: a copied line's `"shape"` replaced the first). ``give``:
    what file to give instead, for the line that says it is not JSON."""
    limits.check_json_depth(text, source)  # json recurses per level
    try:
        return casefile.JSON_DECODER.decode(text)
    except limits.IntegerTooLong as exc:
        raise Unreadable(f"not JSON the farm can read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise Unreadable(f"line {exc.lineno}: not JSON ({exc.msg}): give {give}") from None


def given_twice(value: Any) -> None:
    """NotExpressible naming each key that an object of ``value`` (a source case) gives twice;
    the marks load_json left taken out."""
    problems = casefile.keys_twice(value)
    if problems:
        raise NotExpressible("; ".join(problems))


FAMILY_FORMS = ("ascend910b", "ascend310b")  # the farm's families (golden/soc.py)

_DTYPE_ALIASES = {
    "float32": ("float32", "float", "fp32", "f32", "acl_float", "dt_float", "torch.float32"),
    "float16": ("float16", "fp16", "half", "f16", "acl_float16", "dt_float16", "torch.float16"),
    "bfloat16": ("bfloat16", "bf16", "acl_bf16", "dt_bf16", "torch.bfloat16"),
    "float64": ("float64", "double", "fp64", "f64", "acl_double", "dt_double", "torch.float64"),
    "int32": ("int32", "i32", "acl_int32", "dt_int32", "torch.int32"),
    "int64": ("int64", "i64", "acl_int64", "dt_int64", "torch.int64"),
    "complex64": ("complex64", "c64", "acl_complex64", "dt_complex64", "torch.complex64"),
    "complex128": ("complex128", "c128", "acl_complex128", "dt_complex128", "torch.complex128"),
}
DTYPES = {alias: dtype for dtype, aliases in _DTYPE_ALIASES.items() for alias in aliases}
assert set(_DTYPE_ALIASES) == set(DTYPE_SHORT)

# Formats whose memory order is the tensor's own (a label on an ND tensor); any other format
# (NC1HWC0, FRACTAL_NZ, ...) is a private layout the farm has no form for.
PLAIN_FORMATS = ("ND", "NCHW", "NHWC", "NCDHW", "NDHWC", "NCL", "NC", "HWCN", "CHWN")


def farm_dtype(name: Any, what: str = "dtype") -> str:
    """The farm's dtype for a source's name of it (float, fp16, ACL_BF16, torch.float32, ...)."""
    key = str(name).strip().lower()
    if key in DTYPES:
        return DTYPES[key]
    raise NotExpressible(
        f"{what} {name} has no farm form (the farm's dtypes: {', '.join(DTYPE_SHORT)})"
    )


def family_of_soc(name: str) -> str | None:
    """The farm family of a SoC name (Ascend910B3, ASCEND310B, SocVersion::ASCEND910B, 910b),
    or None for a SoC outside the farm's families (Ascend910_93, Ascend950, Ascend310P...)."""
    key = re.sub(r"^(op::)?(socversion::)?", "", name.strip().lower())
    for family in FAMILY_FORMS:
        if re.fullmatch(rf"{family}\d*", key):
            return family
    return casefile.family_named(key)


def check_format(fmt: Any, tensor: str, notes: list[str]) -> None:
    """A plain format is read as ND (noted unless ND); a private one is not expressible."""
    text = str(fmt).strip().upper().removeprefix("ACL_FORMAT_").removeprefix("FORMAT_")
    if text == "ND":
        return
    if text in PLAIN_FORMATS:
        notes.append(f"{tensor} format {text} read as ND (the same memory order)")
        return
    raise NotExpressible(
        f"{tensor} format {fmt} is a private layout the farm has no form for (it passes ND tensors)"
    )


def number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotExpressible(f"{what} {value!r} is not a number")
    return float(value)


def integer(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise NotExpressible(f"{what} {value!r} is not an integer")
    return value


def shape_of(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)):
        raise NotExpressible(f"{what} {value!r} is not a list of extents")
    out = tuple(integer(d, what) for d in value)
    if any(d < 0 for d in out):
        raise NotExpressible(f"{what} {list(out)} has an unknown (negative) extent")
    return out


def tolerance(rtol: Any, atol: Any, fail: Any, what: str) -> dict[str, float]:
    """A farm tolerance {"rtol", "atol", "max_fail_fraction"} from a source's numbers."""
    tol = {
        "rtol": number(rtol, f"{what} rtol"),
        "atol": number(atol, f"{what} atol"),
        "max_fail_fraction": number(fail, f"{what} fail fraction"),
    }
    for key, value in tol.items():
        if not (math.isfinite(value) and value >= 0):
            raise NotExpressible(f"{what} {key} {value} (a tolerance is a finite number >= 0)")
    if tol["max_fail_fraction"] > 1:
        raise NotExpressible(f"{what} fail fraction {tol['max_fail_fraction']} is above 1")
    return tol


@dataclass
class Tensor:
    """One tensor of the call as a source describes it."""

    dtype: str | None = None  # the farm's dtype name
    shape: tuple[int, ...] | None = None
    values: tuple[float, float] | None = None  # drawn uniform in [lo, hi]; lo == hi: a fill
    layout: dict[str, Any] | None = None  # {"strides", "storage", "offset"}: not contiguous
    missing: bool = False  # a null tensor (nullptr, None)


SPECIAL_VALUES = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def special_value(value: Any) -> float | None:
    """A source's special value ("inf", "-inf", "nan", any case, or a non-finite number) as a
    float; None for anything else."""
    if isinstance(value, str):
        return SPECIAL_VALUES.get(value.strip().lower())
    if isinstance(value, float) and not math.isfinite(value):
        return value
    return None


def missing_field(field: str, present: Iterable[Any], where: str, known: Iterable[str] = ()) -> str:
    """The line "no 'field' <where>", naming the nearest field that is there and none of the
    format's known fields (a renamed column or key; a known one is there for its own sake)."""
    skip = set(known)
    names = [str(p) for p in present if p is not None and p not in skip]
    near = difflib.get_close_matches(field, names, n=1, cutoff=0.6)
    hint = f" ({near[0]!r} is there: renamed? name it {field!r})" if near else ""
    return f"no {field!r} {where}{hint}"


def value_bounds(lo: Any, hi: Any, what: str) -> tuple[float, float]:
    """[lo, hi] of a source's value range: finite, lo <= hi."""
    bounds = (number(lo, what), number(hi, what))
    if not all(math.isfinite(b) for b in bounds):
        raise NotExpressible(f"{what} {list(bounds)} is not finite (the farm draws in a range)")
    if bounds[0] > bounds[1]:
        raise NotExpressible(f"{what} {list(bounds)} has lo > hi")
    return bounds


TENSOR_NAMES = ("dy", "y", "out")


def make_entry(
    name: str,
    tensors: dict[str, Tensor],
    axes: Sequence[int],
    api: str,
    notes: Sequence[str] = (),
    expect: Any = None,
    family: str | list[str] | None = None,
    tol: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A case-file entry from the call's three tensors (dy = gradOutput, y = the forward
    output, out), its axes and the rest; NotExpressible when no tensor is given."""
    present = [t for t in TENSOR_NAMES if not tensors[t].missing]
    missing = [t for t in TENSOR_NAMES if tensors[t].missing]
    if not present:
        raise NotExpressible("every tensor is null: there is no call to describe")
    notes = list(notes)
    base = tensors[present[0]]
    if base.dtype is None or base.shape is None:
        raise NotExpressible(f"{present[0]} has no dtype or shape")
    entry: dict[str, Any] = {"name": name, "dtype": base.dtype, "shape": list(base.shape)}
    if family is not None:
        entry["family"] = family
    entry["axes"] = list(axes)
    entry["api"] = api
    for t in ("y", "out"):
        tensor = tensors[t]
        if tensor.missing:
            continue
        if tensor.dtype is None or tensor.shape is None:
            raise NotExpressible(f"{t} has no dtype or shape")
        if tensor.dtype != base.dtype:
            entry[f"{t}_dtype"] = tensor.dtype
        if tensor.shape != base.shape:
            entry[f"{t}_shape"] = list(tensor.shape)
    if missing:
        entry["missing"] = missing[0]
        if len(missing) > 1:
            notes.append(
                f"{' and '.join(missing)} are all null; the farm marks one ({missing[0]}) "
                "null (the contract's verdict, null_tensor, is the same)"
            )
    for t in ("dy", "y"):
        tensor = tensors[t]
        if tensor.missing or tensor.values is None:
            continue
        lo, hi = tensor.values
        if lo == hi or (math.isnan(lo) and math.isnan(hi)):
            entry[f"{t}_dist"] = "fill"
            entry[f"{t}_fill"] = value_json(lo)  # "inf", "-inf", "nan" as the case file has them
        else:
            entry[f"{t}_dist"] = "range"
            entry[f"{t}_range"] = [lo, hi]
    for t in TENSOR_NAMES:
        if tensors[t].layout is not None and not tensors[t].missing:
            entry[f"{t}_layout"] = tensors[t].layout
    if tol is not None:
        entry["tolerance"] = tol
    if expect is not None:
        entry["expect"] = expect
    if notes:
        entry["note"] = "; ".join(dict.fromkeys(notes))
    return entry


def storage_layout(
    shape: Sequence[int], strides: Sequence[int], offset: int, storage: Sequence[int] | int | None
) -> dict[str, Any] | None:
    """A farm view from a source's strides, offset and storage (a shape or a size); None when
    it is the plain contiguous layout."""
    if storage is None:
        size = offset + 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))
        if any(d == 0 for d in shape):
            size = offset
    elif isinstance(storage, int):
        size = storage
    else:
        size = math.prod(storage)
    dense, acc = [], 1
    for d in reversed(shape):
        dense.append(acc)
        acc *= d
    if list(strides) == dense[::-1] and offset == 0 and size == math.prod(shape):
        return None
    return {"strides": list(strides), "storage": size, "offset": offset}


Parser = Callable[[str, str], ImportResult]
