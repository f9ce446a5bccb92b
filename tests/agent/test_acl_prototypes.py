"""Every foreign call of the acl backend has the types of its genuine declaration: each ctypes
prototype (farm/agent/backends/acl_api.py, written in C) is compared, type by type, with the
declaration read from the headers the package is built against — CANN's ACL headers from the
torch-npu wheel, the aclnn helpers' function types of its op-plugin, the operator's op-api header
and the emulated runtime's own — and every ACL function the backend calls has a prototype."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.agent.backends import acl_api
from farm.pool import acl_sdk
from tests.requirements import need

REPO = Path(__file__).resolve().parents[2]
OP_API_HEADER = REPO / "op" / "ascendc" / "op_api" / "aclnn_log_softmax_backward.h"
EMU_HEADER = REPO / "op" / "acl_emu" / "include" / "lsg_emu_acl.h"
BACKEND = [REPO / "farm" / "agent" / "backends" / n for n in ("acl.py", "acl_session.py")]


def _text(path: Path) -> str:
    text = path.read_text(errors="replace")
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def declarations(paths, marker: str) -> dict[str, acl_api.Declaration]:
    """name -> declaration of every `<marker> <ret> name(params);` in the files."""
    found = {}
    pattern = re.compile(marker + r"\s+([\w\s\*]+?)\b(\w+)\s*\(([^;{]*?)\)\s*;", re.S)
    for path in paths:
        for ret, name, params in pattern.findall(_text(path)):
            found[name] = acl_api.parse(f"{ret.strip()} {name}({' '.join(params.split())})")
    return found


def helper_typedefs(path: Path) -> dict[str, acl_api.Declaration]:
    found = {}
    pattern = re.compile(r"typedef\s+([\w\s\*]+?)\(\s*\*\s*_(\w+)\s*\)\s*\(([^;]*?)\)\s*;", re.S)
    for ret, name, params in pattern.findall(_text(path)):
        found[name] = acl_api.parse(f"{ret.strip()} {name}({' '.join(params.split())})")
    return found


@pytest.fixture(scope="module")
def genuine() -> dict[str, dict[str, acl_api.Declaration]]:
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    sdk = acl_sdk.sdk_dir()
    acl_headers = sorted((sdk / "include" / "acl").rglob("*.h"))
    return {
        "ascendcl": declarations(acl_headers, "ACL_FUNC_VISIBILITY"),
        "nnopbase": helper_typedefs(sdk / "genuine" / "aclnn_helper_types.h"),
        "cust_opapi": declarations([OP_API_HEADER], "ACL_FUNC_VISIBILITY"),
        "emulation": declarations([EMU_HEADER], "LSG_EMU_API"),
    }


def ours():
    for library, decls in acl_api.PROTOTYPES.items():
        for d in decls:
            yield library, d
    for decls in acl_api.EMULATION.values():
        for d in decls:
            yield "emulation", d


@pytest.mark.parametrize("library, declaration", list(ours()), ids=lambda v: str(v)[:60])
def test_each_prototype_has_the_types_of_its_genuine_declaration(genuine, library, declaration):
    mine = acl_api.parse(declaration)
    theirs = genuine[library].get(mine.name)
    assert theirs is not None, f"{mine.name} is not declared in the {library} headers"
    assert (mine.restype, mine.params) == (theirs.restype, theirs.params), (
        f"{mine.name}: the backend declares {mine.restype}({', '.join(mine.params)}), the header "
        f"{theirs.restype}({', '.join(theirs.params)})"
    )
    # And the ctypes types follow from the C types.
    assert acl_api.prototype(declaration) == (
        acl_api.ctype(theirs.restype),
        [acl_api.ctype(p) for p in theirs.params],
    )


def test_every_acl_function_the_backend_calls_has_a_prototype():
    declared = {acl_api.parse(d).name for _, d in ours()}
    called = set()
    for path in BACKEND:
        called |= set(re.findall(r"\.(acl\w+|lsg_emu_acl\w+)\(", path.read_text()))
    assert called, "no ACL call found: the pattern is out of date"
    assert called <= declared, f"called without a prototype: {sorted(called - declared)}"


def test_the_parser_reads_what_a_wrong_prototype_would_get_wrong():
    """A swapped argument is a difference of types here, not a crash on the first host."""
    right = acl_api.parse(
        "aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, "
        "size_t count, aclrtMemcpyKind kind)"
    )
    swapped = acl_api.parse(
        "aclError aclrtMemcpy(void *dst, const void *src, size_t destMax, "
        "size_t count, aclrtMemcpyKind kind)"
    )
    assert right.params != swapped.params
    assert right.params == ("void *", "size_t", "const void *", "size_t", "aclrtMemcpyKind")
