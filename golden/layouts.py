"""Where a tensor's elements sit in memory: the layout of dy, y and out in a case.

A layout is either a short name or an explicit view:

- "contiguous": C order, the storage holds exactly the tensor, offset 0.
- "strided": every other element along the last axis of extent > 1 (the storage is twice as
  long on that axis); contiguous when the tensor has fewer than two elements.
- View(strides, storage, offset): strides in elements (one per dimension, each >= 0), the storage
  size in elements, and the offset in elements of element [0, ..., 0] in the storage. In JSON it
  is {"strides": [...], "storage": N, "offset": K}.

Every view element must lie inside the storage. An output view must not overlap itself (two
elements at one storage position); an input view may (a stride of 0 is what broadcasting makes),
and then the value the operator reads at a shared position is the one written last in C order
(place() writes deterministically), and the golden is computed from the view as read.

Storage outside the view is filled with a sentinel (NaN for floating dtypes, -1 otherwise), so a
kernel that reads outside its input view produces NaN, and one that writes outside its output
view is caught by outside_untouched().

Standard library and numpy only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

NAMES = ("contiguous", "strided")
# Views with more elements than this are checked for self-overlap by a sufficient rule only.
EXACT_OVERLAP_LIMIT = 1 << 22


@dataclass(frozen=True)
class View:
    strides: tuple[int, ...]
    storage: int
    offset: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"strides": list(self.strides), "storage": self.storage, "offset": self.offset}

    @property
    def text(self) -> str:
        """Short, stable text for case ids: st<strides>[.off<offset>].sz<storage>."""
        strides = ".".join(str(s) for s in self.strides) or "none"
        off = f".off{self.offset}" if self.offset else ""
        return f"st{strides}{off}.sz{self.storage}"


Layout = str | View


def parse(value: Any) -> Layout:
    """A layout from a case field or its JSON form; ValueError names what is wrong."""
    if isinstance(value, View):
        _check_ints(value.strides, value.storage, value.offset)
        return value
    if isinstance(value, str):
        if value not in NAMES:
            raise ValueError(f"{value!r} is not a layout name (use one of {', '.join(NAMES)})")
        return value
    if isinstance(value, dict):
        unknown = set(value) - {"strides", "storage", "offset"}
        if unknown or "strides" not in value or "storage" not in value:
            raise ValueError(
                f"{value!r}: an explicit layout is {{'strides': [...], 'storage': N, "
                "'offset': K}} (offset optional)"
            )
        strides = value["strides"]
        if not isinstance(strides, (list, tuple)):
            raise ValueError(f"strides {strides!r} must be a list of integers")
        view = View(tuple(strides), value["storage"], value.get("offset", 0))
        _check_ints(view.strides, view.storage, view.offset)
        return view
    raise ValueError(f"{value!r} is not a layout (a name, a View or a dict)")


def _check_ints(strides, storage, offset) -> None:
    for name, v in [("storage", storage), ("offset", offset)] + [("stride", s) for s in strides]:
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ValueError(f"{name} {v!r} is not an integer")


def to_json(layout: Layout) -> str | dict[str, Any]:
    return layout if isinstance(layout, str) else layout.to_json()


def text(layout: Layout) -> str:
    return layout if isinstance(layout, str) else layout.text


def dense_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(out))


def resolve(layout: Layout, shape: Sequence[int]) -> View:
    """The explicit view a layout means for a tensor of `shape`."""
    shape = tuple(int(d) for d in shape)
    n = math.prod(shape)
    if isinstance(layout, View):
        return layout
    if layout == "contiguous":
        return View(dense_strides(shape), n, 0)
    if layout == "strided":
        axis = next((i for i in reversed(range(len(shape))) if shape[i] > 1), None)
        if axis is None:
            return View(dense_strides(shape), n, 0)
        wide = list(shape)
        wide[axis] *= 2
        strides = list(dense_strides(wide))
        strides[axis] *= 2
        return View(tuple(strides), math.prod(wide), 0)
    raise ValueError(f"{layout!r} is not a layout name (use one of {', '.join(NAMES)})")


def is_dense(layout: Layout, shape: Sequence[int]) -> bool:
    """Whether the operator sees the view as contiguous (op/tiling: every dimension of extent
    above 1 has the C-order stride; an empty tensor addresses nothing). The offset and the
    storage size do not matter."""
    view = resolve(layout, shape)
    expected = 1
    for d, s in zip(reversed(tuple(shape)), reversed(view.strides), strict=True):
        if d == 0:
            return True
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def problems(layout: Layout, shape: Sequence[int], *, writable: bool) -> list[str]:
    """What is wrong with `layout` for a tensor of `shape` (empty when nothing is)."""
    shape = tuple(int(d) for d in shape)
    if isinstance(layout, str):
        return [] if layout in NAMES else [f"{layout!r} is not a layout name"]
    out = []
    if len(layout.strides) != len(shape):
        return [f"{len(layout.strides)} strides for rank {len(shape)} (one per dimension)"]
    if any(s < 0 for s in layout.strides):
        out.append(f"strides {list(layout.strides)} must be >= 0")
    if layout.offset < 0 or layout.storage < 0:
        out.append(f"offset {layout.offset} and storage {layout.storage} must be >= 0")
    if out:
        return out
    if math.prod(shape) == 0:
        if layout.offset > layout.storage:
            out.append(f"offset {layout.offset} is past the storage of {layout.storage}")
        return out
    last = layout.offset + sum(s * (d - 1) for s, d in zip(layout.strides, shape, strict=True))
    if last >= layout.storage:
        out.append(
            f"the view reaches element {last} of a storage of {layout.storage} elements "
            f"(strides {list(layout.strides)}, offset {layout.offset}, shape {list(shape)})"
        )
    elif writable and overlaps(layout, shape):
        out.append(
            f"strides {list(layout.strides)} put two elements of shape {list(shape)} at one "
            "storage position: an output view must not overlap itself"
        )
    return out


def overlaps(layout: Layout, shape: Sequence[int]) -> bool:
    """Whether two elements of the view share a storage position."""
    shape = tuple(int(d) for d in shape)
    view = resolve(layout, shape)
    n = math.prod(shape)
    if n <= 1 or _strides_clear(view, shape):
        return False
    if n > EXACT_OVERLAP_LIMIT:
        return True  # cannot show it is disjoint cheaply: treat as overlapping
    offsets = element_offsets(view, shape)
    return np.unique(offsets).size != offsets.size


def _strides_clear(view: View, shape: tuple[int, ...]) -> bool:
    """A sufficient rule for a view without overlap: sorted by stride, each stride clears the
    span of the smaller ones."""
    span = 0
    for s, d in sorted((s, d) for s, d in zip(view.strides, shape, strict=True) if d > 1):
        if s <= span:
            return False
        span += s * (d - 1)
    return True


def element_offsets(layout: Layout, shape: Sequence[int]) -> np.ndarray:
    """Storage positions of the view's elements, in C order (int64)."""
    shape = tuple(int(d) for d in shape)
    view = resolve(layout, shape)
    offsets = np.full((1,) * len(shape), view.offset, dtype=np.int64)
    for axis, (s, d) in enumerate(zip(view.strides, shape, strict=True)):
        idx = [1] * len(shape)
        idx[axis] = d
        offsets = offsets + (np.arange(d, dtype=np.int64) * s).reshape(idx)
    return np.broadcast_to(offsets, shape).reshape(-1)


