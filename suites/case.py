"""What a case is: the inputs of one operator call, where it runs, and what must come out.

A case is pure data. Its id is built from every field that changes the inputs or the verdict, and
its seed is derived from the id, so the same id means the same inputs on any machine.

The names its fields take, the text and JSON forms of its values and MalformedCase are
suites/case_values.py's (re-exported here); the agent's request of a case is
farm/run/requests.py's.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from golden import contract, inference, layouts, soc
from golden.inputs import (
    ALL_DY_DISTS,
    ALL_SPECIALS,
    SPECIAL_PLACEMENTS,
    VALUE_FORMS,
    Y_DISTS,
)
from golden.layouts import Layout
from golden.standards import LEVELS
from golden.tolerance import TOLERANCE_KEYS, Tolerance
from suites.case_values import (
    APIS,
    CASE_STANDARDS,
    DEPARTS,
    DTYPE_SHORT,
    EXPLORE_TAG,
    LAYERS,
    LAYOUTS,
    NAN,
    TENSORS,
    TUPLE_FIELDS,
    MalformedCase,
    count,
    cut,
    elements,
    fill_value,
    in_int64,
    is_range,
    number_text,
    shape_text,
    value_json,
)

from . import limits

# A registration case's fields other than its family (suites/case.py _layer_problems).
REGISTRATION_FIELDS = {"dtype": "float32", "shape": (), "axes": (-1,)}
# What an infer case gives of its node beyond its family: gradOutput's dtype and shape, output's
# (y's) where they differ; the axes are the operator's default, the rest of a call has no say.
INFER_FIELDS = ("dtype", "shape", "y_dtype", "y_shape")


def tolerance_text(tolerance: Tolerance) -> str:
    """A case tolerance's part of the case id: tol.r<rtol>.a<atol>.f<max_fail_fraction>."""
    return (
        f"tol.r{number_text(tolerance.rtol)}.a{number_text(tolerance.atol)}"
        f".f{number_text(tolerance.max_fail_fraction)}"
    )


