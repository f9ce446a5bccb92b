"""The README is a front door, and the documentation's links and paths hold.

README.md stays under 200 lines and starts with its two commands. Every markdown link of
README.md and docs/*.md that is not a URL names a file or directory of the checkout, inside it,
and an anchor (``page.md#heading``) names a heading of that page (GitHub's slugs). Every
backticked path that looks like a file of the repository (its first part one of the repository's
top folders, ``farm/run/shard.py``, ``docs/store.md``; or a top-level page, ``CONTRIBUTING.md``)
exists too; a span is read word by word, so a command names its paths as well (``bash
.ci/smoke.sh``). Code blocks are not read, nor are words with placeholders (``runs/<run id>/``).
A build output that git ignores (``reports/node_modules``) may be named in backticks, but a link
to it is broken in a clone. A path that leaves the checkout (``../shared/SPEC.md``) is always a
problem: a clone does not have it. Each problem names the page, the line and the path.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200
README_HEAD = (
    "# LogSoftmaxGrad test farm",
    "",
    "    bash .ci/smoke.sh     # set-up, then the smoke tier on the embedded pool, ending with a"
    " report",
    "    bash .ci/test.sh      # set-up, then the project's own tests",
)

# A backticked path is the repository's when its first part is one of these folders.
PATH_ROOTS = (".ci", "benchmarks", "docs", "farm", "golden", "op", "reports", "suites", "tests")
# ... or when it is a top-level page of its own (README.md, CONTRIBUTING.md).
TOP_PAGE = re.compile(r"[A-Z][A-Z0-9_-]*\.md")
# Backticked paths that are another project's, not ours: (page, path) -> why.
FOREIGN = {
    ("docs/importers.md", "tests/ut/op_api/"): "ops-nn's op_api UT directory",
}

URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
NOT_A_PATH = re.compile(r"[\s<>*$~{}|?\"'()\[\],;=@]")


@dataclass(frozen=True)
class Problem:
    page: str  # relative to the root
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.what}"


def doc_pages(root: Path) -> list[Path]:
    """The pages checked: README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def prose(text: str) -> str:
    """The text with its code blocks blanked (fenced, and indented by four spaces after a blank
    line or another code line); lines keep their numbers."""
    out: list[str] = []
    fenced = False
    code = False
    previous_blank = True
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
            continue
        blank = not line.strip()
        code = not fenced and not blank and line.startswith("    ") and (previous_blank or code)
        out.append("" if fenced or code else line)
        if not blank:
            previous_blank = False
        elif not code:
            previous_blank = True
    return "\n".join(out)


def blank_spans(text: str) -> str:
    """Code spans replaced by spaces (newlines kept), so links are not read inside them."""
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: links reduced to their text, lower case, punctuation
    dropped (letters, digits, `_`, `-` and spaces kept), spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every heading's anchor of a markdown page; a repeated heading gets -1, -2, ..."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose(page.read_text(encoding="utf-8")).split("\n"):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return frozenset(found)


@cache
def shipped(root: Path) -> frozenset[str] | None:
    """What a commit of the checkout carries: its tracked and untracked files that git does not
    ignore, and their folders (relative, posix). None outside a git work tree (an unpacked
    archive): there what exists is what ships."""
    try:
        done = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    found: set[str] = set()
    for name in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        parts = name.split("/") if name else []
        found.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return frozenset(found)


@cache
def ignored_by_git(root: Path, rel: str) -> bool:
    """Whether git ignores the path (a build output a clone does not have, `dist/op`,
    `reports/node_modules`). Without git, by the root's .gitignore alone."""
    if shipped(root) is not None:
        # A path that is not there may be an ignored folder: git knows it by its trailing /.
        return any(
            subprocess.run(
                ["git", "-C", str(root), "check-ignore", "-q", "--no-index", name],
                capture_output=True,
                check=False,
            ).returncode
            == 0
            for name in (rel, f"{rel}/")
        )
    gitignore = root / ".gitignore"
    if not gitignore.is_file():
        return False
    patterns = [
        line.strip().strip("/")
        for line in gitignore.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith(("#", "!"))
    ]
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p.rsplit("/", 1)[-1], pat)
        for p in prefixes
        for pat in patterns
    )


def inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def check_target(root: Path, target: Path, shown: str, named_outputs: bool) -> str | None:
    """Why a path of a page does not hold, or None. `named_outputs`: a path git ignores (a build
    output the page only names) is no problem; a link to one is, as a clone lacks it."""
    if not inside(root, target):
        return f"{shown} is outside the repository (a clone does not have it)"
    rel = target.resolve().relative_to(root.resolve()).as_posix()
    ships = shipped(root)
    if target.exists() and (
        rel == "." or (rel in ships if ships is not None else not ignored_by_git(root, rel))
    ):
        return None
    if named_outputs and ignored_by_git(root, rel):
        return None
    if not target.exists():
        return f"{shown} does not exist ({rel})"
    return f"{shown} is ignored by git ({rel}): a clone does not have it"


def repo_path(span: str) -> str | None:
    """The path a backticked span names when it looks like a file of the repository: its
    first part one of PATH_ROOTS (or `..`), or a top-level page; else None."""
    if not span or NOT_A_PATH.search(span) or span.startswith("-"):
        return None
    path = re.sub(r"(::.*|:\d+(-\d+)?)$", "", span)  # pytest node ids, line numbers
    path = path.removeprefix("./")
    first = path.split("/", 1)[0]
    if "/" in path and (first in PATH_ROOTS or first == ".."):
        return path
    if TOP_PAGE.fullmatch(path):
        return path
    return None


def check_links(root: Path, page: Path, text: str) -> Iterator[Problem]:
    name = page.relative_to(root).as_posix()
    for m in LINK.finditer(text):
        target = m.group(1)
        if not target or URL.match(target):
            continue
        line = line_of(text, m.start())
        path, _, anchor = target.partition("#")
        file = (page.parent / path) if path else page
        why = check_target(root, file, f"link ({target})", named_outputs=False)
        if why:
            yield Problem(name, line, why)
            continue
        if anchor:
            if file.suffix != ".md" or file.is_dir():
                yield Problem(name, line, f"link ({target}): an anchor on a page that is not .md")
            elif anchor not in anchors(file.resolve()):
                page_name = file.resolve().relative_to(root.resolve()).as_posix()
                yield Problem(name, line, f"link ({target}): no heading #{anchor} in {page_name}")


