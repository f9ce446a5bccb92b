"""A fault of the farm itself fails alike on every host: it is said once and quarantines nobody.

Planted with a sitecustomize in the farm's processes and its agents: the agents' plain handling
of one case's metrics (farm/agent/execute.py _plain, on the 99 elements of the canary's
float16 case, which both families run) raises. On the embedded pool the three hosts' messages
differ by each host's deploy path (and the agent shared by two hosts runs from one host's copy):
before, each host was quarantined for it, persisted, and `farm run` said so three times."""

from __future__ import annotations

import os

FAILS_ONE_CASE = """
import importlib.abc, importlib.machinery, sys


class FailOneCase(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "farm.agent.execute":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            plain = module._plain

            def failing(value):
                if isinstance(value, dict) and value.get("n") == 99:
                    raise RuntimeError("planted: the farm fails this case's plain handling")
                return plain(value)

            module._plain = failing

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, FailOneCase())
"""


def test_the_same_farm_fault_on_every_host_quarantines_none_and_is_said_once(
    farm, tmp_path, monkeypatch
):
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(FAILS_ONE_CASE)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(planted), os.environ.get("PYTHONPATH", "")])
    )
    result = farm.run_tier(k="4x1x33")

    assert result.code == 2, result.text
    errors = [line for line in result.text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.text
    (line,) = errors
    assert line.startswith("error: the canary fails the same way on every host: "), line
    assert "planted: the farm fails this case's plain handling" in line
    assert "this is the farm's or the package's fault, not the hosts' (none is quarantined)" in line
    assert not any(name in line for name in ("emu-a2-01", "emu-a2-02", "emu-310b-01")), line
    assert "quarantined:" not in result.text
    assert result.quarantine() == {}
    assert farm.hosts()["emu-a2-01"]["state"] != "bad"
