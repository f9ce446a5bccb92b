"""The SoC families the operator supports (SPEC section 4), as data.

The C++ tiling carries the same table (op/tiling/soc_profiles.inc); a test keeps the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SocProfile:
    name: str
    family: str  # "ascend910b" (Atlas A2) or "ascend310b" (Atlas 200I/500 A2)
    vector_cores: int
    ub_bytes: int
    block_bytes: int
    bf16_cast: bool


# The one list of SoC families: id -> the name people read. Case ids use the short form
# (FAMILY_SHORT), Allure environments the display name (farm/results/report_generate.py).
FAMILIES = {
    "ascend910b": "Atlas A2 (Ascend910B)",
    "ascend310b": "Atlas 200I/500 A2 (Ascend310B)",
}
FAMILY_SHORT = {family: family.removeprefix("ascend") for family in FAMILIES}

# CANN's SoC names (aclrtGetSocName, npu-smi's Name with "Ascend" before it); a family's first
# profile judges its cases, so a new SoC goes after its family's. Where a value is not public it
# is assumed from the family (op/tiling/soc_profiles.inc says which and where the rest is from).
_PROFILES = (
    SocProfile("Ascend910B1", "ascend910b", 48, 196608, 32, True),
    SocProfile("Ascend910B2", "ascend910b", 48, 196608, 32, True),
    SocProfile("Ascend910B3", "ascend910b", 40, 196608, 32, True),
    SocProfile("Ascend910B4", "ascend910b", 40, 196608, 32, True),
    SocProfile("Ascend910B2C", "ascend910b", 48, 196608, 32, True),
    SocProfile("Ascend910B4-1", "ascend910b", 40, 196608, 32, True),
    SocProfile("Ascend310B1", "ascend310b", 1, 253952, 32, False),
    SocProfile("Ascend310B2", "ascend310b", 1, 253952, 32, False),
    SocProfile("Ascend310B3", "ascend310b", 1, 253952, 32, False),
    SocProfile("Ascend310B4", "ascend310b", 1, 253952, 32, False),
)

PROFILES: dict[str, SocProfile] = {p.name: p for p in _PROFILES}

# A SoC name not in the table is still known by its family from its prefix and a digit after it
# (a bare "Ascend910B" is CANN's name of an older Ascend910, of no family here). The C++ twin of
# this rule is lsg::find_soc_or_family (op/tiling/tiling.cpp).
_FAMILY_PREFIXES = (("Ascend910B", "ascend910b"), ("Ascend310B", "ascend310b"))


class UnknownSocError(ValueError):
    pass


def profile(name: str) -> SocProfile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise UnknownSocError(
            f"unknown SoC {name!r}; use one of: {known} (SPEC section 4)"
        ) from None


def family_of(soc_name: str) -> str:
    """The family of a SoC: its profile's, else the family its name's prefix says (a newer SoC
    of a known family: what the contract's checks need of it, as the aclnn layer decides them on
    a device); UnknownSocError when neither."""
    if soc_name in PROFILES:
        return PROFILES[soc_name].family
    for prefix, family in _FAMILY_PREFIXES:
        rest = soc_name[len(prefix) :]
        if soc_name.startswith(prefix) and rest[:1].isdigit():
            return family
    families = " or ".join(f"{prefix}<digit>..." for prefix, _ in _FAMILY_PREFIXES)
    raise UnknownSocError(
        f"unknown SoC {soc_name!r}; use one of: {', '.join(PROFILES)}, or another SoC of a "
        f"known family ({families}; SPEC section 4)"
    )


def representative_soc(family: str) -> SocProfile:
    """The first SoC of a family: what a case of that family is judged against."""
    for p in _PROFILES:
        if p.family == family:
            return p
    raise UnknownSocError(f"unknown SoC family {family!r}; use one of: {', '.join(FAMILIES)}")
