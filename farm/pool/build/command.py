"""`farm build` (and `python -m farm.pool.build`): the command line of the build."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from farm.agent.hostops import normalise_arch
from farm.pool.build.arches import ARCHES, CROSS_PACKAGES, HOST_ARCH, check_arch
from farm.pool.build.archive import sha256_bytes
from farm.pool.build.bugs import BUG_NAMES, bug_lines, plant_bug_help
from farm.pool.build.package import build_package
from farm.pool.build.sanitize import sanitize_check
from farm.pool.build.sanitize_driver import drive
from farm.pool.build.selftest import selftest_package
from farm.util import announce
from farm.util.argparsing import CommandParser, make_output_dir
from farm.util.errors import BuildError
from farm.util.paths import REPO_ROOT as ROOT
from farm.util.targets import DEFAULT_TARGET, NATIVE_TARGETS, TARGETS, describe


def main(argv: list[str] | None = None) -> int:
    """`farm build`: build and package the operator into dist/op (default target: ascendc-cpu,
    the real Ascend C kernel on the CPU emulation; twin: the CPU twin; ascend: the CANN package)."""
    parser = CommandParser(prog="farm build", description=main.__doc__)
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default=DEFAULT_TARGET,
        help="; ".join(describe(t) for t in TARGETS),
    )
    parser.add_argument(
        "--arch",
        type=normalise_arch,
        choices=ARCHES,
        default=None,
        help=f"the CPU architecture to build for (default: this machine's, {HOST_ARCH}); "
        "ascendc-cpu and twin cross compile for another with Debian's toolchain (apt-get install "
        + " ".join(CROSS_PACKAGES[a] for a in ARCHES if a != HOST_ARCH)
        + "; op/cmake/*.cmake) into build/<target>-<arch> and "
        "dist/op/logsoftmaxgrad-<version>-<target>-<arch>.tar.gz",
    )
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="after packaging ascendc-cpu or twin, run the C ABI self-test on the packaged "
        "library (op/tests/abi_selftest.cpp; under qemu-user for another arch), and for "
        "ascendc-cpu with the emulated ACL runtime the aclnn example too",
    )
    parser.add_argument(
        "--out",
        type=lambda text: Path(text).resolve(),  # a path given here is the shell's: its cwd's
        default=ROOT / "dist" / "op",
        help="directory of the archive (default: dist/op of this checkout)",
    )
    parser.add_argument(
        "--plant-bug",
        choices=BUG_NAMES,
        default="",
        metavar="BUG",
        help=plant_bug_help(
            "build the operator with a known bug (for testing the farm): a run uses it only "
            "with the same --plant-bug"
        ),
    )
    parser.add_argument(
        "--list-bugs",
        action="store_true",
        help="list the planted bugs, a line each (name, what it breaks, where), and build nothing",
    )
    parser.add_argument(
        "--sanitize-check",
        action="store_true",
        help="build the target's library with ASan/UBSan and drive it; no package",
    )
    parser.add_argument("--matrix", help="with --sanitize-check: also run this tier's cases")
    parser.add_argument("--quiet", action="store_true", help="print only errors")
    parser.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--overflow-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        return drive(args.matrix, args.overflow_probe)
    if args.list_bugs:
        print("\n".join(bug_lines()))
        return 0
    # A build says when it starts and ends, on stderr ("build: twin x86_64" ... "build: done in
    # 42 s"); --quiet prints only errors.
    with announce.saying(None if args.quiet else announce.to_stderr):
        return _build(args)


def _build(args: argparse.Namespace) -> int:
    try:
        if args.sanitize_check:
            if args.arch not in (None, HOST_ARCH):
                raise BuildError(
                    f"--sanitize-check drives the library here: it builds for this machine's "
                    f"architecture only ({HOST_ARCH}), not {args.arch}"
                )
            if args.target not in NATIVE_TARGETS:
                raise BuildError(f"--sanitize-check: target {args.target} has no library to drive")
            report = sanitize_check(args.matrix, target=args.target)
            if not report.ok:
                print(report.output[-4000:], file=sys.stderr)
                print(f"sanitize check FAILED (exit {report.returncode})", file=sys.stderr)
                return 1
            if not args.quiet:
                print(f"sanitize check ok: {report.calls} calls, no sanitizer report")
            return 0
        if args.self_test and args.target not in NATIVE_TARGETS:
            raise BuildError(f"--self-test: target {args.target} has no C ABI library to test")
        if args.self_test and args.plant_bug:
            raise BuildError("--self-test checks the real operator: drop --plant-bug")
        make_output_dir(args.out, "--out")  # before the build, not after it
        path = build_package(args.target, args.out, args.plant_bug, arch=args.arch)
        if not args.quiet:
            print(
                f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  "
                f"sha256 {sha256_bytes(path.read_bytes())}"
            )
        if args.plant_bug and not args.quiet:  # a run without it builds the real operator
            print(planted_line(args.plant_bug, args.target), file=sys.stderr)
        if args.self_test:
            return selftest_package(path, args.target, check_arch(args.arch), args.quiet)
    except BuildError as exc:
        print(f"farm build: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def planted_line(bug: str, target: str) -> str:
    """What a planted build says after its archive: which commands run it (they build and use
    the real operator unless told the same --plant-bug)."""
    flags = f"--plant-bug {bug}" + ("" if target == DEFAULT_TARGET else f" --target {target}")
    return (
        f"planted bug {bug}: this package runs only where the command says so: "
        f"farm run {flags}, farm repro CASE {flags} (without it they run the real operator)"
    )
