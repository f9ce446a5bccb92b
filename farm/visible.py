"""Text from outside the farm (a case file's names and notes, an inventory's host names, what a
host said) made safe to print: a control character is shown as its escape (``\\x1b``), never sent
to the terminal, where an escape sequence would recolour, retitle or clear it."""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # all but tab and line ends


def visible(text: str) -> str:
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
