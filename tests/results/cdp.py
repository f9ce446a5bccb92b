"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (stdlib only).

Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4, so no
WebSocket library is needed. Enough to open a page, evaluate JavaScript, click and screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from types import EllipsisType

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
# Waits return as soon as the browser answers; the limit only catches a browser that never does,
# so it is far above what a loaded machine takes.
PATIENT_S = 120.0
# Clicks the elements whose own text is exactly `txt` (Browser.click_text); returns how many.
CLICK_TEXT = """(txt => {
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), hits = [];
  while (w.nextNode()) if (w.currentNode.nodeValue.trim() === txt)
    hits.push(w.currentNode.parentElement);
  hits.forEach(e => e.click());
  return hits.length;
})"""


class CdpError(RuntimeError):
    pass


class Browser:
    def __init__(self, binary: str, profile: Path, width: int = 1400, height: int = 1800):
        # Chromium reads commands on fd 3 and writes on fd 4: a shell moves our pipes there.
        self.proc = subprocess.Popen(
            [
                "sh",
                "-c",
                'exec "$@" 3<&0 4>&1 </dev/null >/dev/null 2>/dev/null',
                "sh",
                binary,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        self._pipes = (stdin, stdout)
        self._w = stdin.fileno()
        self._r = stdout.fileno()
        self._buf = b""
        self._id = 0
        self.session: str | None = None

    # -- wire
    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        return self._id

    def _read(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise CdpError("chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(
        self,
        method: str,
        params: dict | None = None,
        timeout: float = PATIENT_S,
        session: str | None | EllipsisType = ...,  # ...: this browser's own session
    ) -> dict:
        sid = self.session if isinstance(session, EllipsisType) else session
        mid = self._send(method, params, sid)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(max(0.0, deadline - time.monotonic()))
            if msg is None:
                raise CdpError(f"{method}: no reply in {timeout}s")
            if msg.get("id") == mid:
                if "error" in msg:
                    raise CdpError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    # -- convenience
    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=None)
        att = self.call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=None
        )
        self.session = att["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Page.navigate", {"url": url})

    def eval(self, expression: str):
        res = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in res:
            raise CdpError(f"JS error: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def click_text(self, text: str) -> int:
        """Clicks the elements whose own text is exactly ``text``; returns how many."""
        return self.eval(CLICK_TEXT + f"({json.dumps(text)})")

    def wait_for(self, expression: str, timeout: float = PATIENT_S, poll: float = 0.2):
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CdpError(f"timed out waiting for: {expression}")
            time.sleep(poll)

    def screenshot(self, path: Path) -> None:
        data = self.call(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
        )["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._send("Browser.close")
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - best effort, then kill the one we started
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            for pipe in self._pipes:
                pipe.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """A report over HTTP on 127.0.0.1 (it loads its data with fetch: file:// will not do)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
