"""Small stand-ins for CANN's libraries, compiled in a test with the C compiler: shared libraries
that export exactly the functions named (so a test can leave one out, as an older CANN or another
product's package does). TEST-ONLY."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from farm.agent.backends import acl_api
from tests.requirements import need


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    need(cc is not None, "a C compiler (cc or gcc)")
    return str(cc)


def shared_library(path: Path, functions: dict[str, str]) -> Path:
    """``path``, a shared library that defines ``functions`` (name -> its whole C definition; an
    empty one: ``long name() { return 0; }``, which is ACL_SUCCESS)."""
    lines = ["#include <string.h>"]
    for name, definition in functions.items():
        lines.append(definition or f"long {name}() {{ return 0; }}")
    source = path.with_suffix(".c")
    path.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("\n".join(lines) + "\n")
    subprocess.run(
        [compiler(), "-shared", "-fPIC", "-o", str(path), str(source)],
        check=True,
        capture_output=True,
    )
    return path


def op_api_library(path: Path, *, without: tuple[str, ...] = ()) -> Path:
    """A libcust_opapi.so with the operator's entries but ``without``, and one of its own."""
    names = {n: "" for n in acl_api.OP_API_ENTRIES if n not in without}
    return shared_library(path, {**names, "aclnnSomethingElse": ""})


def acl_runtime(directory: Path, *, without: tuple[str, ...] = (), version_str: str = "") -> Path:
    """``directory`` with libascendcl.so, libnnopbase.so and libcust_opapi.so exporting every
    function of acl_api.PROTOTYPES except ``without``; aclrtGetSocName says "Ascend910B1", and
    aclsysGetVersionStr (where present) says ``version_str`` for the "runtime" package."""
    by_library: dict[str, dict[str, str]] = {}
    for library, declarations in acl_api.PROTOTYPES.items():
        for declaration in declarations:
            name = acl_api.parse(declaration).name
            if name not in without:
                by_library.setdefault(library, {})[name] = ""
    ascendcl = by_library["ascendcl"]
    ascendcl["aclrtGetSocName"] = 'const char *aclrtGetSocName(void) { return "Ascend910B1"; }'
    ascendcl["aclGetRecentErrMsg"] = 'const char *aclGetRecentErrMsg(void) { return ""; }'
    if "aclsysGetVersionStr" in ascendcl:
        ascendcl["aclsysGetVersionStr"] = (
            'int aclsysGetVersionStr(char *pkg, char *out) { if (strcmp(pkg, "runtime")) '
            f'return 100000; strcpy(out, "{version_str}"); return 0; }}'
        )
    if "aclsysGetCANNVersion" in ascendcl:  # its version field comes first in the struct
        ascendcl["aclsysGetCANNVersion"] = (
            'int aclsysGetCANNVersion(int pkg, char *v) { strcpy(v, "8.0.0-struct"); return 0; }'
        )
    files = {"ascendcl": "libascendcl.so", "nnopbase": "libnnopbase.so"}
    for library, functions in by_library.items():
        name = files.get(library, acl_api.OP_API_FILE)
        shared_library(directory / name, functions)
    return directory
