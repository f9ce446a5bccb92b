"""Per-tensor layouts on both libraries of the C ABI (the emulated real kernel and the twin): an
out of any view over NaN storage gets the values of a contiguous run and the storage around it is
left alone (out_guard_ok); inputs as views; the extents the tiers cross are the libraries' own
block sizes."""

from __future__ import annotations

import numpy as np
import pytest

from farm.agent import execute
from farm.agent.backends import native
from farm.run.requests import case_request
from golden import layouts, soc
from golden.inputs import make_inputs
from golden.layouts import View
from suites import matrix, matrix_shapes
from suites.case import Case

DTYPES = ("float32", "float16", "bfloat16")


def same_bits(a, b) -> bool:
    a, b = np.array(a, order="C"), np.array(b, order="C")
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _storage(view: np.ndarray) -> np.ndarray:
    base = view
    while base.base is not None:
        base = base.base
    return base


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, axes, layout",
    [
        ((3, 33), (-1,), View((40, 1), 3 * 40 + 9, 5)),  # padded rows, offset
        ((3, 33), (-1,), View((70, 2), 220, 3)),  # every other element, padded, offset
        ((2, 9, 5), (1,), View((1, 2, 18), 4 + 90, 4)),  # column-major, offset
        ((4, 1, 6), (1,), View((6, 6, 1), 24 + 11, 11)),  # dense at an offset
        ((), (-1,), View((), 8, 7)),
    ],
)
def test_out_view_with_storage_and_offset_matches_a_contiguous_run(
    native_lib, dtype, shape, axes, layout
):
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=11)
    plain = native.run(dy, y, axes, "Ascend910B1")
    viewed = native.run(dy, y, axes, "Ascend910B1", out_layout=layout)
    assert plain.status == viewed.status == 0
    assert plain.out_guard_ok is True and viewed.out_guard_ok is True
    assert viewed.out is not None and plain.out is not None  # both accepted
    assert same_bits(viewed.out, plain.out)
    storage = _storage(viewed.out)
    assert storage.size == layout.storage
    assert layouts.outside_untouched(storage, layout, shape)
    # the JSON form of the layout is accepted as well (what run_call gets from a case dict)
    again = native.run_call(
        dy, y, axes, "Ascend910B1", out_dtype=dtype, out_layout=layout.to_json()
    )
    assert same_bits(again.out, plain.out) and again.out_guard_ok is True


def test_guard_sees_a_write_outside_the_view(native_lib):
    shape, layout = (3, 33), View((40, 1), 129, 5)
    dy, y = make_inputs(shape, "float16", (-1,), "uniform", "normal", seed=2)
    storage, out = native._make_out(shape, np.float16, layout)
    result = native.run(dy, y, (-1,), "Ascend910B1", out=out)
    assert result.out_guard_ok is None  # a caller's out: the backend does not know its storage
    assert native.out_guard_ok(storage, layout, shape)
    # A kernel writing one element past a row (into the padding), or before the view:
    for k in (5 + 33, 4, 128):
        spoiled = storage.copy()
        spoiled[k] = out[0, 0]
        assert not native.out_guard_ok(spoiled, layout, shape), k
    # Writing inside the view is not caught by the guard (the values are judged instead).
    spoiled = storage.copy()
    spoiled[5] = 0
    assert native.out_guard_ok(spoiled, layout, shape)


def test_out_view_that_overlaps_itself_is_refused(native_lib):
    dy, y = make_inputs((3, 5), "float32", (-1,), "uniform", "normal", seed=1)
    with pytest.raises(ValueError, match="must not overlap itself"):
        native.run(dy, y, (-1,), "Ascend910B1", out_layout=View((0, 1), 5))


@pytest.mark.parametrize("form", ["all strided, distinct", "offsets", "dy broadcast"])
@pytest.mark.parametrize("shape, axes", [((3, 33), (-1,)), ((2, 9, 5), (1,))])
def test_case_views_for_all_three_tensors(native_lib, form, shape, axes):
    kw = matrix_shapes._layout_forms(shape, True)[form]
    case = case_request(Case("ascend910b", "float16", shape, axes, origin="layouts", **kw))
    dy, y = execute.make_call_inputs(case)
    for name, t in (("dy", dy), ("y", y)):
        layout = execute.case_layout(case, name)
        assert t is not None
        if layout != "contiguous":
            # the storage around an input view is NaN: a kernel reading outside reads NaN
            assert layouts.outside_untouched(_storage(t), layout, shape)
    out_layout = execute.case_layout(case, "out")
    viewed = native.run_call(dy, y, axes, "Ascend910B1", out_dtype="float16", out_layout=out_layout)
    dense_dy, dense_y = (np.array(t, order="C") for t in (dy, y))
    plain = native.run_call(dense_dy, dense_y, axes, "Ascend910B1", out_dtype="float16")
    assert viewed.status == 0 and viewed.out_guard_ok is True
    assert same_bits(viewed.out, plain.out)
    assert viewed.tiling is not None
    assert viewed.tiling["is_contiguous"] == (Case.from_dict(case).layout == "contiguous")


def test_block_elems_are_the_libraries_own(native_lib):
    shapes = {"REDUCE_TAIL": ((2, 5), (-1,)), "REDUCE_MID": ((2, 3, 5), (1,)),
              "NO_REDUCE": ((2, 1, 5), (1,))}  # fmt: skip
    for family in matrix.FAMILIES:
        for dtype in DTYPES:
            for schedule, (shape, axes) in shapes.items():
                planned = set()
                for profile in soc.PROFILES.values():
                    if profile.family != family or (dtype == "bfloat16" and not profile.bf16_cast):
                        continue
                    spec = native.Spec(shape, np.dtype(_numpy(dtype)))
                    result = native.plan(spec, spec, axes, spec, profile.name)
                    assert result.tiling is not None, result.message
                    assert result.tiling["schedule_name"] == schedule
                    planned.add(result.tiling["block_elems"])
                if planned:
                    assert set(matrix.block_elems(family, dtype, schedule)) == planned


def _numpy(dtype: str):
    from golden.dtypes import numpy_dtype

    return numpy_dtype(dtype)


def test_torch_backend_writes_into_the_out_view():
    from farm.agent.backends import torch_backend  # torch is a pinned dev dependency

    shape, axes, layout = (3, 33), (-1,), View((70, 2), 220, 3)
    dy, y = make_inputs(shape, "float32", axes, "uniform", "normal", seed=5)
    plain = torch_backend.run_call(dy, y, axes, "Ascend910B1", out_dtype="float32")
    viewed = torch_backend.run_call(
        dy, y, axes, "Ascend910B1", out_dtype="float32", out_layout=layout
    )
    assert plain.status == viewed.status == 0, viewed.message
    assert viewed.out is not None and plain.out is not None
    assert viewed.out.strides == (70 * 4, 2 * 4) and viewed.out_guard_ok is True
    assert same_bits(viewed.out, plain.out)
