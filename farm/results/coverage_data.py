"""The gcov side of `farm coverage`: the cases' counters (each case's own directory, written by
its agent: farm/agent/coverage_dump.py) merged into the coverage build's directory with
gcov-tool, gcovr's report of the real sources from there, and which cases reached each branch
(gcov's JSON of each case's counters).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from farm.agent.coverage_dump import CASE_ID_FILE
from farm.util.errors import UsageError
from farm.util.paths import REPO_ROOT

OP_DIR = REPO_ROOT / "op"
# The real sources, under op/: what the coverage is of (the emulation around them is not).
REAL_SOURCES = ("ascendc/op_kernel/", "ascendc/op_host/", "ascendc/op_api/", "tiling/")
# The gcovr release the figures were measured with (pyproject.toml pins the same).
GCOVR_HINT = "pip install gcovr==8.8 (pyproject.toml's dependencies)"
# A line and branch are (op-relative file, line number[, gcov's branch number on that line]).
Line = tuple[str, int]
Branch = tuple[str, int, int]


def real_source(rel: str) -> bool:
    return rel.startswith(REAL_SOURCES)


def case_dirs(root: Path) -> dict[str, list[Path]]:
    """Each case id's counter directories under `root` (one per backend run that ran it)."""
    found: dict[str, list[Path]] = defaultdict(list)
    for marker in sorted(root.glob(f"*/*/{CASE_ID_FILE}")):
        found[marker.read_text(encoding="utf-8")].append(marker.parent)
    return dict(found)


def _tree(case_dir: Path, build_dir: Path) -> Path:
    """Where a case's dump put the build directory's .gcda files (gcov's GCOV_PREFIX + path)."""
    return case_dir / build_dir.resolve().relative_to("/")


