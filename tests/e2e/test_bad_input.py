"""Bad input stops `farm run` before anything starts: exit 2, one clear message that names the
thing and the fix, no traceback, no run directory and no store row.

None of these needs sshd: the inventories point at a closed port or are refused while loading.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from farm.pool.lab.sshd import _ed25519_pair, _write_private
from tests.e2e.conftest import _run_dirs


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


@pytest.fixture
def keyfile(tmp_path) -> Path:
    key = tmp_path / "keys" / "id_ed25519"
    private, _ = _ed25519_pair()
    _write_private(key, private)
    (tmp_path / "known_hosts").write_text("")
    return key


def ssh_host(name: str, key: Path, *, port: int = 22, soc: str = "Ascend910B1") -> str:
    return f"""
[[host]]
name = "{name}"
address = "127.0.0.1"
port = {port}
user = "root"
key = "{key}"
known_hosts = "{key.parent.parent / "known_hosts"}"
soc = "{soc}"
devices = 1
connect_timeout = 3.0
"""


def run_bad(farm, tmp_path, inventory_text: str | None, *extra: str):
    args = ["run", "--tier", "smoke", "--no-report", "--no-progress", *extra]
    if inventory_text is not None:
        path = tmp_path / "inventory.toml"
        path.write_text(inventory_text)
        args += ["--inventory", str(path)]
    result = farm.run(*args)
    message = " ".join(result.err.split())  # the console wraps long lines
    assert result.code == 2, result.text
    assert "Traceback" not in result.text, result.text
    assert message.count("error:") == 1, message
    # Nothing started: no run directory, no run in the store.
    assert _run_dirs(farm.runs) == []
    assert not farm.store.exists()
    return message


def test_malformed_inventory(farm, tmp_path, keyfile):
    text = ssh_host("a2-01", keyfile).replace('soc = "Ascend910B1"', "soc = Ascend910B1")
    message = run_bad(farm, tmp_path, text)
    assert f"inventory {tmp_path / 'inventory.toml'}: malformed TOML" in message
    assert "fix the syntax there" in message


def test_inventory_field_of_the_wrong_type(farm, tmp_path, keyfile):
    text = ssh_host("a2-01", keyfile).replace("devices = 1", 'devices = "two"')
    message = run_bad(farm, tmp_path, text)
    assert '[[host]] a2-01: field "devices": expected a device count >= 1' in message


def test_unknown_soc(farm, tmp_path, keyfile):
    message = run_bad(farm, tmp_path, ssh_host("a2-01", keyfile, soc="Ascend999Z"))
    assert "[[host]] a2-01: field \"soc\": unknown SoC 'Ascend999Z'" in message
    assert "use one of:" in message and "Ascend910B1" in message and "Ascend310B1" in message


def test_missing_key_file(farm, tmp_path, keyfile):
    missing = keyfile.with_name("nope_ed25519")
    message = run_bad(farm, tmp_path, ssh_host("a2-01", missing))
    assert f'[[host]] a2-01: field "key": key file {missing} does not exist' in message
    assert "ssh-keygen -t ed25519" in message


def test_unreachable_address(farm, tmp_path, keyfile):
    """The only host refuses connections: there is nowhere to run, so nothing starts. The
    message names the host, its address and the fix; the host is quarantined for `farm hosts`."""
    port = closed_port()
    message = run_bad(farm, tmp_path, ssh_host("far-01", keyfile, port=port))
    assert "is healthy, so nothing was started" in message
    assert f"far-01: host far-01 (127.0.0.1:{port}): connection refused" in message
    assert "is sshd running? check address/port in the inventory" in message
    rows = farm.hosts(str(tmp_path / "inventory.toml"))
    assert rows["far-01"]["state"] == "bad" and "connection refused" in rows["far-01"]["reason"]


def test_missing_inventory_file(farm, tmp_path):
    missing = tmp_path / "nowhere.toml"
    result = farm.run("run", "--no-report", "--no-progress", "--inventory", str(missing))
    message = " ".join(result.err.split())
    assert result.code == 2 and "Traceback" not in result.text
    assert f"inventory {missing}: file not found" in message
    assert _run_dirs(farm.runs) == [] and not farm.store.exists()


def test_unknown_tier(farm, tmp_path):
    message = run_bad(farm, tmp_path, None, "--tier", "weekly")
    assert "unknown tier 'weekly'; use one of: smoke, nightly, full" in message


def test_plugin_refuses_a_bad_inventory_with_a_usage_error(farm, tmp_path, keyfile):
    """`pytest suites/ --farm-inventory FILE` stops the same way: one message, no run."""
    path = tmp_path / "inventory.toml"
    path.write_text(ssh_host("a2-01", keyfile, soc="Ascend999Z"))
    proc = farm.pytest("suites/", "--farm-inventory", str(path), "-q")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 4, text  # pytest's usage error
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    assert "unknown SoC 'Ascend999Z'" in " ".join(text.split())
    assert _run_dirs(farm.runs) == []


@pytest.mark.parametrize("option", ["--farm-backend", "--farm-target"])
def test_plugin_refuses_an_unknown_backend_or_target_before_any_host_is_touched(farm, option):
    """It reached every agent and failed its canary: the whole pool quarantined for a typo."""
    proc = farm.pytest("suites/", option, "bogus", "-q")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 4, text  # pytest's usage error
    assert f"argument {option}: invalid choice: 'bogus'" in text
    assert _run_dirs(farm.runs) == [] and not (farm.runs / "hosts").exists()


def test_an_option_pytest_refuses_is_the_users_mistake_not_the_pools(farm):
    """pytest parses what follows -- once the pool is ready; an option it does not know was
    "degraded or incomplete by infrastructure", a finished run of no case with its quality
    gate and report. Now: one line, the run stored aborted (never a baseline), exit 2."""
    import sqlite3

    result = farm.run("run", "--tier", "smoke", "--no-progress", "--", "--no-such-option")
    text = " ".join(result.text.split())
    assert result.code == 2, result.text
    assert "unrecognized arguments: --no-such-option" in text
    assert (
        "error: pytest refused the arguments after -- (--no-such-option), as it says above; "
        "nothing ran"
    ) in text
    assert "infrastructure" not in text and "quality gate" not in text
    (run_dir,) = _run_dirs(farm.runs)
    assert not (run_dir / "report").exists()
    with sqlite3.connect(farm.store) as db:
        assert db.execute("SELECT status, exit_code FROM runs").fetchall() == [("aborted", 2)]
        assert db.execute("SELECT count(*) FROM results").fetchone() == (0,)


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_below_one_is_refused(farm, tmp_path, jobs):
    message = run_bad(farm, tmp_path, None, "--jobs", jobs)
    assert f"--jobs {jobs}: use 1 or more (1: pytest in this process)" in message


def test_jobs_over_the_slots_start_one_worker_a_slot(farm):
    """--jobs 500 started 500 pytest workers for a pool of 5 slots: all but 5 with nothing to
    run, each a Python process of its own."""
    result = farm.run("run", "--tier", "smoke", "--no-report", "--no-progress", "--jobs", "500",
                      "--", "-k", "310b and bf16")  # fmt: skip
    assert result.code == 0, result.text
    assert "note: --jobs 500: 5 workers, one per slot of the pool" in " ".join(result.err.split())
