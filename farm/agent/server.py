"""The agent's protocol loop: read requests on one stream, write replies on another.

The server knows nothing about operators: ``run-case`` is handed to an injectable *executor*,
``executor(case: dict, backend: str, device: int, identity: Identity) -> dict`` (the result
record). The default is ``farm.agent.execute.run_case``, imported on the first run-case so that
``hello``/``identify`` work even where the executor's own imports would fail.

Before a case runs, the agent takes the device's lock on the host (``<workdir>/locks``, see
farm/agent/devicelock.py for where and why) and keeps it until it exits; a device another run
holds is answered with the error kind ``busy``. Without a work directory (in-process tests) there
is no lock. hello reports the agent's pid and process group, which the orchestrator kills as a
whole after a timeout (farm/agent/__main__.py puts the agent in a group of its own).

Only the standard library is imported here; numpy and ml_dtypes are imported by ``identify``.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, BinaryIO

from farm import __version__
from farm.agent import protocol
from farm.agent.devicelock import DEFAULT_LOCK_WAIT, DeviceLocks
from farm.agent.errors import DeviceBusy
from farm.agent.identity import Declared, Fault, Identity, declared_identity, gather

Executor = Callable[[dict, str, int, Identity], dict]
DEFAULT_EXECUTOR = "farm.agent.execute:run_case"


def load_executor(spec: str) -> Executor:
    """Resolve ``"module:function"`` to a callable."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"executor {spec!r} must be written module:function")
    module = importlib.import_module(module_name)
    fn = getattr(module, attr)
    if not callable(fn):
        raise ValueError(f"executor {spec!r} is not callable")
    return fn


