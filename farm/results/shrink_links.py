"""At report time, link each failing case to its shrunk form (`farm shrink`), where one exists.

`link_shrinks(results_dir, store_path, run)` (called by `farm report` before Allure runs) looks
up, for the failed and broken cases of the run's allure-results, the shrink records of the run's
package (`RunStore.shrinks_for(case_ids, package_sha256)`), and gives each case that has one:

- an attachment "shrunk form" (text): the shrunk id, its size against the case's, the category
  it fails with, how many candidates the search ran, and the `farm repro` line that reruns it;
- an attachment "shrunk form.json": the shrunk case as a case file (what `--cases` reads), so
  the repro line works anywhere the report is read;
- a line at the end of its description naming the shrunk id and the repro line.

Nothing else of a result (status, message, history id) is touched. Idempotent: the attachments'
file names are derived from the result and the shrink record, and a second `farm report` replaces
the entries (and the description line) it wrote the first time, with the newest shrink.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

from farm.results.store.location import StoreLocation
from farm.results.store.rows import planted_bug
from farm.util.run_dir import write_whole

SHRUNK_NAME = "shrunk form"
SHRUNK_FILE_NAME = "shrunk form.json"
ATTACHMENT_NAMES = (SHRUNK_NAME, SHRUNK_FILE_NAME)
DESCRIPTION_MARK = "\n\n**shrunk form:** "
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "lsg-farm:shrunk-form")


def package_sha(run: Mapping) -> str:
    return str(run.get("package_sha256") or (run.get("package") or {}).get("sha256") or "")


def case_id_of(result: Mapping) -> str:
    """A result's case id: its title (allure_glue.annotate), else its "case" parameter."""
    for param in result.get("parameters") or ():
        if isinstance(param, dict) and param.get("name") == "case":
            return str(param.get("value", "")).strip("'\"")
    return str(result.get("name") or "")


def failing_results(results_dir: Path) -> dict[Path, dict]:
    from farm.run.result_files import read_file, result_files

    out: dict[Path, dict] = {}
    for name in result_files(results_dir):
        path = Path(name)
        try:
            raw = read_file(name)
            # Most results pass: parse only those that can be a failure.
            if b'"failed"' not in raw and b'"broken"' not in raw:
                continue
            result = json.loads(raw)
        except (OSError, ValueError):
            continue
        if isinstance(result, dict) and result.get("status") in ("failed", "broken"):
            out[path] = result
    return out


def link_shrinks(results_dir: str | os.PathLike, store: StoreLocation, run: Mapping) -> int:
    """Add the shrunk forms to the failing cases of `run` in `results_dir` (see above); returns
    how many cases got one. A problem here (unreadable store, read-only results) is a warning on
    stderr: the report goes on without the links."""
    from farm.util.errors import FarmError

    try:
        return _link(Path(results_dir), store, run)
    except (OSError, FarmError) as exc:
        sys.stderr.write(f"farm report: shrunk forms not linked: {exc}\n")
        return 0


def _link(results_dir: Path, store: StoreLocation, run: Mapping) -> int:
    from farm.results.store import open_existing

    sha = package_sha(run)
    if not sha or not results_dir.is_dir():
        return 0
    failing = failing_results(results_dir)
    if not failing:
        return 0
    ids = {path: case_id_of(result) for path, result in failing.items()}
    with open_existing(store) as opened:
        shrinks = opened.shrinks_for(set(ids.values()), sha)
    if not shrinks:
        return 0
    bug = planted_bug(run)
    linked = 0
    for path, result in failing.items():
        shrink = shrinks.get(ids[path])
        if shrink is None:
            continue
        _attach(results_dir, path, result, shrink, bug)
        linked += 1
    return linked


def case_file_path(case_id: str, shrunk_id: str) -> Path | None:
    """Where `farm shrink` wrote the shrunk form by default, if it is still there (and still
    holds that case)."""
    from farm.util import paths

    path = paths.RUNS_DIR / "shrinks" / f"{case_id}.json"
    try:
        return path if shrunk_id in path.read_text(encoding="utf-8") else None
    except OSError:
        return None


def summary(shrink: Mapping, plant_bug: str = "") -> tuple[str, str]:
    """(the text of the "shrunk form" attachment, its repro line)."""
    from farm.run.shrink import repro_command
    from suites.case import shape_text

    case = shrink.get("case") or {}
    shrunk_id = str(shrink["shrunk_id"])
    where = case_file_path(str(shrink["case_id"]), shrunk_id)
    line = repro_command(
        shrunk_id,
        where or "shrunk.json",
        target=str(shrink.get("target") or ""),
        plant_bug=plant_bug,
    )
    before, after = shrink.get("numel_before"), shrink.get("numel_after")
    shape = shape_text(tuple(case.get("shape") or ()))
    lines = [
        f"shrunk form of {shrink['case_id']} (farm shrink, {shrink.get('created_at', '')})",
        "",
        f"minimal case  {shrunk_id}",
        f"size          {shape} ({_count(after)} elements; the case has {_count(before)})",
        f"fails         {shrink.get('category') or 'uncategorised'}, the same way as the case",
        f"on            {shrink.get('target') or 'the package'}"
        + (f", planted bug {plant_bug}" if plant_bug else "")
        + f" (package sha256 {str(shrink.get('package_sha256', ''))[:12]})",
        f"candidates    {shrink.get('tried')} run",
        "",
        f"repro         {line}",
    ]
    if where is None:
        lines.append(
            f"              (save the attachment '{SHRUNK_FILE_NAME}' of this case as shrunk.json)"
        )
    return "\n".join(lines) + "\n", line


def _count(n) -> str:
    return f"{n:,}" if isinstance(n, int) else "?"


def _attach(results_dir: Path, path: Path, result: dict, shrink: Mapping, bug: str) -> None:
    from suites import casefile
    from suites.case import Case

    text, line = summary(shrink, bug)
    key = f"{result.get('uuid') or path.name}:{shrink['shrunk_id']}:{shrink.get('package_sha256')}"
    stem = str(uuid.uuid5(_NAMESPACE, key))
    text_name, file_name = f"{stem}-attachment.txt", f"{stem}-attachment.json"
    (results_dir / text_name).write_text(text, encoding="utf-8")
    try:
        case = Case.from_dict(shrink["case"])
        document = casefile.document([case], source=f"farm shrink of {shrink['case_id']}")
    except (KeyError, TypeError, ValueError):
        document = {"cases": [shrink.get("case")]}
    (results_dir / file_name).write_text(
        json.dumps(document, indent=1, allow_nan=False) + "\n", encoding="utf-8"
    )
    entries = [
        e
        for e in result.get("attachments") or []
        if not (isinstance(e, dict) and e.get("name") in ATTACHMENT_NAMES)
    ]
    entries += [
        {"name": SHRUNK_NAME, "source": text_name, "type": "text/plain"},
        {"name": SHRUNK_FILE_NAME, "source": file_name, "type": "application/json"},
    ]
    result["attachments"] = entries
    description = str(result.get("description") or "").split(DESCRIPTION_MARK, 1)[0]
    result["description"] = (
        f"{description}{DESCRIPTION_MARK}`{shrink['shrunk_id']}` "
        f"({_count(shrink.get('numel_after'))} elements), fails the same way: `{line}`"
    )
    write_whole(path, json.dumps(result, ensure_ascii=False).encode("utf-8"))
