"""The planted bugs: each name builds an operator with one known defect for the farm to catch
(op/README.md "Planted bugs"), and the name of a package that carries one.
"""

from __future__ import annotations

import json
from pathlib import Path

from farm.pool.build.locations import OP_DIR

# What each planted bug breaks, one line a bug (`farm build --list-bugs`, the --plant-bug help),
# in five kinds. Each plants one known defect (op/CMakeLists.txt LSG_PLANT_BUG) for the farm to
# catch. The twin compiles the first kind as LSG_PLANT_BUG_<NAME> into its own copy of the kernel
# (tests/op/test_planted_bugs.py pins what each changes); the emulated real kernel (ascendc-cpu)
# applies every one as text edits of copies of the real sources made at build time
# (op/ascendc_cpu/planted_bugs.json, in this order). benchmarks/kill_strength.py measures how
# many cases of each tier catch each one, and by how much.
TWIN_BUG_TEXT = {
    "tail": "the last chunk is moved in whole 32-byte blocks: its unaligned remainder is dropped",
    "seed_noreduce": "NO_REDUCE computes the seed's (dy - 1) * exp(y)",
    "trunc_narrow": "the output cast fp32 -> fp16/bf16 truncates instead of rounding to nearest",
    "fp16_sum": "sum(dy) is accumulated in fp16 (ascendc-cpu: REDUCE_TAIL's sums through half)",
    "drop_element": "a reduction over d1 >= 4096 leaves its last element (line) out of the sum",
    "strided_out_unwritten": "a non-contiguous out is never written (no copy back)",
}
# Kernel-source errors that the emulated device must stop (status 561000, reason kernel_fault, or
# emulation_policy where the rule is the emulation's own; op/ascendc_cpu/README.md).
KERNEL_FAULT_TEXT = {
    "ragged_datacopy": "DataCopy of a chunk that is not a whole number of 32-byte blocks",
    "ub_overflow": "one UB block too many on REDUCE_TAIL: past the UB of every SoC",
    "queue_order": "the output queue is dequeued before it is enqueued",
    "cores_overlap": "the big cores' rows start at the small cores' stride: two cores, one row",
    "short_view": "REDUCE_MID's column sums a TBuf view of 64 floats, summed over longer chunks",
}
# Kernel-source errors in the numbers, which only the judge sees.
KERNEL_NUMERIC_TEXT = {
    "round_half_away": "the output cast rounds ties away from zero instead of to even",
    "mid_running_sum": "REDUCE_MID sums its d1 lines in one running sum, not in groups of 64",
    "mid_partial_group": "REDUCE_MID leaves out a last partial group of lines beyond the first",
}
# Errors of the host code (op_host and the shared tiling it compiles).
HOST_TEXT = {
    "bf16_cast_310b": "bf16 registered for ascend310b and let through by the tiling's SoC check",
    "opdef_bf16_310b": "bf16 declared for ascend310b in the OpDef alone (the tiling still refuses)",
    "tiling_bf16_310b": "the tiling function's SoC check lets bf16 through (the OpDef refuses)",
    "host_half_blocks": "the tiling function gives the kernel half the planned UB block",
    "axes_dedup": "duplicate axes are accepted (reduced once) instead of rejected",
    "axes_span": "non-consecutive axes are accepted, reducing over their whole span",
    "tail_mod": "the last chunk's length is row % block: 0 for a row of whole blocks",
    "d2_two_as_tail": "REDUCE_TAIL is chosen for d2 <= 2, so d2 == 2 is reduced as rows",
    "empty_out_unchecked": "the OpDef does not run for an empty out: its checks are skipped",
    "infer_reads_output": "the graph inference gives out output's (y's) shape and dtype, not dy's",
}
# Errors of the operator's aclnn layer (op/ascendc/op_api): what only the acl backend runs (the
# package's ACL op-api library carries the bug; the native backend runs no aclnn layer).
ACLNN_TEXT = {
    "reason_wording": "the aclnn layer's reason line in other words: '(why N)', no reason's name",
    "copy_back_skipped": "the aclnn layer never copies a non-contiguous out back from workspace",
    "workspace_short": "the aclnn layer asks for a workspace one copy short of what it then uses",
    "executor_leak": "the aclnn layer never releases phase one's executor when it copies a view",
}
BUG_TEXT = TWIN_BUG_TEXT | KERNEL_FAULT_TEXT | KERNEL_NUMERIC_TEXT | HOST_TEXT | ACLNN_TEXT
# "" is the real operator (what a build, a run and a manifest record for no bug); BUG_NAMES are
# what a command line offers (no empty choice).
TWIN_PLANT_BUGS = ("", *TWIN_BUG_TEXT)
KERNEL_FAULT_BUGS = tuple(KERNEL_FAULT_TEXT)
KERNEL_NUMERIC_BUGS = tuple(KERNEL_NUMERIC_TEXT)
HOST_BUGS = tuple(HOST_TEXT)
ACLNN_BUGS = tuple(ACLNN_TEXT)
PLANT_BUGS = TWIN_PLANT_BUGS + KERNEL_FAULT_BUGS + KERNEL_NUMERIC_BUGS + HOST_BUGS + ACLNN_BUGS
BUG_NAMES = PLANT_BUGS[1:]
PLANTED_BUGS_FILE = OP_DIR / "ascendc_cpu" / "planted_bugs.json"


def planted_bugs() -> dict[str, list[dict]]:
    """The emulated real kernel's planted bugs: {bug: [{file, old, new}]} (paths under op/)."""
    return json.loads(PLANTED_BUGS_FILE.read_text())


def bug_in_archive(name: str) -> str:
    """The bug planted in the package an archive_name names ("" for the real operator)."""
    stem = Path(name).name.removesuffix(".tar.gz")
    for bug in PLANT_BUGS:
        if bug and (stem.endswith(f"-bug-{bug}") or f"-bug-{bug}-" in stem):
            return bug
    return ""


def bug_kind(name: str) -> str:
    """Where a planted bug is: twin (both targets), kernel fault, kernel numbers, host code, the
    aclnn layer."""
    for kind, bugs in (
        ("twin and ascendc-cpu", TWIN_BUG_TEXT),
        ("ascendc-cpu, a kernel fault", KERNEL_FAULT_TEXT),
        ("ascendc-cpu, the kernel's numbers", KERNEL_NUMERIC_TEXT),
        ("ascendc-cpu, the host code", HOST_TEXT),
        ("ascendc-cpu, the aclnn layer (the acl backend)", ACLNN_TEXT),
    ):
        if name in bugs:
            return kind
    raise KeyError(name)


def bug_lines() -> list[str]:
    """`farm build --list-bugs`: one line a planted bug: its name, what it breaks, where."""
    width = max(map(len, BUG_NAMES))
    return [f"{name:<{width}}  {BUG_TEXT[name]} [{bug_kind(name)}]" for name in BUG_NAMES]


def plant_bug_help(what: str) -> str:
    """The --plant-bug help of a command: what it does with one, and where the list is."""
    return (
        f"{what}; one of the planted bugs (`farm build --list-bugs` says what each breaks; "
        "the twin plants " + ", ".join(TWIN_PLANT_BUGS[1:]) + ", ascendc-cpu every one)"
    )
