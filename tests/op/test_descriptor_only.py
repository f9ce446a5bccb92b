"""Descriptor-only dtypes (complex): the agent passes the operator descriptors without data, and
the real kernel's host code must refuse them before anything runs, with the contract's reason."""

from __future__ import annotations

import pytest

from farm.agent.execute import descriptor_only, run_case
from farm.run.requests import case_request
from suites.case import Case
from tests.identities import host_identity

CASES = [
    Case("ascend910b", "complex64", (2, 8), (1,)),
    Case("ascend910b", "complex128", (3,), (0,)),
    Case("ascend910b", "float32", (2, 8), (1,), y_dtype="complex64"),
    Case("ascend910b", "float16", (2, 8), (1,), out_dtype="complex128"),
    Case("ascend310b", "complex64", (2, 8), (1,), missing="y"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_operator_refuses_a_complex_descriptor(acpu_lib, case):
    data = case.to_dict()
    assert descriptor_only(data)
    record = run_case(
        data, "native", 0, host_identity(soc="Ascend910B1" if "910b" in case.id else "Ascend310B1")
    )
    assert (record["outcome"], record["reason"]) == ("passed", case.expected.reason), record
    assert record["status"] == case.expected.status and record["verdict"] is None


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_through_acl_the_package_refuses_a_complex_tensor_alike(acl_lib_dir, monkeypatch, case):
    """Through ACL a descriptor is an aclTensor of zeros of its dtype on the device: the
    package's aclnn layer and the generated entry under it refuse it with the contract's reason."""
    monkeypatch.setenv("LSG_ACL_LIB_DIR", acl_lib_dir)
    data = case.to_dict()
    record = run_case(
        data, "acl", 0, host_identity(soc="Ascend910B1" if "910b" in case.id else "Ascend310B1")
    )
    assert (record["outcome"], record["reason"]) == ("passed", case.expected.reason), record
    assert record["status"] == case.expected.status and record["device_run"]["device_id"] == 0


def test_the_torch_backend_says_it_cannot_pass_a_descriptor(acpu_lib):
    record = run_case(
        case_request(Case("ascend910b", "complex64", (2, 8), (1,))), "torch", 0, host_identity()
    )
    assert record["outcome"] == "failed"
    assert "cannot pass a tensor descriptor without data" in record["op_message"]
