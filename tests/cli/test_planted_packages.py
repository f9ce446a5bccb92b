"""Planted bugs that cannot be mistaken: `farm build --list-bugs` names each with what it breaks;
no command offers an empty bug; `farm repro` and `farm shrink` of a case from a planted run
rerun it on that run's package and say so in one line (--plant-bug none: the real operator);
`farm triage -o` tells the run's package in the command it prints."""

from __future__ import annotations

import argparse

import pytest

from farm.cli import case_package, repro_command
from farm.pool import build
from farm.results import triage_command
from farm.results.store import RunStore
from farm.run import repro
from suites import casefile
from suites.case import Case
from tests.results.conftest import RUN_META, failed, record

PLANTED = "logsoftmaxgrad-0.1.0-ascendc-cpu-bug-trunc_narrow.tar.gz"
CASE = Case("ascend910b", "float16", (2, 64), (1,))


def _store(tmp_path, *runs: tuple[str, list[dict]]) -> str:
    """A store of runs, oldest first: (package file, records)."""
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        for n, (file, records) in enumerate(runs):
            run_id = store.begin_run(
                {
                    **RUN_META,
                    "target": "ascendc-cpu",
                    "backend": "acl",  # the target's default
                    "started_at": f"2026-12-0{n + 1}T10:00:00+00:00",
                    "package": {"file": file, "sha256": "cd" * 32},
                }
            )
            store.add_results(run_id, records)
            store.finish_run(run_id, 1 if any(r["outcome"] == "failed" for r in records) else 0)
    return str(path)


