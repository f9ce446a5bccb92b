"""The planted bugs: each name builds an operator with one known defect for the farm to catch
(op/README.md "Planted bugs"), and the name of a package that carries one.
"""

from __future__ import annotations

import json
from pathlib import Path

from farm.pool.build.locations import OP_DIR

# "" is the real operator; the others plant one known defect each (op/CMakeLists.txt LSG_PLANT_BUG)
# for the farm to catch. The twin compiles the first six as LSG_PLANT_BUG_<NAME> into its own
# copy of the kernel (tests/op/test_planted_bugs.py pins what each changes); the emulated real
# kernel (ascendc-cpu) applies every one as text edits of copies of the real sources made at
# build time (op/ascendc_cpu/planted_bugs.json, in this order). benchmarks/kill_strength.py
# measures how many cases of each tier catch each one, and by how much.
TWIN_PLANT_BUGS = (
    "",
    "tail",  # the last chunk is moved in whole 32-byte blocks: its unaligned remainder is dropped
    "seed_noreduce",  # NO_REDUCE computes the seed's (dy - 1) * exp(y)
    "trunc_narrow",  # the output cast fp32 -> fp16/bf16 truncates instead of rounding to nearest
    "fp16_sum",  # sum(dy) is accumulated in fp16 (ascendc-cpu: REDUCE_TAIL's sums through half)
    "drop_element",  # a reduction over d1 >= 4096 leaves its last element (line) out of the sum
    "strided_out_unwritten",  # a non-contiguous out is never written (no copy back)
)
# Kernel-source errors that the emulated device must stop (status 561000, reason kernel_fault, or
# emulation_policy where the rule is the emulation's own; op/ascendc_cpu/README.md).
KERNEL_FAULT_BUGS = (
    "ragged_datacopy",  # DataCopy of a chunk that is not a whole number of 32-byte blocks
    "ub_overflow",  # one UB block too many on REDUCE_TAIL: past the UB of every SoC
    "queue_order",  # the output queue is dequeued before it is enqueued
    "cores_overlap",  # the big cores' rows start at the small cores' stride: two cores, one row
    "short_view",  # REDUCE_MID's column sums a TBuf view of 64 floats, summed over longer chunks
)
# Kernel-source errors in the numbers, which only the judge sees.
KERNEL_NUMERIC_BUGS = (
    "round_half_away",  # the output cast rounds ties away from zero instead of to even
    "mid_running_sum",  # REDUCE_MID sums its d1 lines in one running sum, not in groups of 64
    "mid_partial_group",  # REDUCE_MID leaves out a last partial group of lines beyond the first
)
# Errors of the host code (op_host and the shared tiling it compiles).
HOST_BUGS = (
    "bf16_cast_310b",  # bf16 registered for ascend310b and let through by the tiling's SoC check
    "host_half_blocks",  # the tiling function gives the kernel half the planned UB block
    "axes_dedup",  # duplicate axes are accepted (reduced once) instead of rejected
    "axes_span",  # non-consecutive axes are accepted, reducing over their whole span
    "tail_mod",  # the last chunk's length is row % block: 0 for a row of whole blocks
    "d2_two_as_tail",  # REDUCE_TAIL is chosen for d2 <= 2, so d2 == 2 is reduced as rows
    "empty_out_unchecked",  # the OpDef does not run for an empty out: its checks are skipped
)
PLANT_BUGS = TWIN_PLANT_BUGS + KERNEL_FAULT_BUGS + KERNEL_NUMERIC_BUGS + HOST_BUGS
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
