"""The operator's registration judged against the contract: what each SoC family's OpDef
configuration must declare (SPEC sections 2 and 4), and every way a registration departs from it.

A registration is read from the built operator (farm/agent/backends/layers.py: the emulated OpDef
through the CPU library or the emulated op-api, or CANN's aic-<soc>-ops-info.json) into one form:

    {"socs": {family: {"params": [{"name", "io": "input" | "output", "param_type",
                                   "dtypes": [...], "formats": [...],
                                   "unknown_shape_formats": [...]}, ...]}},
     "attrs": {name: {"kind": "list_int" | ..., "optional": bool}}}

The i-th entries of every parameter's lists make one combination the kernel is compiled for. The
contract's table, per family: gradOutput, output (inputs) and out (the output), each required,
each in every dtype the contract supports on the family (bf16 only where the SoC casts it) and
nothing else, format ND only, one dtype for all three in every combination; one attribute, the
list of axes. This module is written from the contract alone, as golden/contract.py is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from golden import contract, soc

FORMAT = "ND"  # the contract's only format (SPEC section 2)
# The contract's parameters in the order the OpDef declares them: (io, the contract's name).
PARAMS = (("input", "gradOutput (dy)"), ("input", "output (y)"), ("output", "out"))
ATTR_KIND = "list_int"  # the operator-level attribute: the list of axes


def supported(family: str) -> tuple[str, ...]:
    """The dtypes the contract supports on a family, in the contract's order."""
    casts = soc.representative_soc(family).bf16_cast
    return tuple(d for d in contract.SUPPORTED_DTYPES if d != "bfloat16" or casts)


def problems(registration: Mapping[str, Any], family: str) -> list[str]:
    """Every way the registration's configuration for `family` (and what the whole registration
    declares beyond the contract's families and attribute) departs from the contract's table; []
    when it declares exactly that. Each names the SoC family, the parameter, the dtype or
    format."""
    socs = registration.get("socs") or {}
    found: list[str] = []
    extra = sorted(set(socs) - set(soc.FAMILIES))
    if extra:
        found.append(
            f"configurations for {', '.join(extra)}, which the contract does not list "
            f"(its families: {', '.join(soc.FAMILIES)})"
        )
    config = socs.get(family)
    if config is None:
        found.append(f"no configuration for {family} (AICore().AddConfig): no kernel for it")
        return found + _attr_problems(registration)
    params = list(config.get("params") or [])
    found += _param_list_problems(params, family)
    if len(params) == len(PARAMS):
        for param, (_, label) in zip(params, PARAMS, strict=False):
            found += _param_problems(param, label, family)
        found += _combination_problems(params, family)
    return found + _attr_problems(registration)


def _param_list_problems(params: Sequence[Mapping[str, Any]], family: str) -> list[str]:
    ios = [p.get("io") for p in params]
    want = [io for io, _ in PARAMS]
    if ios == want:
        return []
    shown = ", ".join(f"{p.get('name')} ({p.get('io')})" for p in params) or "none"
    return [
        f"{family} declares the parameters {shown}; the contract's are gradOutput and output "
        "(inputs), then out (the output)"
    ]


def _param_problems(param: Mapping[str, Any], label: str, family: str) -> list[str]:
    name = f"{param.get('name')} ({label})"
    dtypes, formats = list(param.get("dtypes") or []), list(param.get("formats") or [])
    unknown = list(param.get("unknown_shape_formats") or [])
    found = []
    if param.get("param_type") != "required":
        found.append(f"{name} is {param.get('param_type')} on {family}; the contract requires it")
    if len(formats) != len(dtypes) or (unknown and len(unknown) != len(dtypes)):
        found.append(
            f"{name} on {family} declares {len(dtypes)} dtypes, {len(formats)} formats and "
            f"{len(unknown)} unknown-shape formats: each combination takes one entry of each"
        )
    allowed = supported(family)
    for dtype in dict.fromkeys(dtypes):
        if dtype not in allowed:
            why = (
                "its SoCs cannot cast bf16 to fp32"
                if dtype == "bfloat16" and dtype in contract.SUPPORTED_DTYPES
                else f"the contract supports {', '.join(allowed)} there"
            )
            found.append(f"{name} declares {dtype} on {family}, which the contract refuses: {why}")
    for dtype in allowed:
        if dtype not in dtypes:
            found.append(
                f"{name} does not declare {dtype} on {family}, which the contract supports"
            )
    for what, listed in (("format", formats), ("unknown-shape format", unknown)):
        for i, fmt in enumerate(listed):
            if fmt != FORMAT:
                dtype = dtypes[i] if i < len(dtypes) else "?"
                found.append(
                    f"{name} declares {what} {fmt} for {dtype} on {family}; the contract's "
                    f"tensors are {FORMAT}"
                )
    return found


def _combination_problems(params: Sequence[Mapping[str, Any]], family: str) -> list[str]:
    """A combination whose parameters differ in dtype: the registration would take a call the
    contract refuses as a dtype mismatch."""
    if len(params) != len(PARAMS):
        return []
    lists = [list(p.get("dtypes") or []) for p in params]
    found = []
    for k in range(min(len(x) for x in lists)):
        dtypes = [x[k] for x in lists]
        if len(set(dtypes)) > 1:
            shown = ", ".join(f"{p.get('name')} {d}" for p, d in zip(params, dtypes, strict=True))
            found.append(
                f"combination {k} on {family} takes {shown}; the contract requires one dtype "
                "for all three"
            )
    return found


def _attr_problems(registration: Mapping[str, Any]) -> list[str]:
    attrs = registration.get("attrs")
    if attrs is None:  # a source that does not say (never a reason to fail, never judged)
        return []
    kinds = {name: (a or {}).get("kind") for name, a in attrs.items()}
    if list(kinds.values()) == [ATTR_KIND]:
        return []
    shown = ", ".join(f"{n} ({k})" for n, k in kinds.items()) or "none"
    return [f"the attributes are {shown}; the contract's is one list of axes ({ATTR_KIND})"]
