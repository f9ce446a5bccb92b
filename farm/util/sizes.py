"""Sizes of memory and files, as people write and read them: "8GiB" in an inventory, "1.8 TiB"
in a message."""

from __future__ import annotations

import re

_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 1 << 10,
    "MIB": 1 << 20,
    "GIB": 1 << 30,
    "TIB": 1 << 40,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")


def parse_size(value: str | int) -> int:
    """Bytes from an int or a text like "8GiB", "512 MiB", "2GB", "1.5TiB"; ValueError says
    what is wrong."""
    if isinstance(value, int) and not isinstance(value, bool):
        number, unit = float(value), ""
    else:
        match = _SIZE.fullmatch(str(value))
        if not match or match.group(2).upper() not in _SIZE_UNITS:
            raise ValueError(f'{value!r} is not a size; use e.g. "8GiB", "512MiB" or bytes')
        number, unit = float(match.group(1)), match.group(2).upper()
    size = int(number * _SIZE_UNITS[unit])
    if size <= 0:
        raise ValueError(f"{value!r} must be more than 0 bytes")
    return size


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def size_text(nbytes: float) -> str:
    """1.8 TiB, 512 MiB, 300 B: binary units, one decimal where it matters."""
    value, unit = float(nbytes), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{int(value)} B"
    return f"{value:.1f} {_UNITS[unit]}".replace(".0 ", " ")
