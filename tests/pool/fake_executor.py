"""A fake case executor for transport and fault tests (no operator, no numpy): the agent imports
it by name (``--executor tests.pool.fake_executor:run``), proving the executor is injectable.

Transport tests drive it with keys of the case: ``segv`` (crash in native code), ``fail`` (raise),
``expect``, ``sleep`` (seconds), ``child`` (first start a ``sleep`` child process in the agent's
process group, which must die with it), ``hold`` (a path: the case does not answer until the test
creates that file, at most an hour; a hang the test releases). The origin's ``hold`` action does
the same with the path after ``hold:``.

Fault tests send real cases (suites.case.Case.to_dict()) and drive it with the case's ``origin``:
``fake:<action>[@host+host...]``, the action applying only on the named hosts (a host's name is
its work directory's: ``.../<name>/work``), elsewhere the case passes:

* ``hang``: sleep for an hour (with a ``sleep`` child process, so the whole group must die);
* ``hold:<path>``: as the case's ``hold`` key, then pass (the action applies on every host);
* ``segv``: crash in native code every time;
* ``corrupt``: pass, but leave this agent "corrupted" (a flag in the process);
* ``segv-if-corrupted``: crash if an earlier case corrupted this agent, else pass.

The farm's canary cases (origin ``canary``: farm/run/canary.py canary_cases) pass with the
digest of the inputs their seed makes, as a real agent's do (numpy imported for them alone), so
that the dispatcher's canary after a timeout finds the host well; a host whose work directory
holds ``CANARY_WRONG`` answers them with another digest (a host at fault).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

CORRUPTED_BY: str | None = None
CANARY_WRONG = "fake-canary-wrong"  # in a host's work directory: its canary answers are wrong


def host_name() -> str:
    """The lab host this agent serves, from its --workdir (``.../<name>/work``)."""
    workdir = _workdir()
    path = os.path.abspath(workdir) if workdir else os.getcwd()
    base = os.path.basename(path)
    return os.path.basename(os.path.dirname(path)) if base == "work" else base


def _segv() -> None:
    import ctypes

    ctypes.string_at(0)


def _hang(with_child: bool) -> None:
    if with_child:
        subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
    time.sleep(3600)


def _hold(path: str) -> None:
    """Until the test creates ``path`` (an hour at most: a test that forgot ends anyway)."""
    deadline = time.monotonic() + 3600
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


def _action(case: dict) -> str | None:
    origin = str(case.get("origin") or "")
    if not origin.startswith("fake:"):
        return None
    if origin.startswith("fake:hold:"):
        return origin[len("fake:") :]
    action, _, hosts = origin[len("fake:") :].partition("@")
    if hosts and host_name() not in hosts.split("+"):
        return None
    return action


def _canary(case: dict, device: int, identity) -> dict:
    workdir = _workdir() or os.getcwd()
    if os.path.exists(os.path.join(workdir, CANARY_WRONG)):
        digest = "0" * 64
    else:
        from farm.agent.execute import make_call_inputs
        from golden.inputs import sha256_of

        digest = sha256_of(*(t for t in make_call_inputs(case) if t is not None))  # type: ignore[arg-type]
    return {
        "case_id": case.get("id"),
        "outcome": "passed",
        "category": None,
        "message": f"fake canary on {host_name()}",
        "host": socket.gethostname(),
        "soc": identity.soc,
        "device": device,
        "inputs_sha256": digest,
        "timings": {},
    }


def _workdir() -> str | None:
    for flag, value in zip(sys.argv, sys.argv[1:], strict=False):
        if flag == "--workdir":
            return value
    return None


def _log_use(device: int, case: dict, start: float) -> None:
    """One line per case in <workdir>/fake-executor.log: which agent used which device when
    (tests check that two agents never used one device at once)."""
    workdir = _workdir()
    if workdir:
        line = json.dumps(
            {
                "pid": os.getpid(),
                "device": device,
                "case": case.get("id"),
                "start": start,
                "end": time.time(),
            }
        )
        with open(os.path.join(workdir, "fake-executor.log"), "a") as f:
            f.write(line + "\n")


def run(case: dict, backend: str, device: int, identity) -> dict:
    start = time.time()
    try:
        return _run(case, backend, device, identity)
    finally:
        _log_use(device, case, start)


def _run(case: dict, backend: str, device: int, identity) -> dict:
    global CORRUPTED_BY
    if case.get("child"):
        subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
    if "sleep" in case:
        time.sleep(float(case["sleep"]))
    if case.get("hold"):
        _hold(str(case["hold"]))
    if case.get("segv"):  # an operator crashing in native code
        _segv()
    if case.get("fail"):
        raise ValueError(f"fake executor told to fail: {case['fail']}")
    action = _action(case)
    if case.get("origin") == "canary":
        return _canary(case, device, identity)
    if action is not None or "origin" in case:
        if action == "hang":
            _hang(with_child=True)
        elif action is not None and action.startswith("hold:"):
            _hold(action[len("hold:") :])
        elif action == "segv":
            _segv()
        elif action == "segv-if-corrupted" and CORRUPTED_BY is not None:
            _segv()
        elif action == "corrupt":
            CORRUPTED_BY = case.get("id")
        return {
            "case_id": case.get("id"),
            "outcome": "passed",
            "category": None,
            "message": f"fake pass on {host_name()}",
            "host": socket.gethostname(),
            "soc": identity.soc,
            "device": device,
            "agent_pid": os.getpid(),
            "timings": {},
        }
    return {
        "verdict": "pass" if case.get("expect", "pass") == "pass" else "fail",
        "case_id": case.get("id"),
        "backend": backend,
        "device": device,
        "soc": identity.soc,
        "fake": True,
    }
