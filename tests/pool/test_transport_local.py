"""The local transport: a real agent subprocess with a fake executor, and its failure modes."""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import time

import pytest

from farm.agent.protocol import PROTOCOL_VERSION
from farm.pool.transport import open_transport, remote_command
from farm.pool.transport.local import LocalTransport
from farm.util.errors import (
    AgentError,
    AgentTimeout,
    ConnectionLost,
    DeviceBusy,
    HostUnreachable,
    InfraError,
    ProtocolError,
)
from farm.util.proc import members as group_members
from tests.pool.conftest import ECHO, FAKE, REPO, fake_request, local_channel


def agent(executor: str = FAKE) -> list[str]:
    return [sys.executable, "-m", "farm.agent", "--executor", executor]


def test_open_transport_picks_local(local_host):
    assert isinstance(open_transport(local_host), LocalTransport)


def test_session_with_a_fake_executor(local_host):
    with open_transport(local_host) as t, t.open_channel(agent(), cwd=str(REPO)) as ch:
        assert ch.agent_version
        ident = ch.identify()
        # The identity is the host's own declaration (its env), not the inventory's claim.
        assert (ident["soc"], ident["devices"], ident["source"]) == ("Ascend910B1", 2, "env")
        assert ident["missing"] == [] and ident["deps"]["numpy"]
        for device in (0, 1):
            result = ch.run_case({"id": f"c{device}"}, "native", device)
            assert result == {
                "verdict": "pass",
                "case_id": f"c{device}",
                "backend": "native",
                "device": device,
                "soc": "Ascend910B1",
                "fake": True,
            }
        # A refused request does not break the channel.
        with pytest.raises(ProtocolError, match="device 2 does not exist"):
            ch.run_case({"id": "c"}, "native", 2)
        with pytest.raises(AgentError, match="fake executor told to fail: yes"):
            ch.run_case(fake_request(fail="yes"), "native", 0)
        assert ch.run_case({"id": "again"}, "native", 0)["case_id"] == "again"


def test_orchestrator_env_does_not_leak_into_the_emulated_host(local_host, monkeypatch):
    monkeypatch.setenv("LSG_EMULATED_SOC", "Ascend310B1")
    with open_transport(local_host) as t, t.open_channel(agent(), cwd=str(REPO)) as ch:
        assert ch.identify()["soc"] == "Ascend910B1"


def test_stdout_writes_in_the_executor_do_not_corrupt_the_stream(local_host):
    with open_transport(local_host) as t, t.open_channel(agent(ECHO), cwd=str(REPO)) as ch:
        result = ch.run_case(fake_request(print='{"seq": 99, "ok": true}'), "native", 0)
        assert result["verdict"] == "pass"
        assert ch.run_case(fake_request(id=2), "native", 1)["device"] == 1


def test_native_crash_is_connection_lost_with_the_fatal_signal_on_stderr(local_host):
    with open_transport(local_host) as t:
        ch = t.open_channel(agent(), cwd=str(REPO))
        with pytest.raises(ConnectionLost, match="killed by signal 11") as info:
            ch.run_case(fake_request(segv=True), "native", 0, timeout=120)
        # The dispatcher reads this to call it an operator crash rather than a lost host.
        assert "Fatal Python error: Segmentation fault" in info.value.stderr_tail


def test_request_returns_ok_replies_and_raises_for_error_replies(local_host):
    with open_transport(local_host) as t, t.open_channel(agent(), cwd=str(REPO)) as ch:
        reply = ch.request({"op": "run-case", "case": {"id": 1}, "backend": "b", "device": 1})
        assert reply["ok"] is True and reply["result"]["case_id"] == 1 and reply["seq"] == 2
        with pytest.raises(ProtocolError, match="bad-request"):
            ch.request({"op": "run-case", "case": {}, "backend": "b", "device": 9})
        with pytest.raises(AgentError, match="executor"):
            ch.request({"op": "run-case", "case": {"fail": 1}, "backend": "b", "device": 0})
        assert ch.usable and ch.identify()["soc"] == "Ascend910B1"


