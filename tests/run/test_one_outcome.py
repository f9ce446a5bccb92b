"""One outcome per case: a suite check that fails after the record was written (the tiling
check) amends the record, so the store, the summary and the exit code say what JUnit says; after
any stop JUnit and the Allure results hold exactly the stored cases (farm/run/reconcile.py);
a runs directory that refuses writes is one line (farm/util/run_dir.py), and the fault injection
the e2e tests use refuses what a full disk would (farm/run/fault_injection.py); a signal to the
orchestrator's pid reaches its workers."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

from farm.agent.record import Outcome, ResultRecord
from farm.cli.run_command import collect_records
from farm.results.store import read_records, store_location
from farm.run import fault_injection, plugin, reconcile
from farm.run.records_file import RecordFiles, RecordWriter
from farm.util import interrupts, paths, run_dir
from farm.util import proc as procfs
from farm.util.errors import RunDirUnwritable
from suites import matrix
from suites.tiling import TilingMismatch
from tests.stores import stored_run


class Writer:
    def __init__(self):
        self.written: list[dict] = []

    def write(self, record):
        self.written.append(record)


def report_after(item, failed: bool, message: str = ""):
    """Drive the plugin's makereport wrapper for the call phase of `item`."""
    crash = SimpleNamespace(message=message)
    report = SimpleNamespace(when="call", failed=failed, longrepr=SimpleNamespace(reprcrash=crash))
    wrapper = plugin.pytest_runtest_makereport(item, None)
    next(wrapper)
    with pytest.raises(StopIteration):
        wrapper.send(SimpleNamespace(get_result=lambda: report))


def item_with(record, writer):
    item = SimpleNamespace(stash=pytest.Stash())
    item.stash[plugin._RECORD] = (record, writer)
    return item


def test_a_check_failing_after_a_passed_record_amends_it():
    writer = Writer()
    record = {"case_id": "c", "outcome": "passed", "category": None, "message": "PASS"}
    message = f"{TilingMismatch.__module__}.TilingMismatch: [tiling] planned differently: key 768"
    report_after(item_with(record, writer), failed=True, message=message)
    (amended,) = writer.written
    assert (amended["outcome"], amended["category"]) == ("failed", "tiling")
    assert "[tiling] planned differently" in amended["message"]
    assert record["outcome"] == "passed"  # the first record is kept as it was written


@pytest.mark.parametrize("outcome, failed", [("passed", False), ("failed", True)])
def test_nothing_is_amended_when_the_record_already_says_it(outcome, failed):
    writer = Writer()
    record = {"case_id": "c", "outcome": outcome, "category": None, "message": ""}
    report_after(item_with(record, writer), failed=failed, message="AssertionError: x")
    assert writer.written == []


def test_the_last_record_of_a_case_counts(tmp_path):
    case = matrix.expand("smoke")[0]
    records = tmp_path / "records"
    records.mkdir()
    first = {"case_id": case.id, "outcome": "passed"}
    amended = {"case_id": case.id, "outcome": "failed", "category": "tiling"}
    import json

    (records / "gw0.jsonl").write_text(json.dumps(first) + "\n" + json.dumps(amended) + "\n")
    got, _ = collect_records(tmp_path, [case])
    assert got[0]["outcome"] == "failed" and got[0]["category"] == "tiling"


