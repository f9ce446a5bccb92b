"""The case model and the tier matrices: counts, coverage, determinism, expectations."""

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from golden import contract
from golden.layouts import View
from suites import matrix
from suites.case import Case
from suites.workspace import copied


@pytest.fixture(scope="module")
def tiers():
    return {tier: matrix.expand(tier) for tier in matrix.TIERS}


def test_tier_volumes(tiers):
    # The whole calls of the pre-merge tier; its layer cases make no call with data (one reading
    # of the registration a family, the tiling function alone on a rejection, the graph inference
    # on a node), a few dozen.
    # (300 before issue 59 added cases for what the aclnn layer copies, what coverage found
    # reached by fewer than 3 cases, and what mutants showed unchecked: 322.)
    assert len([c for c in tiers["smoke"] if not c.layer]) <= 330
    assert len([c for c in tiers["smoke"] if c.layer]) <= 48
    assert len(tiers["nightly"]) >= 5000
    assert len(tiers["full"]) >= 30000
    for tier in ("nightly", "full"):
        per_group = Counter((c.family, c.dtype) for c in tiers[tier])
        for family in matrix.FAMILIES:
            for dtype in matrix.DTYPES:
                assert per_group[family, dtype] >= 200, (tier, family, dtype)
    # The commercial standard asks for at least a million output elements in all.
    assert sum(c.numel for c in tiers["nightly"] if c.accepted) >= 1_000_000


def test_smoke_touches_everything(tiers):
    smoke = tiers["smoke"]
    for family in matrix.FAMILIES:
        mine = [c for c in smoke if c.family == family and not c.layer]  # the whole calls
        accepted = [c for c in mine if c.accepted]
        assert {c.schedule for c in accepted} >= {"NO_REDUCE", "REDUCE_TAIL", "REDUCE_MID", "EMPTY"}
        assert {c.dtype for c in mine} >= set(matrix.DTYPES)
        assert {len(c.shape) for c in accepted} >= {0, 8}
        assert any(c.api == "axes" and len(c.axes) > 1 for c in accepted)
        assert {c.layout for c in accepted} == {"contiguous", "strided"}
        reasons = {c.expected.reason for c in mine if not c.accepted}
        expected_reasons = set(contract.REJECTION_REASONS)
        if family == "ascend910b":
            expected_reasons.discard("bf16_unsupported_on_soc")
        assert reasons == expected_reasons, family
    # bf16 runs on Atlas A2 and is refused on the 310B family.
    assert any(c.dtype == "bfloat16" and c.accepted for c in smoke if c.family == "ascend910b")
    assert all(not c.accepted for c in smoke if c.family == "ascend310b" and c.dtype == "bfloat16")


def test_ids_are_unique_and_expansion_is_deterministic(tiers):
    for tier, cases in tiers.items():
        ids = [c.id for c in cases]
        assert len(ids) == len(set(ids)), tier
    nightly_again = matrix.expand("nightly")
    assert [c.id for c in nightly_again] == [c.id for c in tiers["nightly"]]


def test_id_and_seed_are_stable_across_machines():
    case = Case("ascend910b", "float16", (2, 7, 33), (1,))
    # Pinned: changing the id scheme or the seed derivation silently changes every input.
    assert case.id == "910b_f16_2x7x33_d1_y.uniform_dy.normal"
    assert case.seed == 2141733313
    again = Case.from_dict(case.to_dict())
    assert again == case and again.seed == case.seed


def test_expectations_follow_the_contract():
    a2, b = "ascend910b", "ascend310b"
    assert Case(b, "bfloat16", (4, 8), (-1,)).expected.reason == "bf16_unsupported_on_soc"
    assert Case(a2, "bfloat16", (4, 8), (-1,)).accepted
    assert Case(b, "bfloat16", (0, 8), (-1,)).expected.status == 161002
    assert Case(a2, "float32", (3,), (0,), missing="out").expected.status == 161001
    assert Case(a2, "float32", (0, 3), (1,), y_shape=(0, 4)).expected.reason == "shape_mismatch"
    assert Case(a2, "float32", (), (-1,)).accepted
    assert Case(a2, "float32", (), (1,)).expected.reason == "dim_out_of_range"
    assert (
        Case(a2, "float32", (2, 3, 4), (0, 2), api="axes").expected.reason == "axes_not_consecutive"
    )
    assert Case(a2, "float32", (2, 3, 4), (2, 1), api="axes").accepted
    assert Case(a2, "float32", (1,) * 9, (0,)).expected.reason == "rank_too_large"
    assert Case(a2, "float32", (2, 3, 4), (1, 2), api="axes").schedule == "REDUCE_TAIL"
    assert Case(a2, "float32", (2, 1, 4), (1,)).schedule == "NO_REDUCE"
    assert Case(a2, "float32", (2, 0, 4), (1,)).schedule == "EMPTY"