@dataclass(frozen=True)
class Case:
    """One operator call and its expectation.

    Value forms (y_dist / dy_dist beyond the generator families): "range" takes y_range /
    dy_range = (lo, hi), finite with lo < hi, uniform in [lo, hi) (JSON: [lo, hi]); "fill" takes
    y_fill / dy_fill, one constant (JSON: a number, or the strings "inf", "-inf", "nan").
    special_at places `special` ("random" flat positions, or "row_start" / "row_middle" /
    "row_end" of reduce rows; golden/inputs.py).

    Layouts (dy_layout, y_layout, out_layout): "contiguous", "strided" (every other element of
    the last axis of extent > 1), or an explicit golden.layouts.View(strides, storage, offset)
    in elements (JSON: {"strides": [...], "storage": N, "offset": K}). Storage outside a view is
    NaN. `layout` (a property, and a key of to_dict) sums them up for older readers: "contiguous"
    when the operator sees every tensor as contiguous, else "strided".

    Id parts of the new forms: y.range.<lo>to<hi>, dy.fill.<v> (number_text), <special>.<at>,
    and per tensor <name>.<layout> (e.g. out.strided, dy.st70.2.off1.sz220); dy and y strided
    with out contiguous keep the old id part "strided".
    """

    family: str
    dtype: str
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    api: str = "dim"
    y_dist: str = "uniform"
    dy_dist: str = "normal"
    special: str = "none"
    dy_layout: Layout = "contiguous"
    y_layout: Layout = "contiguous"
    out_layout: Layout = "contiguous"
    standard: str = "experimental"
    level: str | None = None
    # Perturbations that make the call invalid; None means "same as dy".
    y_dtype: str | None = None
    out_dtype: str | None = None
    y_shape: tuple[int, ...] | None = None
    out_shape: tuple[int, ...] | None = None
    missing: str | None = None
    # Inputs given by the case rather than drawn (y_dist / dy_dist "range" and "fill").
    y_range: tuple[float, float] | None = None
    dy_range: tuple[float, float] | None = None
    y_fill: float | None = None
    dy_fill: float | None = None
    special_at: str = "random"
    # The case's own tolerance, judged in addition to the standards (a case file's).
    tolerance: Tolerance | None = None
    # "<salt>.<n>": the n-th case drawn by exploration with that salt (suites/explore.py).
    explore: str = ""
    # The layer checked on its own (suites/case_values.py LAYERS): "" the whole call.
    layer: str = ""
    # Which section of a matrix or which case file produced the case; not part of the identity.
    origin: str = field(default="", compare=False, repr=False)
    # What an outside source said that departs from the contract (shown in the report).
    note: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        self._normalize()
        problems = self._bound_problems()
        if problems:  # nothing past a bound is walked or quoted whole by the checks below
            raise MalformedCase(problems)
        if self.family not in soc.FAMILIES:
            problems.append(f"family {self.family!r} (use one of {', '.join(soc.FAMILIES)})")
        if self.dtype not in DTYPE_SHORT:
            problems.append(f"dtype {self.dtype!r} (use one of {', '.join(DTYPE_SHORT)})")
        if self.api not in APIS:
            problems.append(f"api {self.api!r} (use 'dim' or 'axes')")
        if self.api == "dim" and len(self.axes) != 1:
            problems.append(f"api 'dim' takes exactly one axis, got {list(self.axes)}")
        if self.standard not in CASE_STANDARDS:
            problems.append(f"standard {self.standard!r} (use one of {', '.join(CASE_STANDARDS)})")
        if self.level not in (None, *LEVELS):
            problems.append(f"level {self.level!r} (use one of {', '.join(LEVELS)}, or none)")
        if self.missing not in (None, *TENSORS):
            problems.append(f"missing {self.missing!r} (use one of {', '.join(TENSORS)})")
        if any(d < 0 for d in self.shape):
            problems.append(f"shape {list(self.shape)} has a negative extent")
        problems += self._value_problems()
        if self.tolerance is not None:
            if isinstance(self.tolerance, Tolerance):
                problems += self.tolerance.problems()
            else:
                problems.append(
                    f"tolerance {self.tolerance!r} (use {{'rtol': .., 'atol': .., "
                    "'max_fail_fraction': ..}})"
                )
        if not isinstance(self.explore, str) or (
            self.explore and not EXPLORE_TAG.fullmatch(self.explore)
        ):
            problems.append(f"explore {self.explore!r} (use '<salt>.<n>', salt of [A-Za-z0-9-])")
        for key in ("dtype", "y_dtype", "out_dtype"):
            value = getattr(self, key)
            if key != "dtype" and value is not None and value not in DTYPE_SHORT:
                problems.append(f"{key} {value!r} (use one of {', '.join(DTYPE_SHORT)})")
        if not any(d < 0 for d in self.shape):
            problems += self._layout_problems()
        if not problems:
            problems += self._layer_problems()
        if not problems and len(self.id) > limits.MAX_ID_CHARS:
            problems.append(
                f"the case's id is {len(self.id):,} characters ({cut(self.id)}), over the bound "
                f"of {limits.MAX_ID_CHARS:,}: use fewer or smaller extents, strides, values"
            )
        if problems:
            raise MalformedCase(problems)

    def _bound_problems(self) -> list[str]:
        """The case's dimensions against the bounds of suites/limits.py (rank, axes, int64
        values, elements, its own text), before anything else reads them."""
        problems = []
        rank = limits.MAX_RANK
        for key in TUPLE_FIELDS:
            value = getattr(self, key)
            if not isinstance(value, tuple):
                continue  # None, or a type the checks below name
            what = "entries" if key == "axes" else "dimensions"
            if len(value) > rank:
                fix = (
                    f"the contract allows 0 to {contract.MAX_RANK}, a rejection case needs no "
                    f"more than {rank}: use fewer {what}"
                )
                problems.append(
                    f"{key} has {len(value):,} {what}, over the bound of {rank} ({fix})"
                )
            elif not all(in_int64(v) for v in value):
                problems.append(
                    f"{key} {cut(list(value))} holds a value past int64 (+-{limits.MAX_INT64:,}):"
                    " the operator and numpy take int64; use smaller values"
                )
            elif key != "axes" and elements(value) > limits.MAX_ELEMENTS:
                problems.append(
                    f"{key} {cut(shape_text(value))} spans {count(elements(value))} elements "
                    f"(zero extents left out), over the bound of 2^48: no host holds such a "
                    "tensor, and numpy refuses even an empty one; use smaller extents"
                )
        for name in TENSORS:
            layout = getattr(self, f"{name}_layout")
            if not isinstance(layout, layouts.View):
                continue
            if len(layout.strides) > rank:
                problems.append(
                    f"{name}_layout has {len(layout.strides):,} strides, over the bound of "
                    f"{rank} (one per dimension): use fewer dimensions"
                )
            elif not all(in_int64(v) for v in (*layout.strides, layout.offset, layout.storage)):
                problems.append(
                    f"{name}_layout {cut(layouts.text(layout))} holds a value past int64 "
                    f"(+-{limits.MAX_INT64:,}): use smaller strides, offset, storage"
                )
        for key in ("note", "origin"):
            text = getattr(self, key)
            if isinstance(text, str) and len(text) > limits.MAX_CASE_TEXT_CHARS:
                problems.append(
                    f"{key} is {len(text):,} characters, over the bound of "
                    f"{limits.MAX_CASE_TEXT_CHARS:,}: shorten it"
                )
        return problems

    def _normalize(self) -> None:
        """JSON-ish forms (lists, dicts, "nan") into the field types; frozen, so by setattr."""
        for key in TUPLE_FIELDS:
            value = getattr(self, key)
            if isinstance(value, list):
                object.__setattr__(self, key, tuple(value))
        for key in ("y_range", "dy_range"):
            value = getattr(self, key)
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, key, tuple(fill_value(v) for v in value))
        for key in ("y_fill", "dy_fill"):
            object.__setattr__(self, key, fill_value(getattr(self, key)))
        if isinstance(self.tolerance, dict):
            try:
                object.__setattr__(self, "tolerance", Tolerance.parse(self.tolerance))
            except (TypeError, ValueError):
                pass  # refused by validation, with the field named
        for name in TENSORS:
            value = getattr(self, f"{name}_layout")
            if isinstance(value, dict):
                try:
                    object.__setattr__(self, f"{name}_layout", layouts.parse(value))
                except ValueError:
                    pass  # refused by validation, with the field named

    def _value_problems(self) -> list[str]:
        problems = []
        for name, dists in (("y", Y_DISTS), ("dy", ALL_DY_DISTS)):
            dist = getattr(self, f"{name}_dist")
            bounds, fill = getattr(self, f"{name}_range"), getattr(self, f"{name}_fill")
            if dist not in dists + VALUE_FORMS:
                problems.append(
                    f"{name}_dist {dist!r} (use one of {', '.join(dists + VALUE_FORMS)})"
                )
            if bounds is not None and not is_range(bounds):
                problems.append(
                    f"{name}_range {bounds!r} (use (lo, hi): two finite numbers, lo < hi)"
                )
            elif (dist == "range") != (bounds is not None):
                problems.append(
                    f"{name}_range {bounds!r} with {name}_dist {dist!r} (a range is given "
                    f"exactly when {name}_dist is 'range')"
                )
            if fill is not None and not isinstance(fill, float):
                problems.append(f"{name}_fill {fill!r} (use a number, or 'inf', '-inf', 'nan')")
            elif (dist == "fill") != (fill is not None):
                problems.append(
                    f"{name}_fill {fill!r} with {name}_dist {dist!r} (a fill is given "
                    f"exactly when {name}_dist is 'fill')"
                )
        if self.special not in ALL_SPECIALS:
            problems.append(f"special {self.special!r} (use one of {', '.join(ALL_SPECIALS)})")
        if self.special_at not in SPECIAL_PLACEMENTS:
            problems.append(
                f"special_at {self.special_at!r} (use one of {', '.join(SPECIAL_PLACEMENTS)})"
            )
        elif self.special_at != "random" and self.special == "none":
            problems.append(f"special_at {self.special_at!r} without a special (set special)")
        return problems

    def _layout_problems(self) -> list[str]:
        problems = []
        for name in TENSORS:
            value = getattr(self, f"{name}_layout")
            if value == "contiguous":  # fits every tensor, present or missing: the common case
                continue
            try:
                layout = layouts.parse(value)
            except ValueError as exc:
                problems.append(f"{name}_layout: {exc}")
                continue
            if self.missing == name and layout != "contiguous":
                problems.append(
                    f"{name}_layout {layouts.text(layout)} for a missing {name} (use 'contiguous')"
                )
                continue
            wrong = layouts.problems(layout, self.tensor_shape(name), writable=name == "out")
            if wrong:
                problems.append(f"{name}_layout {layouts.text(layout)}: {'; '.join(wrong)}")
        return problems

    def _layer_problems(self) -> list[str]:
        """A registration case is its family alone (the registration is the family's, not a
        call's); a tiling case is a call the contract refuses for a reason the tiling function
        decides (a missing tensor never reaches it: the aclnn layer refuses it first)."""
        if self.layer not in LAYERS:
            return [f"layer {self.layer!r} (use one of {', '.join(map(repr, LAYERS))})"]
        if self.layer == "registration":
            given = [
                f.name
                for f in fields(self)
                if f.name not in ("family", "layer", "origin", "note")
                and getattr(self, f.name) != REGISTRATION_FIELDS.get(f.name, f.default)
            ]
            if given:
                return [
                    f"a registration case takes its family only, not {', '.join(given)} "
                    "(the registration is judged whole, every dtype of the family)"
                ]
        if self.layer == "infer":
            return self._infer_problems()
        if self.layer == "tiling" and self.expected.reason in ("ok", "null_tensor"):
            return [
                f"a tiling case is a call the contract refuses, not one it "
                f"{'accepts' if self.accepted else 'refuses for a missing tensor'} (the tiling "
                "function alone is asked only for its refusals)"
            ]
        return []

    def _infer_problems(self) -> list[str]:
        """An infer case is a node of gradOutput and output (the graph engine infers out): the
        contract's dtypes and ranks for both (what a graph can hold of this operator), nothing
        of a call beyond them."""
        given = [
            f.name
            for f in fields(self)
            if f.name not in ("family", "layer", "origin", "note", *INFER_FIELDS)
            and getattr(self, f.name) != REGISTRATION_FIELDS.get(f.name, f.default)
        ]
        problems = []
        if given:
            problems.append(
                f"an infer case takes its family, dtype, shape, y_dtype and y_shape only, not "
                f"{', '.join(given)} (the graph engine infers out from the node's inputs)"
            )
        for name in ("dy", "y"):
            shape = self.tensor_shape(name)
            if len(shape) > contract.MAX_RANK:
                problems.append(
                    f"an infer case's {name} has rank {len(shape)}: use 0 to {contract.MAX_RANK} "
                    "(the contract's ranks)"
                )
        return problems

    def tensor_shape(self, name: str) -> tuple[int, ...]:
        """The shape of tensor `name` in the call (its perturbation, else dy's)."""
        other = {"dy": None, "y": self.y_shape, "out": self.out_shape}[name]
        return self.shape if other is None else other

    @property
    def layout(self) -> str:
        """ "contiguous" when the operator sees dy, y and out as contiguous (a name or a view with
        C-order strides, at any offset; "strided" of a tensor with no extent above 1, a scalar
        say, is contiguous too: there is nothing to skip), else "strided"."""
        for name in TENSORS:
            layout = getattr(self, f"{name}_layout")
            if layout != "contiguous" and not layouts.is_dense(layout, self.tensor_shape(name)):
                return "strided"
        return "contiguous"

    # -- identity -------------------------------------------------------------------------

    @cached_property
    def id(self) -> str:
        if self.layer == "registration":
            return f"{soc.FAMILY_SHORT[self.family]}_registration"
        if self.layer == "infer":  # a node, not a call: no axes, values or layouts
            parts = [soc.FAMILY_SHORT[self.family], DTYPE_SHORT[self.dtype], shape_text(self.shape)]
            if self.y_dtype:
                parts.append(f"ydt.{DTYPE_SHORT[self.y_dtype]}")
            if self.y_shape is not None:
                parts.append(f"ysh.{shape_text(self.y_shape)}")
            return "_".join([*parts, "layer.infer"])
        axes = ".".join(str(a) for a in self.axes)
        parts = [
            soc.FAMILY_SHORT[self.family],
            DTYPE_SHORT[self.dtype],
            shape_text(self.shape),
            f"d{axes}" if self.api == "dim" else f"ax{axes}",
            f"y.{self._dist_text('y')}",
            f"dy.{self._dist_text('dy')}",
        ]
        if self.special != "none":
            at = "" if self.special_at == "random" else f".{self.special_at}"
            parts.append(self.special + at)
        parts += self._layout_parts()
        if self.standard != "experimental":
            parts.append(self.standard + (f".{self.level}" if self.level else ""))
        if self.y_dtype:
            parts.append(f"ydt.{DTYPE_SHORT[self.y_dtype]}")
        if self.out_dtype:
            parts.append(f"odt.{DTYPE_SHORT[self.out_dtype]}")
        if self.y_shape is not None:
            parts.append(f"ysh.{shape_text(self.y_shape)}")
        if self.out_shape is not None:
            parts.append(f"osh.{shape_text(self.out_shape)}")
        if self.missing:
            parts.append(f"no.{self.missing}")
        if self.tolerance is not None:
            parts.append(tolerance_text(self.tolerance))
        if self.explore:
            parts.append(f"x.{self.explore}")
        if self.layer:
            parts.append(f"layer.{self.layer}")
        return "_".join(parts)

    def _dist_text(self, name: str) -> str:
        dist = getattr(self, f"{name}_dist")
        if dist == "range":
            lo, hi = getattr(self, f"{name}_range")
            return f"range.{number_text(lo)}to{number_text(hi)}"
        if dist == "fill":
            return f"fill.{number_text(getattr(self, f'{name}_fill'))}"
        return dist

    def _layout_parts(self) -> list[str]:
        chosen = {name: getattr(self, f"{name}_layout") for name in TENSORS}
        if chosen == {"dy": "strided", "y": "strided", "out": "contiguous"}:
            return ["strided"]  # the one layout cases had before per-tensor layouts
        return [
            f"{name}.{layouts.text(layout)}"
            for name, layout in chosen.items()
            if layout != "contiguous"
        ]

    @cached_property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode()) & 0x7FFFFFFF

    # -- what must happen -----------------------------------------------------------------

    def call(self) -> contract.Call:
        profile = soc.representative_soc(self.family)
        return contract.Call(
            dy_shape=None if self.missing == "dy" else self.shape,
            dy_dtype=self.dtype,
            y_shape=None if self.missing == "y" else self.tensor_shape("y"),
            y_dtype=self.y_dtype or self.dtype,
            out_shape=None if self.missing == "out" else self.tensor_shape("out"),
            out_dtype=self.out_dtype or self.dtype,
            axes=self.axes,
            bf16_cast=profile.bf16_cast,
        )

    @cached_property
    def expected(self) -> contract.Expected:
        return contract.expected_outcome(self.call())

    @cached_property
    def accepted(self) -> bool:
        """Whether the contract accepts the call (a registration or infer case makes no call:
        False)."""
        return self.layer not in ("registration", "infer") and self.expected.accepted

    @cached_property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @cached_property
    def schedule(self) -> str:
        """The schedule the contract implies, or why there is none (EMPTY, REJECTED)."""
        if self.layer == "registration":
            return "REGISTRATION"
        if self.layer == "infer":
            return "INFER"
        if not self.accepted:
            return "REJECTED"
        if self.numel == 0:
            return "EMPTY"
        return contract.schedule(self.shape, self.axes)

    def expectation(self) -> dict[str, Any]:
        """What the contract says of the call, in its JSON form (the request's `expect`: its
        type is farm/agent/request.py Expectation; farm/run/requests.py gives it that type)."""
        if self.layer == "registration":
            return {"kind": "registration"}  # the table is golden/registration.py's
        if self.layer == "infer":  # the contract's inference of the node
            return {"kind": "infer", **inference.expected(self.shape, self.dtype)}
        if self.accepted:
            expect: dict[str, Any] = {
                "kind": "precision",
                "standard": self.standard,
                "level": self.level,
            }
            if self.tolerance is not None:
                expect["tolerance"] = self.tolerance.to_json()
            return expect
        return {"kind": "reject", "reason": self.expected.reason, "status": self.expected.status}

    def to_dict(self) -> dict[str, Any]:
        """The case as it travels to an agent and into reports (`farm cases --json`): every
        field in its JSON form, the `layout` summary, and what is derived (id, seed, schedule,
        expect). Its keys are farm/agent/request.py CaseRequest's; farm/run/requests.py makes
        the agent's request of it (suites sit below the agent: they do not name its types)."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("origin", "note"):
                continue
            if f.name in TUPLE_FIELDS + ("y_range", "dy_range") and value is not None:
                value = list(value)
            elif f.name in ("y_fill", "dy_fill"):
                value = value_json(value)
            elif f.name.endswith("_layout"):
                value = layouts.to_json(value)
            elif f.name == "tolerance" and value is not None:
                value = value.to_json()
            data[f.name] = value
            if f.name == "special":
                data["layout"] = self.layout
        data.update(
            id=self.id,
            seed=self.seed,
            schedule=self.schedule,
            expect=self.expectation(),
            origin=self.origin,
        )
        if self.note:
            data["note"] = self.note
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Case:
        """Rebuild a case; a case whose id does not match its fields is refused. A dict of
        before per-tensor layouts ({"layout": "strided"} and no *_layout) means dy and y
        strided; otherwise `layout` is derived and ignored, like id, seed and expect."""
        given = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if not any(f"{name}_layout" in data for name in TENSORS):
            legacy = data.get("layout", "contiguous")
            if legacy == "strided":
                given.update(dy_layout="strided", y_layout="strided")
            elif legacy != "contiguous":
                raise ValueError(
                    f"malformed case: layout {legacy!r} (use 'contiguous' or 'strided', or "
                    "dy_layout / y_layout / out_layout)"
                )
        case = cls(**given)
        if "id" in data and data["id"] != case.id:
            raise ValueError(
                f"malformed case: id {data['id']!r} does not match its fields ({case.id})"
            )
        return case


__all__ = [
    "APIS",
    "CASE_STANDARDS",
    "Case",
    "DEPARTS",
    "DTYPE_SHORT",
    "EXPLORE_TAG",
    "LAYERS",
    "LAYOUTS",
    "MalformedCase",
    "NAN",
    "TENSORS",
    "TOLERANCE_KEYS",
    "Tolerance",
    "number_text",
    "shape_text",
    "value_json",
]