def test_records_read_as_they_are_written_are_the_records_read_at_the_end(tmp_path):
    """farm run parses the records files while its cases run (RecordFiles.following): what it
    has at the end is read_records' answer, whatever was half-written when it looked."""
    records = tmp_path / "records"
    records.mkdir()
    lines = {
        "gw0.jsonl": [{"case_id": "a", "outcome": "passed"}, {"case_id": "b", "outcome": "passed"}],
        "gw1.jsonl": [{"case_id": "c", "outcome": "broken"}, {"case_id": "a", "outcome": "failed"}],
    }
    text = {name: "".join(json.dumps(r) + "\n" for r in recs) for name, recs in lines.items()}
    files = RecordFiles(tmp_path)
    assert files.read() == ({}, [])
    # Each file written in pieces, cut mid-line: a piece without its newline waits.
    for cut in (7, 40, None):
        for name, whole in text.items():
            (records / name).write_text(whole[:cut] if cut else whole)
        files.read()
    (records / "gw0.jsonl").write_text(text["gw0.jsonl"] + '{"case_id": "b", "outc')
    got = files.read(final=True)
    assert got == read_records(tmp_path)
    by_id, notes = got
    assert by_id["a"]["outcome"] == "failed"  # gw1 comes after gw0, as read_records has it
    assert notes == ["gw0.jsonl:3: unreadable record (a worker died mid-write)"]
    # The store takes each record as the line it was read from (the last one of its case); a
    # record that was not read here (a lost case's, a copy) is encoded by the store.
    lost = {"case_id": "d", "outcome": "broken"}
    texts = files.texts([by_id["a"], dict(by_id["b"]), by_id["c"], lost])
    assert texts == {"a": json.dumps(lines["gw1.jsonl"][1]), "c": json.dumps(lines["gw1.jsonl"][0])}
    assert files.texts([by_id["b"]]) == {"b": json.dumps(lines["gw0.jsonl"][1])}
    (records / "gw1.jsonl").unlink()  # gone since: its records are encoded by the store
    assert files.texts(by_id.values()) == {"b": json.dumps(lines["gw0.jsonl"][1])}
    gw0 = records / "gw0.jsonl"  # rewritten since (no farm process does): not taken either
    gw0.write_text(gw0.read_text().replace('"b"', '"z"'))
    assert files.texts(by_id.values()) == {}


def test_records_followed_while_the_run_goes_on(tmp_path, monkeypatch):
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "gw0.jsonl").write_text('{"case_id": "a", "outcome": "passed"}\n')
    files = RecordFiles(tmp_path)
    parsed = threading.Event()
    read = files.read

    def reading(final=False):
        got = read(final)
        if got[0]:
            parsed.set()
        return got

    monkeypatch.setattr(files, "read", reading)
    with files.following(every=0.01):
        assert parsed.wait(60), "the follower never read the records file"
    assert read(final=True)[0] == {"a": {"case_id": "a", "outcome": "passed"}}


# -- every output holds the stored cases (farm/run/reconcile.py) ------------------------

SMOKE = {c.id: c for c in matrix.expand("smoke")}


def stored(*outcomes: Outcome) -> list[ResultRecord]:
    """Records of the first smoke cases with these outcomes."""
    cases = list(SMOKE.values())[: len(outcomes)]
    return [
        {"case_id": c.id, "family": c.family, "outcome": o, "category": None, "message": o}
        for c, o in zip(cases, outcomes, strict=True)
    ]


def nodeid(case_id: str) -> str:
    return f"suites/test_precision.py::test_precision[{case_id}]"


def junit_ids(path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    out: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        name = case.get("name")
        assert name is not None, "a testcase without a name"
        case_id = plugin.case_id_of(name)
        assert case_id is not None, name
        out[case_id] = (
            "failed" if "failure" in kinds else "broken" if "error" in kinds else "passed"
        )
    return out


def test_junit_keeps_pytests_entries_of_stored_cases_only_and_adds_the_missing(tmp_path):
    records = stored("passed", "failed", "broken")
    a, b, c = (r["case_id"] for r in records)
    pytest_xml = tmp_path / "pytest.xml"
    pytest_xml.write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2" failures="0" '
        f'errors="0"><testcase classname="suites.test_precision" name="test_precision[{a}]" '
        'time="1.5"><properties><property name="farm_host" value="h"/></properties></testcase>'
        '<testcase classname="suites.test_precision" name="test_precision[no-record]" '
        'time="2"/></testsuite></testsuites>'
    )
    out = tmp_path / "junit.xml"
    reconcile.junit(pytest_xml, out, records, {r["case_id"]: nodeid(r["case_id"]) for r in records})
    assert junit_ids(out) == {a: "passed", b: "failed", c: "broken"}
    text = out.read_text()
    assert 'time="1.5"' in text  # pytest's own entry kept as it was
    assert 'tests="3" failures="1" errors="1"' in text.replace('skipped="0" ', "")
    assert 'classname="suites.test_precision"' in text and "no-record" not in text


