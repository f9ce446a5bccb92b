"""The inventory: a valid file loads into hosts and slots; every mistake is one clear line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from farm.pool.inventory import default_inventory, load_inventory
from farm.util.errors import ConfigError, UsageError


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    (tmp_path / "id_ed25519").write_text("not really a key, but it exists\n")
    (tmp_path / "known_hosts").write_text("")
    return tmp_path


def write(dirpath: Path, text: str) -> Path:
    path = dirpath / "inventory.toml"
    path.write_text(text)
    return path


GOOD = """
[defaults]
user = "farm"
key = "id_ed25519"
known_hosts = "known_hosts"
tags = ["nightly"]

[[host]]
name = "a2-01"
address = "10.0.0.5"
port = 2222
soc = "Ascend910B1"
devices = 8

[[host]]
name = "a200-01"
address = "10.0.0.6"
soc = "Ascend310B1"
devices = 1
python = "/opt/py/bin/python3"
workdir = "/srv/lsg"
tags = ["edge"]

[[host]]
name = "emu"
transport = "local"
soc = "Ascend910B4"
devices = 2
env = { LSG_EMULATED_SOC = "Ascend910B4", LSG_EMULATED_DEVICES = "2" }
"""


def test_valid_inventory_loads_with_defaults_and_slots(keys):
    inv = load_inventory(write(keys, GOOD))
    a2, a200, emu = inv.hosts
    assert (a2.name, a2.address, a2.port, a2.user, a2.devices) == (
        "a2-01",
        "10.0.0.5",
        2222,
        "farm",
        8,
    )
    assert a2.key == keys / "id_ed25519"  # relative to the inventory file
    assert a2.known_hosts == keys / "known_hosts"
    assert a2.host_key_policy == "strict" and a2.transport == "ssh"
    assert a2.tags == ("nightly",) and a200.tags == ("edge",)
    assert a200.port == 22 and a200.python == "/opt/py/bin/python3" and a200.workdir == "/srv/lsg"
    assert a2.workdir == "lsg-farm" and a2.python == "python3"
    assert emu.transport == "local" and emu.env_dict["LSG_EMULATED_SOC"] == "Ascend910B4"
    # A local host runs here: by default with the farm's own interpreter, which has every
    # dependency (a python3 from PATH may have none of them).
    assert emu.python == sys.executable
    assert Path(emu.workdir).is_absolute()
    assert a2.family == "ascend910b" and a200.family == "ascend310b"
    assert sorted({h.family for h in inv.hosts}) == ["ascend310b", "ascend910b"]
    slots = inv.slots()
    assert len(slots) == 8 + 1 + 2
    assert slots[0].id == "a2-01:0" and slots[7].id == "a2-01:7" and slots[8].id == "a200-01:0"
    assert [s.id for s in inv.slots("ascend310b")] == ["a200-01:0"]
    assert inv.host("emu") is emu
    with pytest.raises(ConfigError, match="no host named 'nope'"):
        inv.host("nope")


def test_a_byte_order_mark_is_not_part_of_the_inventory(keys):
    """Windows' Notepad starts a UTF-8 file with one; TOML's parser takes it for a statement."""
    plain = load_inventory(write(keys, GOOD))
    path = keys / "inventory.toml"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load_inventory(path).hosts == plain.hosts


def test_an_inventory_over_the_input_size_is_refused_before_it_is_read(keys, monkeypatch):
    """It is read whole: 100 MB of comments took 340 MB and 2.6 s, 10 GB the machine."""
    path = write(keys, GOOD)
    monkeypatch.setenv("FARM_MAX_INPUT_BYTES", "100")
    with pytest.raises(
        UsageError, match=rf"^inventory {path}: {len(GOOD):,} bytes, over the limit"
    ):
        load_inventory(path)


def test_a_local_hosts_python_path_is_this_machines(keys, monkeypatch):
    """Relative to the inventory, as its workdir; ~ this user's home."""
    monkeypatch.setenv("HOME", str(keys))
    local = 'transport = "local"\nsoc = "Ascend910B1"\ndevices = 1\n'
    text = f'[[host]]\nname = "e1"\n{local}python = "venv/bin/python3"\n'
    text += f'[[host]]\nname = "e2"\n{local}python = "~/py/bin/python3"\n'
    text += f'[[host]]\nname = "e3"\n{local}python = "python3"\n'
    e1, e2, e3 = load_inventory(write(keys, text)).hosts
    assert (e1.python, e2.python, e3.python) == (
        str(keys / "venv" / "bin" / "python3"),
        str(keys / "py" / "bin" / "python3"),
        "python3",
    )


