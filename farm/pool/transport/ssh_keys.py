"""Whom the SSH transport trusts (farm/pool/transport/ssh.py): the inventory's private key, and
host keys checked against the inventory's ``known_hosts``.

* Authentication: the inventory's private key only (no agent, no ~/.ssh key search, no
  passwords); a key that OpenSSH would refuse (readable by others, passphrase-protected, not a
  key) is an :class:`~farm.util.errors.AuthError` naming the fix.
* Host keys: under ``strict`` (the default) an unknown key is refused
  (:class:`StrictHostKeyPolicy`, a paramiko ``RejectPolicy``); under the explicit lab opt-in
  ``accept-new`` it is accepted and appended to that file (:class:`AcceptNewHostKeyPolicy`).
  A *changed* key is refused under both (ssh.py maps paramiko's BadHostKeyException).
"""

from __future__ import annotations

import fcntl
from pathlib import Path

import paramiko

from farm.pool.inventory import HostSpec
from farm.util.errors import AuthError, ConfigError, HostKeyError


def where_of(host: HostSpec) -> str:
    return f"host {host.name} ({host.address}:{host.port})"


def address(host: HostSpec) -> str:
    if not host.address:  # load_inventory requires it for ssh hosts
        raise ConfigError(f"[[host]] {host.name}: an ssh host needs an address; add address = ...")
    return host.address


def known_hosts_name(host: HostSpec) -> str:
    return address(host) if host.port == 22 else f"[{host.address}]:{host.port}"


def _keyscan_hint(host: HostSpec) -> str:
    return f"ssh-keyscan -p {host.port} {host.address} >> {host.known_hosts}"


class StrictHostKeyPolicy(paramiko.RejectPolicy):
    """Refuse a host key that is not in known_hosts, with a message that says what to do."""

    def __init__(self, host: HostSpec) -> None:
        self.host = host

    def missing_host_key(self, client, hostname, key):  # noqa: ANN001 (paramiko's signature)
        raise HostKeyError(
            f"{where_of(self.host)}: host key {key.get_name()} {key.fingerprint} is not in "
            f"{self.host.known_hosts} and host_key_policy is strict; verify the fingerprint, "
            f"then record it ({_keyscan_hint(self.host)}) or opt in with "
            'host_key_policy = "accept-new" (labs only)',
            host=self.host.name,
        )


class AcceptNewHostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Lab opt-in: accept an unknown host key and append it to the inventory's known_hosts."""

    def __init__(self, host: HostSpec) -> None:
        self.host = host

    def missing_host_key(self, client, hostname, key):  # noqa: ANN001
        client.get_host_keys().add(hostname, key.get_name(), key)
        path = self.host.known_hosts
        if path is None:
            return
        line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="ascii") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                f.write(line)
        except OSError as exc:
            raise ConfigError(
                f"{where_of(self.host)}: cannot record the new host key in {path}: {exc.strerror}"
            ) from None


def load_private_key(host: HostSpec) -> paramiko.PKey:
    """The host's private key, or an :class:`AuthError` about this host alone (its health check
    turns it into a reason and the host is quarantined; the other hosts run)."""
    key = host.key
    if key is None:  # load_inventory requires it for ssh hosts
        raise AuthError(
            f"host {host.name}: no key file; add key = ... to its [[host]] entry", host=host.name
        )
    where = f"host {host.name}: key {key}"
    try:
        mode = key.stat().st_mode & 0o777
    except FileNotFoundError:
        raise AuthError(
            f"{where} does not exist; create it (ssh-keygen -t ed25519) or fix the path",
            host=host.name,
        ) from None
    except OSError as exc:
        raise AuthError(f"{where} cannot be read: {exc.strerror}", host=host.name) from None
    if mode & 0o077:
        raise AuthError(
            f"{where} has mode {mode:04o}, readable by group/others, which OpenSSH refuses too; "
            f"chmod 600 {key}",
            host=host.name,
        )
    try:
        return paramiko.PKey.from_path(key)
    except paramiko.PasswordRequiredException:
        raise AuthError(_passphrase_message(where, key), host=host.name) from None
    except TypeError as exc:  # cryptography: "Key is password-protected, but password was not ..."
        if "password" not in str(exc).lower():
            raise AuthError(_unusable_key_message(where, exc), host=host.name) from None
        raise AuthError(_passphrase_message(where, key), host=host.name) from None
    except OSError as exc:
        raise AuthError(f"{where} cannot be read: {exc.strerror}", host=host.name) from None
    except Exception as exc:  # paramiko/cryptography's many ways to say "not a key"
        raise AuthError(_unusable_key_message(where, exc), host=host.name) from None


def _passphrase_message(where: str, key: Path) -> str:
    return (
        f"{where} is passphrase-protected and the farm uses no SSH agent; use a dedicated key "
        f"without one (ssh-keygen -t ed25519 -N '' -f <new file>) or remove it (ssh-keygen -p -f "
        f"{key})"
    )


def _unusable_key_message(where: str, exc: BaseException) -> str:
    detail = " ".join(str(exc).split()) or exc.__class__.__name__
    return (
        f"{where} cannot be used ({detail}); use an OpenSSH/PEM private key (ed25519, ecdsa or "
        "rsa) without a passphrase"
    )


def load_known_hosts(host: HostSpec, client: paramiko.SSHClient) -> None:
    """Load the host's known_hosts into ``client``; a malformed line is an :class:`AuthError`
    about this host alone, naming the file, the line and the fix."""
    known = host.known_hosts
    if known is None or not known.is_file():
        return
    where = f"{where_of(host)}: known_hosts {known}"
    try:
        client.get_host_keys().load(str(known))
    except OSError as exc:
        raise AuthError(f"{where} cannot be read: {exc.strerror}", host=host.name) from None
    except Exception as exc:  # paramiko's InvalidHostKey (a bare Exception), binascii, ...
        bad = exc.args[0] if isinstance(exc, paramiko.hostkeys.InvalidHostKey) else None
        line = _line_number(known, bad) if isinstance(bad, str) else None
        at = f" line {line}" if line else ""
        raise AuthError(
            f"{where}{at} is malformed ({_first_line(exc)}); delete or fix that line, then record "
            f"the host key again ({_keyscan_hint(host)})",
            host=host.name,
        ) from None


def _line_number(path: Path, text: str) -> int | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, 1):
        if line.strip() == text.strip():
            return number
    return None


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, paramiko.hostkeys.InvalidHostKey) and len(exc.args) > 1:
        exc = exc.args[1] if isinstance(exc.args[1], BaseException) else exc
    text = " ".join(str(exc).split())
    return text or exc.__class__.__name__
