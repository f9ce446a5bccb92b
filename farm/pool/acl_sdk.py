"""The genuine ACL declarations, fetched at set-up time: CANN's public headers as the torch-npu
wheel on PyPI carries them (acl/acl.h, acl_rt.h, acl_base.h, its error codes) and the aclnn tensor
helpers' function types of its op-plugin (op_api_common_base.h). Nothing of them is committed;
`farm build --target acl-emu` compiles the emulated ACL runtime and the operator's aclnn layer
against them, and tests compare the agent's ctypes prototypes with them.

    build/acl-sdk/include/acl/...                 the ACL headers, as the wheel has them
    build/acl-sdk/genuine/aclnn_helper_types.h    the helpers' typedefs, cut from the op-plugin
    build/acl-sdk/SOURCE                          which wheel, and its sha256

$LSG_ACL_SDK names another directory of that layout (an offline machine's copy).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from farm.util.errors import BuildError
from farm.util.paths import REPO_ROOT as ROOT

DEFAULT_DIR = ROOT / "build" / "acl-sdk"
ENV_DIR = "LSG_ACL_SDK"
WHEEL = "torch-npu==2.14.0"
WHEEL_TAGS = [
    "--only-binary=:all:",
    "--platform",
    "manylinux_2_28_x86_64",
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
    "--abi",
    "cp311",
]
ACL_PREFIX = "torch_npu/include/third_party/acl/inc/acl/"
OP_PLUGIN_HEADER = "torch_npu/include/third_party/op-plugin/op_plugin/utils/op_api_common_base.h"
# The helpers whose function types the op-plugin declares (the emulated nnopbase must match them).
HELPERS = ("aclCreateTensor", "aclDestroyTensor", "aclCreateIntArray", "aclDestroyIntArray")
_TYPEDEF = re.compile(r"typedef\s+[^;]*?\(\s*\*\s*_(acl\w+)\s*\)\s*\([^;]*?\)\s*;", re.S)


def sdk_dir() -> Path:
    env = os.environ.get(ENV_DIR)
    return Path(env) if env else DEFAULT_DIR


def present(path: Path | None = None) -> bool:
    path = path or sdk_dir()
    return (path / "include" / "acl" / "acl.h").is_file() and (
        path / "genuine" / "aclnn_helper_types.h"
    ).is_file()


def helper_typedefs(text: str) -> dict[str, str]:
    """{helper name: its typedef} of HELPERS, from op_api_common_base.h's text."""
    found = {m.group(1): m.group(0) for m in _TYPEDEF.finditer(text)}
    missing = [h for h in HELPERS if h not in found]
    if missing:
        raise BuildError(
            f"{OP_PLUGIN_HEADER} of {WHEEL} no longer declares {', '.join(missing)}: update "
            "farm/pool/acl_sdk.py HELPERS to the wheel"
        )
    return {h: found[h] for h in HELPERS}


def _helper_header(typedefs: dict[str, str]) -> str:
    lines = [
        f"/* Cut from {WHEEL}'s {OP_PLUGIN_HEADER} by farm/pool/acl_sdk.py: the aclnn helpers'"
        " function",
        " * types as the op-plugin declares them. */",
        "#pragma once",
        '#include "acl/acl_base.h"',
        "typedef struct aclTensor aclTensor;",
        "typedef struct aclIntArray aclIntArray;",
        *typedefs.values(),
        "",
    ]
    return "\n".join(lines)


def unpack(wheel: Path, into: Path) -> Path:
    """The SDK directory `into`, made from a downloaded wheel (its headers only)."""
    staging = Path(tempfile.mkdtemp(prefix="acl-sdk-", dir=into.parent))
    try:
        with zipfile.ZipFile(wheel) as z:
            names = [n for n in z.namelist() if n.startswith(ACL_PREFIX) and n.endswith(".h")]
            if not any(n.endswith("/acl.h") for n in names):
                raise BuildError(f"{wheel.name} has no {ACL_PREFIX}acl.h")
            for name in names:
                target = staging / "include" / "acl" / name[len(ACL_PREFIX) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))
            plugin = z.read(OP_PLUGIN_HEADER).decode()
        (staging / "genuine").mkdir()
        (staging / "genuine" / "aclnn_helper_types.h").write_text(
            _helper_header(helper_typedefs(plugin))
        )
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        (staging / "SOURCE").write_text(f"{wheel.name}\nsha256 {digest}\n")
        if into.exists():
            shutil.rmtree(into)
        staging.rename(into)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return into


def main(argv: list[str] | None = None) -> int:
    """`python -m farm.pool.acl_sdk [--quiet]`: fetch the genuine ACL headers (set-up runs it)."""
    quiet = "--quiet" in (sys.argv[1:] if argv is None else argv)
    try:
        path = ensure(quiet)
    except BuildError as exc:
        print(f"acl-sdk: {exc}", file=sys.stderr)
        return 2
    if not quiet:
        print(f"acl-sdk: {path}")
    return 0


def ensure(quiet: bool = False) -> Path:
    """The SDK directory, downloading the wheel (43 MB, once) when it is not there yet."""
    path = sdk_dir()
    if present(path):
        return path
    if os.environ.get(ENV_DIR):
        raise BuildError(
            f"{ENV_DIR}={path} has no include/acl/acl.h and genuine/aclnn_helper_types.h; "
            "unset it to download the headers, or point it at a directory farm.pool.acl_sdk made"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        if not quiet:
            print(f"acl-sdk: downloading {WHEEL} for the genuine ACL headers", file=sys.stderr)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"]
        cmd += ["--disable-pip-version-check", WHEEL, "-d", tmp]
        cmd += WHEEL_TAGS  # the same wheel whatever this machine's python or CPU: headers only
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise BuildError(
                f"pip download {WHEEL} failed ({' / '.join(tail)}): the genuine ACL headers come "
                f"from that wheel; on a machine without PyPI set {ENV_DIR} to a copy of "
                f"{DEFAULT_DIR.relative_to(ROOT)} made elsewhere"
            )
        return unpack(wheels[0], path)


if __name__ == "__main__":
    sys.exit(main())
