"""One agent serving several emulated hosts (farm/agent/server.py, "One agent for several
emulated hosts"), and the benchmark executor a host may declare."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from farm.agent import protocol
from farm.agent.identity import Declared
from farm.agent.server import AgentServer
from farm.agent.stand_ins import instant_executor
from farm.run.requests import case_request
from suites.case import Case

HOSTS: list[dict[str, Any]] = [
    {
        "name": "emu-a",
        "workdir": None,
        "env": {"LSG_EMULATED_SOC": "Ascend910B1", "LSG_EMULATED_DEVICES": "2"},
    },
    {
        "name": "emu-b",
        "workdir": None,
        "env": {
            "LSG_EMULATED_SOC": "Ascend310B1",
            "LSG_EMULATED_DEVICES": "1",
            "LSG_EMULATED_FAULT": "corrupt-reply-after:3",
        },
    },
]


def fake(case, backend, device, identity):
    return {"id": case["id"], "soc": identity.soc, "device": device}


def serve(lines, hosts=HOSTS, executor=fake, declared=None):
    out = io.BytesIO()
    server = AgentServer(
        io.BytesIO(b"".join(lines)),
        out,
        executor=executor,
        hosts=hosts,
        declared=declared or Declared(None, None, "none"),
        log=io.StringIO(),
    )
    assert server.serve() == 0
    return [json.loads(x) for x in out.getvalue().splitlines() if x.startswith(b'{"seq"')]


def run(seq, host, device=0, **case):
    return protocol.encode_request(
        "run-case", seq, case={"id": f"c{seq}", **case}, backend="native", device=device, host=host
    )


def test_each_host_is_served_as_its_own_agent_would():
    replies = serve(
        [
            protocol.hello_request(1),
            protocol.encode_request("identify", 2, host="emu-a"),
            protocol.encode_request("identify", 3, host="emu-b"),
            run(4, "emu-a", 1),
            run(5, "emu-b", 1),  # emu-b has one device
            protocol.encode_request("identify", 6),  # no host named
            protocol.encode_request("identify", 7, host="emu-z"),
            run(8, "emu-a", 0),
        ]
    )
    assert replies[0]["hosts"] == ["emu-a", "emu-b"]
    assert (replies[1]["soc"], replies[1]["devices"]) == ("Ascend910B1", 2)
    assert (replies[2]["soc"], replies[2]["devices"], replies[2]["source"]) == (
        "Ascend310B1",
        1,
        "env",
    )
    assert replies[1]["deps"] == replies[2]["deps"] and replies[1]["deps"]["numpy"]
    assert replies[3]["result"] == {"id": "c4", "soc": "Ascend910B1", "device": 1}
    assert replies[4]["error"]["kind"] == "bad-request"
    assert "device 1 does not exist" in replies[4]["error"]["message"]
    assert replies[5]["error"]["kind"] == "bad-request"
    assert "name one in 'host'" in replies[5]["error"]["message"]
    assert "does not serve host 'emu-z'" in replies[6]["error"]["message"]
    assert replies[7]["ok"] and replies[7]["result"]["soc"] == "Ascend910B1"


def test_a_problem_of_the_process_is_every_hosts_and_a_declarations_its_own(monkeypatch):
    """Judging that cannot be had in the agent's process ($LSG_FUSED wrong, or require without
    a compiler) is each host's problem at identify, as its own agent would say, beside that
    host's own declaration problems; it was dropped, and the canary failed with a traceback."""
    monkeypatch.setenv("LSG_FUSED", "maybe")
    bad = {"LSG_EMULATED_SOC": "Ascend310B1", "LSG_EMULATED_DEVICES": "two"}
    hosts = [HOSTS[0], {**HOSTS[1], "env": bad}]
    replies = serve(
        [
            protocol.hello_request(1),
            protocol.encode_request("identify", 2, host="emu-a"),
            protocol.encode_request("identify", 3, host="emu-b"),
        ],
        hosts=hosts,
    )
    judging = "$LSG_FUSED='maybe' is not one of auto, off, require; set one, or unset it (auto)"
    assert replies[1]["problems"] == [judging]
    assert replies[2]["problems"][-1] == judging and len(replies[2]["problems"]) == 2


def test_a_hosts_fault_counts_its_own_replies_and_hello():
    """emu-b corrupts its 4th reply (hello + 3 of its own); emu-a's replies do not count."""
    out = io.BytesIO()
    lines = [protocol.hello_request(1)] + [run(i, "emu-a") for i in range(2, 6)]
    lines += [run(6, "emu-b"), run(7, "emu-b"), run(8, "emu-b")]
    server = AgentServer(
        io.BytesIO(b"".join(lines)), out, executor=fake, hosts=HOSTS, log=io.StringIO()
    )
    server.serve()
    raw = out.getvalue().splitlines(keepends=True)
    assert len(raw) == 8
    for seq, line in enumerate(raw[:7], start=1):
        assert protocol.decode_reply(line, seq)["ok"], line
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_reply(raw[7], 8)


