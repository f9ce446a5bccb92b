"""The tiling the operator planned, checked against the design (SPEC section 3, op/README.md),
computed here independently from the case and the SoC profile; then, on the acl backend's
records, the workspace the aclnn layer asked for (suites/workspace.py)."""

from __future__ import annotations

from golden import contract, layouts, soc
from suites.workspace import WorkspaceMismatch, check_workspace

ITEM_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
SCHEDULE_IDS = {"NO_REDUCE": 0, "REDUCE_TAIL": 1, "REDUCE_MID": 2}
UB_BLOCKS = {"NO_REDUCE": 6, "REDUCE_TAIL": 5, "REDUCE_MID": 6}


class TilingMismatch(AssertionError):
    category = "tiling"  # the failed case's category (farm/agent/outcome.py CATEGORIES)


# What check_tiling raises: a case that fails it fails with the exception's category.
DesignMismatch = (TilingMismatch, WorkspaceMismatch)


def expected_tiling(case, soc_name: str, contiguous: bool) -> dict:
    profile = soc.profile(soc_name)
    schedule = contract.schedule(case.shape, case.axes)
    d0, d1, d2 = contract.merge_shape(case.shape, case.axes)
    rows = d0
    used = min(rows, profile.vector_cores)
    big = rows % used
    block_bytes = (profile.ub_bytes // UB_BLOCKS[schedule]) // profile.block_bytes
    block_bytes *= profile.block_bytes
    block_elems = block_bytes // 4
    if case.dtype in ("float16", "bfloat16"):
        block_elems = block_elems // 16 * 16  # the back-half load starts on a 32-byte boundary
    row_len = d1 if schedule == "REDUCE_TAIL" else d2
    chunks = -(-row_len // block_elems)
    small = chunks == 1
    return {
        "schedule_name": schedule,
        "key": SCHEDULE_IDS[schedule] | (small << 8) | (contiguous << 9),
        "d0": d0,
        "d1": d1,
        "d2": d2,
        "cores_used": used,
        "big_cores": big,
        "rows_per_big_core": -(-rows // used),
        "rows_per_small_core": rows // used,
        "ub_blocks": UB_BLOCKS[schedule],
        "block_elems": block_elems,
        "row_len": row_len,
        "chunk_count": chunks,
        "tail_elems": row_len - (chunks - 1) * block_elems,
    }


def expected_workspace(case, soc_name: str) -> int:
    """The workspace the operator asks for: a contiguous copy of each view it cannot address
    as it is (golden/layouts.is_dense), each rounded up to the SoC's UB block (op/tiling
    workspace_layout): one copy too few or too small corrupts a neighbour's data."""
    block = soc.profile(soc_name).block_bytes
    size = case.numel * ITEM_BYTES[case.dtype]
    copies = sum(
        not layouts.is_dense(getattr(case, f"{name}_layout"), case.tensor_shape(name))
        for name in ("dy", "y", "out")
    )
    return copies * (-(-size // block) * block)


def check_tiling(case, record: dict) -> None:
    """Raise TilingMismatch naming every field the operator planned differently, then (the
    tiling right) WorkspaceMismatch where the aclnn layer asked for another workspace than its
    design (suites/workspace.py: the acl backend's records only)."""
    _check_planned(case, record)
    check_workspace(case, record)


def _check_planned(case, record: dict) -> None:
    tiling = record.get("tiling")
    if not tiling or not case.accepted or case.numel == 0:
        return  # rejected, empty, or a backend without a tiling record (torch)
    contiguous = case.layout == "contiguous"
    want = expected_tiling(case, record["soc"], contiguous)
    wrong = [f"{k} {tiling.get(k)} (expected {v})" for k, v in want.items() if tiling.get(k) != v]
    workspace = expected_workspace(case, record["soc"])
    if tiling.get("workspace_bytes", workspace) != workspace:
        wrong.append(f"workspace_bytes {tiling['workspace_bytes']} (expected {workspace})")
    if wrong:
        raise TilingMismatch(f"[tiling] planned differently from the design: {'; '.join(wrong)}")
