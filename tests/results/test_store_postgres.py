"""What only a server store has: many writers at once, a role that may only read, credentials
that must never be shown, and a server that is down or is not the farm's."""

from __future__ import annotations

import threading

import psycopg
import pytest

from farm.results import commands
from farm.results.store import SCHEMA_VERSION, RunStore, open_existing, redact, store_location
from farm.util.errors import StoreError
from tests.postgres import fresh_schema, reader_role, with_user
from tests.stores import stored_run

from .conftest import RUN_META, failed, record

pytestmark = pytest.mark.usefixtures("postgres")


@pytest.fixture
def postgres():
    from tests.postgres import admin_url

    return admin_url()


@pytest.fixture
def url():
    with fresh_schema() as u:
        yield u


def _password(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


def test_the_password_is_hidden_wherever_the_store_is_named(url):
    secret = _password(url)
    assert secret not in str(store_location(url)) and "***" in str(store_location(url))
    assert redact(f"could not connect to {url}") == f"could not connect to {redact(url)}"
    assert redact("host=db user=farm password=s3cr3t dbname=farm") == (
        "host=db user=farm password=*** dbname=farm"
    )
    wrong = with_user(url, "farm_admin", "not-the-password")
    with pytest.raises(StoreError) as err:
        RunStore(wrong)
    assert "not-the-password" not in str(err.value) and "password" in str(err.value)
    assert "check the user and password" in str(err.value)


def test_a_server_that_is_down_is_one_line_naming_it(url):
    down = url.replace(url.split("@")[1].split("/")[0], "127.0.0.1:1")
    with pytest.raises(
        StoreError, match=r"run store postgresql://farm_admin:\*\*\*@127\.0\.0\.1:1/"
    ):
        RunStore(down)


def test_a_database_of_other_tables_is_not_taken_over(url):
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(StoreError, match="other tables, not a farm run store"):
        RunStore(url)


def test_a_missing_store_is_not_created_by_a_reading_command(url):
    with pytest.raises(StoreError, match="no run store in"):
        open_existing(url)


def test_a_read_only_role_lists_and_compares_but_cannot_write(url, capsys):
    with RunStore(url) as store:
        r1 = store.begin_run(RUN_META)
        store.add_results(r1, [record("a"), record("b")])
        store.finish_run(r1, 0)
        r2 = store.begin_run(RUN_META)
        store.add_results(r2, [record("a"), failed("b")])
        store.finish_run(r2, 1)
        orphan = store.begin_run({**RUN_META, "owner": "this-host-is-gone:1:1"})
    with reader_role(url) as reader:
        with open_existing(reader) as ro:  # no orphan recovery attempted: it may not write
            assert not ro.may_write()
            assert [r["run_id"] for r in ro.runs()] == [orphan, r2, r1]
            with pytest.raises(StoreError, match="may only read"):
                ro.begin_run(RUN_META)
        assert commands.main_runs(["--store", reader]) == 0
        assert commands.main_compare(["--store", reader, r2, "--format", "text"]) == 1
        out = capsys.readouterr().out
        assert "b" in out and _password(reader) not in out


def test_concurrent_writers_lose_nothing(url):
    """Four writers at once, each with its own connection: every run's every result is there
    once, the counts agree, and history lines of one tier written at once keep every line."""
    with RunStore(url) as store:
        runs = [store.begin_run({**RUN_META, "run_id": f"w{i}"}) for i in range(4)]
    errors: list[BaseException] = []

    def write(run_id: str) -> None:
        try:
            with RunStore(url) as mine:
                for batch in range(5):
                    recs = [record(f"{run_id}-{batch}-{i}") for i in range(40)]
                    mine.add_results(run_id, recs)
                    line = f'{{"run": "{run_id}", "b": {batch}}}'
                    mine.add_history_line("smoke", line, f"{run_id}-{batch}")  # a report each
                mine.finish_run(run_id, 0)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(r,)) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with RunStore(url) as store:
        for run_id in runs:
            assert len(store.results(run_id)) == 200
            assert stored_run(store, run_id)["counts"]["total"] == 200
        lines = store.history_lines("smoke")
        assert len(lines) == len(set(lines)) == 20


def test_one_runs_import_does_not_wait_for_anothers(url):
    """While one run's import holds its transaction open, another run's import goes through:
    a run locks only its own rows. (lock_timeout only keeps a regression from hanging the test:
    a blocked import fails with a lock timeout, however fast the machine.)"""
    with RunStore(url) as store:
        a = store.begin_run({**RUN_META, "run_id": "a"})
        b = store.begin_run({**RUN_META, "run_id": "b"})
    with RunStore(url) as first, RunStore(url) as second:
        second.db.execute("SET lock_timeout = '30s'")
        with first.db.transaction():
            first.db.execute("UPDATE runs SET n_total = 0 WHERE run_id = ?", (a,))
            second.add_results(b, [record("x")])  # commits while `first` is still open
            second.finish_run(b, 0)
        assert stored_run(second, b)["counts"]["total"] == 1


def test_a_store_another_runner_is_creating_is_waited_for_not_refused(url):
    """The first runs of a team's new store start together: while one creates the schema (it
    holds the migration lock, its schema_version table still at 0), another waits for that
    lock instead of calling the half-made store someone else's database."""
    outcome: list[object] = []

    def open_it() -> None:
        try:
            with RunStore(url) as store:
                outcome.append(store.version)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            outcome.append(exc)

    with psycopg.connect(url, autocommit=True) as creator:
        # migrate's first step, committed: the version table, empty; then the lock, held in the
        # transaction of the next step.
        creator.execute("CREATE TABLE schema_version (version BIGINT PRIMARY KEY, applied_at TEXT)")
        with creator.transaction():
            creator.execute("SELECT pg_advisory_xact_lock(hashtext('farm:schema'))")
            waiter = threading.Thread(target=open_it)
            waiter.start()
            with psycopg.connect(url, autocommit=True) as watch:
                while (
                    not outcome
                    and not watch.execute(
                        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    ).fetchone()
                ):
                    pass  # until the waiter is queued on the lock (or failed without waiting)
            assert not outcome, outcome
        # the creator's step ends; the waiter makes the store
    waiter.join()
    assert outcome == [SCHEMA_VERSION]


def test_a_role_that_may_only_read_is_refused_as_a_writer_at_the_check(url):
    """farm run checks its store before any host; the write permission was not among the checks
    (the run was refused at its first write, after build, deploy and canaries)."""
    from farm.results.store import check_store

    with RunStore(url) as store:
        store.begin_run(RUN_META)
    with reader_role(url) as reader:
        check_store(reader, create=True)  # a reader's check: it may read
        with pytest.raises(StoreError) as err:
            check_store(reader, create=True, write=True)
        message = str(err.value)
        role = reader.split("://", 1)[1].split(":", 1)[0]
        assert message.startswith(f"run store {redact(reader)}: role {role} may only read it")
        assert "no write on runs, results, allure_history" in message
        assert f"GRANT INSERT, UPDATE, DELETE ON runs, results, allure_history TO {role}" in message
        assert "\n" not in message and _password(reader) not in message
    check_store(url, create=True, write=True)  # the owner may write
