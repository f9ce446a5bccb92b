"""The health check's canary: a host must make the known inputs and return a judged result."""

from farm.agent.execute import make_call_inputs
from farm.run.prepare import canary_cases, make_canary
from golden.inputs import sha256_of


class FakeChannel:
    def __init__(self, tamper=None):
        self.tamper = tamper
        self.calls = []

    def run_case(self, case, backend, device, timeout):
        self.calls.append(case["id"])
        record = {
            "case_id": case["id"],
            "outcome": "failed",
            "message": "a product failure",
            "inputs_sha256": sha256_of(*make_call_inputs(case)),
        }
        if self.tamper:
            self.tamper(record)
        return record


def test_a_host_making_the_known_inputs_is_healthy_even_if_the_operator_fails():
    channel = FakeChannel()
    assert make_canary("native")(channel, {"soc": "Ascend310B1"}) is None
    assert channel.calls == [c.id for c in canary_cases("ascend310b")]


def test_a_host_making_other_inputs_is_named():
    channel = FakeChannel(lambda r: r.update(inputs_sha256="0" * 64))
    reason = make_canary("native")(channel, {"soc": "Ascend910B1"})
    assert "made other inputs from the same seed" in reason
    assert "numpy and ml_dtypes" in reason


def test_a_host_that_cannot_judge_is_named():
    channel = FakeChannel(lambda r: r.update(outcome="broken", message="executor raised"))
    reason = make_canary("native")(channel, {"soc": "Ascend910B1"})
    assert "no judged result came back: executor raised" in reason
