"""How a run ends, decided in one place: its exit code, the status and exit code the store and
the summary hold, whether it is a subset, what stopped it. `farm run` (farm/cli/run_command.py)
and `farm merge` (farm/cli/merge_command.py) both end through :func:`decide`.

The rules (README.md, the paragraph on `farm run`'s exit codes; tests/run/test_finish.py holds
them as a table):

- 0 every case passed.
- 1 product failures; or, every case passed, a quality gate that failed (a regression against
  the baseline), stored as 1 too so that such a run is never a baseline.
- A group merged before answers a merge again with that run's code (2 if the group is missing
  shards now, or its report cannot be made).
- 2 the run was degraded or incomplete by infrastructure: a host unhealthy or quarantined, a
  chip set aside, a case broken or lost, pytest unable to run the suites (or refusing the
  arguments after --: nothing ran, the run is stored aborted), a shard missing or degraded (a
  merged run), the run directory refusing writes (before every case had its record: the run is
  stored aborted; after: the run is stored as it was, the command exits 2), the store refusing
  the results, the report not made (stored and summarised as 2 as well).
- 130 / 143 / 129 / 141 a stop by SIGINT / SIGTERM / SIGHUP / a closed pipe (SIGPIPE:
  farm/util/interrupts.py output_gone) before the run's outcome was decided: what finished is
  stored, the run is marked interrupted (never a baseline, never judged). A stop after the run
  is stored and summarised is no input here: it only skips the report, and the command exits
  with the run's code.

The facts come in stages (the gate is judged, the outputs written, the report made after the
run is stored): each stage asks again with what it learnt (dataclasses.replace), and the answer
is always this one function's.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # every case passed
    PRODUCT = 1  # product failures, or a failed quality gate
    INFRA = 2  # degraded or incomplete by infrastructure, a usage error, a farm bug
    SIGHUP = 128 + signal.SIGHUP  # 129: its terminal closed
    SIGINT = 128 + signal.SIGINT  # 130: Ctrl-C
    PIPE = 128 + signal.SIGPIPE  # 141: its output's reader went away
    SIGTERM = 128 + signal.SIGTERM  # 143: a CI cancel, kill PID

    @classmethod
    def of_stop(cls, signum: int) -> ExitCode:
        """The exit code of a stop by signal ``signum``."""
        return cls(128 + signum)


FINISHED, INTERRUPTED, ABORTED = "finished", "interrupted", "aborted"


@dataclass(frozen=True)
class RunFacts:
    """What is known of a run when its end is decided."""

    failed: int = 0  # cases that failed (the product's)
    broken: int = 0  # cases broken or lost (the infrastructure's)
    # What degraded the run, one line each: hosts unhealthy or quarantined, chips set aside,
    # pytest unable to run the suites, a shard degraded by infrastructure.
    infrastructure: tuple[str, ...] = ()
    refused: bool = False  # pytest refused the arguments after --: nothing ran
    cut_short: bool = False  # the run directory refused writes before every case had a record
    incomplete: bool = False  # a merged run missing shards (farm merge)
    stop: int | None = None  # the signal that stopped the run before its outcome was decided
    subset: bool = False  # fewer cases than its selection (-k, -x), or one shard
    # farm merge of a group merged before (by an earlier or a concurrent merge): that run's code
    merged_as: ExitCode | None = None
    # Learnt as the run is stored, judged, written and reported:
    store_refused: bool = False  # the store could not take the results
    gate_failed: bool = False  # the quality gate failed (judged only when judgeable)
    fault: str | None = None  # a write the run directory refused (its records, its outputs)
    report_failed: bool = False  # the report was not made


@dataclass(frozen=True)
class RunOutcome:
    exit_code: ExitCode  # the command's
    stored_code: ExitCode  # what the store and summary.json say
    status: str  # the store's: finished | interrupted | aborted
    subset: bool  # never the tier's baseline
    interruption: int | None  # the stop signal, when one stopped the run
    fault: str | None  # the run directory's refusal, when one degraded it

    @property
    def judgeable(self) -> bool:
        """Whether the run is judged (quality gate, triage): finished whole, no stop, no fault."""
        return self.interruption is None and self.fault is None and self.status == FINISHED


def _run_code(f: RunFacts) -> tuple[ExitCode, str]:
    """The run's own code and status (what the store says), from its cases and events."""
    if f.stop is not None:
        return ExitCode.of_stop(f.stop), INTERRUPTED
    if f.incomplete or f.cut_short or f.refused:
        return ExitCode.INFRA, ABORTED
    if f.merged_as is not None:
        return f.merged_as, FINISHED
    if f.broken or f.infrastructure:
        return ExitCode.INFRA, FINISHED
    if f.failed or f.gate_failed:
        return ExitCode.PRODUCT, FINISHED
    return ExitCode.OK, FINISHED


def decide(f: RunFacts) -> RunOutcome:
    """The run's end, from everything known of it (the rules: this module's docstring)."""
    code, status = _run_code(f)
    stored = ExitCode.INFRA if f.report_failed else code
    if f.store_refused or f.report_failed:
        exit_code = ExitCode.INFRA
    elif f.fault is not None and f.stop is None:
        exit_code = ExitCode.INFRA  # outputs the disk refused: degraded, stored as it was
    else:
        exit_code = code
    return RunOutcome(
        exit_code=exit_code,
        stored_code=stored,
        status=status,
        subset=f.subset or f.incomplete,
        interruption=f.stop,
        fault=f.fault,
    )
