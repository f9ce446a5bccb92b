"""Input limits: a case file over one (size, cases, nesting, YAML aliases) is refused with one
line naming the file, the measure and the limit, before the work the limit bounds; the farm run
on such a file stays within a memory ceiling (RLIMIT_AS) and never hangs.

No test here times anything: what is asserted is that the expensive step is never reached (the
read, the parser, the making of cases), and that a subprocess under an address-space limit of
1 GiB answers at all (its timeout only catches a hang)."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from suites import casefile, limits
from suites.case import Case
from suites.limits import LimitExceeded

REPO = Path(__file__).resolve().parents[2]
ENTRY = {"dtype": "float32", "shape": [2, 3], "axes": -1}
HEAD = "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
MEMORY_CEILING = 1 << 30  # bytes of address space for the farm under test


def _ceiling() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))


def bounded_farm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`farm ARGS` in a subprocess that cannot grow past 1 GiB; 120 s only catches a hang."""
    return subprocess.run(
        [sys.executable, "-m", "farm.cli", *args],
        cwd=REPO,
        env={**os.environ, "COLUMNS": "300", "OPENBLAS_NUM_THREADS": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_ceiling,
    )


def _refused_in_one_line(out: subprocess.CompletedProcess, *needles: str) -> str:
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def billion_laughs(path: Path) -> Path:
    """Ten notes, each alias-expanding to nine of the one before: 9^9 strings from 2 KB."""
    lines = [HEAD, "  - {dtype: float32, shape: [2, 3], axes: -1, note: &l0 lol}\n"]
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"  - {{dtype: float32, shape: [2, 3], axes: -1, note: &l{level} [{refs}]}}\n")
    path.write_text("".join(lines))
    return path


def test_a_billion_laughs_yaml_is_refused_by_its_expanded_size(tmp_path):
    path = billion_laughs(tmp_path / "laughs.yaml")
    assert path.stat().st_size < 4096
    with pytest.raises(LimitExceeded) as err:
        casefile.load(path)
    assert str(err.value) == (
        f"{path}: more than the limit of 5,000,000 YAML nodes (aliases expanded); if it is "
        "meant to be this big, set FARM_MAX_YAML_NODES (e.g. "
        "FARM_MAX_YAML_NODES=20000000)"
    )
    line = _refused_in_one_line(bounded_farm("cases", "--cases", str(path)), "YAML nodes")
    assert line.startswith(f"error: {path}: more than the limit of 5,000,000")


def test_aliases_within_the_limit_read_as_before(tmp_path):
    path = tmp_path / "shared.yaml"
    path.write_text(
        HEAD + "  - {dtype: float32, shape: [2, 3], axes: -1, tolerance: &tol {rtol: 0.01, "
        "atol: 0.01, max_fail_fraction: 0}}\n  - {dtype: float16, shape: [4], axes: 0, "
        "tolerance: *tol}\n"
    )
    cases = casefile.load(path)
    assert {c.tolerance for c in cases} == {cases[0].tolerance}
    assert cases[0].tolerance is not None


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text(HEAD + "  - {dtype: float32, shape: &s [2, *s], axes: -1}\n")
    with pytest.raises(casefile.CaseFileError, match=r"line 4: alias \*s inside its own anchor"):
        casefile.load(path)


def test_a_100_mb_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "huge.json"
    entry = json.dumps({**ENTRY, "note": "n"}) + ","
    count = 100 * 2**20 // len(entry) + 1  # some 1.7 million small cases
    with path.open("w") as f:
        f.write('{"format": "logsoftmaxgrad-cases", "version": 1, "cases": [')
        for _ in range(count // 10_000 + 1):
            f.write(entry * 10_000)
        f.write(json.dumps(ENTRY) + "]}")
    size = path.stat().st_size
    assert size > 100 * 2**20
    line = _refused_in_one_line(
        bounded_farm("cases", "--cases", str(path)), f"{size:,} bytes", "limit of 67,108,864"
    )
    assert "FARM_MAX_INPUT_BYTES" in line

    def never(*args, **kwargs):
        raise AssertionError("the file was read")

    monkeypatch.setattr(Path, "read_text", never)
    with pytest.raises(LimitExceeded):
        casefile.load(path)


@pytest.mark.parametrize("name", ["zero.json", "zero.yaml", "zero.csv", "zero.toml", "zero.cpp"])
def test_a_file_whose_size_says_nothing_is_read_no_further_than_the_limit(tmp_path, name):
    """/dev/zero (or a named pipe) behind a case file's, an inventory's or an importer input's
    name: its size is 0, so it passed the size check, and it was read until memory ran out."""
    from farm.pool.inventory import load_inventory
    from suites.importers.command import main as import_main

    path = tmp_path / name
    path.symlink_to("/dev/zero")
    refused = r"more than the limit of 67,108,864 bytes; if it is meant to be this big"
    with pytest.raises(LimitExceeded, match=refused):
        if name.endswith(".toml"):
            load_inventory(path)
        elif name.endswith(".cpp"):
            import_main(["--format", "aclnn-ut", str(path), "-o", str(tmp_path / "o.json")])
        else:
            casefile.load(path)


def test_the_size_limit_is_raised_by_its_variable(tmp_path, monkeypatch):
    path = tmp_path / "small.json"
    path.write_text(json.dumps([ENTRY]))
    monkeypatch.setenv("FARM_MAX_INPUT_BYTES", "10")
    with pytest.raises(LimitExceeded, match=r"small.json: \d+ bytes, over the limit of 10;"):
        casefile.load(path)
    monkeypatch.setenv("FARM_MAX_INPUT_BYTES", "100000")
    assert len(casefile.load(path)) == 2  # one per family
    monkeypatch.setenv("FARM_MAX_INPUT_BYTES", "lots")
    with pytest.raises(casefile.UsageError, match="FARM_MAX_INPUT_BYTES='lots'"):
        casefile.load(path)


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".csv"])
def test_too_many_cases_are_refused_before_any_case_is_made(tmp_path, monkeypatch, suffix):
    monkeypatch.setenv("FARM_MAX_INPUT_CASES", "10")
    path = tmp_path / f"many{suffix}"
    if suffix == ".csv":
        path.write_text("dtype,shape,axes\n" + "float32,2x3,-1\n" * 11)
    else:
        path.write_text(
            json.dumps({"format": casefile.FORMAT, "version": 1, "cases": [ENTRY] * 11})
        )

    def never(*args, **kwargs):
        raise AssertionError("a case was made")

    monkeypatch.setattr(casefile, "entries_to_cases", never)
    with pytest.raises(
        LimitExceeded,
        match=r"(11 cases, over the limit of 10|more than the limit of 10 cases); .*FARM_MAX_INPUT",
    ):
        casefile.load(path)


