"""A report that opens from what the run prints: a small report's index.html is the whole report
(it opens from disk, even alone), a larger one is served by `farm report --open` on 127.0.0.1;
the line `farm run` and `farm report` print says which, and headless Chromium follows it to the
overview. Opened from disk, Allure's own page was an endless spinner (it fetches its data)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from farm.results import report, report_serve, report_single_file
from farm.results.store import RunStore
from farm.util.errors import UsageError
from farm.util.paths import REPO_ROOT
from tests.dispositions import disposed

from .cdp import Browser, CdpError
from .conftest import RUN_META, failed, need_allure, need_chromium, record, run_allure_session

CASES = 4  # the run's cases: what the overview must count


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A finished run of four cases, one failed, in a store of its own, with its allure-results
    where the run left them (<run dir>/allure-results); no report yet."""
    need_allure()
    work = tmp_path_factory.mktemp("report-open")
    store_path = work / "runs" / "farm.sqlite"
    recs = [
        record("prec-f32-tail"),
        record("prec-f32-tail", family="ascend310b", host="emu-310-0", soc="Ascend310B1"),
        record("prec-f16-mid", dtype="float16", schedule="REDUCE_MID"),
        failed("prec-bf16-bad", dtype="bfloat16", message="experimental: MARE 3e-2 >= 10T"),
    ]
    assert len(recs) == CASES
    with RunStore(store_path) as store:
        run_id = store.begin_run({**RUN_META, "run_dir": str(work / "run")})
        run_allure_session(work, recs, name="run")
        store.add_results(run_id, recs)
        store.finish_run(run_id, 1)
    return {"store": store_path, "run_id": run_id, "work": work}


def _report(stored, out: Path, capsys) -> str:
    """`farm report RUN --out OUT`: the line that says where the report is."""
    argv = [stored["run_id"], "--store", str(stored["store"]), "--no-history", "--out", str(out)]
    assert report.main(argv) == 1  # its failure
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("report: ")]
    return line


OVERVIEW = "document.body && /Total \\d/.test(document.body.innerText) && document.body.innerText"


def _overview_count(browser: Browser, url: str) -> int:
    """Open `url` and wait for the overview's test count, as a person reads it. (Under heavy
    parallel load the page was seen to stay on its header: the app ran before the page had
    declared where its data go, and fetched; the page now declares it first, and
    test_the_page_waits_for_its_data_however_late_its_bytes_come makes that race every time.)"""
    browser.open(url)
    try:
        text = browser.wait_for(OVERVIEW)
    except CdpError:  # what the page shows instead (Allure's spinner: its loader's label)
        shown = browser.eval("location.href + ': ' + (document.body && document.body.innerText)")
        raise AssertionError(f"no overview: {shown[:1500]!r}") from None
    count = re.search(r"Total\s+(\d+)", text)
    assert count is not None, text[:1500]
    return int(count.group(1))


def test_a_small_report_says_its_page_and_the_page_alone_opens_from_disk(stored, tmp_path, capsys):
    chromium = need_chromium()
    out = tmp_path / "report"
    line = _report(stored, out, capsys)
    assert line == f"report: {out / 'index.html'} (opens from disk)"
    index = Path(line.removeprefix("report: ").removesuffix(" (opens from disk)"))
    assert report_single_file.is_single_file(index)
    alone = tmp_path / "mailed"  # the page alone: no data/, widgets/ or app script beside it
    alone.mkdir()
    shutil.copy(index, alone / "index.html")
    # A browser each, as a person and the one they mail the page to: two pages of one report
    # from disk in one browser share its file:// storage, where Allure's app keeps its state.
    for n, page in enumerate((index, alone / "index.html")):
        with Browser(chromium, tmp_path / f"profile{n}") as browser:
            assert _overview_count(browser, page.as_uri()) == CASES
            # The failed case, from disk too: its data is in the page.
            browser.wait_for("document.body.innerText.includes('Failed 1')")