def test_malformed_case_names_the_field():
    with pytest.raises(ValueError, match="dtype 'float8'"):
        Case("ascend910b", "float8", (2,), (0,))
    with pytest.raises(ValueError, match="family 'ascend999'"):
        Case("ascend999", "float32", (2,), (0,))
    with pytest.raises(ValueError, match="exactly one axis"):
        Case("ascend910b", "float32", (2, 3), (0, 1), api="dim")
    data = Case("ascend910b", "float32", (2, 3), (1,)).to_dict()
    data["dtype"] = "float16"
    with pytest.raises(ValueError, match="does not match"):
        Case.from_dict(data)


def test_chunk_boundaries_bracket_one_ub_block():
    # REDUCE_TAIL, 5 blocks: 910B 196608 B -> 39296 B -> 9824 elements; 310B 253952 B -> 12696
    # (12688 for 2-byte dtypes, aligned to 16). REDUCE_MID, 6 blocks: 8192 and 10576.
    assert {9823, 9824, 9825, 12687, 12688, 12689, 12695, 12696, 12697} <= set(
        matrix.CHUNK_BOUNDARIES
    )
    assert {8191, 8192, 8193, 10575, 10576, 10577} <= set(matrix.MID_CHUNK_BOUNDARIES)


def test_every_gate_is_one_a_correct_kernel_can_pass(tiers):
    from suites import gates

    for case in tiers["nightly"]:
        if case.accepted:
            assert gates.applicable(
                case.standard, case.dtype, case.numel, case.y_dist, case.dy_dist
            ), case.id
    assert not gates.applicable("double-thousandth", "bfloat16", 100, "uniform", "normal")
    assert gates.default_gate("float32", 10_000, "uniform", "normal")[0] == "mixed-tolerance"
    assert gates.default_gate("float32", 100, "flat", "ones")[0] == "mixed-tolerance"
    assert gates.default_gate("bfloat16", 10**6, "uniform", "normal") == ("benchmark-ratio", "L0")
    assert gates.default_gate("bfloat16", 1000, "uniform", "normal")[0] == "experimental"


def test_unknown_tier_is_one_clear_error():
    with pytest.raises(matrix.UnknownTierError, match="smoke, nightly, full"):
        matrix.expand("weekly")


# -- inputs written by others: value forms, special placement, per-tensor layouts -------------


def _has(cases, **want):
    return any(all(getattr(c, k) == v for k, v in want.items()) for c in cases if c.accepted)


@pytest.mark.parametrize("tier", matrix.TIERS)
def test_new_input_classes_are_in_every_tier(tiers, tier):
    cases = tiers[tier]
    for bounds in matrix.Y_RANGES:
        assert _has(cases, y_dist="range", y_range=bounds), (tier, bounds)
    for dtype in ("float16", "bfloat16"):
        assert _has(cases, dtype=dtype, dy_range=matrix.DY_OVERFLOW_RANGES[dtype]), (tier, dtype)
    for tensor in ("dy", "y"):
        fills = {_fill_key(getattr(c, f"{tensor}_fill")) for c in cases if c.accepted}
        assert {"0.0", "1.0", "-1.0", "inf", "-inf", "nan"} <= fills, (tier, tensor)
    placed = {c.special_at for c in cases if c.accepted and c.special != "none"}
    assert placed >= {"random", "row_start", "row_middle", "row_end"}, tier
    assert {c.special for c in cases if c.accepted} >= set(matrix.NEW_SPECIALS), tier
    contiguous = "contiguous"
    assert _has(cases, dy_layout=contiguous, y_layout=contiguous, out_layout="strided"), tier
    views = [c for c in cases if c.accepted and all(isinstance(v, View) for v in _layouts_of(c))]
    assert any(len({v.strides for v in _layouts_of(c)}) == 3 for c in views), tier
    assert any(c.numel and all(v.offset for v in _layouts_of(c)) for c in views), tier
    # grouping constants of the kernel, -1/+0/+1
    lanes = {c.shape[-1] for c in cases if c.schedule == "REDUCE_TAIL" and c.origin == "grouping"}
    lines = {c.shape[1] for c in cases if c.schedule == "REDUCE_MID" and c.origin == "grouping"}
    if tier == "smoke":
        assert matrix.REDUCE_LANES + 1 in lanes and matrix.MID_GROUP_LINES + 1 in lines
    else:
        assert set(matrix.around(matrix.REDUCE_LANES)) <= lanes
        assert set(matrix.around(matrix.MID_GROUP_LINES)) <= lines


