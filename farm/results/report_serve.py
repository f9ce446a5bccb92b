"""`farm report --open [RUN]`: a report served over HTTP on 127.0.0.1 until Ctrl-C, as `allure
open` serves one, but never on another address: a report names the lab's hosts, paths and
commits, and is for the person at this machine (ssh -L PORT:127.0.0.1:PORT to look from another).

A report too large to be one file (farm/results/report_single_file.py) loads its data with fetch,
which a page opened from disk may not do: served, it opens in any browser."""

from __future__ import annotations

import functools
import http.server
import sys
from collections.abc import Callable
from pathlib import Path

from farm.util.errors import UsageError

HOST = "127.0.0.1"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Files of the report directory; no line a request (the terminal shows the URL only)."""

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


def report_server(directory: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server of `directory` on 127.0.0.1:`port` (0: a free one), bound, not yet serving. A
    port in use is a UsageError naming it."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    try:
        return http.server.ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise UsageError(
            f"--port {port}: cannot serve on {HOST}:{port} ({exc.strerror}); "
            "leave --port out for a free port"
        ) from None


def url_of(server: http.server.ThreadingHTTPServer) -> str:
    return f"http://{HOST}:{server.server_address[1]}/"


def serve_report(
    directory: Path,
    port: int = 0,
    *,
    label: str = "the report",
    say: Callable[[str], None] = print,
) -> int:
    """Serve the report in `directory` until a stop (Ctrl-C): 0. Says its URL first, a line."""
    if not (directory / "index.html").is_file():
        raise UsageError(f"{directory}: no report there (no index.html); `farm report` makes one")
    server = report_server(directory, port)
    try:
        say(f"serving {label} at {url_of(server)} (Ctrl-C stops)")
        sys.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:  # Ctrl-C: the way a server is meant to end
            say("stopped serving the report")
    finally:
        server.server_close()
    return 0