def test_the_case_files_of_one_run_together_are_held_to_the_limit(tmp_path, monkeypatch):
    """Each file within the limit, a run of many of them was not: 20 files of 100,000 cases
    made two million cases (some 14 GB) before anything ran."""
    monkeypatch.setenv("FARM_MAX_INPUT_CASES", "10")
    paths = []
    for i in range(3):
        entries = [dict(ENTRY, shape=[2, 3 + 10 * i + k]) for k in range(4)]
        paths.append(tmp_path / f"part{i}.json")
        paths[-1].write_text(
            json.dumps({"format": casefile.FORMAT, "version": 1, "cases": entries})
        )
    assert len(casefile.load_many(paths[:2])) == 16  # 8 entries, one case per family
    made: list[str] = []
    real = casefile.entries_to_cases

    def noting_the_source(entries: list, source: str, *rest: Any) -> list[Case]:
        made.append(source)
        return real(entries, source, *rest)

    monkeypatch.setattr(casefile, "entries_to_cases", noting_the_source)
    with pytest.raises(
        LimitExceeded, match=r"^the 3 case files together: 12 cases, over the limit of 10"
    ):
        casefile.load_many(paths)
    assert made == [str(paths[0]), str(paths[1])]  # the third file's cases were never made


DEEP = 1_000_000  # far past Python's recursion limit: a parser that recurses would fail


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".json", "[" * DEEP + "]" * DEEP),
        (".json", '{"cases": [{"dtype": "float32", "note": ' + "[" * DEEP),  # never closed
        (".yaml", HEAD + "  - {dtype: float32, shape: " + "[" * DEEP + "]" * DEEP + "}\n"),
        (".yaml", HEAD + "  - note:\n" + "".join(f"{' ' * (6 + i)}- \n" for i in range(200))),
        (".csv", "dtype,shape,axes\nfloat32," + "[" * 100_000 + ",-1\n"),  # csv's cell limit
    ],
    ids=["json", "json-unclosed", "yaml-flow", "yaml-block", "csv-cell"],
)
def test_deep_nesting_is_refused_before_a_parser_recurses(tmp_path, monkeypatch, suffix, text):
    path = tmp_path / f"deep{suffix}"
    path.write_text(text)

    def never(*args, **kwargs):
        raise AssertionError("the parser was reached")

    monkeypatch.setattr(casefile.JSON_DECODER, "raw_decode", never)
    for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        monkeypatch.setattr(loader, "get_single_node", never)
    monkeypatch.setattr(json, "loads", never)
    with pytest.raises(LimitExceeded) as err:
        casefile.load(path)
    message = str(err.value)
    assert re.search(
        r": ([\d,]+ levels of nesting, over the limit of 64|more than the limit of 64 levels of "
        r"nesting); no case file or suite input needs more",
        message,
    ), message
    assert len(message.splitlines()) == 1


def test_deep_json_in_a_subprocess_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * DEEP + "]" * DEEP)
    _refused_in_one_line(bounded_farm("cases", "--cases", str(path)), "levels of nesting")


def test_nesting_is_counted_as_json_reads_it():
    assert limits.json_depth('{"a": [1, {"b": "[[[[\\"[["}], "c": {}}') == 3
    assert limits.json_depth("[[[") == 3  # unclosed: the levels a parser opens before failing
    assert limits.json_depth('"' + '\\"' * 1000) == 0  # one unterminated string
    assert limits.json_depth("7") == 0


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_an_integer_past_pythons_digits_is_one_line(tmp_path, suffix):
    path = tmp_path / f"long{suffix}"
    path.write_text(json.dumps([ENTRY])[:-2] + ', "seed": ' + "1" * 5000 + "}]")
    with pytest.raises(casefile.CaseFileError) as err:
        casefile.load(path)
    assert str(err.value).startswith(f"{path}: not {suffix[1:].upper()} the farm can read (")
    assert "5000 digits" in str(err.value).replace(",", "")
