"""How a triage condition reads (farm/results/triage.py Predicate): in the contract's words
(docs/contract.md, "The tiling the kernel follows": the outer, reduce and inner extents, a row,
its length and chunks), with the feature's own name in brackets where the words differ from it:
the name `farm triage --json` gives and suites/tiling.py computes.

    predicate_text(feature, op, value) -> str     "reduce extent > 64 (d1)"
"""

from __future__ import annotations

from typing import Any

# The schedules the host picks from the merged extents [d0, d1, d2] (docs/contract.md).
SCHEDULES = {
    "NO_REDUCE": "no reduction, reduce extent 1",
    "REDUCE_TAIL": "the innermost extent reduced",
    "REDUCE_MID": "a middle extent reduced",
}
# Yes/no features: how a condition on each reads, true and false.
BOOLEAN = {
    "ragged_tail": (
        "a row's last chunk ends ragged, not in whole blocks",
        "a row's last chunk in whole blocks",
    ),
    "full_last_chunk": (
        "a row's last chunk a whole UB block",
        "a row's last chunk shorter than a UB block",
    ),
    "narrow_dtype": ("a 2-byte dtype, float16 or bfloat16", "a dtype of 4 bytes or more"),
}
# The other features whose name is no word of the contract's: how they read.
WORDS = {
    "d0": "outer extent",
    "d1": "reduce extent",
    "d2": "inner extent",
    "row_len": "row length",
    "chunk_count": "chunks per row",
    "tail_elems": "elements in a row's last chunk",
    "cores_used": "cores used",
    "big_cores": "cores with an extra row",
    "numel": "elements",
    "tiling_key": "tiling key",
    "expected_reason": "expected rejection",
    "layer": "layer checked",
    "dy_layout": "dy layout",
    "y_layout": "y layout",
    "out_layout": "out layout",
    "special_at": "special value at",
    "y_dist": "y values",
    "dy_dist": "dy values",
    "y_values": "y values",
    "dy_values": "dy values",
}


def predicate_text(feature: str, op: str, value: Any) -> str:
    """One condition as a person reads it: "reduce extent > 64 (d1)", "a middle extent reduced
    (REDUCE_MID)", "dtype float16" (a feature named in the contract's words has no bracket)."""
    if feature in BOOLEAN:
        yes, no = BOOLEAN[feature]
        return f"{yes if value else no} ({feature})"
    if feature == "schedule":
        words = SCHEDULES.get(str(value))
        return f"{words} ({value})" if words else str(value)
    if feature == "kind" and op == "=":
        return f"a {value} case (kind)"
    shown = f"{value:,}" if op != "=" and isinstance(value, int) else str(value)
    words = WORDS.get(feature, feature)
    text = f"{words} {shown}" if op == "=" else f"{words} {op} {shown}"
    return text if words == feature else f"{text} ({feature})"