def _fill_key(value):
    return None if value is None else repr(float(value))


def _layouts_of(case):
    return (case.dy_layout, case.y_layout, case.out_layout)


def test_grouping_extents_cross_every_block_for_each_family_and_dtype(tiers):
    for tier in ("nightly", "full"):
        grouping = [c for c in tiers[tier] if c.origin == "grouping"]
        for family in matrix.FAMILIES:
            for dtype in matrix.DTYPES:
                mine = [c for c in grouping if c.family == family and c.dtype == dtype]
                # (310B bf16 cases are rejections, but their extents are there all the same)
                for schedule in ("REDUCE_TAIL", "REDUCE_MID", "NO_REDUCE"):
                    # the row (REDUCE_TAIL) or the columns (REDUCE_MID, NO_REDUCE): the last axis
                    got = {c.shape[-1] for c in mine if _schedule(c) == schedule}
                    for b in matrix.block_elems(family, dtype, schedule):
                        assert {b - 1, b, b + 1, 2 * b + 1} <= got, (tier, family, dtype, schedule)
                lines = {c.shape[1] for c in mine if _schedule(c) == "REDUCE_MID"}
                assert set(matrix.around(matrix.MID_GROUP_LINES)) <= lines


def _schedule(case):
    return contract.schedule(case.shape, case.axes)


def test_kernel_grouping_constants_match_the_sources():
    root = Path(__file__).resolve().parents[2] / "op"
    twin = (root / "twin" / "kernel.cpp").read_text()
    ascendc = (root / "ascendc" / "op_kernel" / "log_softmax_grad.cpp").read_text()
    assert re.search(rf"kMidGroupLines = {matrix.MID_GROUP_LINES};", twin)
    assert re.search(rf"kLanes = {matrix.REDUCE_LANES};", twin)
    assert re.search(rf"MID_GROUP_LINES = {matrix.MID_GROUP_LINES};", ascendc)


def test_new_forms_have_stable_ids_and_travel_as_json():
    case = Case(
        "ascend910b",
        "float16",
        (4, 37),
        (-1,),
        y_dist="range",
        y_range=(-1000.0, 1000.0),
        dy_dist="fill",
        dy_fill=float("nan"),
        special="inf_y",
        special_at="row_end",
        out_layout=View((40, 1), 165, 5),
    )
    # Pinned: the id text of each new form (and so the seed) must not drift.
    assert case.id == (
        "910b_f16_4x37_d-1_y.range.-1000to1000_dy.fill.nan_inf_y.row_end_out.st40.1.off5.sz165"
    )
    assert case.seed == 818206247
    data = json.loads(json.dumps(case.to_dict(), allow_nan=False))
    assert data["dy_fill"] == "nan" and data["y_range"] == [-1000.0, 1000.0]
    assert data["out_layout"] == {"strides": [40, 1], "storage": 165, "offset": 5}
    assert data["layout"] == "strided" and data["special_at"] == "row_end"
    again = Case.from_dict(data)
    assert again == case and hash(again) == hash(case) and again.id == case.id
    for value, text in ((math.inf, "inf"), (-math.inf, "-inf"), (1e38, "1e38"), (-0.0, "-0")):
        c = Case("ascend910b", "float32", (2, 3), (1,), y_dist="fill", y_fill=value)
        assert c.id.endswith(f"y.fill.{text}_dy.normal")
        assert Case.from_dict(json.loads(json.dumps(c.to_dict(), allow_nan=False))) == c
    strided = Case("ascend910b", "float32", (2, 3), (1,), dy_layout="strided", y_layout="strided")
    assert strided.id.endswith("_strided")
    assert Case("ascend910b", "float32", (2, 3), (1,), out_layout="strided").id.endswith(
        "_out.strided"
    )
    everything = Case(
        "ascend910b",
        "float32",
        (2, 3),
        (1,),
        dy_layout="strided",
        y_layout="strided",
        out_layout="strided",
    )
    assert everything.id.endswith("_dy.strided_y.strided_out.strided")