def test_build_lists_every_bug_a_line_each_and_builds_nothing(capsys, tmp_path):
    assert build.main(["--list-bugs", "--out", str(tmp_path / "never")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(build.BUG_NAMES)
    for line, name in zip(lines, build.BUG_NAMES, strict=True):
        assert build.BUG_TEXT[name] in line
    assert "drops" not in lines[0] and "unaligned remainder is dropped" in lines[0]  # tail's
    assert "[twin and ascendc-cpu]" in lines[0]
    assert "[ascendc-cpu, the aclnn layer (the acl backend)]" in lines[-1]
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("command", ["run", "repro", "shrink", "build"])
def test_plant_bug_is_offered_without_an_empty_choice(command, capsys):
    from farm.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--plant-bug BUG" in text  # visible in every command's help, repro's too
    assert "farm build --list-bugs" in text
    case = ["x"] if command in ("repro", "shrink") else []
    assert main([command, *case, "--plant-bug", ""]) == 2
    assert "--plant-bug: invalid choice: ''" in capsys.readouterr().err


def test_repro_of_a_case_of_a_planted_run_takes_that_package(tmp_path):
    store = _store(tmp_path, ("real.tar.gz", [record(CASE.id)]), (PLANTED, [failed(CASE.id)]))
    package = case_package.resolve(CASE.id, None, None, None, store)
    assert (package.target, package.plant_bug) == ("ascendc-cpu", "trunc_narrow")
    assert package.note.count("\n") == 0
    assert "the planted bug trunc_narrow" in package.note and "--plant-bug none" in package.note
    assert package.run_id in package.note
    # Told otherwise: --plant-bug none is the real operator, another bug that bug; no note.
    none = case_package.resolve(CASE.id, None, None, "none", store)
    assert (none.plant_bug, none.note) == ("", "")
    assert case_package.resolve(CASE.id, None, None, "tail", store).plant_bug == "tail"
    # A case the planted run does not hold: the real operator's run, no note.
    other = _store(tmp_path / "o", (PLANTED, [failed("another")]))
    assert case_package.resolve(CASE.id, None, None, None, other) == case_package.Package(
        "ascendc-cpu", ""
    )


def test_repro_without_a_store_or_with_an_unknown_run(tmp_path):
    missing = str(tmp_path / "none.sqlite")
    assert case_package.resolve(CASE.id, None, None, None, missing).plant_bug == ""
    store = _store(tmp_path, (PLANTED, [failed(CASE.id)]))
    with pytest.raises(Exception, match="--run nope: no such run"):
        case_package.resolve(CASE.id, "nope", None, None, store)


def test_farm_repro_says_so_and_reruns_on_the_planted_package(tmp_path, monkeypatch, capsys):
    store = _store(tmp_path, (PLANTED, [failed(CASE.id)]))
    seen: list[argparse.Namespace] = []

    def reproduce(args: argparse.Namespace) -> int:
        seen.append(args)
        return 1

    monkeypatch.setattr(repro, "reproduce", reproduce)
    assert repro_command.main([CASE.id, "--store", store]) == 1
    (args,) = seen
    assert (args.target, args.plant_bug) == ("ascendc-cpu", "trunc_narrow")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "planted bug trunc_narrow" in out[0]
    assert repro_command.main([CASE.id, "--store", store, "--plant-bug", "none"]) == 1
    assert seen[-1].plant_bug == "none" and capsys.readouterr().out == ""


def test_triage_output_line_carries_the_runs_package(tmp_path, capsys):
    cases = [Case("ascend910b", "float16", (2, d1, 5), (1,)) for d1 in (16, 130, 200)]
    path = casefile.dump(cases, tmp_path / "cases.json")
    records = [record(c.id) if c.shape[1] < 64 else failed(c.id) for c in cases]
    for r, c in zip(records, cases, strict=True):
        r.update(shape=list(c.shape), axes=list(c.axes), schedule=c.schedule, dtype=c.dtype)
    with RunStore(tmp_path / "farm.sqlite") as store:
        run_id = store.begin_run(
            {
                **RUN_META,
                "selection": {"tier": None, "files": [str(path)], "names": ["cases"]},
                "package": {"file": PLANTED},
            }
        )
        store.add_results(run_id, records)
        store.finish_run(run_id, 1)
    out = tmp_path / "group.json"
    db = str(tmp_path / "farm.sqlite")
    assert triage_command.main([run_id, "--store", db, "--group", "1", "-o", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert f"farm run --cases {out} --target twin --plant-bug trunc_narrow" in printed


def test_a_planted_build_says_which_commands_use_it():
    from farm.pool.build.command import planted_line

    line = planted_line("tail", "twin")
    assert "farm run --plant-bug tail --target twin" in line
    assert "farm repro CASE --plant-bug tail --target twin" in line and "\n" not in line


def _run_of(tmp_path, backend: str, files: list[str], records: list[dict]) -> str:
    path = tmp_path / "farm.sqlite"
    with RunStore(path) as store:
        run_id = store.begin_run(
            {
                **RUN_META,
                "target": "ascendc-cpu",
                "backend": backend,
                "selection": {"tier": None, "files": files, "names": files},
                "package": {"file": "real.tar.gz", "sha256": "cd" * 32},
            }
        )
        store.add_results(run_id, records)
        store.finish_run(run_id, 1)
    return str(path)


def test_repro_reruns_a_case_as_its_run_did_its_backend_and_its_case_file(
    tmp_path, monkeypatch, capsys
):
    """A case of a case file that a native run held (not the target's default, acl): repro finds
    it in the run's copy of the file and calls the operator's C ABI, and says so in one line
    (issue 58)."""
    run_dir = tmp_path / "runs" / "r" / "cases"
    run_dir.mkdir(parents=True)
    other = casefile.dump([Case("ascend910b", "float32", (3, 5), (1,))], run_dir / "0-other.json")
    mine = casefile.dump([CASE], run_dir / "1-mine.json")
    store = _run_of(tmp_path, "native", [str(other), str(mine)], [failed(CASE.id)])
    seen: list[argparse.Namespace] = []

    def reproduce(args: argparse.Namespace) -> int:
        seen.append(args)
        return 1

    monkeypatch.setattr(repro, "reproduce", reproduce)
    assert repro_command.main([CASE.id, "--store", store]) == 1
    (args,) = seen
    assert (args.backend, args.cases, args.target) == ("native", [str(mine)], "ascendc-cpu")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1, out
    assert "the native backend and its case file" in out[0]
    assert f"--backend native --cases {mine}" in out[0]
    # Told otherwise: the command line's backend and case file, nothing taken.
    assert repro_command.main([CASE.id, "--store", store, "--backend", "acl", "--cases",
                               str(mine)]) == 1  # fmt: skip
    assert (seen[-1].backend, seen[-1].cases) == ("acl", [str(mine)])
    assert capsys.readouterr().out == ""


def test_repro_says_in_one_line_when_the_runs_case_file_is_gone(tmp_path):
    gone = str(tmp_path / "runs" / "old" / "cases" / "0-mine.json")
    store = _run_of(tmp_path, "native", [gone], [failed(CASE.id)])
    package = case_package.resolve(CASE.id, None, None, None, store)
    assert package.case_files == () and package.backend == "native"
    assert package.note.count("\n") == 0 and f"{gone} is gone" in package.note
    assert "pass that case file with --cases" in package.note


def test_a_tier_case_of_a_run_with_case_files_takes_none_of_them(tmp_path):
    other = casefile.dump([Case("ascend910b", "float32", (3, 5), (1,))], tmp_path / "other.json")
    store = _run_of(tmp_path, "acl", [str(other)], [failed(CASE.id)])
    package = case_package.resolve(CASE.id, None, None, None, store)
    assert (package.case_files, package.note) == ((), "")
