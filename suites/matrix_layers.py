"""The cases that check one deciding layer of the operator on its own (docs/judging.md, "Each
deciding layer on its own"): layers that decide the same thing hide each other in a whole call
(bf16 on Ascend310B is refused by the OpDef registration and by the tiling function, so breaking
either alone leaves every call right), so each is asked alone.

- registration: one case a family, the OpDef registration of the family read from the built
  operator and judged whole against the contract's table (golden/registration.py);
- tiling: the rejections section's calls (suites/matrix_values.py rejections) that the tiling
  function decides, and bf16 with data on a family that cannot cast it, run through the host tiling
  function alone, the registration out of the way, judged by status and reason against
  golden/contract.py. A missing tensor is left out: the aclnn layer refuses it before any other.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from suites.case import Case
from suites.matrix_space import casts, make_case
from suites.matrix_values import rejections

ORIGIN = "layers"


def layers(family: str, dtypes, full: bool) -> Iterator[Case]:
    yield Case(family, "float32", (), (-1,), layer="registration", origin=ORIGIN)
    calls = list(rejections(family, dtypes, full))
    if not casts(family, "bfloat16"):
        calls.append(make_case(family, "bfloat16", (3, 5), (-1,), ORIGIN))
    for call in calls:
        if call.expected.reason not in ("ok", "null_tensor"):
            yield replace(call, layer="tiling", origin=ORIGIN)