def test_legacy_case_dicts_still_load():
    data = Case("ascend910b", "float32", (2, 3), (1,), dy_layout="strided", y_layout="strided")
    legacy = {
        k: v for k, v in data.to_dict().items() if k not in ("dy_layout", "y_layout", "out_layout")
    }
    assert legacy["layout"] == "strided"
    assert Case.from_dict(legacy) == data
    legacy["layout"] = "zigzag"
    with pytest.raises(ValueError, match="layout 'zigzag'"):
        Case.from_dict(legacy)


def test_layout_summary_is_what_the_operator_sees():
    a2 = "ascend910b"
    assert Case(a2, "float32", (3, 5), (1,), out_layout=View((5, 1), 20, 5)).layout == "contiguous"
    assert Case(a2, "float32", (3, 5), (1,), y_layout=View((1, 3), 15)).layout == "strided"


def test_per_tensor_layouts_are_validated_with_clear_messages():
    a2, shape = "ascend910b", (3, 5)

    def refused(match, **kw):
        with pytest.raises(ValueError, match=match):
            Case(a2, "float32", shape, (1,), **kw)

    refused(
        r"out_layout st0\.1\.sz5: .*an output view must not overlap itself",
        out_layout=View((0, 1), 5),
    )
    refused(
        r"out_layout st5\.1\.off1\.sz15: the view reaches element 15 of a storage of 15",
        out_layout=View((5, 1), 15, 1),
    )
    refused(r"dy_layout st1\.sz15: 1 strides for rank 2", dy_layout=View((1,), 15))
    refused(r"y_layout: 'diagonal' is not a layout name", y_layout="diagonal")
    refused(r"y_layout: .*explicit layout", y_layout={"strides": [5, 1]})
    refused(r"dy_layout st-5\.1\.sz15: strides \[-5, 1\] must be >= 0", dy_layout=View((-5, 1), 15))
    refused(r"out_layout strided for a missing out", missing="out", out_layout="strided")
    # the layout is checked against the tensor's own (perturbed) shape
    refused(
        r"y_layout st5\.1\.sz15: 2 strides for rank 3", y_shape=(3, 5, 1), y_layout=View((5, 1), 15)
    )
    # an input view may overlap itself (what broadcasting makes)
    ok = Case(a2, "float32", shape, (1,), dy_layout=View((0, 1), 5))
    assert ok.dy_layout == View((0, 1), 5)
    # a JSON dict is accepted as the view it describes
    json_view = {"strides": [5, 1], "storage": 16, "offset": 1}
    assert Case(
        a2,
        "float32",
        shape,
        (1,),
        out_layout=json_view,  # type: ignore[arg-type]
    ).out_layout == View((5, 1), 16, 1)
    # several bad fields: one message each
    with pytest.raises(ValueError) as err:
        Case(a2, "float32", shape, (1,), out_layout=View((0, 1), 5), dy_layout="x")
    assert "out_layout" in str(err.value) and "dy_layout" in str(err.value)


def test_value_forms_are_validated_with_clear_messages():
    a2 = "ascend910b"

    def refused(match, **kw):
        with pytest.raises(ValueError, match=match):
            Case(a2, "float32", (3, 5), (1,), **kw)

    refused(r"y_range None with y_dist 'range'", y_dist="range")
    refused(r"dy_range \(0.0, 1.0\) with dy_dist 'normal'", dy_range=(0.0, 1.0))
    refused(r"y_range \(1.0, 1.0\) \(use \(lo, hi\)", y_dist="range", y_range=(1.0, 1.0))
    refused(r"dy_range \(-inf, 1.0\)", dy_dist="range", dy_range=(-math.inf, 1.0))
    refused(r"y_fill None with y_dist 'fill'", y_dist="fill")
    refused(
        r"dy_fill 'zero' \(use a number, or 'inf', '-inf', 'nan'\)", dy_dist="fill", dy_fill="zero"
    )
    refused(r"y_dist 'gauss'", y_dist="gauss")
    refused(r"special 'zero'", special="zero")
    refused(r"special_at 'row_end' without a special", special_at="row_end")
    refused(r"special_at 'row_last'", special="nan_dy", special_at="row_last")
    # JSON forms are accepted in the constructor too
    c = Case(
        a2,
        "float32",
        (3, 5),
        (1,),
        dy_dist="fill",
        dy_fill="-inf",  # type: ignore[arg-type]
        y_dist="range",
        y_range=[1, 1000],  # type: ignore[arg-type]
    )
    assert c.dy_fill == -math.inf and c.y_range == (1.0, 1000.0)


