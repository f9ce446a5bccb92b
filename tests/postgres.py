"""PostgreSQL for the store tests: the server .ci/test.sh started (FARM_TEST_POSTGRES, an admin
URL), and a fresh schema of its own for each test, so that tests share the server and nothing else.

Without FARM_TEST_POSTGRES the PostgreSQL tests skip on a developer's machine and fail in CI
(FARM_REQUIRE_ALL): `.ci/test.sh` starts the server whenever Debian's postgresql is installed.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote, urlsplit, urlunsplit

from tests.requirements import need

ENV = "FARM_TEST_POSTGRES"


def admin_url() -> str:
    url = os.environ.get(ENV, "")
    need(bool(url), f"a PostgreSQL server ({ENV}; .ci/test.sh starts one: apt install postgresql)")
    return url


def with_schema(url: str, schema: str) -> str:
    """`url` with the search path set to `schema` (libpq's options parameter)."""
    parts = urlsplit(url)
    query = "&".join(q for q in parts.query.split("&") if q and not q.startswith("options="))
    option = "options=" + quote(f"-csearch_path={schema}")
    return urlunsplit(parts._replace(query="&".join(filter(None, [query, option]))))


def with_user(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{quote(user)}:{quote(password)}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@contextmanager
def fresh_schema(url: str | None = None) -> Iterator[str]:
    """A URL whose search path is a new, empty schema, dropped afterwards."""
    import psycopg

    admin = url or admin_url()
    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_schema(admin, schema)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@contextmanager
def reader_role(schema_url: str) -> Iterator[str]:
    """A URL for a role that may only read the schema's tables (what `farm runs`, `compare`
    and `report` get in a team's CI)."""
    import psycopg

    schema = urlsplit(schema_url).query.split("search_path%3D")[-1].split("&")[0]
    role, password = f"reader_{secrets.token_hex(4)}", secrets.token_hex(12)
    with psycopg.connect(schema_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {role}')
    try:
        yield with_user(schema_url, role, password)
    finally:
        with psycopg.connect(schema_url, autocommit=True) as conn:
            conn.execute(f'REVOKE ALL ON ALL TABLES IN SCHEMA "{schema}" FROM {role}')
            conn.execute(f'REVOKE ALL ON SCHEMA "{schema}" FROM {role}')
            conn.execute(f"DROP ROLE {role}")
