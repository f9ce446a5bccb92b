"""The operator packages the farm builds and runs, by name (farm/pool/build/ builds them): light
enough for the pytest plugin, which every xdist worker imports, to offer them as choices."""

from __future__ import annotations

TARGETS = ("ascendc-cpu", "twin", "ascend")
DEFAULT_TARGET = "ascendc-cpu"
NATIVE_TARGETS = ("ascendc-cpu", "twin")  # the C ABI libraries the native backend runs
DESCRIPTIONS = {
    "ascendc-cpu": "the real Ascend C kernel on the CPU emulation",
    "twin": "the CPU twin, a second implementation of the kernel's design",
    "ascend": "the Ascend C package for CANN",
}


def describe(target: str) -> str:
    """'ascendc-cpu (the real Ascend C kernel on the CPU emulation)': a target as people read it."""
    return f"{target} ({DESCRIPTIONS[target]})" if target in DESCRIPTIONS else target
