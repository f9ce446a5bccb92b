"""Health per chip over the SSH lab: a chip in alarm, or with its memory held by another process
(the lab's stand-in npu-smi reports it so), is set aside alone while its host's other chip runs
the cases; the run says so (exit 2: the pool was not all there) and `farm hosts` shows each
chip's state and why; once healthy again it is back at the next check. And what each host is:
`farm hosts` shows its architecture and CANN (here from the inventory's env, the agent's
environment on an SSH host), and an inventory pin the host does not match refuses it, one line
a pin."""

from __future__ import annotations

import json
import platform
import subprocess

from tests.e2e.conftest import select

K = "910b and f32 and strided"


def _hosts_json(farm, inventory: str, *options: str, code: int = 0) -> dict[str, dict]:
    proc = subprocess.run(
        farm.argv("hosts", "--inventory", inventory, "--json", *options),
        cwd=farm.root,
        env=farm.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == code, proc.stdout + proc.stderr
    rows = {}
    for host in json.loads(proc.stdout):  # chips under their host: a row each, "host:device"
        rows[host["host"]] = host
        rows.update({f"{host['host']}:{c['device']}": c for c in host["chips"]})
    return rows


def _inventory(lab, tmp_path) -> str:
    """The lab's inventory with a CANN for a2-01 (its agent's environment: a toolkit whose
    version file says 8.2.RC1, with the set_env.sh above it that the farm finds and sources),
    pinned to 8.2.*, and a200-01 pinned to an architecture it is not."""
    home = tmp_path / "Ascend" / "ascend-toolkit" / "latest"
    (home / "x86_64-linux").mkdir(parents=True)
    (home / "aarch64-linux").mkdir(parents=True)
    for arch in ("x86_64", "aarch64"):
        (home / f"{arch}-linux" / "ascend_toolkit_install.info").write_text("version=8.2.RC1\n")
    (home.parent / "set_env.sh").write_text(f"export ASCEND_HOME_PATH='{home}'\n")
    text = lab.inventory_path.read_text()
    text = text.replace(
        'name = "a2-01"\n',
        f'name = "a2-01"\ncann = "8.2.*"\nenv = {{ ASCEND_HOME_PATH = "{home}" }}\n',
    )
    text = text.replace('name = "a200-01"\n', 'name = "a200-01"\narch = "riscv64"\n')
    path = tmp_path / "inventory.toml"
    path.write_text(text)
    return str(path)


def test_a_chip_that_may_not_run_is_set_aside_alone_and_comes_back(
    farm, lab, broken_hosts, tmp_path
):
    inventory = _inventory(lab, tmp_path)
    broken_hosts += ["a2-01", "a2-02"]
    lab.set_chip("a2-01", 1, health="Alarm")
    lab.set_chip("a2-02", 0, held_mb=2048)

    result = farm.run_tier("--inventory", inventory, k=K)
    assert result.code == 2, result.text  # every case ran; the pool was not all there
    records = result.assert_one_result_per_case(select(K))
    assert all(r["outcome"] == "passed" for r in records.values())
    used = {r["slot"] for r in records.values()}
    assert used <= {"a2-01:0", "a2-02:1"} and {"a2-01:0", "a2-02:1"} & used, used
    aside = result.summary["set_aside_chips"]
    assert set(aside) == {"a2-01:1", "a2-02:0"}, aside
    assert "health Alarm" in aside["a2-01:1"]
    assert (
        "memory held by another process: pid 999999 someone-elses-job 2048 MB" in aside["a2-02:0"]
    )
    assert "chip     a2-01:1 set aside: chip 1 (910B1) is in health Alarm" in result.text
    here = platform.machine()
    assert result.summary["unhealthy_hosts"] == {
        "a200-01": f"host a200-01: arch is pinned to 'riscv64' in the inventory, the host reports "
        f"'{here}'; fix the pin or the host"
    }

    rows = _hosts_json(farm, inventory)
    assert rows["a2-01"]["state"] != "bad" and rows["a2-01"]["set_aside"] == 1
    chip = rows["a2-01:0"]
    assert (rows["a2-01:1"]["state"], chip["name"], chip["health"], chip["memory_used_mb"]) == (
        "set aside",
        "910B1",
        "OK",
        3150,
    )
    assert rows["a2-01:1"]["since"] and "Alarm" in rows["a2-01:1"]["reason"]
    assert (rows["a2-01"]["arch"], rows["a2-01"]["cann"]) == (here, "8.2.RC1")
    assert rows["a2-01"]["machine"]["chips"][1]["health"] == "Alarm"

    lab.set_chip("a2-01", 1, health="OK")
    lab.set_chip("a2-02", 0, held_mb=0)
    rows = _hosts_json(farm, inventory, "--check", code=2)  # a200-01 stays bad (its pin)
    assert rows["a2-01:1"]["state"] == "good" and rows["a2-02:0"]["state"] == "good", rows
    assert rows["a2-01"]["set_aside"] == 0 and rows["a2-01:1"]["reason"] is None
