"""The judging of an OpDef registration against the contract's table (golden/registration.py), and
the reading of CANN's form of it, aic-<soc>-ops-info.json (farm/agent/backends/layers.py): the
contract's own table passes; each way a registration can depart from it is named, with the SoC
family, the parameter and the dtype or format."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from farm.agent.backends import layers
from golden import registration

NAMES = (("grad_output", "input"), ("output", "input"), ("grad_input", "output"))


def config(dtypes: Sequence[str], formats: Sequence[str] | None = None) -> dict[str, Any]:
    formats = formats or ["ND"] * len(dtypes)
    return {
        "params": [
            {
                "name": name,
                "io": io,
                "param_type": "required",
                "dtypes": list(dtypes),
                "formats": list(formats),
                "unknown_shape_formats": list(formats),
            }
            for name, io in NAMES
        ]
    }


def contracts_table() -> dict[str, Any]:
    return {
        "socs": {
            "ascend910b": config(["float32", "float16", "bfloat16"]),
            "ascend310b": config(["float32", "float16"]),
        },
        "attrs": {"axes": {"kind": "list_int", "optional": True}},
    }


def test_the_contracts_own_table_passes_on_both_families() -> None:
    assert registration.supported("ascend910b") == ("float32", "float16", "bfloat16")
    assert registration.supported("ascend310b") == ("float32", "float16")
    for family in ("ascend910b", "ascend310b"):
        assert registration.problems(contracts_table(), family) == []


def test_bf16_declared_for_310b_fails_that_family_alone_naming_it() -> None:
    reg = contracts_table()
    reg["socs"]["ascend310b"] = config(["float32", "float16", "bfloat16"])
    found = registration.problems(reg, "ascend310b")
    assert len(found) == 3  # each of the three parameters
    assert all("bfloat16" in f and "ascend310b" in f and "cannot cast" in f for f in found)
    assert "grad_output (gradOutput (dy))" in found[0]
    assert registration.problems(reg, "ascend910b") == []


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda r: r["socs"]["ascend910b"].update(config(["float32", "bfloat16"])),
         "does not declare float16 on ascend910b"),
        (lambda r: r["socs"]["ascend910b"].update(config(["float32", "float16", "bfloat16",
                                                          "int32"])),
         "declares int32 on ascend910b"),
        (lambda r: r["socs"]["ascend910b"].update(
            config(["float32", "float16", "bfloat16"], ["ND", "NCHW", "ND"])),
         "declares format NCHW for float16 on ascend910b"),
        (lambda r: r["socs"]["ascend910b"]["params"][1].update(dtypes=["float16", "float16",
                                                                       "bfloat16"]),
         "combination 0 on ascend910b takes grad_output float32, output float16"),
        (lambda r: r["socs"]["ascend910b"]["params"][2].update(param_type="optional"),
         "grad_input (out) is optional on ascend910b"),
        (lambda r: r["socs"]["ascend910b"]["params"][0].update(formats=["ND"]),
         "declares 3 dtypes, 1 formats"),
        (lambda r: r["socs"]["ascend910b"]["params"].reverse(),
         "the contract's are gradOutput and output (inputs), then out"),
        (lambda r: r["socs"].pop("ascend910b"), "no configuration for ascend910b"),
        (lambda r: r["socs"].update(ascend910={"params": []}),
         "configurations for ascend910, which the contract does not list"),
        (lambda r: r["attrs"].update(axes={"kind": "int"}), "the attributes are axes (int)"),
    ],
)  # fmt: skip
def test_each_departure_is_named(edit: Callable[[dict[str, Any]], Any], words: str) -> None:
    reg = copy.deepcopy(contracts_table())
    edit(reg)
    found = registration.problems(reg, "ascend910b")
    assert any(words in f for f in found), found


def test_a_source_without_attributes_is_not_judged_on_them() -> None:
    reg = contracts_table()
    del reg["attrs"]
    assert registration.problems(reg, "ascend310b") == []


def ops_info(dtypes: str, formats: str) -> dict[str, Any]:
    """An entry of aic-<soc>-ops-info.json as CANN's build writes it from an OpDef."""
    entry: dict[str, Any] = {
        "attr": {"list": "axes"},
        "attr_axes": {"type": "listInt", "paramType": "optional", "defaultValue": "-1"},
    }
    for key, (name, _) in zip(("input0", "input1", "output0"), NAMES, strict=True):
        entry[key] = {
            "name": name,
            "paramType": "required",
            "dtype": dtypes,
            "format": formats,
            "unknownshape_format": formats,
            "shape": "all",
        }
    return entry


def test_cann_ops_info_files_read_into_the_same_form_and_judged(tmp_path: Path) -> None:
    vendor = tmp_path / "vendors" / "customize"
    for family, dtypes in (
        ("ascend910b", "float,float16,bfloat16"),
        ("ascend310b", "float,float16,bfloat16"),
    ):
        d = vendor / "op_impl" / "ai_core" / "tbe" / "config" / family
        d.mkdir(parents=True)
        formats = ",".join(["ND"] * len(dtypes.split(",")))
        doc = {layers.OP_TYPE: ops_info(dtypes, formats), "OtherOp": {}}
        (d / f"aic-{family}-ops-info.json").write_text(json.dumps(doc))
    reg, source = layers.ops_info_registration(vendor)
    assert source.endswith("aic-*-ops-info.json")
    assert reg["attrs"] == {"axes": {"kind": "list_int", "optional": True}}
    assert reg["socs"]["ascend910b"]["params"][0]["dtypes"] == ["float32", "float16", "bfloat16"]
    assert registration.problems(reg, "ascend910b") == []
    found = registration.problems(reg, "ascend310b")
    assert found and all("bfloat16 on ascend310b" in f for f in found)


def test_no_ops_info_is_not_available_never_a_pass(tmp_path: Path) -> None:
    with pytest.raises(layers.NotAvailable, match="no aic-<soc>-ops-info.json under"):
        layers.ops_info_registration(tmp_path)
