"""`farm cases import --format ttk|atk|msopst|aclnn-ut FILE [FILE...] -o cases.json`: an
outside suite's cases as a farm case file (docs/importers.md).

Per source case it prints what the farm could not express and why: the case imported with a
note saying what differs, or not imported with the reason. It ends with one line:
"N source cases → M farm cases, K not imported, J with notes". Exit 0 when it wrote cases; 2
when it wrote none: no case could be imported (each one listed with why), a file it cannot read
at all or over an input limit (suites/limits.py), an unknown format or a bad output path (one
line). Exit 1 is farm run's "the operator failed", which an import never says.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from farm.util.argparsing import CommandParser
from farm.util.console import FarmConsole
from farm.util.errors import UsageError
from farm.util.visible import visible
from suites import casefile, limits
from suites.case import Case

from . import FORMATS, Conversion, Unreadable
from .common import merged


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(
        prog="farm cases import",
        description="convert an outside suite's cases into a farm case file (docs/importers.md)",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="the suite's case files")
    parser.add_argument(
        "--format", dest="format", metavar="FORMAT", help=f"one of: {', '.join(FORMATS)}"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="the case file to write")
    args = parser.parse_args(argv)
    if args.format not in FORMATS:
        what = f"unknown format {args.format!r}" if args.format else "no --format given"
        raise UsageError(f"{what} (use --format with one of: {', '.join(FORMATS)})")
    if not args.files:
        raise UsageError(f"no FILE given (name the {args.format} case files to import)")
    if not args.output:
        raise UsageError("no -o FILE given (the case file to write: .json, .yaml or .csv)")
    output = Path(args.output)
    casefile.file_kind(output)  # an unknown suffix stops here, before anything is read
    for file_name in args.files:
        if output.exists() and Path(file_name).exists() and output.samefile(file_name):
            raise UsageError(
                f"{output}: -o names a file being imported; writing there would replace the "
                "source suite's cases (write the case file to another path)"
            )

    parse = FORMATS[args.format]
    conversions: list[tuple[str, Conversion]] = []
    read = 0
    for file_name in args.files:
        path = Path(file_name)
        try:
            text = limits.read_text(path)
        except FileNotFoundError:
            raise UsageError(f"{path}: no such file (check the path)") from None
        except IsADirectoryError:
            raise UsageError(f"{path}: a directory (name the case files in it)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read it ({exc}); give a UTF-8 text file") from None
        try:
            result = parse(text, str(path))
        except Unreadable as exc:
            raise UsageError(f"{path}: {exc}") from None
        # The files of one import together are held to one file's limit, before this one's
        # source cases are converted into farm cases.
        read += len(result.source_cases)
        if len(args.files) > 1:
            limits.CASES.check(read, f"the {len(args.files)} {args.format} files together")
        conversions.append((str(path), result.convert(str(path))))

    console = FarmConsole(highlight=False)
    for label, conversion in conversions:
        _report(console, label, args.format, conversion)
    cases = _unique([c for _, conv in conversions for c in conv.cases])
    sources = sum(len(conv.result.source_cases) for _, conv in conversions)
    skipped = sum(len(conv.all_skipped) for _, conv in conversions)
    noted = sum(1 for c in cases if c.note)
    if cases:
        source = f"imported from {args.format}: " + ", ".join(Path(p).name for p, _ in conversions)
        try:
            written = casefile.dump(cases, output, source=source)
        except OSError as exc:
            raise UsageError(f"{output}: cannot write it ({exc})") from None
        console.print(f"wrote {len(cases)} farm cases to {escape(str(written))}")
    else:
        console.print(f"no case could be imported: {escape(str(output))} not written")
    console.print(
        f"{sources} source cases → {len(cases)} farm cases, {skipped} not imported, "
        f"{noted} with notes"
    )
    # Nothing to run is not a success, though every case is listed: a script that imports and
    # then runs stops here, with the code of every import that wrote nothing.
    return 0 if cases else 2


def _unique(cases: list[Case]) -> list[Case]:
    """Each case once (two files may make the same case: kept with both origins and notes)."""
    seen: dict[str, Case] = {}
    for case in cases:
        seen[case.id] = merged(seen[case.id], case) if case.id in seen else case
    return list(seen.values())


def _report(console: Console, path: str, fmt: str, conversion: Conversion) -> None:
    result = conversion.result
    console.print(
        f"[bold]{escape(path)}[/] ({fmt}): {len(result.source_cases)} source cases, "
        f"{len(conversion.cases)} farm cases"
    )
    # A note per entry, once: the same note on several families (the family named in it)
    # is one line naming them all; a note on some of an entry's families names those.
    noted: dict[tuple[str, str], list[str]] = {}
    made: dict[str, int] = {}
    for name, case in zip(conversion.case_names, conversion.cases, strict=True):
        made[name] = made.get(name, 0) + 1
        if case.note:
            noted.setdefault((name, case.note.replace(case.family, "\0")), []).append(case.family)
    lines: dict[str, list[str]] = {}
    for (name, note), families in noted.items():
        where = f" [{', '.join(families)}]" if len(families) < made[name] else ""
        text = note.replace("\0", "/".join(families))
        lines.setdefault(name, []).append(escape(f"note{where}: {text}"))
    for name, reason in conversion.all_skipped:
        lines.setdefault(name, []).append(f"[red]not imported[/]: {escape(reason)}")
    for name, family, other in conversion.merged:
        lines.setdefault(name, []).append(
            escape(f"[{family}] the same farm case as {other}: kept once (notes joined)")
        )
    order = {name: i for i, name in enumerate(result.source_cases)}
    for name in sorted(lines, key=lambda n: order.get(result.source_of(n), len(order))):
        for line in lines[name]:
            console.print(f"  {escape(visible(name))}: {visible(line)}")
