"""The directory a report is written into (`farm report --out`, a run's report/): a report
replaces its directory whole, so only one that is empty or holds a report the farm wrote may be
replaced (`check_out_dir`); each report leaves its mark (REPORT_MARK) there."""

from __future__ import annotations

import re
from pathlib import Path

from farm.util.errors import UsageError

# A report replaces its directory whole: only one that is empty or holds a report the farm wrote
# (its mark, or, before the mark, only what an Allure report is made of) may be replaced.
REPORT_MARK = ".farm-report"
_REPORT_ENTRIES = re.compile(
    r"(index\.html|data|widgets|history|artifacts\.json|quality-gate\.json|summary\.json|"
    r"test-results\.json|app-[0-9a-f]+\.(js|css)(\.LICENSE\.txt)?|favicon\.ico)"
)


def _older_report(names: list[str]) -> bool:
    """A report from before the mark: an Allure report's page and script, and nothing else."""
    return (
        "index.html" in names
        and any(n.startswith("app-") and n.endswith(".js") for n in names)
        and all(_REPORT_ENTRIES.fullmatch(n) for n in names)
    )


def check_out_dir(out_dir: Path) -> None:
    """UsageError when ``out_dir`` holds anything but a report the farm wrote: `--out ~/work`
    removed the whole of ~/work to put the report there."""
    try:
        names = [p.name for p in out_dir.iterdir()]
    except FileNotFoundError:
        return
    except NotADirectoryError:
        if out_dir.is_file():
            raise UsageError(
                f"--out {out_dir}: a file, not a directory; name a new directory"
            ) from None
        return  # under a file: making it says so
    if not names or REPORT_MARK in names or _older_report(names):
        return
    others = sorted(n for n in names if not _REPORT_ENTRIES.fullmatch(n)) or sorted(names)
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3:,} more" if len(others) > 3 else "")
    raise UsageError(
        f"--out {out_dir}: holds {shown}, not a report the farm wrote; the report replaces its "
        "directory whole: name a new or empty one"
    )
