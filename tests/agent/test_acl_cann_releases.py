"""The acl backend on the CANN releases it meets: a runtime without the version queries
(aclsysGetCANNVersion is absent before CANN 8.1.RC1 and deprecated for aclsysGetVersionStr, which
older releases lack too) still loads and says the toolkit's version; ACL already initialised in
the process (torch_npu's) is no failure, and is left for its owner to finalise.

The libraries are small stand-ins compiled here (tests/agent/fake_acl.py), loaded in a child
process: their symbols, loaded RTLD_GLOBAL, must not meet the emulated runtime's of other tests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from farm.agent.backends import acl_api
from farm.agent.backends.acl_session import AclCallError, Runtime
from farm.pool import acl_sdk
from tests.agent.fake_acl import acl_runtime
from tests.requirements import need

REPO = Path(__file__).resolve().parents[2]
VERSIONS = ("aclsysGetVersionStr", "aclsysGetCANNVersion")

_LOAD = """
import json
from farm.agent.backends import acl, acl_api
libs = acl_api.load()
print(json.dumps({"absent": sorted(libs.absent), "runtime": acl.runtime_description()}))
acl.close()
"""


def _load(lib_dir: Path, home: Path) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        acl_api.ENV_LIB_DIR: str(lib_dir),
        "ASCEND_HOME_PATH": str(home),
    }
    done = subprocess.run(
        [sys.executable, "-c", _LOAD], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _toolkit(tmp_path: Path, version: str) -> Path:
    home = tmp_path / "Ascend" / "ascend-toolkit" / "latest"
    for arch in ("x86_64", "aarch64"):
        (home / f"{arch}-linux").mkdir(parents=True)
        (home / f"{arch}-linux" / "ascend_toolkit_install.info").write_text(
            f"package_name=Ascend-cann-toolkit\nversion={version}\n"
        )
    return home


@pytest.mark.parametrize(
    "without, says",
    [
        (VERSIONS, "CANN 8.0.RC3 (ascend_toolkit_install.info);"),  # neither query: the toolkit's
        (("aclsysGetVersionStr",), "CANN 8.0.0-struct;"),  # the deprecated one alone
        ((), "CANN 8.1.RC1;"),  # both: the current one
        (("aclsysGetCANNVersion",), "CANN 8.1.RC1;"),  # after the deprecated one goes
    ],
    ids=["neither", "deprecated-only", "both", "current-only"],
)
def test_the_version_queries_are_optional_and_the_current_one_is_preferred(tmp_path, without, says):
    libs = acl_runtime(tmp_path / "lib", without=without, version_str="8.1.RC1")
    found = _load(libs, _toolkit(tmp_path, "8.0.RC3"))
    assert found["absent"] == sorted(without)
    assert found["runtime"].startswith(says), found["runtime"]
    assert found["runtime"].endswith("soc=Ascend910B1"), found["runtime"]


def test_any_other_function_missing_still_refuses_to_load(tmp_path):
    libs = acl_runtime(tmp_path / "lib", without=("aclrtMalloc",))
    env = {**os.environ, "PYTHONPATH": str(REPO), acl_api.ENV_LIB_DIR: str(libs)}
    done = subprocess.run(
        [sys.executable, "-c", _LOAD], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "libascendcl.so does not export aclrtMalloc" in done.stderr


class _Acl:
    """aclInit answering ``status``; every call recorded."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.calls: list[str] = []

    def aclInit(self, config):
        self.calls.append("aclInit")
        return self.status

    def aclFinalize(self):
        self.calls.append("aclFinalize")
        return 0

    def aclGetRecentErrMsg(self):
        return b"said by the runtime"


def libraries_of(acl: _Acl) -> acl_api.Libraries:
    """A stand-in for the loaded libraries: Runtime.start and close use only ascendcl."""
    return cast(acl_api.Libraries, SimpleNamespace(ascendcl=acl))


def test_acl_initialised_before_is_accepted_and_not_finalised_by_us():
    earlier = _Acl(acl_api.ACL_ERROR_REPEAT_INITIALIZE)
    runtime = Runtime.start(libraries_of(earlier))
    runtime.close()
    assert earlier.calls == ["aclInit"]  # whoever initialised it finalises it
    ours = _Acl(acl_api.ACL_SUCCESS)
    Runtime.start(libraries_of(ours)).close()
    assert ours.calls == ["aclInit", "aclFinalize"]
    with pytest.raises(AclCallError, match=r"^aclInit\(NULL\) returned 100000: said by"):
        Runtime.start(libraries_of(_Acl(100000)))


def test_the_repeat_initialize_status_is_the_genuine_headers():
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    headers = (acl_sdk.sdk_dir() / "include" / "acl").rglob("*.h")
    text = "\n".join(h.read_text(errors="replace") for h in headers)
    (value,) = set(re.findall(r"\bACL_ERROR_REPEAT_INITIALIZE\s*=\s*(\d+)", text))
    assert int(value) == acl_api.ACL_ERROR_REPEAT_INITIALIZE


def test_the_reason_of_a_call_is_its_own_lines_not_an_earlier_one_left_unread():
    """aclGetRecentErrMsg returns every message since it was last read: the call's is the last."""
    from farm.agent.backends import acl

    said = (
        "EZ1001: LogSoftmaxGrad: status 161002 (reason 4 shape_mismatch): an earlier call's "
        "[aclnnLogSoftmaxBackward]\n"
        "EZ1001: LogSoftmaxGrad: status 161002 (reason 9 bf16_unsupported_on_soc): this call's "
        "[aclnnLogSoftmaxBackward]"
    )
    assert acl._reason(161002, said) == "bf16_unsupported_on_soc"
    assert acl._reason(161002, "no reason here") is None and acl._reason(0, "") == "ok"
    # The line's status must be the call's: a line of another status is no reason of this call.
    assert acl._reason(161001, said) is None
    # Only the last line counts: an earlier line in the right words does not stand in for it.
    assert acl._reason(161002, said + "\nEZ9999: something else") is None
