"""`farm lab up | down | status`: the command line of the SSH lab (farm/pool/lab/core.py)."""

from __future__ import annotations

import sys

from farm.pool.lab.core import DEFAULT_ROOT, Lab
from farm.pool.lab.layout import families_line
from farm.util.argparsing import CommandParser, make_output_dir
from farm.util.errors import ConfigError


def main(argv: list[str] | None = None) -> int:
    """``farm lab up [--hosts N] [--root DIR]`` | ``farm lab down`` | ``farm lab status``."""
    parser = CommandParser(prog="farm lab", description="SSH lab on loopback")
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start N sshd hosts and write <root>/inventory.toml")
    up.add_argument("--hosts", type=int, default=3, help="number of hosts (default 3)")
    up.add_argument(
        "--cann",
        choices=("emulated",),
        default="",
        help="give each host the emulated ACL runtime in place of CANN (ASCEND_HOME_PATH), for "
        "--backend acl through CANN's own search path",
    )
    for p in (
        up,
        sub.add_parser("down", help="stop the lab's sshd instances"),
        sub.add_parser("status", help="show the lab's hosts"),
    ):
        p.add_argument("--root", default=str(DEFAULT_ROOT), help="lab directory (default ./lab)")
    args = parser.parse_args(argv)
    lab = Lab(args.root)
    try:
        if args.cmd == "up":
            make_output_dir(lab.root, "--root")
            inv = lab.up(args.hosts, cann=args.cann)
            for row in lab.status_rows():
                print(f"  {row['host']:<10} {row['address']:<18} {row['soc']}")
            print(f"lab up: {len(inv.hosts)} host(s); inventory {lab.inventory_path}")
            print(f"families: {families_line([h.soc for h in inv.hosts])}")
        elif args.cmd == "down":
            lab.down()
            print(f"lab down: {lab.root}")
        else:
            if not lab.hosts:
                print(f"no lab under {lab.root}; run farm lab up")
                return 1
            for row in lab.status_rows():
                print("  " + "  ".join(f"{k}={v}" for k, v in row.items() if v))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
