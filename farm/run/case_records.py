"""The records the dispatcher makes of how a case ended (farm/run/dispatch.py): a record from an
agent completed with where and how it ran, and the records of a case that never came back
judged (given up, not run, hangs, crashes). Pure: what the dispatcher knows goes in as
arguments (the case's :class:`~farm.run.attempts.Progress`, the slot, the times), the record
comes out; charging hosts stays with the dispatcher.
"""

from __future__ import annotations

from farm.agent.record import Hang, ResultRecord, broken_record
from farm.run.attempts import Progress, crash_part, holder_text
from farm.run.slots import SlotInfo
from suites.case import Case

HANG = "hang"
NOT_RUN = "not_run"


def completed(
    record: ResultRecord, slot: SlotInfo, p: Progress, wall_s: float, waited_s: float | None
) -> ResultRecord:
    """An agent's record of ``slot``'s case, with where it ran, what it took, and notes on the
    way (a crash before, a wait for devices another run held: ``waited_s``, None when none)."""
    # The agent reports its machine's hostname; the record names the inventory host (what
    # the quarantine, `farm hosts` and the report speak of).
    record["machine"] = record.get("host")
    record.update({"host": slot.host, "slot": slot.id, "attempts": p.attempts})
    record["infra_errors"] = p.errors
    record.setdefault("timings", {})["wall_s"] = wall_s
    notes = []
    if p.crashes:
        crash = p.crashes[0]
        notes.append(
            f"the agent crashed running this case on {crash_part(crash)}; rerun on a "
            f"fresh agent on {slot.id}, it {record.get('outcome')}"
        )
    if waited_s is not None:
        holders = "; ".join(
            dict.fromkeys(
                [f"{s}: {holder_text(e)}" for s, e in sorted(p.busy.items())] + p.lock_waits
            )
        )
        notes.append(f"waited {waited_s:.0f} s for devices another run held ({holders})")
    if notes:
        record["notes"] = notes
        record["message"] = f"{record.get('message') or ''} [{'; '.join(notes)}]".strip()
    if notes or len(p.log) > 1:
        record["attempts_log"] = p.log
    return record


def broken(
    case: Case, p: Progress, slot: SlotInfo | None, wall_s: float, message: str
) -> ResultRecord:
    """A broken record for ``case``, last tried on ``slot`` (callers change outcome and
    category as needed)."""
    record = broken_record(
        case,
        message,
        host=slot.host if slot else None,
        soc=slot.soc if slot else None,
        slot=slot.id if slot else None,
        attempts=p.attempts,
        infra_errors=p.errors,
        timings={"wall_s": wall_s},
    )
    if p.log:
        record["attempts_log"] = p.log
    return record


def not_run(
    case: Case, p: Progress, slot: SlotInfo | None, wall_s: float, waited: float
) -> ResultRecord:
    """The case waited ``waited`` seconds for devices another run held, in vain."""
    holders = "; ".join(f"{sid}: {holder_text(exc)}" for sid, exc in sorted(p.busy.items()))
    message = (
        f"not run: the devices of family {case.family} it could use stayed busy for "
        f"{waited:.0f} s, held by another run ({holders}); no host is at fault"
    )
    record = broken(case, p, slot, wall_s, message)
    record["category"] = NOT_RUN
    record["not_run"] = "busy"
    record["busy"] = {sid: exc.holder for sid, exc in sorted(p.busy.items())}
    return record


def hang_message(p: Progress) -> tuple[str, Hang]:
    """What the record says of a case that hangs (its timeouts in ``p``), and its ``hang``."""
    timeouts = p.timeouts
    hosts = list(dict.fromkeys(x["host"] for x in timeouts))
    where = " and ".join(
        f"{x['host']} ({x['slot']}, no reply within {round(x['timeout'], 1):g} s)" for x in timeouts
    )
    killed = all(x["killed"] is not False for x in timeouts)
    confirmed = timeouts[-1].get("canary")
    if confirmed:
        message = (
            f"the case hangs: it timed out on {where}, and the host answered its canary "
            f"({confirmed}) right after: the case's failure, not the host's "
            + ("(the stuck agent was killed)" if killed else "(its stuck agent survived)")
        )
    else:
        message = (
            f"the case hangs: it timed out on {len(hosts)} hosts, {where}; a case that hangs "
            "on every host it runs on is the case's failure, not the hosts' "
            + ("(the stuck agents were killed)" if killed else "(some stuck agents survived)")
        )
    hang: Hang = {"hosts": hosts, "timeouts": [x["timeout"] for x in timeouts]}
    if confirmed:
        hang["canary"] = confirmed
    return message, hang


def crash_message(p: Progress) -> str:
    """What the record says of a case that crashed its agent twice."""
    first, again = p.crashes[0], p.crashes[1]
    return (
        f"the agent died running this case on {crash_part(first)}; rerun on a fresh "
        f"agent, it died again on {crash_part(again)}"
    )
