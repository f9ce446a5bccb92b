"""CANN's own set-up script for the agent and the build (the inventory's set_env): an SSH session
does not source set_env.sh, so every host command the farm runs in CANN's environment (the agent,
the platform helper, the CANN build and install) runs as ``bash -c '. set_env.sh && exec ...'``,
the inventory env on top (farm/pool/transport/commands.py host_argv). A script that is missing or
fails there is one line naming the host, the script and the fix, and the host's error
(HostSetupError), never the build's. The SSH lab's emulated CANN has such a script and its
inventory relies on it (the whole path over SSH: tests/e2e/test_cann_build.py, test_acl_path.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from farm.pool import cann_build, deploy
from farm.pool.inventory import HostSpec
from farm.pool.transport.base import Transport
from farm.pool.transport.commands import SET_ENV_STATUS, host_argv, set_env_problem
from farm.pool.transport.local import LocalTransport
from farm.util.errors import HostSetupError

SHOW = "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('A', 'B', 'C')}))"


def _script(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def _host(*set_env: str, env=(), transport="ssh", workdir="/w") -> HostSpec:
    return HostSpec(
        "a2-01",
        "Ascend910B1",
        1,
        transport=transport,
        address="10.0.0.5",
        env=tuple(env),
        set_env=tuple(set_env),
        workdir=workdir,
    )


def _run(argv) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_a_host_command_runs_in_what_set_env_exports_with_the_inventory_env_on_top(tmp_path):
    where = tmp_path / "Ascend toolkit ü"  # paths with spaces
    args = tmp_path / "args"
    script = _script(
        where / "set_env.sh",
        'echo "Setting the environment" \n'  # CANN's may talk: not on the agent's stdout
        f'echo "$#" > "{args}"\n'  # a sourced script would see the caller's words
        "export A=from-set-env B=from-set-env\n",
    )
    host = _host(str(where / "latest" / "set_env.sh"), script, env=(("B", "from the inventory"),))
    done = _run(host_argv(host, [sys.executable, "-c", SHOW], env=(("C", "the package's"),)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "A": "from-set-env",
        "B": "from the inventory",
        "C": "the package's",
    }
    assert args.read_text().strip() == "0"
    # Without a script (set_env = ""): the inventory env alone, as before.
    plain = host_argv(_host(env=(("B", "b"),)), ["python3"])
    assert plain == ["env", "B=b", "python3"]


def test_a_missing_or_failing_set_env_is_one_line_naming_the_host_the_script_and_the_fix(tmp_path):
    nowhere = (str(tmp_path / "latest" / "set_env.sh"), str(tmp_path / "set_env.sh"))
    host = _host(*nowhere)
    done = _run(host_argv(host, ["true"]))
    assert done.returncode == SET_ENV_STATUS
    said = set_env_problem(host, done.stderr)
    assert said == (
        f"host a2-01: CANN's set-up script is not on the host ({nowhere[0]} nor {nowhere[1]}); "
        'fix set_env in the inventory (the path of CANN\'s set_env.sh on the host, or "" to use '
        "its env alone)"
    )
    complaint = 'echo "no driver under /usr/local/Ascend" >&2\nfalse\n'
    failing = _script(tmp_path / "broken ü" / "set_env.sh", complaint)
    host = _host(failing)
    done = _run(host_argv(host, ["true"]))
    said = set_env_problem(host, done.stderr)
    assert said == (
        f"host a2-01: sourcing CANN's set-up script {failing} failed (status 1): no driver under "
        "/usr/local/Ascend; repair it on the host, or fix set_env in the inventory (the path of "
        'CANN\'s set_env.sh on the host, or "" to use its env alone)'
    )
    # A command that fails on its own is not the script's fault.
    fine = _host(_script(tmp_path / "ok" / "set_env.sh", "export A=1\n"))
    done = _run(host_argv(fine, ["sh", "-c", "echo lsg-farm >&2; exit 3"]))
    assert done.returncode == 3 and set_env_problem(fine, done.stderr) is None


def test_an_agent_that_cannot_set_up_is_the_hosts_error(tmp_path):
    host = _host(str(tmp_path / "no" / "set_env.sh"), transport="local", workdir=str(tmp_path))
    host = dataclasses.replace(host, python=sys.executable)
    os.makedirs(deploy.versions_dir(host, "sha"))
    transport = LocalTransport(host)
    try:
        with pytest.raises(HostSetupError) as info:
            deploy.start_agent(transport, "sha", timeout=20)
    finally:
        transport.close()
    assert str(info.value).startswith("host a2-01: CANN's set-up script is not on the host (")
    assert info.value.host == "a2-01" and "\n" not in str(info.value)


def test_a_build_host_that_cannot_set_up_is_no_build_failure(tmp_path, monkeypatch):
    """The build never ran: not CannBuildFailed (which blames no host and keeps a log)."""
    host = _host(str(tmp_path / "no" / "set_env.sh"))
    source = tmp_path / "source.tar.gz"
    source.write_bytes(b"")

    class Report:
        def remote_dir(self, name):
            return str(tmp_path / "remote")

    class FakeTransport:
        def run_argv(self, argv, *, cwd=None, timeout=0):
            done = _run(argv)
            return done.returncode, done.stdout, done.stderr

        def close(self):
            return None

    monkeypatch.setattr(deploy, "package_manifest", lambda p: {"version": "1.0"})
    monkeypatch.setattr(deploy, "deploy", lambda t, h, files: Report())
    with pytest.raises(HostSetupError, match=r"^host a2-01: CANN's set-up script is not on"):
        cann_build.build_on(
            host,
            source,
            arch="aarch64",
            cann="8.2.RC1",
            out_dir=tmp_path,
            transport=cast(Transport, FakeTransport()),  # build_on only runs commands on it
        )
    assert not list(tmp_path.glob("*.log"))  # no build, no build log


def test_the_labs_emulated_cann_is_set_up_by_its_own_set_env(tmp_path, monkeypatch):
    """What `farm lab up --cann emulated` gives a host: a toolkit with CANN's set-up script, an
    inventory that names it, and an SSH session without CANN's variables (sshd's SetEnv)."""
    from farm.agent.backends import acl_api
    from farm.pool.lab import core as lab_module

    libs = tmp_path / "libs"
    libs.mkdir()
    for name in (*acl_api.LIB_FILES.values(), acl_api.OP_API_FILE):
        (libs / name).write_bytes(b"")
    (tmp_path / "generated-only").mkdir()  # the op-api without the aclnn layer, beside lib/
    (tmp_path / "generated-only" / acl_api.OP_API_FILE).write_bytes(b"")
    lab = lab_module.Lab(tmp_path / "lab ü")
    home = lab_module.install_cann(lab.root / "hosts" / "a2-01" / "Ascend", libs, sys.executable)
    lab.hosts = {
        "a2-01": lab_module.LabHost(
            "a2-01", "Ascend910B1", 1, "127.0.0.2", 2222, str(home.parents[2]), cann_home=str(home)
        )
    }
    lab.user_key.parent.mkdir(parents=True)
    lab.user_key.write_text("key")
    lab.known_hosts.write_text("")
    lab._write_inventory()
    (host,) = lab.inventory().hosts
    script = str(lab_module.set_env_script(home))
    assert (host.set_env, host.env) == ((script,), ())
    monkeypatch.setattr(lab_module, "sshd_version", lambda sshd: (9, 6))
    assert "ASCEND" not in lab._sshd_config(lab.hosts["a2-01"])  # the session has none of it
    show = (
        "import json, os; print(json.dumps({k: os.environ.get(k, '') for k in ('ASCEND_HOME_PATH',"
        " 'ASCEND_OPP_PATH', 'ASCEND_AICPU_PATH', 'LD_LIBRARY_PATH', 'PATH', 'PYTHONPATH')}))"
    )
    env = {**os.environ, "LD_LIBRARY_PATH": "/before"}
    done = subprocess.run(
        host_argv(host, [sys.executable, "-c", show]), capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    driver = home.parents[1] / "driver" / "lib64"
    assert got["ASCEND_HOME_PATH"] == got["ASCEND_AICPU_PATH"] == str(home)
    assert got["ASCEND_OPP_PATH"] == str(home / "opp")
    libraries = got["LD_LIBRARY_PATH"].split(":")
    assert libraries[0] == str(home / "lib64") and libraries[-1] == "/before"
    assert {str(driver), str(driver / "common"), str(driver / "driver")} <= set(libraries)
    assert got["PATH"].split(":")[0] == str(home / "bin")
    assert str(home / "python" / "site-packages") in got["PYTHONPATH"].split(":")