def test_timeout_then_the_channel_is_unusable(local_host):
    with open_transport(local_host) as t:
        ch = local_channel(t.open_channel(agent(ECHO), cwd=str(REPO)))
        start = time.monotonic()
        with pytest.raises(AgentTimeout, match="no reply to run-case #2 within 0.5s"):
            ch.run_case(fake_request(sleep=30), "native", 0, timeout=0.5)
        assert time.monotonic() - start < 15  # the timeout, not the 30 s sleep
        with pytest.raises(ConnectionLost, match="unusable after an earlier error"):
            ch.identify()
        ch.close()
        assert ch.proc.wait(timeout=60) is not None  # the stuck agent was not left behind


def test_a_timed_out_agent_is_killed_with_its_whole_process_group(local_host, tmp_path):
    """The case hangs in a process that has a child (a subprocess of the operator, say): after
    the timeout the channel kills the agent's group, child included, and checks it is gone."""
    with open_transport(local_host) as t:
        ch = local_channel(t.open_channel(agent() + ["--workdir", str(tmp_path)], cwd=str(REPO)))
        assert ch.agent_pid == ch.proc.pid and ch.agent_pgid == ch.proc.pid  # from hello
        with pytest.raises(AgentTimeout):
            ch.run_case(fake_request(child=True, sleep=60), "native", 0, timeout=1.0)
        assert ch.wait_reaped() is True, ch.reap_detail
        assert ch.reap_detail == f"the agent (pid {ch.proc.pid}) was killed (TERM)"
        assert group_members(ch.proc.pid) == []  # the sleeping child too
        assert ch.proc.wait(timeout=60) is not None
        ch.close()
        # Its pid file goes with it (a killed agent leaves it; readers check the process).
        assert [p.name for p in (tmp_path / "agents").glob("*.json")] in (
            [],
            [f"{ch.proc.pid}.json"],
        )


def test_an_idle_agent_closed_normally_is_not_killed(local_host, tmp_path):
    with open_transport(local_host) as t:
        ch = local_channel(t.open_channel(agent() + ["--workdir", str(tmp_path)], cwd=str(REPO)))
        assert list((tmp_path / "agents").glob("*.json"))  # while it runs
        ch.close()
        assert ch.reaped is None and ch.proc.returncode == 0
        assert not list((tmp_path / "agents").glob("*.json"))  # removed on exit


def test_two_agents_for_one_device_on_a_local_host(local_host, tmp_path):
    """Two runs' agents, one device: the second waits, then answers busy naming the first; its
    channel stays usable, and once the first agent is gone it gets the device."""
    argv = agent() + ["--workdir", str(tmp_path)]
    with open_transport(local_host) as t:
        first = t.open_channel(argv, cwd=str(REPO))
        assert first.run_case({"id": "a"}, "native", 1, lock={"run": "run-A", "owner": "A"})
        second = t.open_channel(argv, cwd=str(REPO))
        start = time.monotonic()
        with pytest.raises(DeviceBusy) as info:
            second.run_case({"id": "b"}, "native", 1, lock={"run": "run-B", "lock_wait": 1.0})
        assert 0.9 <= time.monotonic() - start < 30  # its lock wait, then no longer
        exc = info.value
        assert exc.host == "emu-t" and exc.device == 1 and exc.holder["pids"] == [first.agent_pid]
        assert str(exc).startswith("agent on host emu-t (local): device 1 of ")
        assert "held by run run-A" in str(exc) and f"agent pid {first.agent_pid}" in str(exc)
        assert second.usable
        # The other device is free for the second run.
        assert second.run_case({"id": "c"}, "native", 0, lock={"run": "run-B"})["device"] == 0
        first.close()
        assert second.run_case({"id": "b"}, "native", 1, lock={"run": "run-B"})["device"] == 1
        second.close()


@pytest.mark.parametrize(
    "fault, error, needle",
    [
        ("crash-after:2", ConnectionLost, "exit status 70"),
        ("corrupt-reply-after:2", ProtocolError, "malformed JSON"),
        ("wrong-seq-after:2", ProtocolError, "does not match request seq"),
        ("hang-after:2", AgentTimeout, "no reply"),
    ],
)
def test_declared_agent_faults(local_host, fault, error, needle):
    host = dataclasses.replace(local_host, env=local_host.env + (("LSG_EMULATED_FAULT", fault),))
    with open_transport(host) as t:
        ch = t.open_channel(agent(), cwd=str(REPO))  # reply 1: hello
        ch.identify()  # reply 2
        with pytest.raises(error, match=needle) as info:
            # A fault that answers (or dies) must not be taken for a hang on a slow machine.
            ch.run_case({"id": "x"}, "native", 0, timeout=1.0 if error is AgentTimeout else 120)
        assert isinstance(info.value, InfraError) and info.value.host == "emu-t"
        assert str(info.value).startswith("host emu-t (local): ")
        ch.close()


