"""Smaller and simpler forms of a case, for `farm shrink` (farm/run/shrink.py): pure, no pool.

    for smaller in shrink.candidates(case):    # valid cases, most reducing first
        ...

Every candidate is a valid Case (a MalformedCase combination is skipped) of the same family and
dtype, that the contract expects the same of (the same acceptance, or the same rejection reason),
and that is strictly smaller than the case by `size`:

    (elements of dy, y and out; rank; reduce axes; complexity; value-range width)

compared in that order. So a greedy search that keeps taking a candidate always ends. The moves,
each applied to one place of the case:

- fewer dims: drop a dim that is not reduced (any extent), drop a reduce dim when another reduce
  axis is left (api "axes"), merge two neighbouring dims that are both kept or both reduced;
- fewer reduce axes (api "axes"): the first or the last one stops being reduced; one axis left
  through the "axes" api becomes the "dim" api;
- smaller extents: each dim to 1, to half, to three quarters, one less;
- perturbation shapes (y_shape, out_shape of a shape-mismatch case) follow dy's shape where they
  agree with it, and shrink on their own where they differ; explicit layout views keep their
  strides (the dropped dims' removed) and their storage shrinks with the view;
- fewer special values: none at all, or at random positions rather than a row's;
- simpler values: y_dist toward "uniform" / "normal", dy_dist toward "normal" / "uniform", a
  range narrowed to either half (while it is wider than MIN_RANGE_WIDTH), a fill replaced by the
  default distribution (a fill that matters keeps the failure only with the fill, so it stays);
- simpler layouts: "contiguous", an explicit view as "strided";
- an explored case's tag dropped (a shrunk form is no longer the exploration's draw).

Candidates are ordered by `size`, smallest first (ties: the order above), and given once each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from golden.contract import axes_consecutive, axes_in_range, normalize_axes
from golden.layouts import View

from .case import TENSORS, Case, MalformedCase, shape_text

# A value range is narrowed (halved) only while it is wider than this: the search stays finite.
MIN_RANGE_WIDTH = 1.0
# The distributions a case's values are simplified toward, simplest first.
Y_SIMPLE = ("uniform", "normal")
DY_SIMPLE = ("normal", "uniform")
_DEFAULT_DIST = {"y": Y_SIMPLE[0], "dy": DY_SIMPLE[0]}
_SIMPLE = {"y": Y_SIMPLE, "dy": DY_SIMPLE}

Size = tuple[int, int, int, int, float]


# -- how big and how complicated a case is ---------------------------------------------------


def elements(case: Case) -> int:
    """Elements of the tensors the call passes (dy, and y / out at their perturbed shapes)."""
    return sum(math.prod(case.tensor_shape(name)) for name in TENSORS if case.missing != name)


def complexity(case: Case) -> int:
    """How far a case's values and layouts are from the simplest: 0 for uniform y, normal dy, no
    special values, every tensor contiguous, the "dim" api, not an explored draw."""
    score = 0
    if case.special != "none":
        score += 2
    if case.special_at != "random":
        score += 1
    for name in ("y", "dy"):
        dist = getattr(case, f"{name}_dist")
        simple = _SIMPLE[name]
        score += simple.index(dist) if dist in simple else (3 if dist in ("range", "fill") else 2)
    for name in TENSORS:
        layout = getattr(case, f"{name}_layout")
        score += 0 if layout == "contiguous" else (2 if isinstance(layout, View) else 1)
    if case.api == "axes":
        score += 1
    if case.explore:
        score += 1
    return score


def range_width(case: Case) -> float:
    return sum(hi - lo for r in (case.y_range, case.dy_range) if r is not None for lo, hi in [r])


def size(case: Case) -> Size:
    """What a shrink makes smaller, most important first (tuples compare in order)."""
    return (
        elements(case),
        len(case.shape),
        len(case.axes),
        complexity(case),
        range_width(case),
    )


# -- the candidates ----------------------------------------------------------------------------


def candidates(case: Case) -> list[Case]:
    """Valid, strictly smaller forms of `case` (see the module's doc), smallest first, each once
    (by id), none equal to the case."""
    here = size(case)
    out: dict[str, tuple[Size, int, Case]] = {}
    for order, fields in enumerate(_moves(case)):
        fields.setdefault("explore", "")
        try:
            smaller = replace(case, **fields)
        except (MalformedCase, ValueError, TypeError):
            continue
        if smaller.id == case.id or smaller.id in out:
            continue
        if smaller.family != case.family or smaller.expected.reason != case.expected.reason:
            continue
        key = size(smaller)
        if key < here:
            out[smaller.id] = (key, order, smaller)
    return [c for _, _, c in sorted(out.values(), key=lambda t: (t[0], t[1]))]


def _moves(case: Case) -> Iterator[dict[str, Any]]:
    """Field changes, most reducing kinds first; validity and size are checked by the caller."""
    yield from _rank_moves(case)
    yield from _axes_moves(case)
    yield from _extent_moves(case)
    yield from _value_moves(case)
    yield from _layout_moves(case)
    if case.explore:
        yield {}  # the tag alone dropped (every move drops it)


def _valid_axes(case: Case) -> tuple[int, ...] | None:
    """The case's reduce axes as sorted non-negative indices, or None when they are not a valid
    set (a rejection case's axes: then its rank is left alone)."""
    rank = len(case.shape)
    if rank == 0 or not case.axes or not axes_in_range(case.axes, rank):
        return None
    norm = normalize_axes(case.axes, rank)
    return tuple(sorted(norm)) if axes_consecutive(norm) else None


def _axes_as(case: Case, norm: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """Sorted non-negative axes of a rank-`rank` shape, written negative when the case wrote all
    of its own so."""
    if all(a < 0 for a in case.axes):
        return tuple(a - rank for a in norm)
    return norm


ShapeOp = Callable[[tuple[int, ...]], tuple[int, ...]]
ViewOp = Callable[[View, tuple[int, ...], tuple[int, ...]], View | None]


def _reshape(case: Case, shape_op: ShapeOp, view_op: ViewOp) -> dict[str, Any] | None:
    """The fields of `case` with `shape_op` applied to dy's shape and to each perturbation
    shape of dy's rank (another rank is left as it is), and each explicit view made to follow
    its tensor's new shape (`view_op(view, old shape, new shape)`; None: it cannot, and neither
    can the move)."""
    rank = len(case.shape)
    fields: dict[str, Any] = {"shape": shape_op(case.shape)}
    for key in ("y_shape", "out_shape"):
        other = getattr(case, key)
        if other is not None and len(other) == rank:
            fields[key] = shape_op(other)
    for name in TENSORS:
        layout = getattr(case, f"{name}_layout")
        if not isinstance(layout, View):
            continue
        old = case.tensor_shape(name)
        key = "shape" if name == "dy" or getattr(case, f"{name}_shape") is None else f"{name}_shape"
        new = fields.get(key, old)
        if new == old:
            continue
        view = view_op(layout, old, new)
        if view is None:
            return None
        fields[f"{name}_layout"] = view
    return fields


def _fit_storage(view: View, old: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]):
    """The view of shape `new` with `strides` (`view` was of shape `old`): its storage shrunk
    with it, keeping what lay past its last element (where an output's overrun is caught)."""

    def last(shape: tuple[int, ...], st: tuple[int, ...]) -> int:
        if math.prod(shape) == 0:
            return view.offset - 1
        return view.offset + sum(s * (d - 1) for s, d in zip(st, shape, strict=True))

    slack = max(view.storage - 1 - last(old, view.strides), 0)
    storage = max(last(new, strides) + 1 + slack, view.offset)
    return View(tuple(strides), min(storage, view.storage), view.offset)


def _rank_moves(case: Case) -> Iterator[dict[str, Any]]:
    axes = _valid_axes(case)
    if axes is None:
        return
    rank = len(case.shape)
    for i in range(rank):
        if i in axes and len(axes) == 1:
            continue  # the only reduce axis stays

        def drop(shape: tuple[int, ...], i: int = i) -> tuple[int, ...]:
            return shape[:i] + shape[i + 1 :]

        def drop_view(view: View, old, new, i: int = i) -> View | None:
            strides = view.strides[:i] + view.strides[i + 1 :]
            return _fit_storage(view, old, strides, new) if len(old) == rank else None

        fields = _reshape(case, drop, drop_view)
        if fields is not None:
            kept = tuple(a - (a > i) for a in axes if a != i)
            fields["axes"] = _axes_as(case, kept, rank - 1)
            yield fields
    for i in range(rank - 1):
        if (i in axes) != (i + 1 in axes) or (i in axes and case.api == "dim"):
            continue  # a kept dim with a reduced one, or two reduced through the one-dim api

        def merge(shape: tuple[int, ...], i: int = i) -> tuple[int, ...]:
            return shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2 :]

        def merge_view(view: View, old, new, i: int = i) -> View | None:
            st = view.strides
            if len(old) != rank:
                return None
            if old[i] > 1 and old[i + 1] > 1 and st[i] != st[i + 1] * old[i + 1]:
                return None  # the two dims are not one run of memory
            inner = st[i + 1] if old[i + 1] > 1 else st[i]
            return View(st[:i] + (inner,) + st[i + 2 :], view.storage, view.offset)

        fields = _reshape(case, merge, merge_view)
        if fields is not None:
            kept = tuple(a - (a > i) for a in axes if a != i + 1)
            fields["axes"] = _axes_as(case, kept, rank - 1)
            yield fields


def _axes_moves(case: Case) -> Iterator[dict[str, Any]]:
    axes = _valid_axes(case)
    if axes is None or case.api != "axes":
        return
    rank = len(case.shape)
    if len(axes) > 1:
        yield {"axes": _axes_as(case, axes[1:], rank)}
        yield {"axes": _axes_as(case, axes[:-1], rank)}
    else:
        yield {"api": "dim"}


def _smaller_extents(d: int) -> list[int]:
    if d <= 1:
        return []
    return sorted({1, d // 2, d - d // 4, d - 1} - {d, 0})


def _extent_moves(case: Case) -> Iterator[dict[str, Any]]:
    rank = len(case.shape)
    for i, d in enumerate(case.shape):
        for e in _smaller_extents(d):

            def set_extent(shape: tuple[int, ...], i: int = i, d: int = d, e: int = e):
                # a perturbation shape follows dy's where it agrees with it
                return shape[:i] + (e,) + shape[i + 1 :] if shape[i] == d else shape

            def follow(view: View, old, new) -> View:
                return _fit_storage(view, old, view.strides, new)

            moved = _reshape(case, set_extent, follow)
            if moved is not None:
                yield moved
    for name in ("y", "out"):
        other = getattr(case, f"{name}_shape")
        if other is None:
            continue
        for i, d in enumerate(other):
            if len(other) == rank and case.shape[i] == d:
                continue  # follows dy's extent (above)
            for e in _smaller_extents(d):
                new = other[:i] + (e,) + other[i + 1 :]
                own: dict[str, Any] = {f"{name}_shape": new}
                layout = getattr(case, f"{name}_layout")
                if isinstance(layout, View):
                    own[f"{name}_layout"] = _fit_storage(layout, other, layout.strides, new)
                yield own


def _value_moves(case: Case) -> Iterator[dict[str, Any]]:
    if case.special != "none":
        yield {"special": "none", "special_at": "random"}
        if case.special_at != "random":
            yield {"special_at": "random"}
    for name in ("y", "dy"):
        dist = getattr(case, f"{name}_dist")
        clear = {f"{name}_range": None, f"{name}_fill": None}
        for simple in _SIMPLE[name]:
            if dist != simple:
                yield {f"{name}_dist": simple, **clear}
        bounds = getattr(case, f"{name}_range")
        if dist == "range" and bounds is not None and bounds[1] - bounds[0] > MIN_RANGE_WIDTH:
            lo, hi = bounds
            mid = lo + (hi - lo) / 2
            if lo < mid < hi:
                yield {f"{name}_range": (lo, mid)}
                yield {f"{name}_range": (mid, hi)}


def _layout_moves(case: Case) -> Iterator[dict[str, Any]]:
    for name in TENSORS:
        layout = getattr(case, f"{name}_layout")
        if layout != "contiguous":
            yield {f"{name}_layout": "contiguous"}
        if isinstance(layout, View):
            yield {f"{name}_layout": "strided"}
    if sum(getattr(case, f"{n}_layout") != "contiguous" for n in TENSORS) > 1:
        yield {f"{n}_layout": "contiguous" for n in TENSORS}


def describe(case: Case) -> str:
    """A case's size in words: "1x32000 (32,000 elements)", with a perturbed y or out shape
    ("2x8 (16 elements; y 2x9)")."""
    n = case.numel
    text = f"{shape_text(case.shape)} ({n:,} element{'s' if n != 1 else ''}"
    for name in ("y", "out"):
        other = getattr(case, f"{name}_shape")
        if other is not None:
            text += f"; {name} {shape_text(other)}"
    return text + ")"