def test_junit_says_each_case_as_its_record_does(tmp_path):
    """A worker that went down while running a case leaves xdist's crash report (an error) and
    the entry of the case run again; a broken case's test raises, which pytest calls a failure.
    JUnit says what the record says: the rerun's entry, the broken case as an error (its text
    kept), and where no entry of pytest's says it, the record's own."""
    records = stored("passed", "broken", "passed", "broken")
    a, b, c, d = (r["case_id"] for r in records)

    def entry(cid, body, time="1"):
        return (
            f'<testcase classname="suites.test_precision" name="test_precision[{cid}]" '
            f'time="{time}">{body}</testcase>'
        )

    def props(outcome):
        return f'<properties><property name="farm_outcome" value="{outcome}"/></properties>'

    crash = "<error message=\"worker 'gw0' crashed while running\">crashed</error>"
    pytest_xml = tmp_path / "pytest.xml"
    pytest_xml.write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        + entry(a, crash)
        + entry(a, props("passed"), time="2.5")
        + entry(b, props("broken") + '<failure message="[infrastructure] no slot">tb</failure>')
        + entry(c, crash)
        + entry(d, crash)  # an error as the record says, but xdist's: the test's own is kept
        + entry(d, props("broken") + '<failure message="[infrastructure] lost">tb2</failure>')
        + "</testsuite></testsuites>"
    )
    out = tmp_path / "junit.xml"
    reconcile.junit(pytest_xml, out, records, {r["case_id"]: nodeid(r["case_id"]) for r in records})
    assert junit_ids(out) == {a: "passed", b: "broken", c: "passed", d: "broken"}
    text = out.read_text()
    assert 'time="2.5"' in text and "crashed" not in text
    assert '<error message="[infrastructure] no slot">tb</error>' in text
    assert '<error message="[infrastructure] lost">tb2</error>' in text
    assert text.count("<testcase") == 4


def test_junit_cut_short_or_missing_is_made_from_the_records(tmp_path):
    records = stored("passed", "failed")
    half = tmp_path / "pytest.xml"
    half.write_text('<?xml version="1.0"?><testsuites><testsuite name="pytest"><testc')
    for source in (half, tmp_path / "none.xml"):
        out = tmp_path / "junit.xml"
        reconcile.junit(source, out, records, {})
        assert junit_ids(out) == {r["case_id"]: r["outcome"] for r in records}


def test_junit_names_its_suite_after_the_tier_and_the_run(tmp_path):
    """CI lists a run's JUnit by its suite's name: the run's, not pytest's "pytest"."""
    import xml.etree.ElementTree as ET

    from farm.run.metadata import new_run_id
    from farm.run.outputs import junit_suite
    from farm.run.plan import Plan

    run_id = new_run_id("smoke")
    plan = Plan(run_id, tmp_path, "smoke", "native", inventory={}, slots=[], hosts={})
    assert junit_suite(plan) == f"farm smoke run {run_id}"
    records = stored("passed", "failed")
    pytest_xml = tmp_path / "pytest.xml"
    pytest_xml.write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest"/></testsuites>'
    )
    for source in (pytest_xml, tmp_path / "none.xml"):  # pytest's, or made from the records
        out = tmp_path / "junit.xml"
        reconcile.junit(source, out, records, {}, junit_suite(plan))
        root = ET.parse(out).getroot()
        assert {e.get("name") for e in [root, *root.iter("testsuite")]} == {junit_suite(plan)}
        assert junit_ids(out) == {r["case_id"]: r["outcome"] for r in records}


