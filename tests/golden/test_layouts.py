"""golden/layouts.py: per-tensor layouts, validation, placement over NaN storage, the guard."""

from __future__ import annotations

import numpy as np
import pytest

from golden import layouts
from golden.dtypes import numpy_dtype
from golden.layouts import View


def test_names_resolve_to_views() -> None:
    assert layouts.resolve("contiguous", (3, 5)) == View((5, 1), 15, 0)
    # every other element along the last axis of extent > 1
    assert layouts.resolve("strided", (3, 5)) == View((10, 2), 30, 0)
    assert layouts.resolve("strided", (4, 6, 1)) == View((12, 2, 1), 48, 0)
    assert layouts.resolve("strided", (1, 1)) == View((1, 1), 1, 0)  # one element: contiguous
    assert layouts.resolve("strided", ()) == View((), 1, 0)
    assert layouts.is_dense("contiguous", (3, 5)) and not layouts.is_dense("strided", (3, 5))
    assert layouts.is_dense(View((5, 1), 40, 7), (3, 5))  # an offset does not matter
    assert not layouts.is_dense(View((1, 3), 15, 0), (3, 5))  # column-major
    assert layouts.is_dense(View((99, 1), 5, 0), (1, 5))  # extent 1: any stride


def test_parse_and_json() -> None:
    view = View((40, 2), 200, 3)
    assert layouts.parse(view.to_json()) == view
    assert layouts.parse({"strides": [5, 1], "storage": 15}) == View((5, 1), 15, 0)
    assert layouts.parse("strided") == "strided"
    assert view.text == "st40.2.off3.sz200" and View((), 4, 0).text == "stnone.sz4"
    for bad, match in (
        ("diagonal", "not a layout name"),
        ({"strides": [1]}, "explicit layout"),
        ({"strides": [1.5], "storage": 3}, "stride 1.5 is not an integer"),
        ({"strides": 1, "storage": 3}, "list of integers"),
        (3, "not a layout"),
    ):
        with pytest.raises(ValueError, match=match):
            layouts.parse(bad)


def test_problems_name_what_is_wrong() -> None:
    shape = (3, 5)
    assert layouts.problems(View((10, 2), 30, 0), shape, writable=True) == []
    assert "3 strides for rank 2" in layouts.problems(View((1, 1, 1), 9), shape, writable=False)[0]
    assert "must be >= 0" in layouts.problems(View((-5, 1), 15), shape, writable=False)[0]
    (msg,) = layouts.problems(View((10, 2), 30, 2), shape, writable=False)
    assert "reaches element 30 of a storage of 30" in msg
    # an output view must not overlap itself; an input view may
    bcast = View((0, 1), 5, 0)
    assert layouts.problems(bcast, shape, writable=False) == []
    (msg,) = layouts.problems(bcast, shape, writable=True)
    assert "must not overlap itself" in msg
    # overlapping only through interleaving the sufficient rule cannot prove disjoint
    assert not layouts.overlaps(View((2, 3), 8), (3, 2))  # offsets 0 3 2 5 4 7
    assert layouts.overlaps(View((2, 2), 7), (3, 2))
    # empty tensors address nothing
    assert layouts.problems(View((0, 0), 0), (0, 4), writable=True) == []


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_place_keeps_values_and_fills_the_rest_with_the_sentinel(dtype: str) -> None:
    dt = numpy_dtype(dtype)
    values = (np.arange(15).reshape(3, 5) - 7).astype(dt)
    layout = View((9, 2), 40, 4)
    view = layouts.place(values, layout)
    assert view.shape == (3, 5) and np.array_equal(view, values)
    storage, _ = layouts.allocate((3, 5), dt, layout)
    storage[layouts.element_offsets(layout, (3, 5))] = values.reshape(-1)
    assert layouts.outside_untouched(storage, layout, (3, 5))
    outside = np.ones(40, bool)
    outside[layouts.element_offsets(layout, (3, 5))] = False
    filler = storage[outside].astype(np.float64)
    assert np.isnan(filler).all() if dtype != "int32" else (filler == -1).all()
    storage[int(np.flatnonzero(outside)[-1])] = values[0, 0]
    assert not layouts.outside_untouched(storage, layout, (3, 5))


def test_guard_compares_bits_not_values() -> None:
    storage, view = layouts.allocate((2, 2), np.float32, "strided")
    view[...] = 1
    assert layouts.outside_untouched(storage, "strided", (2, 2))
    storage[1] = np.float32(-np.nan)  # another NaN is still a write
    assert not layouts.outside_untouched(storage, "strided", (2, 2))


@pytest.mark.parametrize(
    "layout, shape",
    [
        ("contiguous", (3, 5)),
        ("contiguous", ()),
        ("contiguous", (2, 0, 3)),
        (View((5, 1), 15, 0), (3, 5)),  # dense over its whole storage
        (View((5, 1), 16, 0), (3, 5)),  # dense, one element after it
        (View((5, 1), 16, 1), (3, 5)),  # dense, one element before it
        (View((99, 1), 5, 0), (1, 5)),  # dense: extent 1, any stride
        (View((1, 3), 15, 0), (3, 5)),  # column-major: every element, not C order
        ("strided", (3, 5)),
        (View((2, 3), 8, 0), (3, 2)),  # interleaved
    ],
)
def test_the_guard_sees_every_element_outside_the_view_and_none_inside(
    layout: str | View, shape: tuple[int, ...]
) -> None:
    """The guard's answer, element by element: a write to any storage element outside the view
    is seen, a write inside is not (the C-order dense view over its whole storage included,
    which the guard answers without looking)."""
    storage, view = layouts.allocate(shape, np.float32, layout)
    inside = set(layouts.element_offsets(layout, shape).tolist()) if view.size else set()
    assert layouts.outside_untouched(storage, layout, shape)
    for position in range(storage.size):
        written = storage.copy()
        written[position] = 1.0
        assert layouts.outside_untouched(written, layout, shape) == (position in inside), position


def test_overlapping_input_view_is_deterministic() -> None:
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = layouts.place(values, View((0, 1), 4))
    # all rows share one storage row: the last row in C order wins
    assert np.array_equal(view, np.broadcast_to(values[-1], (3, 4)))


def test_rank0_and_empty() -> None:
    view = layouts.place(np.array(2.5, np.float32), View((), 4, 3))
    assert view.shape == () and float(view) == 2.5
    assert layouts.place(np.array(2.5, np.float32), "contiguous").shape == ()
    empty = layouts.place(np.zeros((2, 0, 3), np.float16), "strided")
    assert empty.shape == (2, 0, 3)


def test_describe_classes() -> None:
    assert layouts.describe("strided", (3, 5)) == "strided"
    assert layouts.describe(View((5, 1), 20, 5), (3, 5)) == "view, dense, offset"
    assert layouts.describe(View((1, 3), 15), (3, 5)) == "view, strided"
    assert layouts.describe(View((0, 1), 5), (3, 5)) == "view, overlapping"
