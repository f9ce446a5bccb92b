"""``python -m farm.agent [--workdir DIR] [--native-lib PATH] [--executor module:function]``.

Serves the protocol on stdin/stdout. The protocol stream is moved off file descriptor 1 first:
anything else that writes to stdout (a print in the executor, a C library's printf) lands on
stderr instead of corrupting the replies.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys


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
        "farm.agent.server:echo_executor is a test-only echo)",
    )
    args = parser.parse_args(argv)
    # A crash in native code (the operator's library) leaves "Fatal Python error: Segmentation
    # fault" and a traceback on stderr; the orchestrator reads it to call the case an operator
    # crash.
    faulthandler.enable()
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

    from farm.agent.server import AgentServer  # after the fd dance: nothing printed before it

    server = AgentServer(rfile, wfile, workdir=args.workdir, executor=args.executor)
    try:
        return server.serve()
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
