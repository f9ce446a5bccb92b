"""Reading the tar archives the tests build (operator packages, agent bundles)."""

from __future__ import annotations

import tarfile
from typing import IO


def regular(tar: tarfile.TarFile, member: str | tarfile.TarInfo) -> IO[bytes]:
    """The contents of a regular file member (tarfile gives None for a directory or a link)."""
    contents = tar.extractfile(member)
    assert contents is not None, f"{member}: not a regular file of {tar.name!r}"
    return contents