def test_the_device_locks_are_each_hosts_own(tmp_path):
    hosts = [dict(h, workdir=str(tmp_path / h["name"]), env={**h["env"]}) for h in HOSTS]
    hosts[1]["env"].pop("LSG_EMULATED_FAULT")
    lock = {"run": "r", "owner": "o"}
    serve(
        [
            protocol.encode_request(
                "run-case", 1, case={"id": "a"}, backend="n", device=1, host="emu-a", **lock
            ),
            protocol.encode_request(
                "run-case", 2, case={"id": "b"}, backend="n", device=0, host="emu-b", **lock
            ),
        ],
        hosts=hosts,
    )
    from farm.agent.devicelock import read_holder

    assert read_holder(tmp_path / "emu-a", 1)["owner"] == "o"
    assert read_holder(tmp_path / "emu-b", 0)["owner"] == "o"
    assert read_holder(tmp_path / "emu-a", 0) == {}


# -- the benchmark executor ----------------------------------------------------------------------


def instant_host(value="instant", soc="Ascend910B1"):
    return {
        "name": "bench",
        "workdir": None,
        "env": {
            "LSG_EMULATED_SOC": soc,
            "LSG_EMULATED_DEVICES": "8",
            "LSG_EMULATED_EXECUTOR": value,
        },
    }


def test_an_emulated_host_may_declare_the_instant_executor():
    accepted = Case("ascend910b", "float16", (3, 33), (-1,))
    rejected = Case("ascend310b", "bfloat16", (3, 33), (-1,))
    assert not rejected.accepted
    replies = serve(
        [
            protocol.encode_request("identify", 1, host="bench"),
            protocol.encode_request(
                "run-case", 2, case=accepted.to_dict(), backend="native", device=3, host="bench"
            ),
            protocol.encode_request(
                "run-case", 3, case=rejected.to_dict(), backend="native", device=0, host="bench"
            ),
        ],
        hosts=[instant_host()],
        executor=None,
    )
    assert replies[0]["executor"] == "instant" and replies[0]["problems"] == []
    passed = replies[1]["result"]
    assert (passed["case_id"], passed["outcome"], passed["status"]) == (accepted.id, "passed", 0)
    assert passed["verdict"]["passed"] and passed["metrics"]["n"] == 99
    assert "no operator ran" in passed["message"]
    refused = replies[2]["result"]
    want = rejected.expectation()
    assert (refused["status"], refused["reason"], refused["outcome"]) == (
        want["status"],
        want["reason"],
        "passed",
    )


def test_the_instant_executor_makes_the_canarys_real_inputs():
    from farm.agent.execute import make_call_inputs
    from farm.agent.identity import gather
    from golden.inputs import sha256_of

    case = Case("ascend910b", "float32", (4, 1, 8), (1,), y_dist="uniform", origin="canary")
    record = instant_executor(case.to_dict(), "native", 0, gather(None, Declared("x", 1, "env")))
    dy, y = make_call_inputs(case_request(case))
    assert dy is not None and y is not None  # a precision case makes both tensors
    assert record["inputs_sha256"] == sha256_of(dy, y)


def test_the_instant_executor_is_never_chosen_elsewhere(monkeypatch):
    # A host identified by npu-smi (a real one) ignores the declaration ...
    real = AgentServer(io.BytesIO(), io.BytesIO(), declared=Declared("Ascend910B1", 8, "npu-smi"))
    assert real.own.executor_spec == "farm.agent.execute:run_case"
    monkeypatch.setenv("LSG_EMULATED_EXECUTOR", "instant")
    real = AgentServer(io.BytesIO(), io.BytesIO(), declared=Declared("Ascend910B1", 8, "npu-smi"))
    assert real.own.executor_spec == "farm.agent.execute:run_case"
    # ... an emulated one with an unknown name says so (its health check fails) ...
    replies = serve(
        [protocol.encode_request("identify", 1, host="bench")],
        hosts=[instant_host("fast-please")],
        executor=None,
    )
    assert "executor" not in replies[0]
    assert any("LSG_EMULATED_EXECUTOR='fast-please'" in p for p in replies[0]["problems"])
    # ... and an executor given on the command line wins (the tests' fakes).
    replies = serve([run(1, "bench")], hosts=[instant_host()], executor=fake)
    assert replies[0]["result"] == {"id": "c1", "soc": "Ascend910B1", "device": 0}
