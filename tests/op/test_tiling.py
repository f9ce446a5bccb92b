"""The operator's own tiling, read back through the C ABI (lsg_get_workspace_size, then
lsg_executor_tiling) of both libraries, against expectations worked out by hand from SPEC
section 3. (The emulated real kernel's library also runs the host's TilingFunc on every accepted
call and refuses one that disagrees with lsg::plan, so each plan here checks that too.)

UB blocks: NO_REDUCE 6 (dy, y, out double-buffered), REDUCE_TAIL 5 (dy x2, ReduceSum's block, y,
out), REDUCE_MID 6 (dy x2, partial and total column sums, y, out).  Block bytes = UB / blocks
aligned down to 32; elements = bytes / 4 for every dtype (fp32 compute; 2-byte data goes in the
back half), for 2-byte dtypes aligned down to 16 so that the back half starts on a 32-byte
boundary:

    Ascend910B*  UB 196608: /6 = 32768 -> 8192 elems;  /5 = 39321.6 -> 39296 -> 9824 elems
    Ascend310B1  UB 253952: /6 = 42325.3 -> 42304 -> 10576; /5 = 50790.4 -> 50784 -> 12696
                 (fp32) or 12688 (fp16: 12696 is not a multiple of 16)
"""

from __future__ import annotations

import pytest

from farm.agent.backends import native
from golden import contract
from golden.soc import PROFILES
from tests.op import twin_abi


@pytest.fixture
def tile(native_lib):
    def tile(shape, axes, soc="Ascend910B1", dtype="float32", strides=None, out_strides=None):
        spec = native.Spec(tuple(shape), dtype, strides)
        out = native.Spec(tuple(shape), dtype, out_strides)
        result = native.plan(spec, spec, axes, out, soc, library=native_lib)
        assert result.status == 0, result.message
        assert result.tiling is not None  # an accepted call has its tiling
        assert result.workspace == result.tiling["workspace_bytes"]
        return result.tiling

    return tile


def test_soc_table_matches_golden(native_lib):
    got = native.soc_profiles(native_lib)
    assert [p["name"] for p in got] == list(PROFILES)
    for p in got:
        ref = PROFILES[p["name"]]
        fields = ("family", "vector_cores", "ub_bytes", "block_bytes", "bf16_cast")
        assert {f: p[f] for f in fields} == {f: getattr(ref, f) for f in fields}


def test_version_and_build_info(native_lib):
    from farm.pool.build import op_version

    target = "twin" if native_lib.name == "liblsg_twin.so" else "ascendc-cpu"
    assert native.version(native_lib) == op_version()
    assert twin_abi.build_info(native_lib) == f"plant_bug=;sanitize=0;target={target}"
    assert native.build_info(native_lib) == {"plant_bug": "", "sanitize": "0", "target": target}


MERGES = [
    # shape, axes, (d0, d1, d2), schedule
    ((), (-1,), (1, 1, 1), "NO_REDUCE"),
    ((), (0,), (1, 1, 1), "NO_REDUCE"),
    ((7,), (0,), (1, 7, 1), "REDUCE_TAIL"),
    ((7,), (-1,), (1, 7, 1), "REDUCE_TAIL"),
    ((3, 5), (0,), (1, 3, 5), "REDUCE_MID"),
    ((3, 5), (-2,), (1, 3, 5), "REDUCE_MID"),
    ((3, 5), (1,), (3, 5, 1), "REDUCE_TAIL"),
    ((2, 3, 4), (1,), (2, 3, 4), "REDUCE_MID"),
    ((2, 3, 4), (0, 1), (1, 6, 4), "REDUCE_MID"),
    ((2, 3, 4), (1, 2), (2, 12, 1), "REDUCE_TAIL"),
    ((2, 3, 4), (2, 1), (2, 12, 1), "REDUCE_TAIL"),
    ((2, 3, 4), (-1, -2), (2, 12, 1), "REDUCE_TAIL"),
    ((2, 3, 4), (0, 1, 2), (1, 24, 1), "REDUCE_TAIL"),
    ((2, 3, 4, 5), (1, 2), (2, 12, 5), "REDUCE_MID"),
    ((2, 1, 3, 1, 2), (1,), (2, 1, 6), "NO_REDUCE"),
    ((2, 1, 3, 1, 2), (3,), (6, 1, 2), "NO_REDUCE"),
    ((2, 1, 3, 1, 2), (-2, -1), (6, 2, 1), "REDUCE_TAIL"),
    ((1, 2, 3, 4, 5, 6), (5,), (120, 6, 1), "REDUCE_TAIL"),
    ((2, 2, 2, 2, 2, 2, 2), (3,), (8, 2, 8), "REDUCE_MID"),
    ((2, 1, 2, 1, 3, 1, 2, 2), (2, 3, 4), (2, 6, 4), "REDUCE_MID"),
    ((2, 1, 2, 1, 3, 1, 2, 2), (-1,), (24, 2, 1), "REDUCE_TAIL"),
    ((2, 1, 2, 1, 3, 1, 2, 2), tuple(range(8)), (1, 48, 1), "REDUCE_TAIL"),
    ((2, 1, 2, 1, 3, 1, 2, 2), (1,), (2, 1, 24), "NO_REDUCE"),
]