class AgentServer:
    """Serve the protocol until EOF or ``shutdown``.

    ``executor`` is a callable or a ``"module:function"`` spec (resolved lazily).
    ``declared`` overrides the host's declared identity (tests); by default it is read from the
    environment / ``<workdir>/host.toml`` / npu-smi. ``run_id`` names the run in the device lock
    when a request does not; ``lock_wait`` is how long a run-case waits for a busy device when
    the request does not say.
    """

    def __init__(
        self,
        rfile: BinaryIO,
        wfile: BinaryIO,
        *,
        workdir: str | None = None,
        executor: Executor | str | None = None,
        declared: Declared | None = None,
        log: Any = None,
        run_id: str | None = None,
        lock_wait: float = DEFAULT_LOCK_WAIT,
    ) -> None:
        self.rfile = rfile
        self.wfile = wfile
        self.workdir = workdir
        self._executor_spec = executor if executor is not None else DEFAULT_EXECUTOR
        self._executor: Executor | None = None
        self.declared = declared if declared is not None else declared_identity(workdir)
        self.log = log if log is not None else sys.stderr
        self._identity: Identity | None = None
        self.replies = 0
        # Fault injection is for emulated hosts only (see identity.py); real hosts never do it.
        self.fault: Fault | None = self.declared.fault if self.declared.emulated else None
        self.run_id = run_id
        self.locks = (
            DeviceLocks(workdir, run=run_id, default_wait=lock_wait)
            if workdir is not None
            else None
        )

    # -- plumbing -----------------------------------------------------------------------------

    def _read_line(self) -> bytes | None:
        """One request line, b"" at EOF, None for an oversize line (already drained)."""
        line = self.rfile.readline(protocol.MAX_LINE_BYTES + 1)
        if len(line) > protocol.MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drain the rest of the oversize line
                more = self.rfile.readline(1 << 16)
                if not more or more.endswith(b"\n"):
                    break
            return None
        return line

    def _send(self, data: bytes, seq: int | None) -> None:
        fault = self.fault
        if fault is not None and self.replies >= fault.after:
            self._inject(fault, data, seq)
        self.wfile.write(data)
        self.wfile.flush()
        self.replies += 1

    def _inject(self, fault: Fault, data: bytes, seq: int | None) -> None:
        print(
            f"lsg-agent: injecting test fault {fault} (reply {self.replies + 1})",
            file=self.log,
            flush=True,
        )
        if fault.kind == "crash-after":
            os._exit(70)
        if fault.kind == "hang-after":
            while self.rfile.read(1 << 16):  # answer nothing, exit when the client hangs up
                pass
            os._exit(0)
        if fault.kind == "corrupt-reply-after":
            self.wfile.write(b'{"seq": ' + data[8:40].replace(b"\n", b" ") + b"\x00garbage\n")
        elif fault.kind == "wrong-seq-after":
            self.wfile.write(protocol.encode_reply((seq or 0) + 1000))
        self.wfile.flush()
        self.replies += 1
        self.fault = None  # one bad reply; the client must drop the channel anyway
        raise _AlreadySent

    def _reply(self, seq: int | None, **fields: Any) -> None:
        try:
            data = protocol.encode_reply(seq, **fields)
        except protocol.ProtocolError as exc:
            data = protocol.encode_error(seq, "internal", f"reply not sendable: {exc}")
        self._send(data, seq)

    def _error(self, seq: int | None, kind: str, message: str, **details: Any) -> None:
        self._send(protocol.encode_error(seq, kind, message, **details), seq)

    # -- the loop -----------------------------------------------------------------------------

    def serve(self) -> int:
        while True:
            line = self._read_line()
            if line == b"":
                return 0
            try:
                if line is None:
                    self._error(
                        None,
                        "protocol",
                        f"request line exceeds {protocol.MAX_LINE_BYTES} bytes",
                    )
                    continue
                try:
                    req = protocol.decode_request(line)
                except protocol.RequestError as exc:
                    self._error(exc.seq, exc.kind, str(exc))
                    continue
                if self._handle(req) == "exit":
                    return 0
            except _AlreadySent:
                continue

    def _handle(self, req: dict) -> str | None:
        op, seq = req["op"], req["seq"]
        if op == "hello":
            self._reply(
                seq,
                protocol=protocol.PROTOCOL_VERSION,
                agent_version=__version__,
                pid=os.getpid(),
                pgid=os.getpgrp(),
            )
        elif op == "identify":
            self._reply(seq, **self.identity().to_wire())
        elif op == "run-case":
            self._run_case(req)
        elif op == "shutdown":
            self._reply(seq)
            return "exit"
        return None

    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = gather(self.workdir, self.declared)
        return self._identity

    def _run_case(self, req: dict) -> None:
        seq, device = req["seq"], req["device"]
        identity = self.identity()
        if identity.devices is not None and device >= identity.devices:
            self._error(
                seq,
                "bad-request",
                f"device {device} does not exist on this host ({identity.devices} device(s))",
            )
            return
        if self.locks is not None:
            try:
                self.locks.acquire(
                    device, run=req.get("run"), owner=req.get("owner"), wait=req.get("lock_wait")
                )
            except DeviceBusy as exc:
                self._error(seq, "busy", str(exc), device=device, holder=exc.holder)
                return
        try:
            if self._executor is None:
                spec = self._executor_spec
                self._executor = load_executor(spec) if isinstance(spec, str) else spec
            result = self._executor(req["case"], req["backend"], device, identity)
        except Exception as exc:
            tb = traceback.format_exc(limit=8)
            print(tb, file=self.log, flush=True)
            self._error(seq, "executor", f"{exc.__class__.__name__}: {exc} | {_last_frames(tb)}")
            return
        if not isinstance(result, dict):
            self._error(seq, "executor", f"executor returned {type(result).__name__}, not a dict")
            return
        waited = self.locks.last_wait if self.locks is not None else None
        if waited is not None:  # the device was busy when the case came: say for how long
            self._reply(seq, result=result, device_lock=waited)
        else:
            self._reply(seq, result=result)


class _AlreadySent(Exception):
    pass


def _last_frames(tb: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in tb.strip().splitlines() if ln.strip().startswith("File ")]
    return " <- ".join(reversed(lines[-n:]))


def echo_executor(case: dict, backend: str, device: int, identity: Identity) -> dict:
    """TEST-ONLY executor that runs no operator: echoes the request and the host's identity.

    Hooks in the case, for transport tests: ``{"sleep": s}`` sleeps s seconds first;
    ``{"raise": msg}`` raises RuntimeError(msg); ``{"payload": n}`` adds n bytes of filler (to
    exceed the line cap); ``{"print": text}`` prints to stdout (must not corrupt the protocol).
    """
    if "sleep" in case:
        time.sleep(float(case["sleep"]))
    if "raise" in case:
        raise RuntimeError(str(case["raise"]))
    if "print" in case:
        print(case["print"], flush=True)
    result = {
        "verdict": "pass",
        "echo": case,
        "backend": backend,
        "device": device,
        "soc": identity.soc,
        "pid": os.getpid(),
    }
    if "payload" in case:
        result["payload"] = "x" * int(case["payload"])
    return result


__all__ = ["DEFAULT_EXECUTOR", "AgentServer", "Executor", "echo_executor", "load_executor"]
