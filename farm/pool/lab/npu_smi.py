"""The SSH lab's stand-in for ``npu-smi`` (TEST-ONLY): ``npu-smi info`` as the real tool prints it,
for chips whose state a test sets (farm/pool/lab/core.py ``Lab.set_chip``).

Run on a lab host as ``python -m farm.pool.lab.npu_smi STATE_FILE info``; the lab's
``bin/npu-smi`` wrapper does that, and the host's ``LSG_NPU_SMI`` names the wrapper. STATE_FILE
is JSON::

    {"version": "emulated", "chips": [
        {"name": "910B1", "health": "OK", "hbm_used": 3150, "hbm_total": 65536, "aicore": 0,
         "missing": false, "processes": [{"pid": 4321, "name": "python3", "memory": 2048}]}]}

A missing chip is left out of the table, as a chip the driver lost is. The table follows the
layout of npu-smi 23.x-25.x on Atlas A2 (an NPU row, a chip row, then the process table), which
farm/agent/machine.py parses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_RULE = "+---------------------------+---------------+" + "-" * 52 + "+"
_DOUBLE = "+===========================+===============+" + "=" * 52 + "+"


def default_chip(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "health": "OK",
        "hbm_used": 3150,
        "hbm_total": 65536,
        "aicore": 0,
        "missing": False,
        "processes": [],
    }


def render(state: dict[str, Any]) -> str:
    version = state.get("version", "emulated")
    lines = [
        "+" + "-" * 96 + "+",
        f"| npu-smi {version:<24} Version: {version:<54}|",
        _RULE,
        "| NPU   Name                | Health        | Power(W)    Temp(C)           "
        "Hugepages-Usage(page)|",
        "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  "
        "HBM-Usage(MB)        |",
        _DOUBLE,
    ]
    shown = [(npu, c) for npu, c in enumerate(state.get("chips", [])) if not c.get("missing")]
    for npu, chip in shown:
        hbm = f"{chip['hbm_used']} / {chip['hbm_total']}"
        lines += [
            f"| {npu:<5} {chip['name']:<19} | {chip['health']:<13} | {'93.9':<11} {'41':<17} "
            f"{'0    / 0':<20} |",
            f"| {0:<25} | {f'0000:C{npu + 1}:00.0':<13} | {chip['aicore']:<11} "
            f"{'0    / 0':<17} {hbm:<20} |",
            _DOUBLE,
        ]
    lines += [
        "+---------------------------+---------------+" + "-" * 52 + "+",
        "| NPU     Chip              | Process id    | Process name             "
        "| Process memory(MB)      |",
        _DOUBLE,
    ]
    for npu, chip in shown:
        processes = chip.get("processes") or []
        if not processes:
            lines.append(f"| No running processes found in NPU {npu:<61}|")
        for p in processes:
            lines.append(
                f"| {npu:<7} {0:<17} | {p['pid']:<13} | {p['name']:<24} | {p['memory']:<24}|"
            )
        lines.append(_DOUBLE)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "info":
        print("usage: npu-smi info (the farm lab's stand-in answers nothing else)", file=sys.stderr)
        return 2
    try:
        state = json.loads(Path(argv[0]).read_text())
    except (OSError, ValueError) as exc:
        print(f"npu-smi: the lab's chip state {argv[0]} is unreadable: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render(state))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