@pytest.mark.parametrize("shape, axes, merged, schedule", MERGES)
def test_merge_and_schedule(tile, shape, axes, merged, schedule):
    t = tile(shape, axes)
    assert (t["d0"], t["d1"], t["d2"]) == merged
    assert t["schedule_name"] == schedule
    assert t["schedule"] == contract.SCHEDULES.index(schedule)
    # The contract's own merge agrees (written independently in golden/).
    assert contract.merge_shape(shape, axes) == merged
    assert contract.schedule(shape, axes) == schedule


@pytest.mark.parametrize(
    "soc, rows, used, big, per_big, per_small",
    [
        ("Ascend910B1", 48, 48, 0, 1, 1),  # exactly the core count
        ("Ascend910B1", 100, 48, 4, 3, 2),  # 100 = 48 * 2 + 4
        ("Ascend910B1", 47, 47, 0, 1, 1),  # fewer rows than cores
        ("Ascend910B1", 1, 1, 0, 1, 1),
        ("Ascend910B3", 40, 40, 0, 1, 1),
        ("Ascend910B3", 100, 40, 20, 3, 2),  # 100 = 40 * 2 + 20
        ("Ascend910B3", 81, 40, 1, 3, 2),  # 81 = 40 * 2 + 1
        ("Ascend910B4", 120, 40, 0, 3, 3),
        ("Ascend310B1", 1, 1, 0, 1, 1),
        ("Ascend310B1", 100, 1, 0, 100, 100),  # one core takes every row
    ],
)
def test_core_split(tile, soc, rows, used, big, per_big, per_small):
    t = tile((rows, 19), (-1,), soc)
    assert t["rows"] == rows
    assert (t["cores_used"], t["big_cores"]) == (used, big)
    assert (t["rows_per_big_core"], t["rows_per_small_core"]) == (per_big, per_small)
    assert big * per_big + (used - big) * per_small == rows


@pytest.mark.parametrize(
    "soc, dtype, schedule_shape, blocks, block_bytes, elems",
    [
        ("Ascend910B1", "float32", ((4, 1, 5), (1,)), 6, 32768, 8192),
        ("Ascend910B1", "float16", ((4, 1, 5), (1,)), 6, 32768, 8192),
        ("Ascend910B1", "bfloat16", ((4, 1, 5), (1,)), 6, 32768, 8192),
        ("Ascend910B1", "float32", ((4, 5), (1,)), 5, 39296, 9824),
        ("Ascend910B1", "float16", ((4, 5), (1,)), 5, 39296, 9824),
        ("Ascend910B1", "bfloat16", ((4, 5, 3), (1,)), 6, 32768, 8192),
        ("Ascend910B3", "float32", ((4, 5, 3), (1,)), 6, 32768, 8192),
        ("Ascend310B1", "float32", ((4, 1, 5), (1,)), 6, 42304, 10576),
        ("Ascend310B1", "float16", ((4, 1, 5), (1,)), 6, 42304, 10576),
        ("Ascend310B1", "float32", ((4, 5), (1,)), 5, 50784, 12696),
        ("Ascend310B1", "float16", ((4, 5), (1,)), 5, 50784, 12688),
        ("Ascend310B1", "float16", ((4, 5, 3), (1,)), 6, 42304, 10576),
    ],
)
def test_ub_plan(tile, soc, dtype, schedule_shape, blocks, block_bytes, elems):
    t = tile(*schedule_shape, soc, dtype)
    assert (t["ub_blocks"], t["block_bytes"], t["block_elems"]) == (blocks, block_bytes, elems)
    ub = PROFILES[soc].ub_bytes
    assert blocks * block_bytes <= ub < blocks * (block_bytes + 32)
    assert elems * 4 <= block_bytes  # fp32 compute width fits the block


