"""Where a run's coverage is (`farm coverage`): <run dir>/coverage/ with coverage.json (the
figures, what is uncovered and why), html/ (gcovr's pages, one a source) and coverage.html (the
same on one page, which the run's report attaches)."""

from __future__ import annotations

from pathlib import Path

DIR = "coverage"
JSON = "coverage.json"
PAGE = "coverage.html"


def coverage_dir(run_dir: Path) -> Path:
    return run_dir / DIR


def attachments(run_dir: Path) -> list[Path]:
    """The run's coverage page, for its report's global attachments; [] without one."""
    page = coverage_dir(run_dir) / PAGE
    return [page] if page.is_file() else []
