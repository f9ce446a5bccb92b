"""A fake case executor for transport tests (no operator, no numpy): the agent imports it by
name (``--executor tests.pool.fake_executor:run``), proving the executor is injectable."""

from __future__ import annotations


def run(case: dict, backend: str, device: int, identity) -> dict:
    if case.get("segv"):  # an operator crashing in native code
        import ctypes

        ctypes.string_at(0)
    if case.get("fail"):
        raise ValueError(f"fake executor told to fail: {case['fail']}")
    return {
        "verdict": "pass" if case.get("expect", "pass") == "pass" else "fail",
        "case_id": case.get("id"),
        "backend": backend,
        "device": device,
        "soc": identity.soc,
        "fake": True,
    }