def span_paths(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, the span's word, the repository path it names) of each backticked word that names
    one: a span may be a path (`farm/run/shard.py`) or a command that holds one
    (`bash .ci/smoke.sh`)."""
    for m in CODE_SPAN.finditer(text):
        for w in re.finditer(r"\S+", m.group(2)):
            path = repo_path(w.group(0))
            if path is not None:
                yield line_of(text, m.start(2) + w.start()), w.group(0), path


def check_paths(root: Path, page: Path, text: str) -> Iterator[Problem]:
    name = page.relative_to(root).as_posix()
    for line, word, path in span_paths(text):
        if (name, path) in FOREIGN:
            continue
        why = check_target(root, root / path, f"`{word}`", named_outputs=True)
        if why:
            yield Problem(name, line, why)


def check_page(root: Path, page: Path) -> list[Problem]:
    """Every problem of one page's links and repository paths."""
    text = prose(page.read_text(encoding="utf-8"))
    return [*check_links(root, page, blank_spans(text)), *check_paths(root, page, text)]


def counted(root: Path, pages: list[Path]) -> tuple[int, int]:
    """(links, repository paths) the pages name: a checker that reads nothing passes nothing."""
    links = paths = 0
    for page in pages:
        text = prose(page.read_text(encoding="utf-8"))
        links += sum(
            1 for m in LINK.finditer(blank_spans(text)) if m.group(1) and not URL.match(m.group(1))
        )
        paths += sum(1 for _ in span_paths(text))
    return links, paths


# -- the repository's pages --------------------------------------------------------------------


def test_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert len(lines) < README_MAX_LINES, f"README.md is {len(lines)} lines: move reference out"
    assert tuple(lines[: len(README_HEAD)]) == README_HEAD, (
        "README.md must start with its title and the two commands:\n" + "\n".join(README_HEAD)
    )


def test_path_roots_are_the_repositorys_folders():
    missing = [r for r in PATH_ROOTS if not (REPO / r).is_dir()]
    assert not missing, f"PATH_ROOTS names folders the checkout lacks: {missing}"


def test_every_link_and_path_of_the_docs_exists():
    pages = doc_pages(REPO)
    problems = [p for page in pages for p in check_page(REPO, page)]
    assert not problems, "broken links or paths:\n" + "\n".join(map(str, problems))
    links, paths = counted(REPO, pages)
    assert links >= 20 and paths >= 20, f"only {links} links and {paths} paths were read"


def test_docs_never_point_at_the_shared_spec_as_if_in_the_clone():
    for page in doc_pages(REPO):
        text = page.read_text(encoding="utf-8")
        assert "shared/SPEC.md" not in text, f"{page.relative_to(REPO)} points at shared/SPEC.md"


def test_the_reference_pages_are_linked_from_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    unlinked = [
        p.name for p in sorted((REPO / "docs").glob("*.md")) if f"](docs/{p.name})" not in readme
    ]
    assert not unlinked, f"docs pages the README's Reference does not link: {unlinked}"


# -- the checker itself, on planted pages ------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "farm").mkdir()
    (tmp_path / "farm" / "real.py").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## A section, here\n")
    (tmp_path / "CONTRIBUTING.md").write_text("# Contributing\n")
    (tmp_path / ".gitignore").write_text("/farm/built/\n")
    (tmp_path / "farm" / "built").mkdir()
    (tmp_path / "farm" / "built" / "lib.so").write_text("")
    return tmp_path


def planted(tree: Path, body: str) -> list[str]:
    page = tree / "docs" / "page.md"
    page.write_text(f"# Page\n\n{body}\n", encoding="utf-8")
    return [str(p) for p in check_page(tree, page)]


GOOD = """\
See [other](other.md), [its section](other.md#a-section-here), [this page](#page),
[the code](../farm/real.py), `farm/real.py`, `farm/real.py:12`, `CONTRIBUTING.md`,
[a site](https://example.com/nowhere.md), `runs/<run id>/`, `farm.results.report`,
`--cases FILE`, `lib64/common` (not ours), `farm/real.py::test_x`, `bash farm/real.py -x`,
`farm/built/lib.so` and `farm/built/gone.so` (build outputs, named).

    farm/not-checked-in-code.py `farm/nor-this.py` [x](nor-this.md)

```
[y](nor-fenced.md) `farm/nor-fenced.py`
```
"""


def test_the_checker_passes_good_pages(tree):
    assert planted(tree, GOOD) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "text\n[gone](gone.md) here",
            "docs/page.md:4: link (gone.md) does not exist (docs/gone.md)",
        ),
        (
            "[anchor](other.md#no-such-heading)",
            "docs/page.md:3: link (other.md#no-such-heading): no heading #no-such-heading in "
            "docs/other.md",
        ),
        (
            "[self](#nowhere)",
            "docs/page.md:3: link (#nowhere): no heading #nowhere in docs/page.md",
        ),
        (
            "a\nb\nthe module `farm/moved.py` is gone",
            "docs/page.md:5: `farm/moved.py` does not exist (farm/moved.py)",
        ),
        ("`SPEC.md`", "docs/page.md:3: `SPEC.md` does not exist (SPEC.md)"),
        (
            "run `bash\n.ci/gone.sh --now`",
            "docs/page.md:4: `.ci/gone.sh` does not exist (.ci/gone.sh)",
        ),
        (
            "[built](../farm/built/lib.so)",
            "docs/page.md:3: link (../farm/built/lib.so) is ignored by git (farm/built/lib.so): a "
            "clone does not have it",
        ),
        (
            "The contract is `../shared/SPEC.md`.",
            "docs/page.md:3: `../shared/SPEC.md` is outside the repository (a clone does not "
            "have it)",
        ),
        (
            "[spec](../../shared/SPEC.md)",
            "docs/page.md:3: link (../../shared/SPEC.md) is outside the repository (a clone does "
            "not have it)",
        ),
    ],
    ids=[
        "link",
        "anchor",
        "own-anchor",
        "path",
        "top-page",
        "command",
        "ignored-link",
        "outside-path",
        "outside-link",
    ],
)
def test_the_checker_finds_a_planted_break(tree, body, expected):
    assert planted(tree, body) == [expected]


def test_the_checker_finds_one_break_among_good_lines(tree):
    found = planted(tree, f"{GOOD}\n[gone](gone.md)")
    assert found == ["docs/page.md:15: link (gone.md) does not exist (docs/gone.md)"]