def test_a_large_report_says_the_command_that_serves_it_and_the_command_does(
    stored, tmp_path, capsys, monkeypatch
):
    chromium = need_chromium()
    monkeypatch.setattr(report_single_file, "SINGLE_FILE_MAX_BYTES", 1000)
    out = tmp_path / "report"
    line = _report(stored, out, capsys)
    run_id = stored["run_id"]
    assert line.startswith(f"report: farm report --open {run_id} (serves {out}: ")
    assert not report_single_file.is_single_file(out / "index.html")
    command = line.removeprefix("report: ").split(" (")[0].split()
    assert command == ["farm", "report", "--open", run_id]
    # The command as a person runs it, the store where their shell says (FARM_STORE).
    env = dict(os.environ, FARM_STORE=str(stored["store"]), PYTHONPATH=str(REPO_ROOT))
    argv = [sys.executable, "-m", "farm.cli", *command[1:], "--out", str(out)]
    proc = subprocess.Popen(
        disposed(argv), cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        said = proc.stdout.readline()
        found = re.fullmatch(
            rf"serving the report of run {run_id} at (http://127\.0\.0\.1:\d+/) \(Ctrl-C stops\)\n",
            said,
        )
        assert found, (said, proc.stderr.read() if proc.poll() is not None else "")
        with Browser(chromium, tmp_path / "profile") as browser:
            assert _overview_count(browser, found.group(1)) == CASES
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert rest == "stopped serving the report\n" and "Traceback" not in err


def test_open_makes_the_report_of_a_run_that_has_none(stored, monkeypatch, capsys):
    """`farm report --open RUN` of a run without a report makes it, then serves it."""
    served: list[Path] = []

    def serve(directory: Path, port: int = 0, **_kw) -> int:
        served.append(directory)
        return 0

    monkeypatch.setattr(report_serve, "serve_report", serve)
    out = stored["work"] / "run" / "report"
    shutil.rmtree(out, ignore_errors=True)
    argv = [stored["run_id"], "--store", str(stored["store"]), "--no-history", "--open"]
    assert report.main(argv) == 0
    assert served == [out] and (out / "index.html").is_file()
    assert "report: " in capsys.readouterr().out
    made = (out / "index.html").stat().st_mtime_ns
    assert report.main(argv) == 0  # a report there: served as it is, not made again
    assert (out / "index.html").stat().st_mtime_ns == made and len(served) == 2
    with pytest.raises(UsageError, match="unknown run 'nope'"):
        report.main(["nope", "--store", str(stored["store"]), "--open"])


def test_the_server_is_on_127_0_0_1_only_and_a_busy_port_is_one_line(tmp_path):
    (tmp_path / "index.html").write_text("<html>report</html>")
    server = report_serve.report_server(tmp_path)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1" and report_serve.url_of(server) == f"http://127.0.0.1:{port}/"
        with pytest.raises(UsageError) as err:
            report_serve.report_server(tmp_path, port)
        assert str(err.value).startswith(f"--port {port}: cannot serve on 127.0.0.1:{port} (")
        assert "\n" not in str(err.value) and "leave --port out" in str(err.value)
    finally:
        server.server_close()
    with pytest.raises(UsageError, match="no report there"):
        report_serve.serve_report(tmp_path / "none")


def test_the_server_serves_the_reports_files(tmp_path):
    """What a browser asks for: the page and the data files beside it, by their paths."""
    import threading
    import urllib.request

    (tmp_path / "widgets").mkdir()
    (tmp_path / "index.html").write_text("<html>report</html>")
    (tmp_path / "widgets" / "statistic.json").write_text('{"total": 4}')
    server = report_serve.report_server(tmp_path)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = report_serve.url_of(server)
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.read() == b"<html>report</html>"
        with urllib.request.urlopen(url + "widgets/statistic.json", timeout=30) as data:
            assert json.load(data) == {"total": 4}
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- the page, made whole

# Allure's font preload, with the space it ends with.
FONT = '<link rel="preload" href="font-1.woff" as="font" type="font/woff" crossorigin /> '
PAGE = """<!DOCTYPE html>
<html dir="ltr" lang="en">
<head>
    <meta charset="utf-8">
    <title> r </title>
    FONT
</head>
<body>
    <div id="app"></div>
    <script   src="app-0123abcd.js"></script>
    <script async>
        window.allureReportDataReady = true;
      </script>
</body>
</html>
""".replace("FONT", FONT)


def _allure_like(tmp_path: Path) -> Path:
    d = tmp_path / "report"
    (d / "data" / "test-results").mkdir(parents=True)
    (d / "widgets").mkdir()
    (d / "index.html").write_text(PAGE)
    (d / "app-0123abcd.js").write_text("window.app = 1;")
    (d / "data" / "test-results" / "a.json").write_text('{"message": "a \\\\d </script>"}')
    (d / "widgets" / "statistic.json").write_text('{"total": 1}')
    return d


def test_the_page_made_whole_declares_every_data_file_by_its_path(tmp_path):
    import base64

    d = _allure_like(tmp_path)
    estimate = report_single_file.single_file_size(d)
    assert report_single_file.single_file(d) is True
    page = (d / "index.html").read_text()
    assert abs(len(page.encode()) - estimate) < 1500  # the page's own lines
    declared = dict(re.findall(r'd\("([^"]+)","([^"]+)"\)', page))
    assert set(declared) == {"data/test-results/a.json", "widgets/statistic.json"}
    for name, value in declared.items():
        assert base64.b64decode(value) == (d / name).read_bytes()
    assert 'src="data:text/javascript;base64,' in page and "app-0123abcd.js" not in page
    assert "font-1.woff" not in page
    assert "allureReportDataReady = true;\n      </script>" not in page
    assert report_single_file.is_single_file(d / "index.html")
    assert report_single_file.single_file(d) is True  # made again: left as it is
    assert (d / "index.html").read_text() == page
    assert [p.name for p in d.iterdir() if p.name.endswith(".part")] == []


def test_a_page_too_large_or_not_as_allure_makes_it_is_left_as_it_is(tmp_path):
    d = _allure_like(tmp_path)
    assert report_single_file.single_file(d, max_bytes=100) is False
    assert (d / "index.html").read_text() == PAGE
    (d / "index.html").write_text(PAGE.replace("app-0123abcd.js", "main.js"))  # another Allure
    assert report_single_file.single_file(d) is False
    assert not report_single_file.is_single_file(d / "index.html")
    assert not report_single_file.is_single_file(d / "absent.html")


def test_the_data_store_is_declared_before_the_apps_script_runs(tmp_path):
    """Allure's app, run as soon as its script is parsed, fetches where window.allureReportData
    is not there yet; from disk that fetch fails and the page stays on its header. So the page
    made whole declares it in the head, before the app, and the data follow the app."""
    d = _allure_like(tmp_path)
    assert report_single_file.single_file(d) is True
    page = (d / "index.html").read_text()
    declared = page.index("window.allureReportData = window.allureReportData || {};")
    app = page.index('<script src="data:text/javascript;base64,')
    data = page.index('Promise.allSettled([d("data/test-results/a.json"')
    assert declared < page.index("</head>") < app < data
    assert page.count("window.allureReportData =") == 1 and page.count("function d(") == 1


class _Stalled:
    """An HTTP server of one page that sends the page up to ``cut`` bytes, then waits for any
    other request (the app fetching a file: it is answered 404, as a fetch from disk fails) or
    ``wait_s``, then sends the rest: the page's later bytes late, as a file read in chunks on a
    busy machine gives them. Whether the app asked for anything is what the test reads, not
    how long anything took."""

    def __init__(self, page: bytes, cut: int, wait_s: float = 5.0):
        import http.server
        import threading

        self.asked: list[str] = []
        asked = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path != "/":
                    outer.asked.append(self.path)
                    asked.set()
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page[:cut])
                self.wfile.flush()
                asked.wait(wait_s)
                self.wfile.write(page[cut:])

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_page_waits_for_its_data_however_late_its_bytes_come(stored, tmp_path, capsys):
    """The race seen under parallel headless Chromiums, made to happen every time: the page's
    bytes after the app's script come late. The app asks for nothing and draws the overview."""
    chromium = need_chromium()
    out = tmp_path / "report"
    _report(stored, out, capsys)
    page = (out / "index.html").read_bytes()
    app = page.index(b'<script src="data:text/javascript;base64,')
    cut = page.index(b"</script>", app) + len(b"</script>")
    server = _Stalled(page, cut)
    try:
        with Browser(chromium, tmp_path / "profile") as browser:
            browser.open(server.url)
            text = browser.wait_for(OVERVIEW)
    finally:
        server.close()
    assert server.asked == []  # every file from the page, none fetched
    count = re.search(r"Total\s+(\d+)", text)
    assert count is not None and int(count.group(1)) == CASES