def test_new_cases_keep_old_ids_and_the_random_draws():
    # The sections added later come after the old ones and never collide with a random case:
    # the nightly tier's old part is exactly what it was (pinned by count and order here).
    nightly = matrix.expand("nightly")
    old = [c for c in nightly if c.origin not in NEW_SECTIONS]
    new = [c for c in nightly if c.origin in NEW_SECTIONS]
    assert len(old) == 5674 and new
    assert all(
        c.special_at == "random"
        and c.y_range is c.dy_range is c.y_fill is c.dy_fill is None
        and c.out_layout == "contiguous"
        and c.special not in matrix.NEW_SPECIALS
        for c in old
    )


NEW_SECTIONS = {
    "value-ranges",
    "fills",
    "special-placement",
    "layouts",
    "grouping",
    "bad-axes",
    "ties",
    "long-sums",
    "mid-groups",
    "schedule-boundaries",
    "block-multiples",
    "layers",
}


def test_smoke_has_the_new_classes_on_each_family(tiers):
    for family in matrix.FAMILIES:
        mine = [c for c in tiers["smoke"] if c.family == family and c.accepted]
        assert any(c.y_dist == "range" or c.dy_dist == "range" for c in mine), family
        assert any(c.dy_fill is not None for c in mine) and any(c.y_fill is not None for c in mine)
        assert {c.special_at for c in mine} >= {"row_start", "row_middle", "row_end"}, family
        assert any(c.out_layout != "contiguous" for c in mine), family
        assert any(c.origin == "grouping" for c in mine), family


def test_smoke_catches_each_class_of_bug_with_several_cases(tiers):
    """What benchmarks/kill_strength.py measures, by construction: each class of bug of issue 20
    has at least three smoke cases, over both families."""
    smoke = [c for c in tiers["smoke"] if c.accepted]

    def several(cases, *, both=True):
        assert len(cases) >= 3, [c.id for c in cases]
        if both:
            assert {c.family for c in cases} == set(matrix.FAMILIES), [c.id for c in cases]

    merged = {c.id: contract.merge_shape(c.shape, c.axes) for c in smoke}
    # Exact ties of the fp16/bf16 rounding, 1,000 clean elements a case for the bias gate.
    several([c for c in smoke if c.dy_dist == "integers" and c.y_fill == 0 and c.numel >= 1000])
    # Long fp32 reductions of a constant: REDUCE_MID lines (a running sum drifts one way).
    several(
        [
            c
            for c in smoke
            if c.dtype == "float32"
            and c.dy_fill is not None
            and c.dy_fill not in (0, 1, -1)
            and _schedule(c) == "REDUCE_MID"
            and merged[c.id][1] >= 3000
        ]
    )
    # REDUCE_MID beyond one group of lines, with a partial group last.
    groups = matrix.MID_GROUP_LINES
    several(
        [
            c
            for c in smoke
            if _schedule(c) == "REDUCE_MID"
            and merged[c.id][1] > groups
            and merged[c.id][1] % groups
        ]
    )
    # The REDUCE_TAIL / REDUCE_MID boundary.
    several([c for c in smoke if _schedule(c) == "REDUCE_MID" and merged[c.id][2] == 2])
    # Chunk boundaries at each family's own block: whole blocks and one element over.
    for family in matrix.FAMILIES:
        mine = [c for c in smoke if c.family == family]
        for schedule, over in (("REDUCE_TAIL", True), ("REDUCE_MID", False), ("NO_REDUCE", False)):
            chunked = 1 if schedule == "REDUCE_TAIL" else 2  # d1, or d2: what is chunked
            row = [
                (merged[c.id][chunked], matrix.block_elems(family, c.dtype, schedule)[0])
                for c in mine
                if _schedule(c) == schedule
            ]
            assert any(n % b == 0 for n, b in row), (family, schedule)
            assert not over or any(n % b == 1 for n, b in row), (family, schedule)
    # Duplicate and non-consecutive axis lists, refused.
    refused = [c for c in tiers["smoke"] if c.expected.reason == "axes_not_consecutive"]
    normal = {c.id: contract.normalize_axes(c.axes, len(c.shape)) for c in refused}
    several([c for c in refused if len(set(normal[c.id])) < len(c.axes)])
    several([c for c in refused if len(set(normal[c.id])) == len(c.axes)])


