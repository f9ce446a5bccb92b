"""The wire protocol: round trips, every ProtocolError, and the agent's loop in-process."""

from __future__ import annotations

import importlib.metadata
import io
import json
import sys
import time
from pathlib import Path

import pytest

from farm import __version__
from farm.agent import identity, protocol
from farm.agent.identity import SLOW_REPLY_S, Declared, Fault, declared_identity, parse_npu_smi
from farm.agent.server import AgentServer
from farm.pool.inventory import tomllib
from farm.util.errors import AgentError, HostLacks, ProtocolError

REPO = Path(__file__).resolve().parents[2]


def test_the_version_has_one_source():
    """farm.__version__ is the version: the installed distribution and hello both take it."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert data["project"]["dynamic"] == ["version"] and "version" not in data["project"]
    assert data["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "farm.__version__"}
    assert importlib.metadata.version("lsg-farm") == __version__
    assert protocol.decode(protocol.hello_request(1))["farm_version"] == __version__
    assert "version" not in json.loads((REPO / "reports" / "package.json").read_text())


@pytest.mark.parametrize(
    "op, fields",
    [
        ("hello", {"protocol": protocol.PROTOCOL_VERSION, "farm_version": __version__}),
        ("identify", {}),
        ("run-case", {"case": {"id": "c1", "shape": [2, 3]}, "backend": "native", "device": 1}),
        ("shutdown", {}),
    ],
)
def test_request_round_trip(op, fields):
    line = protocol.encode_request(op, 7, **fields)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert protocol.decode_request(line) == {"op": op, "seq": 7, **fields}


def test_reply_round_trip_and_error_reply():
    line = protocol.encode_reply(3, result={"verdict": "pass", "mare": float("nan")})
    reply = protocol.decode_reply(line, 3)
    assert reply["ok"] is True and reply["result"]["verdict"] == "pass"
    err = protocol.decode_reply(protocol.encode_error(4, "executor", "boom"), 4)
    assert err == {"seq": 4, "ok": False, "error": {"kind": "executor", "message": "boom"}}
    with pytest.raises(AgentError, match="boom"):
        protocol.raise_for_error(err)
    bad = protocol.decode_reply(protocol.encode_error(5, "bad-request", "no case"), 5)
    with pytest.raises(ProtocolError, match="bad-request"):
        protocol.raise_for_error(bad)
    lacks = protocol.decode_reply(protocol.encode_error(6, "lacks", "no torch here"), 6)
    with pytest.raises(HostLacks, match="^agent: no torch here$"):
        protocol.raise_for_error(lacks)


def test_non_ascii_is_escaped_so_lines_stay_lines():
    line = protocol.encode_reply(1, text="a\nb\u2028c — d")
    assert line.count(b"\n") == 1 and line.isascii()
    assert protocol.decode_reply(line, 1)["text"] == "a\nb\u2028c — d"


@pytest.mark.parametrize(
    "line, expect_seq, needle",
    [
        (b'{"seq": 1, "ok": tru\n', 1, "malformed JSON"),
        (b"\xff\xfe\n", 1, "malformed JSON"),
        (b"[1, 2]\n", 1, "expected a JSON object"),
        (b'{"seq": 1, "ok": true}', 1, "truncated line"),
        (b'{"seq": 2, "ok": true}\n', 1, "reply seq 2 does not match request seq 1"),
        (b'{"ok": true}\n', 1, "does not match"),
        (b'{"seq": 1}\n', 1, "no boolean 'ok'"),
        (b'{"seq": 1, "ok": false}\n', 1, "lacks error.kind"),
        (
            b'{"seq": null, "ok": false, "error": {"kind": "protocol", "message": "huh"}}\n',
            1,
            "agent rejected a request line: huh",
        ),
    ],
)
def test_bad_replies_raise_protocol_error(line, expect_seq, needle):
    with pytest.raises(ProtocolError, match=needle):
        protocol.decode_reply(line, expect_seq)


def test_oversize_lines_are_refused_both_ways():
    big = {"seq": 1, "ok": True, "result": {"blob": "x" * protocol.MAX_LINE_BYTES}}
    with pytest.raises(ProtocolError, match="line cap"):
        protocol.encode(big)
    raw = json.dumps(big).encode() + b"\n"
    with pytest.raises(ProtocolError, match="exceeds"):
        protocol.decode_reply(raw, 1)


def test_hello_version_checks():
    # Version 1 agents take no device lock: a mix must be refused, not run.
    with pytest.raises(ProtocolError, match="speaks protocol 1"):
        protocol.check_hello_reply({"seq": 1, "ok": True, "protocol": 1})
    current = protocol.PROTOCOL_VERSION
    assert protocol.check_hello_reply({"seq": 1, "ok": True, "protocol": current})["ok"]
    with pytest.raises(protocol.RequestError) as info:
        protocol.decode_request(protocol.encode_request("hello", 1, protocol=99))
    assert info.value.kind == "version" and info.value.seq == 1


@pytest.mark.parametrize(
    "line, kind, seq",
    [
        (b'{"op": "format-disk", "seq": 3}\n', "unknown-op", 3),
        (b'{"op": "identify"}\n', "protocol", None),
        (b'{"op": "identify", "seq": -1}\n', "protocol", None),
        (b'{"op": "identify", "seq": true}\n', "protocol", None),
        (b"not json\n", "protocol", None),
        (
            b'{"op": "run-case", "seq": 4, "case": [], "backend": 1, "device": -2}\n',
            "bad-request",
            4,
        ),
    ],
)
def test_bad_requests_are_classified_for_the_agent(line, kind, seq):
    with pytest.raises(protocol.RequestError) as info:
        protocol.decode_request(line)
    assert (info.value.kind, info.value.seq) == (kind, seq)


def test_client_refuses_to_build_unknown_ops():
    with pytest.raises(ProtocolError, match="unknown op"):
        protocol.make_request("reboot", 1)


# -- the agent's loop, in-process ---------------------------------------------------------------


DECLARED = Declared("Ascend310B1", 1, "env")


def serve(lines: list[bytes], *, executor=None, declared=DECLARED) -> tuple[int, list[dict]]:
    out = io.BytesIO()
    server = AgentServer(
        io.BytesIO(b"".join(lines)), out, executor=executor, declared=declared, log=io.StringIO()
    )
    rc = server.serve()
    return rc, [json.loads(x) for x in out.getvalue().splitlines()]


def fake(case, backend, device, identity):
    if case.get("explode"):
        raise KeyError("explode")
    if case.get("not_a_dict"):
        return ["no"]
    return {"verdict": "pass", "id": case["id"], "soc": identity.soc, "device": device}


def test_agent_serves_a_session():
    rc, replies = serve(
        [
            protocol.hello_request(1),
            protocol.encode_request("identify", 2),
            protocol.encode_request("run-case", 3, case={"id": "c"}, backend="native", device=0),
            protocol.encode_request("shutdown", 4),
            protocol.encode_request("identify", 5),  # after shutdown: never read
        ],
        executor=fake,
    )
    assert rc == 0
    assert [r["seq"] for r in replies] == [1, 2, 3, 4]
    assert replies[0]["protocol"] == protocol.PROTOCOL_VERSION and replies[0]["agent_version"]
    ident = replies[1]
    assert (ident["soc"], ident["devices"], ident["source"]) == ("Ascend310B1", 1, "env")
    assert ident["deps"]["numpy"] and ident["deps"]["ml_dtypes"] and ident["missing"] == []
    assert "torch" in ident["deps"] and ident["python"].startswith(sys.executable)
    assert replies[2]["result"] == {"verdict": "pass", "id": "c", "soc": "Ascend310B1", "device": 0}
    assert replies[3] == {"seq": 4, "ok": True}


def test_agent_answers_bad_lines_and_keeps_serving():
    rc, replies = serve(
        [
            b"garbage\n",
            b"x" * (protocol.MAX_LINE_BYTES + 10) + b"\n",
            protocol.encode_request("hello", 1, protocol=1),
            protocol.encode_request("run-case", 2, case={"id": "c"}, backend="native", device=5),
            protocol.encode_request("run-case", 3, case={"explode": 1}, backend="native", device=0),
            protocol.encode_request("run-case", 4, case={"not_a_dict": 1}, backend="t", device=0),
            protocol.encode_request("identify", 5),
        ],
        executor=fake,
    )
    assert rc == 0  # EOF
    kinds = [(r["seq"], r["ok"], r.get("error", {}).get("kind")) for r in replies]
    assert kinds == [
        (None, False, "protocol"),
        (None, False, "protocol"),
        (1, False, "version"),
        (2, False, "bad-request"),
        (3, False, "executor"),
        (4, False, "executor"),
        (5, True, None),
    ]
    assert "device 5 does not exist" in replies[3]["error"]["message"]
    assert "KeyError" in replies[4]["error"]["message"]


@pytest.mark.parametrize("kind", ["corrupt-reply-after", "wrong-seq-after"])
def test_fault_injection_breaks_the_nth_reply(kind):
    declared = Declared("Ascend910B1", 2, "env", Fault(kind, 1))
    out = io.BytesIO()
    server = AgentServer(
        io.BytesIO(protocol.hello_request(1) + protocol.encode_request("identify", 2)),
        out,
        declared=declared,
        log=io.StringIO(),
    )
    server.serve()
    first, second = out.getvalue().splitlines(keepends=True)
    assert protocol.decode_reply(first, 1)["ok"]
    with pytest.raises(ProtocolError):
        protocol.decode_reply(second, 2)


def test_slow_fault_delays_every_reply_after_the_nth_and_breaks_none(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    # What the machine is takes commands (npu-smi, the compiler), which sleep while they wait.
    monkeypatch.setattr(identity.host_machine, "gather", lambda **_: None)
    declared = Declared("Ascend910B1", 2, "env", Fault("slow-after", 1))
    out = io.BytesIO()
    requests = protocol.hello_request(1) + b"".join(
        protocol.encode_request("identify", seq) for seq in (2, 3)
    )
    AgentServer(io.BytesIO(requests), out, declared=declared, log=io.StringIO()).serve()
    replies = out.getvalue().splitlines(keepends=True)
    assert [protocol.decode_reply(r, seq)["ok"] for seq, r in enumerate(replies, 1)] == [True] * 3
    assert slept == [SLOW_REPLY_S] * 2


def test_faults_are_ignored_on_hosts_that_are_not_emulated():
    declared = Declared("Ascend910B1", 8, "npu-smi", Fault("crash-after", 0))
    server = AgentServer(io.BytesIO(), io.BytesIO(), declared=declared)
    assert server.fault is None


# -- identity ------------------------------------------------------------------------------------


def test_identity_comes_from_env_then_host_toml(tmp_path):
    env = {
        "LSG_EMULATED_SOC": "Ascend910B3",
        "LSG_EMULATED_DEVICES": "4",
        "LSG_EMULATED_FAULT": "crash-after:2",
    }
    d = declared_identity(tmp_path, env, use_npu_smi=False)
    assert (d.soc, d.devices, d.source, str(d.fault), d.emulated) == (
        "Ascend910B3",
        4,
        "env",
        "crash-after:2",
        True,
    )
    (tmp_path / "host.toml").write_text('soc = "Ascend310B1"\ndevices = 1\n')
    d = declared_identity(tmp_path, {}, use_npu_smi=False)
    assert (d.soc, d.devices, d.source, d.fault) == ("Ascend310B1", 1, "host.toml", None)
    d = declared_identity(tmp_path / "nowhere", {}, use_npu_smi=False)
    assert d.soc is None and d.source == "none" and "LSG_EMULATED_SOC" in d.problems[0]
    d = declared_identity(
        None,
        {"LSG_EMULATED_SOC": "X", "LSG_EMULATED_DEVICES": "zero", "LSG_EMULATED_FAULT": "explode"},
        use_npu_smi=False,
    )
    assert d.devices is None and len(d.problems) == 2


NPU_SMI = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.rc3                 Version: 23.0.rc3                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B1               | OK            | 93.9        41                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3151 / 65536         |
+===========================+===============+====================================================+
| 1     910B1               | OK            | 92.1        40                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3150 / 65536         |
+===========================+===============+====================================================+
"""


def test_npu_smi_parse():
    assert parse_npu_smi(NPU_SMI) == ("Ascend910B1", 2)
    assert parse_npu_smi("npu-smi: command failed\n") is None


def test_fault_declarations():
    assert Fault.parse("hang-after:0") == Fault("hang-after", 0)
    for bad in ("crash", "crash-after:x", "reboot-after:1"):
        with pytest.raises(ValueError, match="bad fault declaration"):
            Fault.parse(bad)
