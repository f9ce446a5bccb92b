"""The table of reasons, read from the file the operator compiles (op/tiling/reasons.def), and the
one line that says why a call was rejected.

The C side includes the same file as an X-macro (op/tiling/lsg_types.h enum lsg_reason;
op/tiling/tiling.cpp lsg::reason_name, lsg::reason_status, lsg::reason_line), so an id, a name
or a status cannot differ between the operator and the judge. The file travels with golden/ in
the agent bundle (farm/pool/deploy.py BUNDLE_PATHS), at the same place relative to this module.

    TABLE: {id: Reason}, every reason; CONTRACT: the operator contract's (ids 0-99)
    read_line(message) -> Said | None     the reason a message's last line names; None unless
                                          it is a whole reason line that agrees with the table
    format_line(reason, message, api)     that line, as the aclnn layer writes it
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TABLE_FILE = Path(__file__).resolve().parents[1] / "op" / "tiling" / "reasons.def"
# Ids below this are the operator contract's; from it on, the libraries' own.
OWN_FROM = 100

_ROW = re.compile(r'LSG_REASON\((\d+), (\w+), (\w+), (\d+), "([^"]*)"\)')


@dataclass(frozen=True)
class Reason:
    id: int
    name: str
    status: int
    words: str  # the contract's words for it


def _read(path: Path) -> dict[int, Reason]:
    """The table: every line of the file outside its comment is one LSG_REASON row."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise RuntimeError(
            f"the table of reasons {path} cannot be read ({exc.strerror}): it ships beside "
            "golden/ (farm/pool/deploy.py BUNDLE_PATHS); deploy the whole agent bundle"
        ) from None
    # The comment out, its lines kept (so that an error names the file's own line number).
    body = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    table: dict[int, Reason] = {}
    for number, line in enumerate(body.splitlines(), 1):
        if not line.strip():
            continue
        row = _ROW.fullmatch(line.strip())
        if row is None:
            raise RuntimeError(
                f"{path} line {number}: {line.strip()!r} is not "
                'LSG_REASON(id, ENUM, name, status, "words"); fix the table'
            )
        rid, _, name, status, words = row.groups()
        table[int(rid)] = Reason(int(rid), name, int(status), words)
    return table


TABLE = _read(TABLE_FILE)
BY_NAME = {r.name: r for r in TABLE.values()}
CONTRACT = {rid: r for rid, r in TABLE.items() if rid < OWN_FROM}
OWN = {rid: r for rid, r in TABLE.items() if rid >= OWN_FROM}

# The line (lsg::reason_line, and the aclnn layer's "[api]" after it): the status, the reason's id
# and name, the message. Only a whole line counts; its id, name and status must be the table's.
LINE_FORMAT = "LogSoftmaxGrad: status S (reason R name): message [api]"
_LINE = re.compile(
    r"LogSoftmaxGrad: status (-?\d+) \(reason (\d+) ([a-z0-9_]+)\): (.*) \[(aclnn\w+)\]$"
)


@dataclass(frozen=True)
class Said:
    status: int
    reason: Reason
    message: str
    api: str


def read_line(message: str) -> Said | None:
    """The reason the message's last line names (aclGetRecentErrMsg returns every message of the
    thread since it was last read, each line under its error code, the call's own last); None
    unless that line is a whole reason line, its id the table's, its name and status that id's."""
    lines = [line for line in message.splitlines() if line.strip()]
    found = _LINE.search(lines[-1]) if lines else None
    if found is None:
        return None
    status, rid, name, said, api = found.groups()
    reason = TABLE.get(int(rid))
    if reason is None or reason.name != name or reason.status != int(status):
        return None
    return Said(int(status), reason, said, api)


def format_line(reason: str, message: str, api: str) -> str:
    """The line the aclnn layer writes for a rejection (what lsg::reason_line and the layer's
    " [api]" make): for stand-ins that answer as the operator would."""
    r = BY_NAME[reason]
    return f"LogSoftmaxGrad: status {r.status} (reason {r.id} {r.name}): {message} [{api}]"