def test_key_path_expands_tilde(keys, monkeypatch):
    monkeypatch.setenv("HOME", str(keys))
    text = GOOD.replace('key = "id_ed25519"', 'key = "~/id_ed25519"')
    assert load_inventory(write(keys, text)).hosts[0].key == keys / "id_ed25519"


def test_default_inventory_is_the_embedded_local_pool(tmp_path):
    inv = default_inventory(tmp_path)
    assert [(h.name, h.soc, h.devices, h.transport) for h in inv.hosts] == [
        ("emu-a2-01", "Ascend910B1", 2, "local"),
        ("emu-a2-02", "Ascend910B1", 2, "local"),
        ("emu-310b-01", "Ascend310B1", 1, "local"),
    ]
    assert [s.id for s in inv.slots()] == [
        "emu-a2-01:0",
        "emu-a2-01:1",
        "emu-a2-02:0",
        "emu-a2-02:1",
        "emu-310b-01:0",
    ]
    for h in inv.hosts:  # each declares its own identity, and has its own work directory
        assert h.env_dict == {"LSG_EMULATED_SOC": h.soc, "LSG_EMULATED_DEVICES": str(h.devices)}
        assert Path(h.workdir).parent == tmp_path.absolute()


def host_block(**fields) -> str:
    base = {
        "name": '"a2-01"',
        "address": '"127.0.0.2"',
        "soc": '"Ascend910B1"',
        "devices": "2",
        "user": '"root"',
        "key": '"id_ed25519"',
        "known_hosts": '"known_hosts"',
    }
    base.update(fields)
    body = "\n".join(f"{k} = {v}" for k, v in base.items() if v is not None)
    return f"[[host]]\n{body}\n"


