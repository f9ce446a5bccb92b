"""``python -m farm.agent [--workdir DIR] [--native-lib PATH] [--executor module:function]
[--run-id ID] [--lock-wait SECONDS] [--hosts-file FILE]``.

Serves the protocol on stdin/stdout. The protocol stream is moved off file descriptor 1 first:
anything else that writes to stdout (a print in the executor, a C library's printf) lands on
stderr instead of corrupting the replies.

The agent runs in a process group of its own (``os.setsid()``, unless its launcher already made
it a session leader: the local transport's ``start_new_session``, sshd for an exec channel), and
says its pid and group in hello: after a timeout the orchestrator kills the whole group, children
included. With a work directory it also leaves ``<workdir>/agents/<pid>.json`` while it runs (its
pid, group, argv, start time), so that ``farm lab down`` finds every agent of a host, even one whose
SSH session is gone; a killed agent's file is stale, which readers check against the process.

``--hosts-file``: a JSON file ``{"hosts": [{"name", "workdir", "env", "bundle_dir"}, ...]}``
naming the emulated hosts of this machine that this one agent serves (farm/agent/server.py,
"One agent for several emulated hosts"); it is read at start, before hello is answered, so the
orchestrator may remove it once the handshake is done.

Nothing heavy is imported before the first case: an idle agent is a small process blocked in a
read of its request pipe (numpy and ml_dtypes come with ``identify``, the operator's library,
numpy and golden with the first ``run-case``).
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gc
import json
import os
import sys
import time
from collections.abc import Iterator

# What the agent and golden use (zip(strict=), functools.cache, str.removeprefix); checked before
# they are imported, so that an older host python is one line naming the fix, not a traceback.
MIN_PYTHON = (3, 10)
if sys.version_info < MIN_PYTHON:
    sys.exit(
        f"lsg-agent: python {sys.version.split()[0]} ({sys.executable}) is older than the "
        f"{'.'.join(map(str, MIN_PYTHON))} the agent needs; set the host's python in the "
        'inventory (python = "/path/to/python3.10 or newer")'
    )

from farm.agent import allocator, home_paths  # noqa: E402 (after the version check)

AGENTS_DIR = "agents"


def _own_process_group() -> None:
    try:
        os.setsid()
    except OSError:  # already a session (and group) leader
        pass


@contextlib.contextmanager
def _pid_file(workdir: str | None, run_id: str | None) -> Iterator[None]:
    path = None
    if workdir:
        try:
            folder = os.path.join(workdir, AGENTS_DIR)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, f"{os.getpid()}.json")
            record = {
                "pid": os.getpid(),
                "pgid": os.getpgrp(),
                "argv": sys.argv,
                "run": run_id,
                "started": time.time(),
            }
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.replace(tmp, path)
        except OSError as exc:  # a read-only workdir must not stop the agent
            print(f"lsg-agent: cannot write a pid file in {workdir}: {exc}", file=sys.stderr)
            path = None
    try:
        yield
    finally:
        if path:
            with contextlib.suppress(OSError):
                os.remove(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m farm.agent", description=__doc__)
    parser.add_argument("--workdir", help="the host's farm work directory (holds host.toml)")
    parser.add_argument(
        "--native-lib",
        help="path of the operator's C ABI library from the package (sets LSG_NATIVE_LIB)",
    )
    parser.add_argument(
        "--executor",
        default=None,
        help="module:function that runs a case (default farm.agent.execute:run_case; "
        "farm.agent.stand_ins:echo_executor is a test-only echo)",
    )
    parser.add_argument(
        "--run-id",
        default=os.environ.get("LSG_RUN_ID") or None,
        help="the run this agent serves, named in its device locks when a request does not "
        "(default: $LSG_RUN_ID)",
    )
    parser.add_argument(
        "--lock-wait",
        type=float,
        default=None,
        help="seconds a run-case waits for a device another run holds when the request does "
        "not say (default 10)",
    )
    parser.add_argument(
        "--hosts-file",
        default=None,
        help="JSON file naming the emulated hosts this agent serves (a shared agent)",
    )
    args = parser.parse_args(argv)
    if args.workdir:
        args.workdir = home_paths.from_home(args.workdir)
    if args.native_lib:
        args.native_lib = home_paths.from_home(args.native_lib)
    home_paths.custom_opp_from_home(os.environ)
    hosts = None
    if args.hosts_file:
        try:
            with open(args.hosts_file, encoding="utf-8") as f:
                hosts = json.load(f)["hosts"]
            if not isinstance(hosts, list) or not all(
                isinstance(h, dict) and isinstance(h.get("name"), str) for h in hosts
            ):
                raise ValueError("'hosts' must be a list of objects with a 'name'")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"lsg-agent: unusable --hosts-file {args.hosts_file}: {exc}", file=sys.stderr)
            return 2
    _own_process_group()
    # A crash in native code (the operator's library) leaves "Fatal Python error: Segmentation
    # fault" and a traceback on stderr; the orchestrator reads it to call the case an operator
    # crash.
    faulthandler.enable()
    allocator.keep_freed_memory()
    if args.native_lib:
        os.environ["LSG_NATIVE_LIB"] = args.native_lib

    # Private descriptors for the protocol; fd 0 <- /dev/null and fd 1 -> stderr for everyone else.
    sys.stdout.flush()
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    rfile = os.fdopen(proto_in, "rb", buffering=1 << 16)
    wfile = os.fdopen(proto_out, "wb", buffering=1 << 16)

    from farm.agent.devicelock import DEFAULT_LOCK_WAIT
    from farm.agent.server import AgentServer  # after the fd dance: nothing printed before it

    server = AgentServer(
        rfile,
        wfile,
        workdir=args.workdir,
        executor=args.executor,
        run_id=args.run_id,
        lock_wait=DEFAULT_LOCK_WAIT if args.lock_wait is None else args.lock_wait,
        hosts=hosts,
    )
    with _pid_file(args.workdir, args.run_id):
        try:
            return server.serve()
        except BrokenPipeError:
            return 0
        except KeyboardInterrupt:
            return 130
        finally:
            _release_devices()


def _release_devices() -> None:
    """The acl backend's streams, devices and ACL itself, if a case used them; what went wrong
    (a buffer never freed, say) goes to stderr, the agent's log."""
    acl = sys.modules.get("farm.agent.backends.acl")
    if acl is None:
        return
    try:
        acl.close()
    except Exception as exc:  # the agent is leaving: say it, do not raise
        print(f"lsg-agent: releasing ACL: {exc}", file=sys.stderr)


if __name__ == "__main__":
    code = main()
    # The agent's work is done and said: frozen, its objects (PyTorch's modules, after a
    # benchmark-ratio case) are not walked by the cyclic garbage collector of the interpreter's
    # finalization, which the orchestrator waits for (0.6 s -> 0.2 s with torch loaded).
    gc.freeze()
    sys.exit(code)
