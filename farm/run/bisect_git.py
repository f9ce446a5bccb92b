"""The git side of `farm bisect`: the repository's commits (``Git``) and the scratch worktree
each commit is checked out and built in (``scratch_worktree``)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from farm.run import scratch
from farm.util.errors import UsageError


class Git:
    """git in one repository; every failure is a UsageError naming the command."""

    def __init__(self, repo: str | Path):
        self.repo = Path(repo).resolve()
        if not self.repo.is_dir():
            raise UsageError(f"--repo {repo}: no such directory")
        proc = self.run("rev-parse", "--show-toplevel", check=False)
        if proc.returncode != 0:
            raise UsageError(f"--repo {repo}: not a git repository ({_last(proc.stderr)})")
        self.repo = Path(proc.stdout.strip())

    def run(self, *args: str, check: bool = True, cwd: Path | None = None):
        try:
            proc = subprocess.run(
                ["git", *args], cwd=cwd or self.repo, capture_output=True, text=True
            )
        except OSError as exc:
            raise UsageError(f"git cannot be run: {exc}") from None
        if check and proc.returncode != 0:
            raise UsageError(f"git {' '.join(args)} failed in {self.repo}: {_last(proc.stderr)}")
        return proc

    def __call__(self, *args: str) -> str:
        return self.run(*args).stdout.strip()

    def resolve(self, rev: str, option: str) -> str:
        proc = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if proc.returncode != 0:
            raise UsageError(f"{option} {rev}: no such commit in {self.repo}")
        return proc.stdout.strip()

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.run("merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    def between(self, good: str, bad: str) -> list[str]:
        """good..bad along the first parents, oldest first: the commits a bisect searches."""
        out = self("rev-list", "--first-parent", "--ancestry-path", "--reverse", f"{good}..{bad}")
        return out.split()

    def subject(self, sha: str) -> str:
        return self("log", "-1", "--format=%s", sha)

    def author(self, sha: str) -> str:
        return self("log", "-1", "--format=%an <%ae>, %ad", "--date=iso", sha)

    def stat_line(self, sha: str) -> str:
        """The summary line of `git show --stat` (files changed, insertions, deletions)."""
        lines = self("show", "--stat", "--format=", sha).splitlines()
        return lines[-1].strip() if lines else "no changes"


def _last(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no output"


@contextmanager
def scratch_worktree(git: Git, sha: str) -> Iterator[Path]:
    """A detached worktree of `git`'s repository at `sha` in a temporary directory, with a
    sibling build directory (yielded as <tmp>/src; <tmp>/build beside it). Removed afterwards,
    whatever happens; one a killed bisect left is removed first (farm/run/scratch.py), and
    git's record of it after."""
    scratch.sweep(scratch.BISECT)
    tmp = scratch.make(scratch.BISECT)
    src = tmp / "src"
    try:
        git("worktree", "add", "--detach", str(src), sha)
        yield src
    finally:
        git.run("worktree", "remove", "--force", str(src), check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        git.run("worktree", "prune", check=False)
