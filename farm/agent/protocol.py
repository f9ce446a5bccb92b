"""The wire protocol between the orchestrator and an agent: versioned JSON lines.

One JSON object per line (UTF-8, ASCII-escaped, ``\\n``-terminated), at most
:data:`MAX_LINE_BYTES` bytes. Every request carries ``op`` and an integer ``seq``; the reply echoes
``seq`` and carries ``ok``. Requests (client → agent) and their replies:

``hello``      ``{protocol, farm_version}`` → ``{ok, protocol, agent_version, pid, pgid}``
``identify``   ``{}`` → ``{ok, host, soc, devices, python, deps: {numpy, ml_dtypes, torch},
               missing: [module], backends: [name], bundle: sha256|null, source, emulated}``
``run-case``   ``{case: {...}, backend: str, device: int, [run: str], [owner: str],
               [lock_wait: seconds]}`` → ``{ok, result: {...}, [device_lock: {device,
               waited_s, holder}]}`` (``device_lock``: the case waited for a busy device)
``shutdown``   ``{}`` → ``{ok}``, then the agent exits

A failed request is answered ``{seq, ok: false, error: {kind, message, ...}}``; ``kind`` is one of
:data:`ERROR_KINDS`. A line the agent cannot parse is answered with ``seq: null``.

Version 2 (incompatible with 1, so hello refuses a mix): ``pid``/``pgid`` in the hello reply (the
agent's process group, which the orchestrator kills after a timeout); ``run-case`` takes the
device's lock on the host first (farm/agent/devicelock.py): ``run`` names the run for messages,
``owner`` lets the agents of one run share a device, ``lock_wait`` bounds the wait, and a device
another run holds is answered with the error kind ``busy`` (``error.device``, ``error.holder``),
which the orchestrator raises as :class:`~farm.util.errors.DeviceBusy`. A version-1 agent would
ignore those fields and run on a device another run holds.

Results are small records (metrics and verdicts, never bulk tensors), so the line cap is 1 MiB.
Floats may be NaN or ±Infinity (Python's JSON extension): metrics of a broken kernel can be.

Standard library only: this module is shipped to hosts inside the agent bundle.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from farm import __version__
from farm.util.errors import AgentError, DeviceBusy, HostLacks, ProtocolError

PROTOCOL_VERSION = 2
MAX_LINE_BYTES = 1 << 20

OPS = ("hello", "identify", "run-case", "shutdown")
# protocol: the line was not a valid request; version: hello with another protocol version;
# unknown-op: well-formed request for an op this agent does not know; bad-request: the op's fields
# are wrong; executor: the case executor raised; busy: the device is held by another run (not a
# fault of anyone: farm/agent/devicelock.py); internal: anything else in the agent.
ERROR_KINDS = (
    "protocol",
    "version",
    "unknown-op",
    "bad-request",
    "executor",
    "busy",
    "lacks",
    "internal",
)


class RequestError(ProtocolError):
    """Agent side: a request line that must be answered with an error reply."""

    def __init__(self, message: str, *, kind: str, seq: int | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.seq = seq


def encode(obj: dict[str, Any]) -> bytes:
    """One message as one line. Raises ProtocolError if it would exceed the line cap."""
    try:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"message cannot be encoded as JSON: {exc}") from None
    data = text.encode("ascii") + b"\n"
    if len(data) > MAX_LINE_BYTES:
        raise ProtocolError(
            f"message of {len(data)} bytes exceeds the protocol's {MAX_LINE_BYTES}-byte line cap; "
            "results must be small records (metrics, not tensors)"
        )
    return data


def decode(line: bytes) -> dict[str, Any]:
    """Parse one line into a JSON object. Raises ProtocolError on anything else."""
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(
            f"line of {len(line)} bytes exceeds the protocol's {MAX_LINE_BYTES}-byte cap"
        )
    if not line.endswith(b"\n"):
        raise ProtocolError(f"truncated line (no newline): {_preview(line)}")
    try:
        obj = json.loads(line)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(
            f"malformed JSON line ({exc.__class__.__name__}): {_preview(line)}"
        ) from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"expected a JSON object, got {type(obj).__name__}: {_preview(line)}")
    return obj


def _preview(line: bytes, limit: int = 120) -> str:
    text = line[:limit].decode("utf-8", "replace").rstrip("\n")
    return repr(text) + (" ..." if len(line) > limit else "")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------
# Client side


def make_request(op: str, seq: int, **fields: Any) -> dict[str, Any]:
    if op not in OPS:
        raise ProtocolError(f"unknown op {op!r}; the protocol knows {', '.join(OPS)}")
    if not _is_int(seq) or seq < 0:
        raise ProtocolError(f"seq must be a non-negative integer, got {seq!r}")
    return {"op": op, "seq": seq, **fields}


def encode_request(op: str, seq: int, **fields: Any) -> bytes:
    return encode(make_request(op, seq, **fields))


def hello_request(seq: int) -> bytes:
    return encode_request("hello", seq, protocol=PROTOCOL_VERSION, farm_version=__version__)


def decode_reply(line: bytes, expect_seq: int) -> dict[str, Any]:
    """Parse a reply and check that it answers request ``expect_seq``.

    Error replies (``ok: false``) are returned as they are; see :func:`raise_for_error`.
    """
    obj = decode(line)
    seq = obj.get("seq")
    if seq != expect_seq or (seq is not None and not _is_int(seq)):
        if seq is None and obj.get("ok") is False:
            # The agent could not parse our request: report what it said.
            err = obj.get("error") or {}
            raise ProtocolError(f"agent rejected a request line: {err.get('message', obj)}")
        raise ProtocolError(f"reply seq {seq!r} does not match request seq {expect_seq}")
    ok = obj.get("ok")
    if not isinstance(ok, bool):
        raise ProtocolError(f"reply {expect_seq} has no boolean 'ok': {_preview(line)}")
    if not ok:
        err = obj.get("error")
        if (
            not isinstance(err, dict)
            or not isinstance(err.get("kind"), str)
            or not isinstance(err.get("message"), str)
        ):
            raise ProtocolError(f"error reply {expect_seq} lacks error.kind/message")
    return obj


def check_hello_reply(reply: dict[str, Any], *, where: str = "agent") -> dict[str, Any]:
    """Validate a hello reply: ok, and the same protocol version as ours."""
    raise_for_error(reply, where=where)
    version = reply.get("protocol")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            f"{where} speaks protocol {version!r}, this farm speaks {PROTOCOL_VERSION}: "
            "redeploy the agent bundle from this checkout"
        )
    return reply


def raise_for_error(reply: dict[str, Any], *, where: str = "agent") -> dict[str, Any]:
    """Return an ok reply; raise the matching InfraError for an error reply."""
    if reply.get("ok"):
        return reply
    err = reply["error"]
    kind, message = err["kind"], err["message"]
    if kind == "busy":
        holder = err.get("holder")
        device = err.get("device")
        raise DeviceBusy(
            f"{where}: {message}",
            device=device if _is_int(device) else None,
            holder=holder if isinstance(holder, dict) else {},
        )
    if kind == "lacks":
        raise HostLacks(f"{where}: {message}")
    if kind in ("protocol", "version", "unknown-op", "bad-request"):
        raise ProtocolError(f"{where} refused the request ({kind}): {message}")
    raise AgentError(f"{where} failed ({kind}): {message}")


# ---------------------------------------------------------------------------------------------
# Agent side


def decode_request(line: bytes) -> dict[str, Any]:
    """Parse and validate one request. Raises :class:`RequestError` (kind and seq set, so the
    agent can answer it)."""
    try:
        obj = decode(line)
    except ProtocolError as exc:
        raise RequestError(str(exc), kind="protocol", seq=None) from None
    seq = obj.get("seq")
    if not _is_int(seq) or seq < 0:
        raise RequestError(f"request without a valid seq: {seq!r}", kind="protocol", seq=None)
    op = obj.get("op")
    if op not in OPS:
        raise RequestError(
            f"unknown op {op!r}; this agent knows {', '.join(OPS)}", kind="unknown-op", seq=seq
        )
    if op == "hello":
        version = obj.get("protocol")
        if version != PROTOCOL_VERSION:
            raise RequestError(
                f"client speaks protocol {version!r}, this agent speaks {PROTOCOL_VERSION}: "
                "redeploy the agent bundle from the farm's checkout",
                kind="version",
                seq=seq,
            )
    elif op == "run-case":
        problems = []
        if not isinstance(obj.get("case"), dict):
            problems.append("'case' must be an object")
        if not isinstance(obj.get("backend"), str):
            problems.append("'backend' must be a string")
        device = obj.get("device")
        if not _is_int(device) or device < 0:
            problems.append("'device' must be a non-negative integer")
        for name in ("run", "owner"):
            if obj.get(name) is not None and not isinstance(obj.get(name), str):
                problems.append(f"'{name}' must be a string")
        wait = obj.get("lock_wait")
        if wait is not None and (
            not isinstance(wait, (int, float)) or isinstance(wait, bool) or not wait >= 0
        ):
            problems.append("'lock_wait' must be a number of seconds >= 0")
        if problems:
            raise RequestError("run-case: " + "; ".join(problems), kind="bad-request", seq=seq)
    return obj


def encode_reply(seq: int | None, **fields: Any) -> bytes:
    return encode({"seq": seq, "ok": True, **fields})


def encode_error(seq: int | None, kind: str, message: str, **details: Any) -> bytes:
    """An error reply; ``details`` are extra fields of ``error`` (busy: device, holder)."""
    if kind not in ERROR_KINDS:
        kind = "internal"
    if len(message) > 8000:
        message = message[:4000] + " ... " + message[-3000:]
    error = {**details, "kind": kind, "message": message}
    return encode({"seq": seq, "ok": False, "error": error})


__all__ = [
    "ERROR_KINDS",
    "MAX_LINE_BYTES",
    "OPS",
    "PROTOCOL_VERSION",
    "RequestError",
    "check_hello_reply",
    "decode",
    "decode_reply",
    "decode_request",
    "encode",
    "encode_error",
    "encode_reply",
    "encode_request",
    "hello_request",
    "make_request",
    "raise_for_error",
]