def test_smoke_checks_each_deciding_layer_alone(tiers):
    """One registration case a family, and the tiling function alone on every rejection reason it
    decides (all but a missing tensor), on both families (suites/matrix_layers.py)."""
    smoke = tiers["smoke"]
    for family in matrix.FAMILIES:
        mine = [c for c in smoke if c.family == family and c.layer]
        assert [c.id for c in mine if c.layer == "registration"] == [
            f"{family.removeprefix('ascend')}_registration"
        ]
        reasons = {c.expected.reason for c in mine if c.layer == "tiling"}
        expected = set(contract.REJECTION_REASONS) - {"null_tensor"}
        if family == "ascend910b":
            expected.discard("bf16_unsupported_on_soc")
        assert reasons == expected, family
    bf16 = [c for c in smoke if c.layer == "tiling" and c.dtype == "bfloat16"]
    assert {c.family for c in bf16} == {"ascend310b"} and any(c.numel for c in bf16)


def test_smoke_infers_nodes_whose_output_differs_from_gradoutput(tiers):
    """The graph inference on its own (suites/matrix_layers.py infer_nodes): ranks 0, 1, 3 and 8
    on both families, every dtype, each node's y of another shape and dtype than gradOutput (so
    that reading input 1 for input 0 gives a wrong out), and anything of the inference seen by
    at least 3 cases (a kill by 3 is not weak)."""
    infer = [c for c in tiers["smoke"] if c.layer == "infer"]
    assert len(infer) >= 3
    for case in infer:
        y_shape, y_dtype = case.tensor_shape("y"), case.y_dtype or case.dtype
        assert y_shape != case.shape and y_dtype != case.dtype, case.id
        assert case.expectation() == {
            "kind": "infer",
            "shape_status": 0,
            "shape": list(case.shape),
            "dtype_status": 0,
            "dtype": case.dtype,
        }
    for family in matrix.FAMILIES:
        mine = [c for c in infer if c.family == family]
        assert {len(c.shape) for c in mine} == {0, 1, 3, 8}, family
    assert {c.dtype for c in infer} == set(matrix.DTYPES)
    assert len({c.id for c in infer}) == len(infer)
    for tier in ("nightly", "full"):  # every node every dtype, and nodes whose y matches
        nodes = [c for c in tiers[tier] if c.layer == "infer"]
        assert {(c.family, c.dtype) for c in nodes} == {
            (f, d) for f in matrix.FAMILIES for d in matrix.DTYPES
        }
        assert any(c.y_dtype is None and c.y_shape is None for c in nodes)
        assert any(0 in c.shape for c in nodes)


def test_an_infer_case_is_a_node():
    from suites.case import MalformedCase

    node = Case(
        "ascend910b", "float16", (2, 3, 4), (-1,), y_dtype="float32", y_shape=(5, 6),
        layer="infer",
    )  # fmt: skip
    assert node.id == "910b_f16_2x3x4_ydt.f32_ysh.5x6_layer.infer"
    assert not node.accepted and node.schedule == "INFER"
    assert node.expectation()["shape"] == [2, 3, 4] and node.expectation()["dtype"] == "float16"
    assert Case.from_dict(node.to_dict()) == node
    assert Case("ascend310b", "bfloat16", (), (-1,), layer="infer").id == (
        "310b_bf16_scalar_layer.infer"
    )
    with pytest.raises(MalformedCase, match="takes its family, dtype, shape, y_dtype and y_shape"):
        Case("ascend910b", "float32", (3, 5), (0,), out_shape=(5, 3), layer="infer")
    with pytest.raises(MalformedCase, match="y has rank 9: use 0 to 8"):
        Case("ascend910b", "float32", (3, 5), (-1,), y_shape=(1,) * 9, layer="infer")