def test_allure_loses_results_without_a_record_and_gains_the_stored_ones(tmp_path):
    import json

    records = stored("passed", "broken")
    kept, missing = records
    (tmp_path / "a-result.json").write_text(json.dumps({"name": kept["case_id"], "x": 1}))
    (tmp_path / "b-result.json").write_text(
        json.dumps({"name": "test_precision[not-stored]", "status": "passed"})
    )
    (tmp_path / "c-result.json").write_text('{"name": "half-writ')
    # another writer's field order: read whole
    (tmp_path / "e-result.json").write_text(json.dumps({"status": "passed", "name": "x"}))
    assert reconcile._result_case_id(tmp_path / "e-result.json") == "x"
    # and a long one, read past its first bytes
    (tmp_path / "f-result.json").write_text(json.dumps({"description": "d" * 200_000, "name": "y"}))
    assert reconcile._result_case_id(tmp_path / "f-result.json") == "y"
    (tmp_path / "d-attachment.png").write_bytes(b"png")
    ids = {r["case_id"]: nodeid(r["case_id"]) for r in records}
    present = reconcile.allure(tmp_path, records, ids, SMOKE)
    assert present == {kept["case_id"], missing["case_id"]}
    results = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*-result.json"))]
    assert len(results) == 2 and {"name": kept["case_id"], "x": 1} in results
    (made,) = [r for r in results if r["name"] == missing["case_id"]]
    assert made["status"] == "broken" and made["fullName"] == "suites.test_precision#test_precision"
    assert (tmp_path / "d-attachment.png").exists()


def test_a_made_allure_result_has_the_history_id_allure_pytest_gives_the_case():
    from allure_commons.utils import md5, represent

    from farm.run.allure.identity import allure_test_case_id

    case = next(iter(SMOKE.values()))
    record: ResultRecord = {"case_id": case.id, "family": case.family, "outcome": "passed"}
    made = reconcile.allure_result(record, nodeid(case.id), case)
    # allure-pytest: md5 of the full name and the non-excluded parameters' original values,
    # by name (the Case object, then the family annotate adds).
    full = "suites.test_precision#test_precision"
    assert made["historyId"] == md5(full, represent(case), represent(case.family))
    # The case's own test-case id, as annotate gives it (farm/run/allure/identity.py).
    assert made["testCaseId"] == allure_test_case_id(case.id, case.family) != md5(full)


# -- a runs directory that refuses writes -------------------------------------------------


@pytest.mark.parametrize(
    "code, says",
    [
        (errno.ENOSPC, "is full: free space on that disk"),
        (errno.EROFS, "is on a read-only file system: mount it writable"),
        (errno.EACCES, "is not writable: check its permissions"),
    ],
)
def test_a_refused_write_is_one_line_naming_the_directory_and_the_fix(tmp_path, code, says):
    exc = OSError(code, os.strerror(code), str(tmp_path / "runs" / "r1" / "junit.xml"))
    message = str(run_dir.unwritable(exc, tmp_path / "runs"))
    assert message.startswith(f"runs directory {tmp_path / 'runs'} {says}"), message
    assert "FARM_RUNS" in message and "\n" not in message
    assert run_dir.is_fault(exc) and not run_dir.is_fault(OSError(errno.ENOENT, "x"))


def test_a_refused_write_elsewhere_names_that_directory(tmp_path):
    exc = OSError(errno.ENOSPC, "full", str(tmp_path / "store" / "farm.sqlite"))
    message = str(run_dir.unwritable(exc, tmp_path / "runs"))
    assert message.startswith(f"directory {tmp_path / 'store'} is full"), message


def test_the_record_writer_says_a_full_directory_and_keeps_what_it_wrote(tmp_path, monkeypatch):
    path = tmp_path / "records" / "gw0.jsonl"
    writer = RecordWriter(path)
    writer.write({"outcome": "passed", "case_id": "a"})

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(os, "write", full)  # a full disk: the file opens, the write is refused
    with pytest.raises(RunDirUnwritable, match="is full"):
        writer.write({"case_id": "b", "outcome": "passed"})
    monkeypatch.undo()
    # In the store's JSON form (keys sorted, no spaces): the store keeps the line as it is.
    assert path.read_text().splitlines() == ['{"case_id":"a","outcome":"passed"}']


