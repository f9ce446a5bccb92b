"""The canary: a host proves it runs the operator end to end, with a known answer.

Two small cases (:func:`canary_cases`) that the health check runs on every host before a run
(farm/pool/health/checks.py, through farm/run/prepare.py prepare_pool), and that the dispatcher
runs on a host right after a case timed out there, to ask whose fault the timeout was
(farm/run/dispatch.py ``_confirm_hang``).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from farm.run.requests import case_request
from golden import soc
from suites.case import Case


class Canary(Protocol):
    """canary(channel, identity, device) -> None when the host answered right, else what it
    said. ``identity`` is what the host said of itself (its ``soc`` names the family of the
    cases); ``device`` defaults to the host's first."""

    def __call__(self, channel: Any, identity: dict, device: int = 0) -> str | None: ...


CANARY_TIMEOUT = 60.0


def canary_cases(family: str) -> list[Case]:
    """A no-reduce and a reduce call, small enough to cost nothing."""
    return [
        Case(family, "float32", (4, 1, 8), (1,), y_dist="uniform", origin="canary"),
        Case(family, "float16", (3, 33), (-1,), origin="canary"),
    ]


def make_canary(backend: str) -> Canary:
    """The canary proves the *host* can run the operator end to end, with a known answer: the
    inputs it makes from the case's seed must be the bytes this machine makes (numpy, ml_dtypes
    and the generators behave), and the call must come back judged. It does not judge the
    operator: a wrong answer is a product failure, which the run's own cases report (exit 1);
    quarantining every host for it would turn a product bug into an infrastructure error."""
    from farm.agent.execute import make_call_inputs
    from golden.inputs import sha256_of

    digests: dict[str, str] = {}  # case id -> its inputs' digest on this machine (once a run)
    computing = threading.Lock()

    def known_digest(case: Case) -> str:
        with computing:
            if case.id not in digests:
                inputs = make_call_inputs(case_request(case))
                digests[case.id] = sha256_of(*(t for t in inputs if t is not None))
            return digests[case.id]

    def canary(channel, identity, device: int = 0) -> str | None:
        family = soc.family_of(identity.get("soc", ""))
        for case in canary_cases(family):
            record = channel.run_case(case_request(case), backend, device, CANARY_TIMEOUT)
            if record.get("case_id") != case.id or record.get("outcome") not in (
                "passed",
                "failed",
            ):
                return f"canary {case.id}: no judged result came back: {record.get('message')}"
            known = known_digest(case)
            if record.get("inputs_sha256") != known:
                return (
                    f"canary {case.id}: the host made other inputs from the same seed "
                    f"(sha256 {str(record.get('inputs_sha256'))[:12]}, expected {known[:12]}); "
                    "check its numpy and ml_dtypes versions against this machine's"
                )
        return None

    return canary
