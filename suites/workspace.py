"""The workspace the operator's aclnn layer asks for in phase one (op/ascendc/op_api
aclnn_log_softmax_backward.cpp `prepare`), computed here independently from the case's layouts
and dtype, and checked on the acl backend's records.

The layer's design: when no view is copied, exactly what the generated entry asks for; otherwise
the generated entry's, aligned to 512 bytes, then a contiguous buffer for each view it copies (dy,
y, out in that order: each numel x element bytes aligned to 512), then the largest workspace its
copies ask for (aclnnInplaceCopy makes a strided source contiguous in its own workspace: numel x
element bytes aligned to 512; out's copy back reads the contiguous buffer and asks for none). The
generated entry asks for the tiling function's one workspace, the Ascend C library's system
workspace (GetLibApiWorkSpaceSize: 16 MiB on Atlas A2, 2 MiB elsewhere, op/README.md).

Exact on the emulated runtime, by our own rule: a byte more is device memory a large call cannot
spare, a byte less a buffer that overruns its neighbour. There the record also says how far into
the workspace the call's device tasks reached (the runtime counts the ranges each task uses):
all of it, up to the last region's alignment, or the layer asks for a part it never uses (its
scratch planned over another region, say). On a CANN device the generated entry's
workspace and the built-in copy's are CANN's (its system workspace, its Contiguous), so only the
part the layer owns is checked there: the buffers of the views it copies, at least.
"""

from __future__ import annotations

from golden import layouts, soc
from golden.dtypes import numpy_dtype

ALIGN = 512  # device buffers start on 512 bytes (the layer's kAlign; CANN's Contiguous the same)
MIB = 1 << 20
# GetLibApiWorkSpaceSize, by family: what the public platform implementation reports.
SYSTEM_WORKSPACE = {"ascend910b": 16 * MIB, "ascend310b": 2 * MIB}
NAMES = ("dy", "y", "out")


class WorkspaceMismatch(AssertionError):
    """The workspace the aclnn layer asked for departs from its design: category "workspace"
    (suites/tiling.py check_tiling raises it after the tiling's own check)."""

    category = "workspace"


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def system_workspace(soc_name: str) -> int:
    """What the generated entry asks for: the tiling function's one system workspace."""
    return SYSTEM_WORKSPACE[soc.family_of(soc_name)]


def copied(case, name: str) -> bool:
    """Whether the layer copies tensor `name` through the workspace: a view it cannot pass as
    it is (golden/layouts.is_dense: not contiguous, extents of 1 aside; an empty one reaches
    nothing and is never copied)."""
    return not layouts.is_dense(getattr(case, f"{name}_layout"), case.tensor_shape(name))


def one_copy(case) -> int:
    """One contiguous copy of the call's tensor (dy, y and out agree on dtype and shape in an
    accepted call), aligned."""
    return aligned(case.numel * numpy_dtype(case.dtype).itemsize)


def copy_buffers(case) -> int:
    """The contiguous buffers of the views the layer copies: the part it owns everywhere."""
    return sum(one_copy(case) for name in NAMES if copied(case, name))


def expected_aclnn_workspace(case, soc_name: str) -> int:
    """The exact workspace the layer asks for on the emulated runtime (an accepted case)."""
    entry = system_workspace(soc_name)
    if not any(copied(case, name) for name in NAMES):
        return entry
    # Only an input's copy reads a strided source; out's reads its contiguous buffer.
    gather = one_copy(case) if copied(case, "dy") or copied(case, "y") else 0
    return aligned(entry) + copy_buffers(case) + gather


def check_workspace(case, record: dict) -> None:
    """Raise WorkspaceMismatch where the acl backend's record of an accepted case says the layer
    asked for another workspace than its design: exactly on the emulated runtime, at least its
    own buffers on CANN. Records of other backends (no device_run) are not the layer's."""
    run = record.get("device_run")
    asked = record.get("workspace")
    if not run or not isinstance(asked, int) or not case.accepted:
        return
    entry = run.get("entry", "the aclnn layer")
    if run.get("emulated"):
        want = expected_aclnn_workspace(case, record["soc"])
        if asked != want:
            raise WorkspaceMismatch(
                f"[workspace] {entry}GetWorkspaceSize asked for {asked} bytes, the design "
                f"{want}: {_breakdown(case, record['soc'])}"
            )
        reached = run.get("workspace_reached")
        if isinstance(reached, int) and aligned(reached) != asked:
            raise WorkspaceMismatch(
                f"[workspace] {entry}GetWorkspaceSize asked for {asked} bytes, and the call's "
                f"device tasks reached only the first {reached} of them: the layer plans a part "
                "it never hands to any of them"
            )
        return
    own = copy_buffers(case)
    if asked < own:
        raise WorkspaceMismatch(
            f"[workspace] {entry}GetWorkspaceSize asked for {asked} bytes, less than the "
            f"{own} bytes of the buffers of the views it copies ({_copied_names(case)})"
        )


def _copied_names(case) -> str:
    return ", ".join(name for name in NAMES if copied(case, name)) or "none"


def _breakdown(case, soc_name: str) -> str:
    """The design's sum, in words (one line)."""
    entry = system_workspace(soc_name)
    names = [name for name in NAMES if copied(case, name)]
    if not names:
        return f"the generated entry's {entry} (no view copied)"
    each = one_copy(case)
    gather = each if {"dy", "y"} & set(names) else 0
    return (
        f"the generated entry's {entry} aligned to {ALIGN}, {each} for each copied view "
        f"({', '.join(names)}), {gather} for aclnnInplaceCopy's own"
    )