INJECTED = """
import os, sys
from pathlib import Path
from farm.run import fault_injection
assert fault_injection.install()
runs = Path(os.environ["FARM_RUNS"])
def tries(what, *paths):
    try:
        what()
        print("ok")
    except OSError as exc:
        print(exc.errno)
tries(lambda: (runs / "new.txt").write_text("x"))
tries(lambda: (runs / "old.txt").read_text())
tries(lambda: (runs / "sub").mkdir())
tries(lambda: (runs / "old.txt").unlink())
tries(lambda: (Path(sys.argv[1]) / "elsewhere.txt").write_text("x"))
fault_injection.enter(fault_injection.REPORT)
tries(lambda: (runs / "after.txt").write_text("x"))
"""


@pytest.mark.parametrize(
    "when, before, after_report",
    [("", "28", "28"), ("report", "ok", "28"), ("marker", "28", "28"), ("absent", "ok", "ok")],
)
def test_the_injected_fault_refuses_writes_under_the_runs_directory_only(
    tmp_path, when, before, after_report
):
    """In a subprocess: an audit hook is for the life of its process."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "old.txt").write_text("old")
    marker = tmp_path / ("marker" if when == "marker" else "never")
    if when == "marker":
        marker.touch()
    spec = {"": "ENOSPC", "report": "ENOSPC:report"}.get(when, f"ENOSPC:{marker}")
    env = dict(os.environ, FARM_RUNS=str(runs), **{fault_injection.ENV: spec})
    out = subprocess.run(
        [sys.executable, "-c", INJECTED, str(tmp_path)],
        cwd=paths.REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    # write, read, mkdir, unlink (deleting needs no space), elsewhere, after the report starts
    assert out == [before, "ok", before, "ok", "ok", after_report]


# -- a signal to the orchestrator's pid reaches its workers --------------------------------


# A child of a farm started in the background of a script: SIGINT ignored, as its parent has it.
# It waits for the other stop signals itself and says which one came.
BACKGROUND_CHILD = """
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
stops = {signal.SIGTERM, signal.SIGHUP}
for s in stops:
    signal.signal(s, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_BLOCK, stops)