def test_a_layer_case_is_what_its_layer_can_be_asked():
    from suites.case import MalformedCase

    reg = Case("ascend310b", "float32", (), (-1,), layer="registration")
    assert reg.id == "310b_registration" and not reg.accepted and reg.schedule == "REGISTRATION"
    assert reg.expectation() == {"kind": "registration"}
    assert Case.from_dict(reg.to_dict()) == reg
    with pytest.raises(MalformedCase, match="takes its family only, not dtype, shape"):
        Case("ascend310b", "float16", (3, 5), (-1,), layer="registration")
    tiling = Case("ascend310b", "bfloat16", (3, 5), (-1,), layer="tiling")
    assert (
        tiling.id.endswith("_layer.tiling") and tiling.expected.reason == "bf16_unsupported_on_soc"
    )
    assert Case.from_dict(tiling.to_dict()) == tiling
    with pytest.raises(MalformedCase, match="not one it accepts"):
        Case("ascend910b", "bfloat16", (3, 5), (-1,), layer="tiling")
    with pytest.raises(MalformedCase, match="refuses for a missing tensor"):
        Case("ascend910b", "float32", (3, 5), (-1,), missing="y", layer="tiling")
    with pytest.raises(MalformedCase, match="layer 'kernel'"):
        Case("ascend910b", "float32", (3, 5), (-1,), layer="kernel")


def test_the_cases_to_kill_mutants_are_smoke_only_three_a_situation(tiers):
    """suites/matrix_kill.py: NO_REDUCE rows of several chunks, views a contiguity test must not
    take for contiguous, a strided row of 2, a strided out past one 512-byte block; each in 3
    smoke cases (a kill by 3 is not weak), none in the other tiers (whose volume covers them)."""
    kill = [c for c in tiers["smoke"] if c.origin == "kill"]
    for tier in ("nightly", "full"):
        assert not [c for c in tiers[tier] if c.origin == "kill"]
    multi_chunk = [
        c
        for c in kill
        if _schedule(c) == "NO_REDUCE"
        and contract.merge_shape(c.shape, c.axes)[2]
        > max(matrix.block_elems(c.family, c.dtype, "NO_REDUCE"))
    ]
    broadcast = [
        c for c in kill if c.layout == "strided" and 0 in getattr(c.dy_layout, "strides", ())
    ]
    pair = [c for c in kill if c.shape == (2,) and c.out_layout == "strided"]
    unsorted = [c for c in kill if len(c.axes) > 1 and list(c.axes) != sorted(c.axes)]
    bytes_ = {"float32": 4, "float16": 2, "bfloat16": 2}
    whole = [c for c in kill if c.layout == "strided" and c.numel * bytes_[c.dtype] % 32 == 0]
    assert (len(multi_chunk), len(broadcast), len(pair), len(unsorted)) == (3, 3, 3, 3)
    assert len(whole) == 3
    # A strided out of 2-byte elements past one 512-byte block (the aclnn layer's buffer of it).
    wide_out = [c for c in kill if copied(c, "out") and c.numel * bytes_[c.dtype] > 512]
    assert len(wide_out) == 3 and all(bytes_[c.dtype] == 2 for c in wide_out)
    # Three of each in the whole tier, the older sections' cases counted: a contiguous out with
    # an odd stride on an extent of 1; an empty call of no rows; dy strided alone; the tiling
    # function alone with y of another dtype.
    smoke = tiers["smoke"]
    odd = [
        c for c in kill if 1 in c.shape and c.out_layout != "contiguous" and not copied(c, "out")
    ]
    no_rows = [
        c
        for c in smoke
        if not c.layer and c.accepted and c.shape and contract.merge_shape(c.shape, c.axes)[0] == 0
    ]
    dy_alone = [c for c in smoke if copied(c, "dy") and not copied(c, "y") and not copied(c, "out")]
    y_dtype = [c for c in smoke if c.layer == "tiling" and c.y_dtype and c.y_dtype != c.dtype]
    assert len(odd) == 3
    assert len(no_rows) >= 3 and len(dy_alone) >= 3 and len(y_dtype) >= 3
    assert all(c.accepted for c in kill if not c.layer)
