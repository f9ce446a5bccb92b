"""The health check's canary: a host must make the known inputs and return a judged result."""

from __future__ import annotations

from typing import Any

import numpy as np

from farm.agent.execute import make_call_inputs
from farm.run.canary import canary_cases, make_canary
from golden.inputs import sha256_of
from tests.inventories import local_910b_hosts


def inputs_of(case: Any) -> tuple[np.ndarray, np.ndarray]:
    """The inputs a host makes of the canary's case (which has both tensors)."""
    dy, y = make_call_inputs(case)
    assert dy is not None and y is not None
    return dy, y


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
            "inputs_sha256": sha256_of(*inputs_of(case)),
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
    assert reason is not None
    assert "made other inputs from the same seed" in reason
    assert "numpy and ml_dtypes" in reason


def test_a_host_that_cannot_judge_is_named():
    channel = FakeChannel(lambda r: r.update(outcome="broken", message="executor raised"))
    reason = make_canary("native")(channel, {"soc": "Ascend910B1"})
    assert reason is not None
    assert "no judged result came back: executor raised" in reason


def _two_host_inventory(tmp_path):
    return local_910b_hosts(tmp_path, ("emu-c1", "emu-c2"))


def test_a_canary_broken_the_same_way_on_every_host_quarantines_none(tmp_path, monkeypatch):
    """A bug of the farm itself (here: the orchestrator's known inputs are not what the
    generators make) fails the canary alike on every host: said once, nobody quarantined, no
    run started."""
    import pytest

    from farm.agent import execute
    from farm.pool import build
    from farm.pool.health.checks import Quarantine
    from farm.run import prepare

    real = execute.make_call_inputs

    def wrong_inputs(case):
        dy, y = real(case)
        assert dy is not None  # the canary's case has data
        return dy * 2, y

    monkeypatch.setattr(execute, "make_call_inputs", wrong_inputs)
    seen = []
    with pytest.raises(prepare.CanaryBroken) as caught:
        prepare.prepare_pool(
            _two_host_inventory(tmp_path),
            run_dir=tmp_path / "run",
            state_dir=tmp_path / "state",
            package=build.build_package(build.DEFAULT_TARGET),
            on_host=lambda spec, checked: seen.append(spec.name),
        )
    message = str(caught.value)
    assert "\n" not in message and caught.value.exit_code == 2
    assert message.startswith("the canary fails the same way on every host: canary ")
    assert "made other inputs from the same seed" in message
    assert "this is the farm's or the package's fault, not the hosts'" in message
    assert "emu-c1" not in message and "emu-c2" not in message
    assert seen == []  # no host is reported quarantined
    assert Quarantine(tmp_path / "state").entries() == {}
    assert not (tmp_path / "run").exists()
