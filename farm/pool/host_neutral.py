"""What a failure says apart from the host it happened on.

A fault of the farm (or of the package) fails alike on every host, but the messages still differ:
each names its host, its address and port, its deploy paths, its SoC. :func:`neutral` replaces
those host-specific parts with placeholders, so that two hosts' messages compare equal exactly
when they say the same thing. The health check's canary (farm/pool/health/checks.py
common_canary_failure) and the dispatcher's per-case infrastructure errors (farm/run/dispatch.py)
use it to tell a fault of the farm, which quarantines no host, from a host's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from golden.soc import FAMILY_SHORT, family_of

# An absolute path (or ~/...): everything up to its last component, which names the file and is
# kept (the same file on every host is the same thing said).
_PATH = re.compile(r"(?<![\w.<>-])(?:~|/)[^\s\"'`,;:()\[\]{}<>|=]*/(?=[^\s/\"'`,;:()\[\]{}<>|=])")
_LEFTOVER_ROOT = re.compile(r"(?<![\w.<>-])(?:~|/)[^\s\"'`,;:()\[\]{}<>|=/]+(?=[\s\"'`,;:)\]}|]|$)")
_IPV4 = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\w.])")
_IPV6 = re.compile(r"\[[0-9A-Fa-f:.%\w]*:[0-9A-Fa-f:.%\w]*\](?::\d{1,5})?")
# A host name and port where a message names an endpoint: "host a2-01 (a2-01.lab:22)".
_ENDPOINT = re.compile(r"(?<![\w.:-])[A-Za-z0-9.-]*[A-Za-z][\w.-]*:\d{1,5}(?=[),])")
_ADDRESS_PORT = re.compile(r"<address>:\d{1,5}(?!\d)")
_USER_AT = re.compile(r"(?<![\w.-])[\w.-]+@(?=<address>|<host>)")
_PID = re.compile(r"\b(pid|pgid|process|group) \d+")


def host_parts(
    name: str,
    *,
    soc: str | None = None,
    machine: str | None = None,
    address: str | None = None,
    port: int | None = None,
) -> list[tuple[str, str]]:
    """(text, placeholder) for what names this host: its inventory name, its machine's hostname,
    its address and port, its SoC and its family's short form."""
    parts: list[tuple[str, str]] = []
    if address:
        if port:
            parts.append((f"{address}:{port}", "<address>"))
        parts.append((address, "<address>"))
    for each in (name, machine):
        if each:
            parts.append((each, "<host>"))
    if soc:
        parts.append((soc, "<soc>"))
        try:
            family = family_of(soc)
        except Exception:  # an unknown SoC names no family: only its name is the host's
            family = None
        if family:
            parts.append((family, "<family>"))
            parts.append((FAMILY_SHORT.get(family, family), "<family>"))
    return parts


def neutral(text: str, parts: Iterable[tuple[str, str]] = ()) -> str:
    """``text`` with every path's directories, every address and port, every process id and the
    hosts' own parts (host_parts, of every host the text may name) replaced by placeholders."""
    text = _PATH.sub("<path>/", text)
    text = _LEFTOVER_ROOT.sub("<path>", text)
    text = _IPV6.sub("<address>", text)
    text = _IPV4.sub("<address>", text)
    text = _ENDPOINT.sub("<address>", text)
    for literal, placeholder in sorted(set(parts), key=lambda p: len(p[0]), reverse=True):
        if len(literal) < 2:
            continue
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(literal)}(?![A-Za-z0-9])", placeholder, text)
    text = _ADDRESS_PORT.sub("<address>", text)
    text = _USER_AT.sub("", text)
    text = _PID.sub(r"\1 <n>", text)
    return text
