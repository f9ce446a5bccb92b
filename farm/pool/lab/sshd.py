"""The sshd of a lab host (farm/pool/lab/core.py): where OpenSSH's server is and its version, a
loopback address and a free port, the generated ed25519 keys, the quoting of config and TOML
values, and whether an sshd answers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from farm.util import proc as procfs
from farm.util.errors import ConfigError

SSHD = "/usr/sbin/sshd"


def sshd_path() -> str | None:
    """The sshd binary, or None if OpenSSH server is not installed.

    ``FARM_SSHD`` overrides the location (an absolute path; sshd must be started by one).
    """
    override = os.environ.get("FARM_SSHD")
    if override:
        return override if os.path.isabs(override) and os.access(override, os.X_OK) else None
    if os.access(SSHD, os.X_OK):
        return SSHD
    found = shutil.which("sshd")
    return found if found and os.path.isabs(found) else None


def sshd_version(sshd: str) -> tuple[int, int]:
    proc = subprocess.run([sshd, "-V"], capture_output=True, text=True, check=False)
    m = re.search(r"OpenSSH_(\d+)\.(\d+)", proc.stdout + proc.stderr)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def can_bind(address: str) -> bool:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((address, 0))
        return True
    except OSError:
        return False


def free_port(address: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _ed25519_pair() -> tuple[bytes, bytes]:
    """(OpenSSH private key, "ssh-ed25519 AAAA..." public line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, public


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def key_pair(path: Path, comment: str) -> str:
    """Create path (private) and path.pub unless both exist; return the public line."""
    pub = path.with_name(path.name + ".pub")
    if not (path.is_file() and pub.is_file()):
        private, public = _ed25519_pair()
        _write_private(path, private)
        pub.write_bytes(public + f" {comment}\n".encode())
    return pub.read_text().strip()


def cfg_path(p: Path | str) -> str:
    s = str(p)
    if '"' in s:
        raise ConfigError(f"lab: path {s!r} contains a double quote; choose another lab root")
    return f'"{s}"' if any(c.isspace() for c in s) else s


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def sh_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def is_sshd(pid: int) -> bool:
    name = procfs.command_name(pid)
    return name is None or name.startswith("sshd")  # unreadable (no /proc): trust the pid file


def banner(address: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout) as s:
            s.settimeout(timeout)
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False