def fake_agent(script: str) -> list[str]:
    """An 'agent' that answers hello properly, then runs script (reads a request first)."""
    hello = (
        "import sys, json\n"
        "req = json.loads(sys.stdin.readline())\n"
        f"print(json.dumps({{'seq': req['seq'], 'ok': True, 'protocol': {PROTOCOL_VERSION}}}), "
        "flush=True)\n"
        "sys.stdin.readline()\n"
    )
    return [sys.executable, "-c", hello + script]


def test_oversize_reply_is_a_protocol_error(local_host):
    script = (
        "sys.stdout.write('{\"seq\": 2, \"x\": \"' + 'x' * 1200000 + '\"}\\n')\nsys.stdout.flush()"
    )
    with open_transport(local_host) as t:
        ch = t.open_channel(fake_agent(script))
        with pytest.raises(ProtocolError, match="exceeds the protocol's 1048576-byte line cap"):
            ch.identify(timeout=60)
        ch.close()


def test_agent_that_dies_reports_status_and_stderr(local_host):
    script = "sys.stderr.write('numpy exploded\\n'); sys.exit(3)"
    with open_transport(local_host) as t:
        ch = t.open_channel(fake_agent(script))
        with pytest.raises(ConnectionLost, match="exit status 3.*numpy exploded"):
            ch.identify(timeout=60)


def test_agent_that_never_starts(local_host):
    with open_transport(local_host) as t:
        with pytest.raises(ConnectionLost, match="exit status 1.*No module named"):
            t.open_channel([sys.executable, "-m", "no_such_agent_module"], timeout=60)
        with pytest.raises(HostUnreachable, match="not found"):
            t.open_channel(["/nonexistent/python3", "-m", "farm.agent"])


def test_noise_before_the_handshake_is_tolerated(local_host):
    argv = ["sh", "-c", 'echo "Welcome to the host"; echo; exec "$@"', "sh", *agent()]
    with open_transport(local_host) as t, t.open_channel(argv, cwd=str(REPO)) as ch:
        assert ch.noise == ["Welcome to the host", ""]
        assert ch.identify()["soc"] == "Ascend910B1"


def test_run_argv_and_files(local_host, tmp_path):
    with open_transport(local_host) as t:
        rc, out, err = t.run_argv(["printf", "%s|", "a b", "$(id)", "'q'"])
        assert (rc, out) == (0, "a b|$(id)|'q'|")
        src = tmp_path / "src.bin"
        src.write_bytes(os.urandom(5000))
        dest = tmp_path / "deep" / "er" / "dst.bin"
        t.put_file(src, str(dest))
        assert dest.read_bytes() == src.read_bytes()
        import hashlib

        assert t.sha256_remote(str(dest)) == hashlib.sha256(src.read_bytes()).hexdigest()
        assert t.sha256_remote(str(tmp_path / "absent")) is None
        with pytest.raises(AgentTimeout, match="did not finish within 0.3s"):
            t.run_argv(["sleep", "5"], timeout=0.3)


def test_remote_command_quotes_every_word():
    argv = ["python3", "-c", "print('a b'); import os", "$(reboot)", "; rm -rf /", "it's"]
    cmd = remote_command(argv, cwd="/srv/lsg farm/versions/abc")
    assert cmd.startswith("cd '/srv/lsg farm/versions/abc' && exec ")
    words = shlex.split(cmd)
    assert words[:5] == ["cd", "/srv/lsg farm/versions/abc", "&&", "exec", "python3"]
    assert words[4:] == argv


def test_agent_of_another_protocol_version_is_refused(local_host):
    other = (
        "import sys, json\n"
        "req = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'seq': req['seq'], 'ok': True, 'protocol': 1}), flush=True)\n"
        "sys.stdin.read()\n"
    )
    with open_transport(local_host) as t:
        with pytest.raises(ProtocolError, match="speaks protocol 1.*redeploy the agent bundle"):
            t.open_channel([sys.executable, "-c", other], timeout=60)
