"""Mistakes in the backend's use of ACL are caught by the emulated runtime with a message naming
the API, never returned as a silent wrong answer: each is planted in a copy of acl_session.py and
run on a strided case (tests/op/acl_planted_session.py), one process per mistake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.agent.backends import acl_api
from tests.op.acl_planted_session import MISTAKES

SCRIPT = Path(__file__).with_name("acl_planted_session.py")
# mistake: what the message must say
CAUGHT = {
    "no_sync_before_copy_back": (
        "aclrtMemcpy to host returned 107000",
        "still pending on stream",
        "call aclrtSynchronizeStream first",
    ),
    "copy_kind_swapped": (
        "aclrtMemcpy to device returned 107000",
        "with ACL_MEMCPY_DEVICE_TO_HOST: dst",
        "is device memory; the copy kind says host",
    ),
    "leaked_device_buffer": (
        "the call left 1 device buffer(s) allocated",
        "every aclrtMalloc needs its aclrtFree",
    ),
    # The backend's own handle: its mistake, an infrastructure error (one the operator's code
    # made is the operator's leak, a product failure: acl_handles.py tells them apart).
    "tensor_not_destroyed": (
        "the call left 1 aclTensor (made by code of ",
        "alive: the backend destroys each handle it makes",
    ),
    "workspace_of_size_zero": (
        "aclnnLogSoftmaxBackward(workspace",
        "returned 161002",
        "workspace of 0 bytes, phase one asked for",
    ),
    "contiguous_strides_for_a_strided_view": (
        "aclCreateTensor gave the operator dy with strides",
        "(the case's [",
    ),
}


def test_every_planted_mistake_has_its_expectation():
    assert set(CAUGHT) == set(MISTAKES)


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_planted_acl_mistake_is_caught_naming_the_api(acl_lib_dir, mistake):
    env = {**os.environ, acl_api.ENV_LIB_DIR: acl_lib_dir, "LSG_EMULATED_DEVICES": "1"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), mistake], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["caught"], f"{mistake} came back as an answer: {seen}"
    for needle in CAUGHT[mistake]:
        assert needle in seen["message"], (mistake, seen["message"])
