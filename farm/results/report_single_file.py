"""A report that opens from disk: its index.html made the whole report (`single_file`) when the
report is small enough (SINGLE_FILE_MAX_BYTES), else `farm report --open` serves it
(farm/results/report_serve.py).

Allure 3's report page loads its data with fetch, which a page opened from disk (file://) may not
do: opened so, it is an endless spinner. Allure's awesome plugin has a single-file mode (its
`singleFile` option) that writes the app and every data file into index.html, and nothing beside
it. Here the same page is made of the report Allure wrote as a directory, so that the directory
keeps its files (`farm report --open` serves them; tools and tests read data/ and widgets/) and its
index.html alone is the whole report: it opens from disk, and it can be mailed or kept alone.

The page is Allure's own, with three changes, each as Allure's single-file mode makes it
(@allurereport/plugin-awesome generateStaticFiles, @allurereport/core-api createReportDataScript):
the app's script (and stylesheet, font preloads aside) as data: URLs, and the script that says
"no inline data" replaced by one that declares every file under data/ and widgets/ by its path,
base64-encoded, which the app (web-commons loadReportData) reads instead of fetching. One
departure: where the data go (window.allureReportData) is declared in the head, before the app's
script, not after it as Allure's page does (see single_file: the race it closes). A page whose
parts are not found as expected (another Allure version) is left as it is: the report is then
served, never broken.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

# The largest index.html made whole: above it `farm run` says `farm report --open RUN`. Measured
# in headless Chromium on the 2-core VM (benchmarks/RESULTS.md "A report that opens from disk"):
# the smoke tier's page (5.2 MiB) shows its overview in ~2 s, the nightly tier's without history
# (38 MiB, 6,831 cases) in ~3 s, as fast as the same report served, and a page of twice that
# (72 MiB) in ~6 s; the time grows with the page, the browser holds all of it in memory, and V8
# cannot hold a page's script over ~512 MiB at all. So the smoke and nightly tiers open from
# disk, and a nightly report with the default 30 runs of history (~120 MiB) is served.
SINGLE_FILE_MAX_BYTES = 64 << 20
# The folders of the data the app reads (the awesome plugin's writer: data/..., widgets/...).
DATA_FOLDERS = ("data", "widgets")
# What a page made whole carries in its head (is_single_file reads its first KBs).
WHOLE_MARK = '<meta name="farm-report" content="single-file">'
_CHARSET = '<meta charset="utf-8">'
_NO_DATA = re.compile(r"<script async>\s*window\.allureReportDataReady = true;\s*</script>")
_SCRIPT = re.compile(r'<script\s+(?:async\s+)?(?:defer\s+)?src="(app-[0-9a-f]+\.js)"></script>')
_STYLE = re.compile(r'<link rel="stylesheet" type="text/css" href="([^":]+\.css)">')
_FONT = re.compile(r'<link rel="preload" href="[^":]+" as="font" type="font/woff" crossorigin />')


# Where the data goes and the function each data file is declared with, as Allure's single-file
# page has them (core-api createReportDataScript), and "not ready" until every file is declared.
DECLARE = (
    "<script>\n"
    "      window.allureReportDataReady = false;\n"
    "      window.allureReportData = window.allureReportData || {};\n"
    "      function d(name, value){\n"
    "        return new Promise(function (resolve) {\n"
    "          window.allureReportData[name] = value;\n"
    "          return resolve(true);\n"
    "        });\n"
    "      }\n"
    "    </script>"
)


def data_files(report_dir: Path) -> list[tuple[str, Path]]:
    """Every file the app reads, by the name it asks for (a posix path under the report)."""
    found = []
    for folder in DATA_FOLDERS:
        top = report_dir / folder
        for root, _dirs, names in os.walk(top):
            for name in names:
                path = Path(root) / name
                found.append((path.relative_to(report_dir).as_posix(), path))
    return sorted(found)


def single_file_size(report_dir: Path) -> int:
    """About how large index.html would be made whole: the page, its app and every data file,
    base64-encoded (4 bytes for each 3)."""
    inlined = [p for _, p in data_files(report_dir)]
    inlined += list(report_dir.glob("app-*.js")) + list(report_dir.glob("*.css"))
    raw = sum(p.stat().st_size for p in inlined)
    return (report_dir / "index.html").stat().st_size + (raw + 2) // 3 * 4


def is_single_file(index: Path) -> bool:
    """Whether the page `index` carries its data (it opens from disk)."""
    try:
        with open(index, encoding="utf-8", errors="replace") as page:
            return WHOLE_MARK in page.read(16 << 10)  # in the head, before the app and data
    except OSError:
        return False


def _data_url(path: Path, kind: str) -> str:
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode()}"


def single_file(report_dir: Path, max_bytes: int | None = None) -> bool:
    """Make `report_dir`/index.html the whole report when it would be at most `max_bytes`
    (single_file_size; None: SINGLE_FILE_MAX_BYTES); True when the page now opens from disk. A
    page that already carries its data is left as it is (True); one whose parts are not where
    Allure puts them, False."""
    index = report_dir / "index.html"
    if is_single_file(index):
        return True
    limit = SINGLE_FILE_MAX_BYTES if max_bytes is None else max_bytes
    if single_file_size(report_dir) > limit:
        return False
    page = index.read_text(encoding="utf-8")
    scripts = _SCRIPT.findall(page)
    if len(scripts) != 1 or len(_NO_DATA.findall(page)) != 1 or page.count(_CHARSET) != 1:
        return False
    # The data's store declared in the head, before the app's script runs: Allure's own
    # single-file page declares it after the app (core-api createReportDataScript at the end of
    # the body), and the app, run as soon as its script is parsed, fetches instead where
    # window.allureReportData is not there yet (web-commons reportDataUrl): from disk, a
    # fetch that fails, and the page stays on its header. The parser runs tasks between the
    # app's script and the next bytes of the page when they have not arrived (a large page read
    # in chunks, a busy machine): the race seen under parallel headless browsers.
    page = page.replace(_CHARSET, f"{_CHARSET}\n    {WHOLE_MARK}\n    {DECLARE}", 1)
    app = report_dir / scripts[0]
    page = _SCRIPT.sub(
        lambda m: f'<script src="{_data_url(app, "text/javascript")}"></script>', page, count=1
    )
    # A stylesheet of its own (Allure 3.18's app has its styles in its script): inline too.
    page = _STYLE.sub(
        lambda m: (
            '<link rel="stylesheet" type="text/css" '
            f'href="{_data_url(report_dir / m.group(1), "text/css")}">'
        ),
        page,
    )
    page = _FONT.sub("", page)  # as Allure's single-file page: no fonts beside it to preload
    # base64 needs no escaping in a JavaScript string (nor can it close the script element).
    declared = ",".join(
        f'd({json.dumps(name)},"{base64.b64encode(path.read_bytes()).decode()}")'
        for name, path in data_files(report_dir)
    )
    script = (
        "<script defer>\n"
        f"      Promise.allSettled([{declared}])\n"
        "        .then(function(){\n"
        "          window.allureReportDataReady = true;\n"
        "        })\n"
        "    </script>"
    )
    # A function, not a template: the data holds backslashes that re.sub would read as escapes.
    page = _NO_DATA.sub(lambda m: script, page, count=1)
    part = index.with_name(index.name + ".part")
    part.write_text(page, encoding="utf-8")
    part.replace(index)
    return True
