"""The command line as a user meets it: farm cases, farm repro, farm hosts, errors."""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.cli import HOSTS_SHOWN
from suites import matrix

REPO = Path(__file__).resolve().parents[2]


def farm(*args, env_extra=None, timeout=300):
    env = {**os.environ, "COLUMNS": "200", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "farm.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return {"FARM_RUNS": str(root), "FARM_STORE": str(root / "farm.sqlite")}


def test_cases_summary_shows_coverage():
    out = farm("cases", "--tier", "smoke", "--summary")
    assert out.returncode == 0, out.stderr
    for heading in ("rank", "dtype", "schedule", "family", "expectation", "rejection reason"):
        assert heading in out.stdout
    assert "bf16_unsupported_on_soc (161002)" in out.stdout
    assert f"{len(matrix.expand('smoke')):,}" in out.stdout


def test_cases_json_is_every_case_with_its_expectation():
    out = farm("cases", "--tier", "smoke", "--json")
    document = json.loads(out.stdout)
    assert (document["format"], document["version"]) == ("logsoftmaxgrad-cases", 1)
    cases = document["cases"]
    assert [c["id"] for c in cases] == [c.id for c in matrix.expand("smoke")]
    rejected = [c for c in cases if c["expect"]["kind"] == "reject"]
    assert rejected and all(c["expect"]["status"] in (161001, 161002) for c in rejected)


def test_unknown_tier_and_command_are_one_clear_line():
    out = farm("cases", "--tier", "weekly")
    assert out.returncode == 2
    assert "unknown tier 'weekly'; use one of: smoke, nightly, full" in out.stderr
    out = farm("frobnicate")
    assert out.returncode == 2 and "unknown command 'frobnicate'" in out.stderr


COMMANDS = ["run", "cases", "cases import", "cases promote", "hosts", "merge", "repro", "shrink",
            "bisect", "triage", "build", "lab", "report", "runs", "runs prune", "store",
            "store info", "store migrate", "baseline", "compare", "coverage"]  # fmt: skip
DOCSTRING_HELP = {"cases promote": "farm.results.promote", "triage": "farm.results.triage_command",
                  "repro": "farm.run.repro", "store": "farm.results.store_command"}  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_whose_description_is_whole(command, capsys):
    """--help exits 0; a description taken from a module's docstring is its first paragraph,
    not its first line cut mid-sentence."""
    from farm.cli import main

    code: int | str | None
    try:
        code = main([*command.split(), "--help"])
    except SystemExit as stop:  # argparse's way
        code = stop.code
    assert code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text
    if command in DOCSTRING_HELP:
        doc = importlib.import_module(DOCSTRING_HELP[command]).__doc__
        assert doc is not None, DOCSTRING_HELP[command]
        assert " ".join(doc.split("\n\n")[0].split()) in text


def test_version_is_the_package_version():
    from farm import __version__

    out = farm("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"farm {__version__}"


@pytest.mark.parametrize(
    "args, needle",
    [
        (("cases", "--tier", "weekly"), "unknown tier 'weekly'"),
        (("runs",), "is newer than this farm"),
        (("build", "--target", "ascend"), "needs the CANN toolkit"),
        (("run", "--store", "postgresql://farm:hunter2@127.0.0.1:1/farm"), "farm:***@127.0.0.1:1"),
        (("store", "info", "--store", "mysql://db/farm"), "not a store the farm knows"),
        (("coverage", "--backend", "torch"), "--backend torch: give acl, native or acl,native"),
    ],
)
def test_known_failures_are_one_line_without_a_traceback(tmp_path, args, needle):
    """Every error the farm raises on purpose is a FarmError: exit 2, one line that says the fix."""
    import sqlite3

    store = tmp_path / "farm.sqlite"
    with sqlite3.connect(store) as db:  # a store written by a newer farm
        db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT)")
        db.execute("INSERT INTO schema_version VALUES (99, 'later')")
    out = (
        farm(*args, "--out", str(tmp_path))
        if args[0] == "build"
        else farm(*args, env_extra={"FARM_STORE": str(store)})
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert needle in out.stderr and "Traceback" not in out.stderr
    # One line, after a build's own start and end lines (farm/util/announce.py).
    said = [line for line in out.stderr.strip().splitlines() if not line.startswith("build: ")]
    assert len(said) == 1, out.stderr
    assert "hunter2" not in out.stdout + out.stderr


def test_repro_gives_the_same_numbers_on_every_host_of_the_family(runs):
    case_id = _smoke_case(family="ascend910b", dtype="float16", shape=(3, 17))
    records = []
    for host in ("emu-a2-01", "emu-a2-02"):
        out = farm("repro", case_id, "--host", host, "--json", env_extra=runs)
        assert out.returncode == 0, out.stderr
        records.append(json.loads(out.stdout))
    a, b = records
    assert a["record"]["host"] == "emu-a2-01" and b["record"]["host"] == "emu-a2-02"
    assert a["inputs"] == b["inputs"] and a["inputs"]["dy"]["shape"] == [3, 17]
    for key in ("mere", "mare", "rmse", "max_abs", "ulp_max"):
        assert a["record"]["metrics"][key] == b["record"]["metrics"][key]
    assert a["record"]["tiling"] == b["record"]["tiling"]
    assert a["record"]["tiling"]["schedule_name"] == "REDUCE_TAIL"
    assert a["target"] == b["target"] == "ascendc-cpu"  # the default: the emulated real kernel


def _smoke_case(**want):
    return next(
        c.id for c in matrix.expand("smoke") if all(getattr(c, k) == v for k, v in want.items())
    )


def test_repro_prints_inputs_tiling_and_metrics(runs):
    out = farm("repro", "310b_bf16_3x17_d-1_y.uniform_dy.normal", env_extra=runs)
    # bf16 on the 310B family: the expected rejection is the pass.
    assert out.returncode == 0, out.stdout + out.stderr
    assert "bf16_unsupported_on_soc" in out.stdout and "161002" in out.stdout
    mid = _smoke_case(family="ascend910b", schedule="REDUCE_MID", layout="contiguous")
    out = farm("repro", mid, env_extra=runs)
    assert out.returncode == 0, out.stdout + out.stderr
    for text in ("tiling record", "REDUCE_MID", "metrics", "mere", "worst elements", "passed"):
        assert text in out.stdout
    assert "target   ascendc-cpu (the real Ascend C kernel on the CPU emulation)" in out.stdout
    out = farm("repro", mid, "--target", "twin", env_extra=runs)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "target   twin (the CPU twin" in out.stdout


def test_repro_refuses_a_host_of_the_wrong_family(runs):
    case = _smoke_case(family="ascend910b", schedule="REDUCE_TAIL")
    out = farm("repro", case, "--host", "emu-310b-01", env_extra=runs)
    assert out.returncode == 2
    assert "pick a host of that family" in out.stderr


def test_hosts_check_shows_a_healthy_embedded_pool(runs):
    out = farm("hosts", "--check", env_extra=runs)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == list(HOSTS_SHOWN)
    # Piped: a whole line a host, every character of it (a terminal gets a table).
    for host, line in zip(("emu-a2-01", "emu-a2-02", "emu-310b-01"), lines[1:], strict=True):
        assert line.startswith(host) and " good" in line and "PyTorch's results " in line
    assert "bad" not in out.stdout


def test_bad_inventory_is_one_clear_message(tmp_path, runs):
    bad = tmp_path / "inventory.toml"
    bad.write_text('[[host]]\nname = "x"\naddress = "127.0.0.1"\nsoc = "Ascend910X"\n')
    out = farm("run", "--inventory", str(bad), "--no-report", env_extra=runs)
    assert out.returncode == 2
    assert "Ascend910X" in out.stderr and "[[host]] x" in out.stderr
    assert not list(Path(runs["FARM_RUNS"]).glob("*-smoke-*"))


def test_a_closed_pipe_ends_farm_quietly():
    """`farm cases --json | head -c 10`: the reader goes away; no BrokenPipeError traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "farm.cli", "cases", "--tier", "smoke", "--json"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)  # the JSON is some 200 KB, past a pipe's buffer: the writer waits
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err  # 128 + SIGPIPE, as a shell's writer ends
    assert err == ""


def test_a_terminal_that_cannot_show_a_character_gets_its_escape_not_a_crash(tmp_path):
    """A Latin-1 or ASCII locale and the importer's "→" (or a path in another script): the
    command ended in UnicodeEncodeError after its work."""
    sample = REPO / "tests" / "suites" / "importers" / "samples" / "logsoftmaxgrad_ttk.csv"
    out = tmp_path / "c.json"
    proc = farm("cases", "import", "--format", "ttk", str(sample), "-o", str(out),
                env_extra={"PYTHONIOENCODING": "ascii"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "source cases \\u2192 14 farm cases" in proc.stdout and out.is_file()


def test_output_that_cannot_be_written_is_exit_2_never_1(runs):
    """`farm runs > log` on a full disk ended in a traceback and exit 1: a product failure to
    CI. /dev/full refuses every write with ENOSPC."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "farm.cli", "cases", "--tier", "smoke", "--json"],
            cwd=REPO, env={**os.environ, **runs}, stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=300,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "error: farm cases: No space left on device (its output)\n"


def test_the_farms_own_failure_is_exit_2_never_1():
    """A bug of the farm is not the operator's failure: its traceback, a line, exit 2."""
    code = (
        "import sys; from farm import cli; "
        "cli.COMMANDS['runs'] = (lambda argv: 1 / 0, ''); "
        "sys.argv = ['farm', 'runs']; sys.exit(cli.entry())"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert "ZeroDivisionError" in proc.stderr
    assert proc.stderr.endswith(
        "error: the farm itself failed (the traceback above is its own: please report it); exit 2\n"
    )


def test_an_empty_farm_runs_is_the_default_runs_directory_not_the_shells(tmp_path):
    """FARM_RUNS= (a CI variable left empty) was the directory the command ran in: a run's
    directories, its store and the pool's state were written among the user's files."""
    code = "from farm.util import paths; print(paths.RUNS_DIR)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "FARM_RUNS": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == REPO / "runs"


def test_a_reader_that_goes_away_ends_a_command_as_sigpipe_not_as_a_failure():
    """`farm cases | head`: rich answered the closed pipe with exit 1, the farm's "the operator
    failed". A shell's writer ends with 141 (128 + SIGPIPE), and so does the farm."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "farm.cli", "cases", "--tier", "full"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)  # the tier's 1.7 MB list is far more than a pipe holds
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err


def test_an_error_quoting_a_huge_argument_is_one_readable_line_with_its_fix(capsys):
    """`--tier` (or a path, a -k expression) of 5,000 characters was echoed whole in the error:
    one line of 5,000 characters. Its middle is left out, its start and its fix kept."""
    from farm.cli import main

    assert main(["cases", "--tier", "g" * 5000]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert len(line) < 1100 and "characters ...]" in line
    assert line.startswith("error: unknown tier 'ggg")
    assert line.endswith("'; use one of: smoke, nightly, full")


def test_a_message_naming_a_long_path_is_one_line_in_a_log(tmp_path):
    """In a pipe or a CI log rich wraps at 80 columns: "written to" and a path (or a command to
    copy) came out cut over two lines, neither of which could be copied or searched whole."""
    out_dir = tmp_path / ("a-directory-with-a-long-name-" * 3)
    out_dir.mkdir()
    path = out_dir / "smoke-cases.json"
    done = farm("cases", "--tier", "smoke", "-o", str(path), env_extra={"COLUMNS": ""})
    assert done.returncode == 0, done.stderr
    assert f"cases written to {path}\n" in done.stdout, done.stdout


def test_farm_run_reaches_the_run_command(monkeypatch):
    """`farm run` calls farm/cli/run_command.py run: the package's name run_command is the
    module, not the command end (farm/util/command_end.py) that every command goes through."""
    from farm import cli
    from farm.cli import run_command as module

    called: list[tuple] = []

    def run(*args, **kwargs) -> int:
        called.append(args)
        return 0

    monkeypatch.setattr(module, "run", run)
    assert cli.main(["run", "--tier", "smoke", "--no-report"]) == 0
    assert len(called) == 1
