"""Importers of outside suites' case files: the samples under samples/ are ours, written from
each format's documented field lists (docs/importers.md)."""

from __future__ import annotations

from pathlib import Path

from suites.importers import FORMATS, Conversion, ImportResult

SAMPLES = Path(__file__).resolve().parent / "samples"


def parse(fmt: str, name: str) -> ImportResult:
    path = SAMPLES / name
    return FORMATS[fmt](path.read_text(encoding="utf-8"), str(path))


def parse_text(fmt: str, text: str) -> ImportResult:
    return FORMATS[fmt](text, "inline")


def convert(fmt: str, name: str) -> Conversion:
    return parse(fmt, name).convert(str(SAMPLES / name))


def accounted(result: ImportResult) -> None:
    """Every source case made an entry or is listed as not imported with a reason, and every
    entry and listing belongs to a source case."""
    made = {result.source_of(i.name) for i in result.imported}
    listed = {result.source_of(name) for name, _ in result.skipped}
    assert made | listed == set(result.source_cases)
    assert all(reason for _, reason in result.skipped)
    assert len(set(result.source_cases)) == len(result.source_cases)


def outcomes(conversion: Conversion) -> list[tuple[str, str, str]]:
    """(entry name, case id, the contract's reason) of each farm case."""
    return [
        (name, case.id, case.expected.reason)
        for name, case in zip(conversion.case_names, conversion.cases, strict=True)
    ]


def departure(expects: str, family: str, contract: str) -> str:
    """casefile's note where a source's expectation departs from the contract."""
    return (
        f"the source expects {expects} on {family}; the contract (SPEC section 2) {contract}: "
        "judged by the contract"
    )