# The exact row length where one block stops being enough, and just past it.
@pytest.mark.parametrize(
    "soc, dtype, cap",
    [
        ("Ascend910B1", "float32", 9824),
        ("Ascend910B1", "float16", 9824),
        ("Ascend910B1", "bfloat16", 9824),
        ("Ascend310B1", "float32", 12696),
        ("Ascend310B1", "float16", 12688),
    ],
)
def test_chunking_boundary_reduce_tail(tile, soc, dtype, cap):
    at = tile((2, cap), (-1,), soc, dtype)
    assert (at["row_len"], at["chunk_count"], at["tail_elems"], at["is_small_shape"]) == (
        cap,
        1,
        cap,
        True,
    )
    assert at["key"] == 1 | 1 << 8 | 1 << 9  # 769, as the public implementation names it
    past = tile((2, cap + 1), (-1,), soc, dtype)
    assert (past["chunk_count"], past["tail_elems"], past["is_small_shape"]) == (2, 1, False)
    assert past["key"] == 1 | 1 << 9
    far = tile((2, 2 * cap + 3), (-1,), soc, dtype)
    assert (far["chunk_count"], far["tail_elems"]) == (3, 3)
    exact = tile((2, 3 * cap), (-1,), soc, dtype)
    assert (exact["chunk_count"], exact["tail_elems"]) == (3, cap)


def test_chunking_boundary_reduce_mid_runs_along_d2(tile):
    # REDUCE_MID chunks the d2 columns (the d1 lines are looped), so d1 never forces a chunk.
    t = tile((2, 50000, 8192), (1,))
    assert (t["row_len"], t["chunk_count"], t["tail_elems"]) == (8192, 1, 8192)
    t = tile((2, 3, 8193), (1,))
    assert (t["schedule_name"], t["row_len"], t["chunk_count"], t["tail_elems"]) == (
        "REDUCE_MID",
        8193,
        2,
        1,
    )
    assert t["key"] == 2 | 1 << 9


def test_chunking_boundary_no_reduce(tile):
    t = tile((2, 1, 8192), (1,))
    assert (t["row_len"], t["chunk_count"], t["tail_elems"], t["key"]) == (8192, 1, 8192, 768)
    t = tile((2, 1, 8193), (1,))
    assert (t["chunk_count"], t["tail_elems"], t["key"]) == (2, 1, 512)


def test_vocabulary_rows(tile):
    t = tile((4, 152064), (-1,), "Ascend910B1", "bfloat16")
    # 152064 = 15 * 9824 + 4704
    assert (t["chunk_count"], t["tail_elems"]) == (16, 4704)


def test_workspace_for_strided_views(tile):
    shape = (4, 6)
    strided = (12, 2)
    assert tile(shape, (-1,))["workspace_bytes"] == 0
    t = tile(shape, (-1,), strides=strided)  # dy and y strided: two 96-byte copies
    assert (t["workspace_bytes"], t["is_contiguous"], t["key"]) == (192, False, 1 | 1 << 8)
    t = tile(shape, (-1,), out_strides=strided)
    assert t["workspace_bytes"] == 96
    t = tile(shape, (-1,), dtype="float16", strides=strided, out_strides=strided)
    assert t["workspace_bytes"] == 3 * 64  # 48 bytes each, aligned up to 32
    # A stride on an extent of 1 does not break contiguity.
    assert tile((4, 1, 6), (-1,), strides=(6, 99, 1))["workspace_bytes"] == 0


@pytest.mark.parametrize("shape, axes", [((0, 5), (-1,)), ((4, 0, 3), (1,)), ((3, 0), (0,))])
def test_empty_plans_nothing(tile, shape, axes):
    t = tile(shape, axes, strides=tuple(2 for _ in shape))
    assert t["is_empty"] and t["workspace_bytes"] == 0
    assert (t["cores_used"], t["chunk_count"], t["tail_elems"]) == (0, 0, 0)


def test_empty_with_huge_extents(tile):
    # Accepted and planned without overflow: the merged d0 saturates, nothing runs.
    t = tile((1 << 40, 1 << 40, 0), (2,))
    assert t["is_empty"] and (t["d0"], t["d1"], t["d2"]) == ((1 << 63) - 1, 0, 1)