BAD = {
    "malformed": ("[[host]\nname = 'x'\n", ["malformed TOML", "fix the syntax"]),
    "unknown_soc": (
        host_block(soc='"Ascend910X"'),
        ["[[host]] a2-01", 'field "soc"', "'Ascend910X'", "Ascend910B1", "Ascend310B1"],
    ),
    "missing_key_file": (
        host_block(key='"nope_ed25519"'),
        ["[[host]] a2-01", 'field "key"', "nope_ed25519", "does not exist", "ssh-keygen"],
    ),
    "duplicate_host": (
        host_block() + host_block(address='"127.0.0.3"'),
        ["[[host]] a2-01: duplicate name (also [[host]] entry #1)", "unique"],
    ),
    "port_zero": (host_block(port="0"), ["[[host]] a2-01", 'field "port"', "1-65535"]),
    "port_high": (host_block(port="70000"), ['field "port"', "70000", "1-65535"]),
    "port_string": (host_block(port='"22"'), ['field "port"', "expected a TCP port", "str"]),
    "no_devices": (host_block(devices="0"), ['field "devices"', "at least 1"]),
    "unknown_field": (
        host_block(sock='"x"'),
        ["[[host]] a2-01", "unknown field 'sock'; did you mean 'soc'?", "known fields"],
    ),
    "no_hosts": ("[defaults]\nuser = 'x'\n", ["no [[host]] entries"]),
    "bad_transport": (host_block(transport='"telnet"'), ['field "transport"', "ssh, local"]),
    "bad_policy": (host_block(host_key_policy='"yolo"'), ['field "host_key_policy"', "accept-new"]),
    "strict_without_known_hosts": (
        host_block(known_hosts='"absent_known_hosts"'),
        ['field "known_hosts"', "absent_known_hosts", "ssh-keyscan -p 22 127.0.0.2", "accept-new"],
    ),
    "identity_in_ssh_env": (
        host_block(env='{ LSG_EMULATED_SOC = "Ascend910B1" }'),
        ['field "env"', "LSG_EMULATED_SOC", "declares its identity itself", "CANN's variables"],
    ),
    "missing_soc": (host_block(soc=None), ["[[host]] a2-01", 'missing field "soc"']),
    "missing_address": (host_block(address=None), ['missing field "address"']),
    "same_endpoint_twice": (
        host_block() + host_block(name='"a2-02"'),
        ["[[host]] a2-01 and [[host]] a2-02", "127.0.0.2:22", "remove one", "address/port"],
    ),
    "same_endpoint_other_port": (
        host_block(port="2222") + host_block(name='"a2-02"', port="2222"),
        ["[[host]] a2-01 and [[host]] a2-02", "127.0.0.2:2222"],
    ),
    "unnamed_entry": (host_block(name=None), ["[[host]] #1", 'missing field "name"']),
    "python_under_the_home": (  # the agent starts in its bundle's directory, words quoted
        host_block(python='"~/venv/bin/python3"'),
        ['field "python"', "'~/venv/bin/python3': give an absolute path", "PATH (python3)"],
    ),
    "python_relative": (
        host_block(python='"venv/bin/python3"'),
        ['field "python"', "'venv/bin/python3': give an absolute path"],
    ),
    "too_many_devices": (  # each a slot with a thread of its own: 100,000 was taken
        host_block(devices="100000"),
        ['field "devices"', "100,000 devices; at most 64 a host"],
    ),
    "env_with_a_variable_to_expand": (  # copied from CANN's set_env.sh: passed as written
        host_block(env='{ LD_LIBRARY_PATH = "/usr/local/Ascend/driver/lib64:$LD_LIBRARY_PATH" }'),
        ['field "env"', "$LD_LIBRARY_PATH is not expanded", "write the paths out"],
    ),
    "env_with_a_tilde": (
        host_block(env='{ ASCEND_HOME_PATH = "~/Ascend/ascend-toolkit/latest" }'),
        ['field "env"', "~ is not expanded", "write the paths out"],
    ),
    "name_with_a_control_character": (  # shown on terminals: an escape sequence would act there
        host_block(name='"a2\\u001b[2J"'),
        ['field "name"', "'a2\\x1b[2J' must not contain", "control characters"],
    ),
    "empty_pin": (host_block(cann='""'), ["[[host]] a2-01", 'field "cann"', "empty", "8.2.*"]),
    "pin_not_text": (host_block(arch="64"), ['field "arch"', "expected a glob pattern", "int"]),
    "bad_role": (host_block(role='"runner"'), ['field "role"', "'runner'", '"build"']),
    "budget_not_a_size": (
        host_block(memory_budget='"lots"'),
        ['field "memory_budget"', "'lots' is not a size", '"8GiB"'],
    ),
    "budget_of_no_bytes": (host_block(memory_budget="0"), ['field "memory_budget"', "more than 0"]),
    "accept_critical": (
        host_block(accept_health='["Critical"]'),
        ['field "accept_health"', "'Critical' cannot be accepted", "'Alarm'", "Warning"],
    ),
    "accept_health_not_a_list": (
        host_block(accept_health='"Alarm"'),
        ['field "accept_health"', "expected a list of npu-smi health words", "str"],
    ),
    "bare_ascend910b": (
        host_block(soc='"Ascend910B"'),
        ['field "soc"', "'Ascend910B'", "Ascend910B<digit>..."],
    ),
    "set_env_relative": (
        host_block(set_env='"Ascend/ascend-toolkit/set_env.sh"'),
        ['field "set_env"', "'Ascend/ascend-toolkit/set_env.sh': give the absolute path", '"" for'],
    ),
    "set_env_with_a_variable": (
        host_block(set_env='"$ASCEND_HOME_PATH/../set_env.sh"'),
        ['field "set_env"', "$ASCEND_HOME_PATH is not expanded", "write the path out"],
    ),
    "set_env_on_a_local_host": (
        '[[host]]\nname = "emu"\ntransport = "local"\nsoc = "Ascend910B1"\ndevices = 1\n'
        'set_env = "/usr/local/Ascend/ascend-toolkit/set_env.sh"\n',
        ["[[host]] emu", 'field "set_env"', "a local host is emulated", "remove it"],
    ),
    "only_build_hosts": (
        host_block(role='"build"', soc=None, devices=None),
        ['every [[host]] has role = "build"', "at least one host that runs cases"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_mistake_is_one_clear_line(keys, case):
    text, needles = BAD[case]
    path = write(keys, text)
    with pytest.raises(ConfigError) as info:
        load_inventory(path)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(f"inventory {path}: "), msg
    for needle in needles:
        assert needle in msg, (needle, msg)


def test_accept_new_does_not_need_an_existing_known_hosts(keys):
    text = host_block(known_hosts='"lab/new_known_hosts"', host_key_policy='"accept-new"')
    host = load_inventory(write(keys, text)).hosts[0]
    assert host.host_key_policy == "accept-new"
    assert host.known_hosts == keys / "lab" / "new_known_hosts"


def test_missing_file_and_defaults_name(tmp_path, keys):
    with pytest.raises(ConfigError, match="file not found"):
        load_inventory(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match='"name" cannot have a default'):
        load_inventory(write(keys, '[defaults]\nname = "x"\n' + host_block()))


def test_same_address_on_another_port_is_another_host(keys):
    text = host_block() + host_block(name='"a2-02"', port="2222")
    inv = load_inventory(write(keys, text))
    assert [h.endpoint for h in inv.hosts] == ["127.0.0.2:22", "127.0.0.2:2222"]


def test_every_host_message_names_the_entry_as_written(keys):
    """No message says 'host "x"': every one names the entry as [[host]] x."""
    for text, _ in BAD.values():
        try:
            load_inventory(write(keys, text))
        except ConfigError as exc:
            assert 'host "' not in str(exc), str(exc)


def test_pins_of_a_host_and_of_the_defaults(keys):
    text = '[defaults]\ncann = "8.2.*"\n' + host_block(arch='"aarch64"', driver='"24.1.*"')
    (host,) = load_inventory(write(keys, text)).hosts
    assert sorted(host.pins) == [("arch", "aarch64"), ("cann", "8.2.*"), ("driver", "24.1.*")]


def test_a_memory_budget_of_a_host_and_of_the_defaults(keys):
    text = (
        '[defaults]\nmemory_budget = "8GiB"\n'
        + host_block()
        + host_block(name='"a2-02"', port="2222", memory_budget='"1.5 TiB"')
        + host_block(name='"a2-03"', port="2223", memory_budget="1000000")
    )
    hosts = load_inventory(write(keys, text)).hosts
    assert [h.memory_budget for h in hosts] == [8 << 30, int(1.5 * (1 << 40)), 1_000_000]
    assert default_inventory(keys).hosts[0].memory_budget is None  # the farm's default applies


def test_a_host_may_accept_chips_in_alarm(keys):
    text = host_block(soc='"Ascend310B4"', devices="1", accept_health='["Alarm", "Alarm"]')
    (host,) = load_inventory(write(keys, text)).hosts
    assert host.accept_health == ("Alarm",)
    assert load_inventory(write(keys, host_block())).hosts[0].accept_health == ()


def test_real_soc_names_and_a_newer_soc_of_a_known_family(keys):
    names = ("Ascend910B2C", "Ascend910B4-1", "Ascend310B4", "Ascend910B9", "Ascend310B7")
    text = "".join(
        host_block(name=f'"h{i}"', port=str(2200 + i), soc=f'"{name}"')
        for i, name in enumerate(names)
    )
    hosts = load_inventory(write(keys, text)).hosts
    assert [(h.soc, h.family) for h in hosts] == [
        ("Ascend910B2C", "ascend910b"),
        ("Ascend910B4-1", "ascend910b"),
        ("Ascend310B4", "ascend310b"),
        ("Ascend910B9", "ascend910b"),  # not in the table: known by its family over SSH
        ("Ascend310B7", "ascend310b"),
    ]
    # An emulated host is emulated from the table's profile: its SoC must be there.
    local = '[[host]]\nname = "emu"\ntransport = "local"\nsoc = "Ascend910B9"\ndevices = 1\n'
    with pytest.raises(ConfigError, match="unknown SoC 'Ascend910B9'; use one of: Ascend910B1"):
        load_inventory(write(keys, local))
    local_known = local.replace("Ascend910B9", "Ascend910B4-1")
    assert load_inventory(write(keys, local_known)).hosts[0].family == "ascend910b"


def test_an_ssh_hosts_env_is_its_agents_environment_after_canns_set_up_script(keys):
    from farm.pool.deploy import agent_argv

    home = "/usr/local/Ascend/ascend-toolkit/latest"
    (host,) = load_inventory(
        write(keys, host_block(env=f'{{ ASCEND_HOME_PATH = "{home}" }}'))
    ).hosts
    # Without set_env: the set_env.sh beside ASCEND_HOME_PATH, else CANN's, above it.
    scripts = [f"{home}/set_env.sh", "/usr/local/Ascend/ascend-toolkit/set_env.sh"]
    argv = agent_argv(host)
    assert argv[:2] == ["bash", "-c"] and argv[3:6] == ["lsg-farm-set-env", "2", *scripts[:1]]
    assert argv[6:11] == [scripts[1], "env", f"ASCEND_HOME_PATH={home}", "python3", "-m"]


def test_set_env_names_canns_set_up_script_or_none(keys):
    toolkit = "/opt/My Ascend/ascend-toolkit"
    text = (
        f'[defaults]\nset_env = "{toolkit}/set_env.sh"\n'
        + host_block()
        + host_block(name='"a2-02"', port="2222", set_env='""', env='{ ASCEND_HOME_PATH = "/x" }')
        + host_block(name='"a2-03"', port="2223")
    )
    hosts = load_inventory(write(keys, text)).hosts
    named = (f"{toolkit}/set_env.sh",)
    assert [h.set_env for h in hosts] == [named, (), named]
    # Nothing to find it by: none (the env, if any, alone); a trailing slash is no other place.
    none = load_inventory(write(keys, host_block())).hosts[0]
    assert none.set_env == ()
    slash = host_block(env='{ ASCEND_HOME_PATH = "/usr/local/Ascend/nnrt/latest/" }')
    assert load_inventory(write(keys, slash)).hosts[0].set_env == (
        "/usr/local/Ascend/nnrt/latest/set_env.sh",
        "/usr/local/Ascend/nnrt/set_env.sh",
    )


def test_a_build_host_runs_no_cases_and_needs_no_soc(keys):
    text = host_block() + host_block(
        name='"cann-build"', address='"127.0.0.9"', role='"build"', soc=None, devices=None
    )
    inventory = load_inventory(write(keys, text))
    assert [h.name for h in inventory.hosts] == ["a2-01"]
    assert [(h.name, h.role, h.soc) for h in inventory.build_hosts] == [("cann-build", "build", "")]
    assert [s.id for s in inventory.slots()] == ["a2-01:0", "a2-01:1"]
