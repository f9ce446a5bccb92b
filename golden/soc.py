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
# (FAMILY_SHORT), Allure environments the display name (farm/results/report.py).
FAMILIES = {
    "ascend910b": "Atlas A2 (Ascend910B)",
    "ascend310b": "Atlas 200I/500 A2 (Ascend310B)",
}
FAMILY_SHORT = {family: family.removeprefix("ascend") for family in FAMILIES}

_PROFILES = (
    SocProfile("Ascend910B1", "ascend910b", 48, 196608, 32, True),
    SocProfile("Ascend910B2", "ascend910b", 48, 196608, 32, True),
    SocProfile("Ascend910B3", "ascend910b", 40, 196608, 32, True),
    SocProfile("Ascend910B4", "ascend910b", 40, 196608, 32, True),
    SocProfile("Ascend310B1", "ascend310b", 1, 253952, 32, False),
)

PROFILES: dict[str, SocProfile] = {p.name: p for p in _PROFILES}


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
    return profile(soc_name).family


def representative_soc(family: str) -> SocProfile:
    """The first SoC of a family: what a case of that family is judged against."""
    for p in _PROFILES:
        if p.family == family:
            return p
    raise UnknownSocError(f"unknown SoC family {family!r}; use one of: {', '.join(FAMILIES)}")
