"""The operator's aclnn layer on the error paths a good call never takes, tried by the acl backend
after each good call on the emulated runtime (never on CANN), with the call's own tensors,
buffers and workspace:

- phase two given a workspace one byte short of what phase one asked for: the caller's mistake,
  to be refused with a parameter status (op/ascendc/op_api: ACLNN_ERR_PARAM_INVALID);
- where the layer copies a view: aclnnInplaceCopy failing in phase one (a fault the emulated
  runtime arms, lsg_emu_acl_inject): phase one must fail;
- where it copies an input: aclnnInplaceCopy, then the generated entry, asking in phase two for
  more workspace than in phase one: the layer's own failure, ACLNN_ERR_INNER.

After each, nothing the operator's code made may be left alive (acl_handles.py): a handle it did
release on the error path is a leak, as much as on a good call. What a probe finds is the
operator's (Findings: a wrong answer, or a leak); a handle the backend's code left is the
backend's (AclCallError).

Standard library and numpy only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field

from farm.agent.backends import acl_handles
from farm.agent.backends.acl_session import (
    AclCallError,
    HostTensor,
    LiveCall,
    is_parameter_status,
    message,
)

ACLNN_ERR_INNER = 561000
COPY = b"aclnnInplaceCopy"
ENTRY = b"aclnnLogSoftmaxGradCustom"  # the generated entry under the layer


@dataclass
class Findings:
    """What the probes found of the operator, and where they began."""

    start: int  # the last handle serial before the first probe
    wrong: list[str] = field(default_factory=list)  # a probe the layer answered wrongly
    leaked: list[str] = field(default_factory=list)  # what the operator's code left in one


def run(call: LiveCall) -> Findings:
    """Every probe that applies to the call, in turn (run_op's `after`)."""
    found = Findings(acl_handles.serial(call.libs))
    copied = [_copied(t) for t in call.tensors]
    probes: list[tuple[str, Callable[[LiveCall], str]]] = []
    if call.ws:
        probes.append(("a phase two given a workspace one byte short", _short_workspace))
    if any(copied):
        probes.append(("a phase one whose aclnnInplaceCopy failed", _copy_refused))
    if copied[0] or copied[1]:
        probes.append(("a phase two whose aclnnInplaceCopy asked for more", _copy_grew))
        probes.append(("a phase two whose generated entry asked for more", _entry_grew))
    for name, probe in probes:
        before = acl_handles.serial(call.libs)
        try:
            wrong = probe(call)
        finally:
            for api in (COPY, ENTRY):  # a fault not taken stays with its probe
                call.libs.nnopbase.lsg_emu_acl_inject(api, b"")
            call.libs.ascendcl.aclrtSynchronizeStream(call.device.stream)
            message(call.libs)  # what the layer said is not the next call's
        if wrong:
            found.wrong.append(f"{name}: {wrong}")
        mine, others = acl_handles.made_since(call.libs, before)
        if others:
            raise AclCallError(
                f"the backend's probe ({name}) left {acl_handles.describe(others)} alive"
            )
        if mine:
            found.leaked.append(f"{name}: left {acl_handles.describe(mine)} alive")
    return found


def _copied(t: HostTensor | None) -> bool:
    """Whether the layer copies this view through the workspace (op/ascendc/op_api
    View::contiguous): some element, and a stride off C order on an extent other than 1."""
    if t is None or 0 in t.dims:
        return False
    expect = 1
    for d, s in zip(reversed(t.dims), reversed(t.strides), strict=True):
        if d != 1 and s != expect:
            return True
        expect *= d
    return False


def _again(call: LiveCall) -> tuple[str, int, ctypes.c_void_p]:
    """Phase one of the same call again: ("", size, executor), or what went wrong."""
    status, ws, executor = call.phase_one()
    if status != 0:
        said = message(call.libs)
        return f"phase one of the same call again returned {status}: {said}", 0, executor
    if ws != call.ws:
        call.phase_two(call.workspace, 0, executor)  # refused: releases the executor
        return f"phase one of the same call asked for {ws} bytes, first {call.ws}", 0, executor
    return "", ws, executor


def _short_workspace(call: LiveCall) -> str:
    wrong, ws, executor = _again(call)
    if wrong:
        return wrong
    got = call.phase_two(call.workspace, ws - 1, executor)
    if got == 0:
        return (
            f"phase two accepted {ws - 1} bytes of workspace, phase one asked for {ws}: a "
            "workspace short of it is the caller's mistake, to be refused (a parameter status)"
        )
    if not is_parameter_status(got):
        return (
            f"phase two returned {got} for {ws - 1} bytes of workspace, phase one asked for {ws}: "
            "the caller's mistake is a parameter status (ACLNN_ERR_PARAM_INVALID)"
        )
    return ""


def _copy_refused(call: LiveCall) -> str:
    call.libs.nnopbase.lsg_emu_acl_inject(COPY, b"refuse")
    status, ws, executor = call.phase_one()
    taken = call.libs.nnopbase.lsg_emu_acl_inject(COPY, b"") == 0
    if status != 0:
        return ""
    # Accepted: its executor is released by a phase two that refuses it (or runs it, when the
    # layer asked for no workspace).
    call.phase_two(call.workspace, max(ws, 1) - 1, executor)
    if taken:
        return "phase one returned 0 though aclnnInplaceCopyGetWorkspaceSize failed under it"
    return ""


def _copy_grew(call: LiveCall) -> str:
    return _grew(call, COPY, "aclnnInplaceCopy")


def _entry_grew(call: LiveCall) -> str:
    return _grew(call, ENTRY, "the generated entry (aclnnLogSoftmaxGradCustom)")


def _grew(call: LiveCall, api: bytes, who: str) -> str:
    """Phase two when `api` asks for 512 bytes more than in phase one: ACLNN_ERR_INNER (the
    layer's own failure: its workspace was planned on the first answer)."""
    wrong, ws, executor = _again(call)
    if wrong:
        return wrong
    call.libs.nnopbase.lsg_emu_acl_inject(api, b"grow")
    got = call.phase_two(call.workspace, ws, executor)
    if got != ACLNN_ERR_INNER:
        return (
            f"phase two returned {got} when {who} asked for more workspace than in phase one: "
            f"expected {ACLNN_ERR_INNER} (ACLNN_ERR_INNER, the layer's own failure)"
        )
    return ""
