"""What a case is: the inputs of one operator call, where it runs, and what must come out.

A case is pure data. Its id is built from every field that changes the inputs or the verdict, and
its seed is derived from the id, so the same id means the same inputs on any machine.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from functools import cached_property

from golden import contract, soc

DTYPE_SHORT = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int32": "i32",
    "int64": "i64",
}
APIS = ("dim", "axes")  # the aclnn call (one dim) or the operator package's axis list
LAYOUTS = ("contiguous", "strided")
TENSORS = ("dy", "y", "out")


def shape_text(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "none"
    return "x".join(str(d) for d in shape) if shape else "scalar"


@dataclass(frozen=True)
class Case:
    family: str
    dtype: str
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    api: str = "dim"
    y_dist: str = "uniform"
    dy_dist: str = "normal"
    special: str = "none"
    layout: str = "contiguous"
    standard: str = "experimental"
    level: str | None = None
    # Perturbations that make the call invalid; None means "same as dy".
    y_dtype: str | None = None
    out_dtype: str | None = None
    y_shape: tuple[int, ...] | None = None
    out_shape: tuple[int, ...] | None = None
    missing: str | None = None
    # Which section of a matrix produced the case; not part of the identity.
    origin: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        problems = []
        if self.family not in soc.FAMILIES:
            problems.append(f"family {self.family!r} (use one of {', '.join(soc.FAMILIES)})")
        if self.dtype not in DTYPE_SHORT:
            problems.append(f"dtype {self.dtype!r} (use one of {', '.join(DTYPE_SHORT)})")
        if self.api not in APIS:
            problems.append(f"api {self.api!r} (use 'dim' or 'axes')")
        if self.api == "dim" and len(self.axes) != 1:
            problems.append(f"api 'dim' takes exactly one axis, got {list(self.axes)}")
        if self.layout not in LAYOUTS:
            problems.append(f"layout {self.layout!r} (use 'contiguous' or 'strided')")
        if self.missing not in (None, *TENSORS):
            problems.append(f"missing {self.missing!r} (use one of {', '.join(TENSORS)})")
        if any(d < 0 for d in self.shape):
            problems.append(f"shape {list(self.shape)} has a negative extent")
        if problems:
            raise ValueError("malformed case: " + "; ".join(problems))

    # -- identity -------------------------------------------------------------------------

    @cached_property
    def id(self) -> str:
        axes = ".".join(str(a) for a in self.axes)
        parts = [
            soc.FAMILY_SHORT[self.family],
            DTYPE_SHORT[self.dtype],
            shape_text(self.shape),
            f"d{axes}" if self.api == "dim" else f"ax{axes}",
            f"y.{self.y_dist}",
            f"dy.{self.dy_dist}",
        ]
        if self.special != "none":
            parts.append(self.special)
        if self.layout != "contiguous":
            parts.append(self.layout)
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
        return "_".join(parts)

    @cached_property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode()) & 0x7FFFFFFF

    # -- what must happen -----------------------------------------------------------------

    def call(self) -> contract.Call:
        profile = soc.representative_soc(self.family)
        return contract.Call(
            dy_shape=None if self.missing == "dy" else self.shape,
            dy_dtype=self.dtype,
            y_shape=None if self.missing == "y" else (self.y_shape or self.shape),
            y_dtype=self.y_dtype or self.dtype,
            out_shape=None if self.missing == "out" else (self.out_shape or self.shape),
            out_dtype=self.out_dtype or self.dtype,
            axes=self.axes,
            bf16_cast=profile.bf16_cast,
        )

    @cached_property
    def expected(self) -> contract.Expected:
        return contract.expected_outcome(self.call())

    @property
    def accepted(self) -> bool:
        return self.expected.accepted

    @cached_property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @cached_property
    def schedule(self) -> str:
        """The schedule the contract implies, or why there is none (EMPTY, REJECTED)."""
        if not self.accepted:
            return "REJECTED"
        if self.numel == 0:
            return "EMPTY"
        return contract.schedule(self.shape, self.axes)

    def expectation(self) -> dict:
        if self.accepted:
            return {"kind": "precision", "standard": self.standard, "level": self.level}
        return {"kind": "reject", "reason": self.expected.reason, "status": self.expected.status}

    def to_dict(self) -> dict:
        """The case as it travels to an agent and into reports."""
        data = asdict(self)
        data.pop("origin")
        for key in ("shape", "axes", "y_shape", "out_shape"):
            if data[key] is not None:
                data[key] = list(data[key])
        data.update(
            id=self.id,
            seed=self.seed,
            schedule=self.schedule,
            expect=self.expectation(),
            origin=self.origin,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Case:
        """Rebuild a case; a case whose id does not match its fields is refused."""
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        for key in ("shape", "axes", "y_shape", "out_shape"):
            if fields.get(key) is not None:
                fields[key] = tuple(fields[key])
        case = cls(**fields)
        if "id" in data and data["id"] != case.id:
            raise ValueError(
                f"malformed case: id {data['id']!r} does not match its fields ({case.id})"
            )
        return case