print("ready", flush=True)
got = signal.sigtimedwait(stops, 120)
print(got.si_signo if got else "no signal", flush=True)
"""


@pytest.fixture
def stops_caught():
    """This process takes every stop signal, whatever it inherited (this suite run under nohup
    ignores SIGHUP, in a script's background SIGINT): an ignored one is never caught (catch)."""
    ignored = [s for s in interrupts.STOPS if signal.getsignal(s) == signal.SIG_IGN]
    for s in ignored:
        signal.signal(s, lambda signum, frame: None)
    yield
    for s in ignored:
        signal.signal(s, signal.SIG_IGN)


@pytest.mark.parametrize(
    "stop", [signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE], ids=["SIGTERM", "SIGHUP", "pipe"]
)
def test_a_stop_to_the_pid_reaches_children_that_ignore_ctrl_c(stops_caught, monkeypatch, stop):
    """A stop to the orchestrator's pid alone is passed on to its children (the xdist workers)
    as the signal it got, which they cannot have inherited as ignored; as SIGINT, it never
    reached the workers of a farm started in the background by a script. A closed pipe (no
    signal: output_gone) is passed on as SIGTERM."""
    monkeypatch.setattr(interrupts, "terminal", lambda: None)  # SIGHUP: keep this one's tty
    child = subprocess.Popen(
        [sys.executable, "-c", BACKGROUND_CHILD], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None  # a pipe
        assert child.stdout.readline().strip() == "ready"
        assert child.pid in procfs.children(os.getpid())
        with interrupts.interruptible(forward=True) as received:
            if stop == signal.SIGPIPE:
                interrupts.output_gone()
            else:
                os.kill(os.getpid(), stop)  # to this pid alone
                signal.pause()  # the handler raises in this thread
        assert received == [stop]
        passed = signal.SIGTERM if stop == signal.SIGPIPE else stop
        assert child.stdout.readline().strip() == str(int(passed))
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
        child.wait()


def test_passed_on_is_a_stop_signal_the_process_catches():
    caught = [signal.SIGTERM, signal.SIGHUP]  # SIGINT ignored: a script's background job
    assert interrupts.passed_on(signal.SIGTERM, caught) == signal.SIGTERM
    assert interrupts.passed_on(signal.SIGHUP, caught) == signal.SIGHUP
    assert interrupts.passed_on(signal.SIGPIPE, caught) == signal.SIGTERM
    # nohup in a script's background, and SIGTERM ignored too: what is left
    assert interrupts.passed_on(signal.SIGPIPE, [signal.SIGHUP]) == signal.SIGHUP
    assert interrupts.passed_on(signal.SIGINT, list(interrupts.STOPS)) == signal.SIGINT


def test_a_run_whose_report_is_not_made_is_degraded_in_the_store_and_the_summary(
    tmp_path, monkeypatch
):
    """farm report made no report (Allure missing or failing, an unknown run): farm run says
    why in one line and exits 2, and the store and summary.json say 2 as well."""
    from farm.cli import judging
    from farm.results import report
    from farm.results.store import RunStore
    from farm.run.plan import Plan

    monkeypatch.setattr(
        report, "make_report", lambda request, judged=None, allure=None: report.EXIT_NO_REPORT
    )
    location = store_location(tmp_path / "s.db")
    said = judging.make_report("r1", location, None)
    assert said is not None and "no report was made for run r1" in said
    monkeypatch.setattr(
        report, "make_report", lambda request, judged=None, allure=None: 1
    )  # a failed gate
    assert judging.make_report("r1", location, None) is None

    store_path, run_dir = tmp_path / "farm.sqlite", tmp_path / "r1"
    run_dir.mkdir()
    with RunStore(store_path) as store:
        store.begin_run({"run_id": "r1", "tier": "smoke", "started_at": "2026-12-01T00:00:00"})
        store.finish_run("r1", 0)
    plan = Plan("r1", run_dir, "smoke", "native", inventory={}, slots=[], hosts={})
    assert judging.degraded(plan, store_path, [], {}) == 2
    with RunStore(store_path) as store:
        assert stored_run(store, "r1")["exit_code"] == 2
    assert json.loads((run_dir / "summary.json").read_text())["exit_code"] == 2


def test_a_refused_whole_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    run_dir.write_whole(path, b'{"old": 1}')

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError):
        run_dir.write_whole(path, b'{"new": 2}')
    monkeypatch.undo()
    assert path.read_bytes() == b'{"old": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_worker_that_went_down_is_no_failure_for_x_and_is_said():
    """xdist reports a worker that went down as a failed report of the case it was running,
    which then runs again: -x must not count it (the run was said to be stopped and a subset,
    though every case ran), and the run says which worker went."""
    from farm.run.session_plugins import LostWorkers, Selection

    selection, lost = Selection(), LostWorkers()
    selection.maxfail = 1
    node = SimpleNamespace(gateway=SimpleNamespace(id="gw1"))
    # "???": the `when` xdist gives the report of a crashed worker
    crash = pytest.TestReport("n", ("f", None, "f"), {}, "failed", "worker 'gw1' crashed", "???")  # type: ignore[arg-type]
    lost.pytest_testnodedown(node, "Not properly terminated")
    for hooks in (lost, selection):
        hooks.pytest_handlecrashitem(nodeid("c1"), crash, None)
    selection.pytest_runtest_logreport(crash)
    assert not selection.stopped_on_failure
    assert lost.notes == [
        "pytest worker gw1 went down (Not properly terminated) while it ran c1; a new worker ran "
        "its cases, that one included"
    ]
    failed = pytest.TestReport("n", ("f", None, "f"), {}, "failed", "assert", "call")
    selection.pytest_runtest_logreport(failed)
    assert selection.stopped_on_failure
    lost.pytest_testnodedown(SimpleNamespace(gateway=SimpleNamespace(id="gw0")), None)
    assert len(lost.notes) == 1  # a worker that shut down as it should is not said