def merge_into_build(dirs: Iterable[Path], build_dir: Path, scratch: Path) -> int:
    """Every case's counters added up (gcov-tool merge, two trees at a time) and put in place of
    the build directory's .gcda files, where gcovr reads them beside the .gcno files; how many
    trees were merged."""
    trees = [t for t in (_tree(d, build_dir) for d in dirs) if t.is_dir()]
    if not trees:
        raise UsageError("no case left coverage counters: did the run use the coverage package?")
    tool = shutil.which("gcov-tool")
    if tool is None:
        raise UsageError("gcov-tool not found: it comes with gcc (apt-get install gcc)")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    current = scratch / "0"
    shutil.copytree(trees[0], current)
    for n, tree in enumerate(trees[1:], 1):
        merged = scratch / str(n)
        proc = subprocess.run(
            [tool, "merge", str(current), str(tree), "-o", str(merged)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not merged.is_dir():
            raise UsageError(f"gcov-tool merge of {tree} failed: {proc.stderr.strip()[-300:]}")
        shutil.rmtree(current)
        current = merged
    for old in build_dir.rglob("*.gcda"):
        old.unlink()
    for gcda in current.rglob("*.gcda"):
        dest = build_dir / gcda.relative_to(current)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(gcda, dest)
    shutil.rmtree(scratch, ignore_errors=True)
    return len(trees)


def drop_stale_notes(build_dir: Path) -> list[Path]:
    """Remove the gcov notes (.gcno) and counters (.gcda) of objects the build no longer makes:
    those of an object directory no current target owns (CMakeFiles/<target>.dir), and those of
    a current target that no longer compiles their source (its build.make's object rules). A
    source added before the kernel renumbered the kernel's object targets and moved the others'
    sources, leaving the old objects' notes in the build; gcovr, which reads every note under
    it, counted them again as code no case runs (143 lines "unexplained" at once). The stale
    notes removed."""
    proc = subprocess.run(
        ["cmake", "--build", str(build_dir), "--target", "help"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise UsageError(
            f"cmake could not list the targets of {build_dir}: {proc.stderr.strip()[-200:]}; "
            "delete the directory and run farm coverage again"
        )
    targets = {ln[4:].split()[0] for ln in proc.stdout.splitlines() if ln.startswith("... ")}
    stale = []
    for directory in sorted((build_dir / "CMakeFiles").glob("*.dir")):
        rules = directory / "build.make"
        current = (
            set(re.findall(r"(?m)^(CMakeFiles/\S+?\.o):", rules.read_text(encoding="utf-8")))
            if directory.name.removesuffix(".dir") in targets and rules.is_file()
            else set()
        )
        for note in [*directory.rglob("*.gcno"), *directory.rglob("*.gcda")]:
            if str(note.relative_to(build_dir).with_suffix(".o")) not in current:
                note.unlink()
                stale.append(note)
    return stale


def gcovr_available() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gcovr", "--version"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise UsageError(f"gcovr is not installed for {sys.executable}: {GCOVR_HINT}")


def run_gcovr(build_dir: Path, out: Path, title: str, jobs: int = 2) -> dict:
    """gcovr over the build directory's merged counters, filtered to the real sources: the HTML
    (details, one page a source, out/html/index.html), its JSON (out/gcovr.json) and summary
    (out/summary.json); returns the JSON. Throw branches (the unwinding paths of calls that may
    throw) and the compiler's branches on lines without code are left out, as gcovr offers."""
    html = out / "html"
    shutil.rmtree(html, ignore_errors=True)
    html.mkdir(parents=True)
    cmd = [sys.executable, "-m", "gcovr", "--root", str(OP_DIR)]
    for rel in REAL_SOURCES:
        cmd += ["--filter", re.escape(str(OP_DIR / rel))]
    cmd += [
        "--exclude-throw-branches",
        "--exclude-unreachable-branches",
        "--html-details",
        str(html / "index.html"),
        "--html-title",
        title,
        "--json",
        str(out / "gcovr.json"),
        "--json-summary",
        str(out / "summary.json"),
        "-j",
        str(jobs),
        str(build_dir),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UsageError(f"gcovr failed (exit {proc.returncode}): {tail[0]}")
    return json.loads((out / "gcovr.json").read_text(encoding="utf-8"))


def _gcov_json(tree: Path, build_dir: Path) -> Iterable[dict]:
    """gcov's JSON of one case's counters (its .gcda beside links to the build's .gcno)."""
    gcdas = sorted(tree.rglob("*.gcda"))
    for gcda in gcdas:
        note = gcda.with_suffix(".gcno")
        if not note.exists():
            note.symlink_to(build_dir / gcda.relative_to(tree).with_suffix(".gcno"))
    if not gcdas:
        return []
    proc = subprocess.run(
        ["gcov", "--branch-probabilities", "--json-format", "--stdout", *map(str, gcdas)],
        capture_output=True,
        text=True,
        cwd=tree,
    )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def reached(dirs: Iterable[Path], build_dir: Path) -> tuple[set[Line], set[Branch]]:
    """The real sources' lines and (non-throw) branches that one case's counters reached."""
    lines: set[Line] = set()
    branches: set[Branch] = set()
    op = str(OP_DIR) + os.sep
    for d in dirs:
        for doc in _gcov_json(_tree(d, build_dir), build_dir):
            for f in doc.get("files", ()):
                name = f.get("file", "")
                if not name.startswith(op) or not real_source(name[len(op) :]):
                    continue
                rel = name[len(op) :]
                for ln in f.get("lines", ()):
                    number = ln["line_number"]
                    if ln.get("count", 0) > 0:
                        lines.add((rel, number))
                    for i, br in enumerate(ln.get("branches", ())):
                        if br.get("count", 0) > 0 and not br.get("throw"):
                            branches.add((rel, number, i))
    return lines, branches


def cases_per_branch(
    by_case: Mapping[str, list[Path]], build_dir: Path, jobs: int = 2
) -> dict[Branch, int]:
    """How many distinct cases reached each branch (a case run on both backends counts once)."""
    counts: dict[Branch, int] = defaultdict(int)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for _, branches in pool.map(lambda ds: reached(ds, build_dir), by_case.values()):
            for b in branches:
                counts[b] += 1
    return dict(counts)


def single_page(tracefile: Path, page: Path) -> None:
    """gcovr's detailed HTML as one self-contained page (what the run's report attaches), from
    the JSON it already wrote: no gcov again."""
    cmd = [sys.executable, "-m", "gcovr", "--root", str(OP_DIR), "--add-tracefile", str(tracefile)]
    cmd += ["--html-details", str(page), "--html-single-page", "--html-self-contained"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UsageError(f"gcovr's single page failed (exit {proc.returncode}): {tail[0]}")