def sentinel(dtype: Any) -> Any:
    """What storage outside a view is filled with: NaN for floating dtypes (bfloat16 too), -1
    for the others."""
    dt = np.dtype(dtype)
    return dt.type(np.nan) if dt.kind == "f" or dt.name == "bfloat16" else dt.type(-1)


def allocate(shape: Sequence[int], dtype: Any, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """(storage, view): a 1-d storage filled with the sentinel and the view of `shape` on it."""
    shape = tuple(int(d) for d in shape)
    view_spec = resolve(layout, shape)
    wrong = problems(view_spec, shape, writable=False)
    if wrong:
        raise ValueError(f"layout {text(layout)} for shape {list(shape)}: {'; '.join(wrong)}")
    dt = np.dtype(dtype)
    storage = np.full(max(view_spec.storage, 1), sentinel(dt), dtype=dt)
    return storage, view_of(storage, layout, shape)


def view_of(storage: np.ndarray, layout: Layout, shape: Sequence[int]) -> np.ndarray:
    """The view of `shape` that `layout` makes of a 1-d `storage` (no checks: see problems)."""
    shape = tuple(int(d) for d in shape)
    if math.prod(shape) == 0:
        return np.empty(shape, dtype=storage.dtype)
    view_spec = resolve(layout, shape)
    return np.lib.stride_tricks.as_strided(
        storage[view_spec.offset :],
        shape=shape,
        strides=tuple(s * storage.dtype.itemsize for s in view_spec.strides),
        writeable=True,
    )


def place(values: np.ndarray, layout: Layout) -> np.ndarray:
    """`values` copied into a view of `layout` over a fresh sentinel-filled storage (the view's
    .base chain keeps the storage alive). Where the view overlaps itself, the element last in C
    order wins, deterministically."""
    values = np.asarray(values)
    if layout == "contiguous":
        return np.array(values, order="C", copy=True)  # keeps a 0-d array 0-d
    storage, view = allocate(values.shape, values.dtype, layout)
    if values.size == 0:
        return view
    offsets = element_offsets(layout, values.shape)
    flat = np.ascontiguousarray(values).reshape(-1)
    # The strides' rule first: np.unique sorts or hashes every offset (~8 ms a 10^5-element view).
    if _strides_clear(resolve(layout, values.shape), values.shape) or (
        np.unique(offsets).size == offsets.size
    ):
        storage[offsets] = flat
    else:
        reversed_first = np.unique(offsets[::-1], return_index=True)[1]
        last = offsets.size - 1 - reversed_first
        storage[offsets[last]] = flat[last]
    return view


def outside_untouched(storage: np.ndarray, layout: Layout, shape: Sequence[int]) -> bool:
    """Whether every storage element outside the view still holds the sentinel, bit for bit."""
    storage = np.asarray(storage).reshape(-1)
    shape = tuple(int(d) for d in shape)
    n = math.prod(shape)
    # A C-order view from the storage's first element over exactly its n elements (every
    # contiguous output) leaves nothing outside: no offsets to make (13 ns an element).
    view = resolve(layout, shape)
    if n and storage.size == n and view.offset == 0 and is_dense(view, shape):
        return True
    mask = np.ones(storage.size, dtype=bool)
    if n:
        mask[element_offsets(view, shape)] = False
    if not mask.any():
        return True
    bits = np.dtype(f"u{storage.dtype.itemsize}")
    fill = np.array([sentinel(storage.dtype)], dtype=storage.dtype).view(bits)[0]
    return bool(np.all(storage.view(bits)[mask] == fill))


def describe(layout: Layout, shape: Sequence[int]) -> str:
    """The class of a layout, for coverage tables: the name, or "view, dense|strided|overlapping"
    with ", offset" when the view starts inside its storage."""
    if isinstance(layout, str):
        return layout
    kind = (
        "overlapping"
        if overlaps(layout, shape)
        else "dense"
        if is_dense(layout, shape)
        else "strided"
    )
    return f"view, {kind}" + (", offset" if layout.offset else "")
