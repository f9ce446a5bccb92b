"""The operator packages the farm builds and runs, by name (farm/pool/build/ builds them): light
enough for the pytest plugin, which every xdist worker imports, to offer them as choices."""

from __future__ import annotations

TARGETS = ("ascendc-cpu", "twin", "ascend")
DEFAULT_TARGET = "ascendc-cpu"
NATIVE_TARGETS = ("ascendc-cpu", "twin")  # the C ABI libraries the native backend runs
# How an agent calls each target's operator unless told otherwise: through every layer the package
# ships. The CANN package and the emulated real kernel's package carry the operator's aclnn layer
# (op/ascendc/op_api) and run through ACL (the emulated runtime, op/acl_emu, for the CPU package);
# the twin has no aclnn layer, only its C ABI.
DEFAULT_BACKENDS = {"ascendc-cpu": "acl", "twin": "native", "ascend": "acl"}
DESCRIPTIONS = {
    "ascendc-cpu": "the real Ascend C kernel on the CPU emulation",
    "twin": "the CPU twin, a second implementation of the kernel's design",
    "ascend": "the Ascend C package for CANN",
}


def describe(target: str) -> str:
    """'ascendc-cpu (the real Ascend C kernel on the CPU emulation)': a target as people read it."""
    return f"{target} ({DESCRIPTIONS[target]})" if target in DESCRIPTIONS else target


def default_backend(target: str | None) -> str:
    """The backend a run of ``target`` (None: the default target) uses when none is named."""
    return DEFAULT_BACKENDS.get(target or DEFAULT_TARGET, "native")


def backend_for(target: str | None, backend: str | None) -> str:
    """The backend named, else ``target``'s default."""
    return backend or default_backend(target)


def backend_help() -> str:
    """'default: acl for ascendc-cpu, ...': what --backend's help says of its default."""
    by = ", ".join(f"{b} for {t}" for t, b in DEFAULT_BACKENDS.items())
    return f"default: the target's ({by})"
