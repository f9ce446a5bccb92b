"""Which public standard a case asks for: its nominal standard, part of its id.

What gates a case is decided when it is judged, from its numbers (golden/judge.py): the farm's
error-bound always, and each public standard only where the worst correct kernel still passes
it; a standard a case asks for gates when applicable and is otherwise recorded with the reason.
This module only chooses, from how a case was made, the standard it asks for, so that each
public standard is exercised on inputs where it can judge: case ids depend on it, so it stays
as it was when the tiers were made (from benchmarks/gate_survey.py, since replaced by
benchmarks/precision_survey.py):

- experimental's max relative error is guarded by 1e-7: on large tensors some outputs cancel to
  near zero, where fp32 arithmetic alone (fp32: from about 256 elements) or the dtype's own
  spacing near zero (fp16 subnormals: from about 1k elements; bf16: a few k) exceeds 10*T;
- flat y with all-ones dy is pure cancellation: no relative standard can judge it;
- mixed-tolerance's max-abs limit (0.1 for fp16/bf16) is below the rounding step of outputs
  above 256 (fp16) or 32 (bf16), which large fp16 cases of integers, ranges or fills reach;
- double-thousandth's 1e-3 is below bf16's own half-step; fp32 outlier rows exceed its 1e-4;
- benchmark-ratio on small fp32 tensors compares two errors of a few ulps: noise.
"""

from __future__ import annotations

EXPERIMENTAL_MAX_NUMEL = {"float32": 256, "float16": 1024, "bfloat16": 4096}
# dy forms whose large fp16 outputs sit above mixed-tolerance's 0.1 max-abs limit: integers (the
# ties of suites/matrix.py reach 4096) and the value forms a case gives (ranges, fills).
NARROW_DY = ("integers", "range", "fill")


def cancellation(y_dist: str, dy_dist: str) -> bool:
    return y_dist == "flat" and dy_dist == "ones"


def default_gate(dtype: str, numel: int, y_dist: str, dy_dist: str) -> tuple[str, str | None]:
    """(standard, level) for a case that does not ask for one."""
    small = numel <= EXPERIMENTAL_MAX_NUMEL[dtype]
    if dtype == "float32":
        if cancellation(y_dist, dy_dist) or not small:
            return "mixed-tolerance", None
    elif dtype == "float16" and not small:
        if dy_dist in ("ones", "outliers") or dy_dist in NARROW_DY:
            return "double-thousandth", None
        return "mixed-tolerance", None
    elif dtype == "bfloat16" and not small:
        return "benchmark-ratio", "L0"
    return "experimental", None


def applicable(standard: str, dtype: str, numel: int, y_dist: str, dy_dist: str) -> bool:
    """Whether a correct kernel can pass `standard` on such a case."""
    if standard == "experimental":
        return default_gate(dtype, numel, y_dist, dy_dist)[0] == "experimental"
    if standard == "mixed-tolerance":
        if dtype == "float16":
            return dy_dist in ("normal", "uniform")
        if dtype == "bfloat16":
            return dy_dist == "uniform" and numel <= 1024
        return True
    if standard == "double-thousandth":
        return dtype == "float16" or (dtype == "float32" and dy_dist != "outliers")
    if standard == "benchmark-ratio":
        return dtype != "float32"
    return False
