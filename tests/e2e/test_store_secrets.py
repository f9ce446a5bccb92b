"""A PostgreSQL store whose password holds every character a URL reserves and a space, written
in FARM_STORE as it is (not %-encoded): `farm run` (with its report) and `farm runs` work on it,
and the password, in any spelling, appears in no output, file, report or store row."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
import pytest
from psycopg import sql

from tests.e2e.conftest import Farm
from tests.postgres import admin_url, fresh_schema
from tests.requirements import need_allure

RESERVED = ":/?#[]@!$&'()*+,;="


def generated_password(seed: int) -> str:
    rng = random.Random(seed)
    chars = list(RESERVED + " %") + rng.choices("abcdefXYZ0123456789", k=12)
    rng.shuffle(chars)
    word = "".join(chars).strip()
    return f"k{word}9"  # no space at either end: a person's password, not a trimmed one


@contextmanager
def role_with_password(schema_url: str, password: str) -> Iterator[str]:
    """A role that owns what it makes in the schema, and its URL with the password as it is."""
    parts = urlsplit(schema_url)
    schema = parts.query.split("search_path%3D")[-1].split("&")[0]
    role = f"w_{random.Random(password).getrandbits(32):08x}"
    with psycopg.connect(schema_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        conn.execute(
            sql.SQL("GRANT ALL ON SCHEMA {} TO {}").format(*map(sql.Identifier, (schema, role)))
        )
    netloc = f"{role}:{password}@{parts.hostname}:{parts.port}"
    try:
        yield f"postgresql://{netloc}{parts.path}?{parts.query}"
    finally:
        with psycopg.connect(schema_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.mark.parametrize("seed", [56])
def test_a_password_of_reserved_characters_is_never_shown(tmp_path, seed):
    admin_url()
    need_allure()
    password = generated_password(seed)
    forms = {password, quote(password, safe=""), quote(password)}
    with fresh_schema() as schema_url, role_with_password(schema_url, password) as url:
        farm = Farm(tmp_path)
        farm.store_url = url  # FARM_STORE, as it is written
        run = farm.run("run", "--tier", "smoke", "--no-progress", "--", "-k", "3x17_d-1")
        assert run.code == 0, run.text[-3000:]
        runs = farm.run("runs")
        listing = farm.run("runs", "--json")
        assert runs.code == 0 and listing.code == 0, runs.text + listing.text
        assert run.run_dir is not None and run.run_dir.name in listing.out
        assert "***@" in runs.text or "***@" in run.text  # the store is named, hidden
        for result in (run, runs, listing):
            for form in forms:
                assert form not in result.text, (form, result.text[-2000:])
        files = [p for p in Path(tmp_path).rglob("*") if p.is_file()]
        assert any(p.name == "index.html" for p in files)  # the report is among them
        for path in files:
            data = path.read_bytes()
            for form in forms:
                assert form.encode() not in data, (path, form)
        with psycopg.connect(url.replace(password, quote(password, safe=""))) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                )
            ]
            assert "results" in tables
            for table in tables:
                for row in conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))):
                    for form in forms:
                        assert form not in repr(row), table
