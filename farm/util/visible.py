"""Text from outside the farm (a case file's names and notes, an inventory's host names, what a
host said) made safe to print: a control character is shown as its escape (``\\x1b``), never sent
to the terminal, where an escape sequence would recolour, retitle or clear it; a line that
quotes a value of thousands of characters is cut in its middle."""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # all but tab and line ends


def visible(text: str) -> str:
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


LINE_MOST = 1_000  # characters: a long path and its fix fit, a pasted blob does not


def cut(line: str, most: int = LINE_MOST) -> str:
    """``line`` with its middle left out past ``most`` characters: an error that quotes a
    5,000-character argument stays a line to read, its start (what is wrong) and its end (the
    fix) kept."""
    if len(line) <= most:
        return line
    head, tail = line[: most * 2 // 3], line[-(most // 3) :]
    return f"{head} [... {len(line) - len(head) - len(tail):,} characters ...] {tail}"
