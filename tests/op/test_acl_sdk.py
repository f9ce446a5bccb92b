"""The genuine ACL declarations are cut from the torch-npu wheel exactly as farm/pool/acl_sdk.py
says: its ACL headers whole, the aclnn helpers' function types from its op-plugin; a wheel that no
longer declares a helper is refused naming it."""

from __future__ import annotations

import zipfile

import pytest

from farm.pool import acl_sdk
from farm.util.errors import BuildError

PLUGIN = """typedef aclTensor* (*_aclCreateTensor)(
    const int64_t* view_dims, uint64_t view_dims_num, aclDataType data_type,
    const int64_t* stride, int64_t offset, aclFormat format, const int64_t* storage_dims,
    uint64_t storage_dims_num, void* tensor_data);
typedef aclScalar* (*_aclCreateScalar)(void* value, aclDataType data_type);
typedef int (*_aclDestroyTensor)(const aclTensor* tensor);
typedef aclIntArray* (*_aclCreateIntArray)(const int64_t* value, uint64_t size);
typedef int (*_aclDestroyIntArray)(const aclIntArray* array);
"""


def wheel(tmp_path, plugin: str = PLUGIN):
    path = tmp_path / "torch_npu-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(acl_sdk.ACL_PREFIX + "acl.h", '#include "acl_rt.h"\n')
        z.writestr(acl_sdk.ACL_PREFIX + "acl_rt.h", "int aclInit(const char *configPath);\n")
        z.writestr(acl_sdk.ACL_PREFIX + "error_codes/rt_error_codes.h", "#define X 1\n")
        z.writestr("torch_npu/include/other/not_acl.h", "nothing\n")
        z.writestr(acl_sdk.OP_PLUGIN_HEADER, plugin)
    return path


def test_the_wheel_gives_its_acl_headers_and_the_helpers_types(tmp_path):
    sdk = acl_sdk.unpack(wheel(tmp_path), tmp_path / "sdk")
    assert acl_sdk.present(sdk)
    headers = sorted(p.relative_to(sdk).as_posix() for p in (sdk / "include").rglob("*.h"))
    assert headers == [
        "include/acl/acl.h",
        "include/acl/acl_rt.h",
        "include/acl/error_codes/rt_error_codes.h",
    ]
    helpers = (sdk / "genuine" / "aclnn_helper_types.h").read_text()
    for name in acl_sdk.HELPERS:
        assert f"(*_{name})" in helpers
    assert "_aclCreateScalar" not in helpers  # only what the emulation implements
    assert (sdk / "SOURCE").read_text().startswith("torch_npu-2.14.0-")


def test_a_wheel_without_a_helper_is_refused_naming_it(tmp_path):
    plugin = PLUGIN.replace("_aclDestroyIntArray", "_aclSomethingElse")
    with pytest.raises(BuildError, match="no longer declares aclDestroyIntArray"):
        acl_sdk.unpack(wheel(tmp_path, plugin), tmp_path / "sdk")
    assert not (tmp_path / "sdk").exists()
