"""Who left an aclTensor, aclIntArray or executor alive on the emulated ACL runtime: the operator's
code or the backend's.

The emulated nnopbase (op/acl_emu/src/nnopbase.cpp) remembers, for each live handle, the library
whose code created it: the caller of aclCreateTensor or aclCreateIntArray, and for an executor the
caller of the phase one that made it (the executor belongs to whoever asked for it). A handle made
by code of the operator's op-api library (its aclnn layer, or the entry CANN generates from its
OpDef) and still alive after the call is the operator's leak, a product failure (resource_leak);
any other is the backend's own mistake (its ctypes calls come from libffi), an infrastructure
error. CANN releases leaked handles silently when the process ends; we are stricter
(op/acl_emu/README.md, "leaks").

Standard library only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable

from farm.agent.backends import acl_api as api


def serial(libs: api.Libraries) -> int:
    """The serial of the last handle made so far: those made later have greater ones."""
    return int(libs.nnopbase.lsg_emu_acl_handle_serial())


def made_since(libs: api.Libraries, after: int, upto: int | None = None) -> tuple[list, list]:
    """The live handles made after serial `after` (and up to `upto`): (the operator's, the
    others'), each {"serial", "kind", "api", "by"}."""
    handles = json.loads(libs.nnopbase.lsg_emu_acl_live_handle_list().decode())
    new = [h for h in handles if h["serial"] > after and (upto is None or h["serial"] <= upto)]
    operator = _same_file(libs.op_api_path)
    mine = [h for h in new if operator(h["by"])]
    return mine, [h for h in new if not operator(h["by"])]


def _same_file(path: str):
    real = os.path.realpath(path)
    return lambda other: os.path.realpath(other) == real


def describe(handles: Iterable[dict]) -> str:
    """'2 executors of aclnnLogSoftmaxGradCustom, 1 aclTensor' (made by <library names>)."""
    handles = list(handles)
    names = {"tensor": "aclTensor", "int array": "aclIntArray"}
    kinds = Counter(
        f"executor of {h['api']}" if h["kind"] == "executor" else names.get(h["kind"], h["kind"])
        for h in handles
    )
    by = sorted({os.path.basename(h["by"]) for h in handles})
    parts = ", ".join(f"{n} {_plural(what, n)}" for what, n in kinds.items())
    return f"{parts} (made by code of {', '.join(by)})"


def _plural(what: str, n: int) -> str:
    if n == 1:
        return what
    head, sep, tail = what.partition(" of ")
    return f"{head}s{sep}{tail}"
