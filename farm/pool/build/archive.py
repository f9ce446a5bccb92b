"""The operator package's archive: a tar.gz that depends on nothing but its files (sorted entries,
fixed mtime/uid/gid/mode, gzip mtime 0), so the same sources give the same bytes; its files'
checksums for the manifest.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import sys
import tarfile
from pathlib import Path

from farm.pool.deploy import package_problem

# The fixed metadata of every archive entry.
ENTRY_MTIME = 0
ENTRY_MODE = 0o644


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_archive(path: Path, files: dict[str, bytes]) -> Path:
    """A tar.gz of `files` (archive path -> bytes) that depends on nothing but them."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mtime = ENTRY_MTIME
            info.mode = ENTRY_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[name]))
    if holds(path, raw.getvalue()):
        # The same bytes already: compressing them again (level 9) is most of a no-op build.
        # Not rewritten, so that a deploy reading it meanwhile never sees it change.
        return path
    if path.is_file():
        problem = package_problem(path)
        if problem is not None:  # not an older build: a damaged one, said as it is replaced
            rebuilt(path, problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two builds at once must not mix
    with (
        open(tmp, "wb") as out,
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz,
    ):
        gz.write(raw.getvalue())
    tmp.replace(path)
    return path


def rebuilt(path: Path, problem: str) -> None:
    """Say, in one line on stderr, that a cached package did not match its manifest and is built
    again."""
    print(
        f"note: {path}: {problem}; the cached package is built again", file=sys.stderr, flush=True
    )


def holds(path: Path, tar: bytes) -> bool:
    """Whether the archive at `path` is the gzip of exactly `tar`."""
    try:
        with gzip.open(path, "rb") as gz:
            return gz.read(len(tar) + 1) == tar
    except (OSError, EOFError, gzip.BadGzipFile):
        return False


def file_entries(files: dict[str, bytes]) -> list[dict]:
    """A manifest's "files": every file of the archive with its sha256 and size, by name."""
    return [
        {"path": name, "sha256": sha256_bytes(files[name]), "bytes": len(files[name])}
        for name in sorted(files)
    ]
