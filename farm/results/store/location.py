"""Where the run store lives: a SQLite file (the embedded default) or a PostgreSQL database (a
team's shared store), from `--store` / $FARM_STORE, and how it is named in anything people read.

    runs/farm.sqlite                   a SQLite file (a plain path)
    sqlite:runs/farm.sqlite            the same, said explicitly
    postgresql://farm:SECRET@db/farm   PostgreSQL (also postgres://; libpq's query parameters,
                                       e.g. ?sslmode=require, pass through)

A PostgreSQL URL carries credentials: `display` (and str()) hides the password, and `redact`
does the same to any text that might quote the URL (an error from the driver, a log line).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from farm.errors import StoreError
from farm.paths import RUNS_DIR

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
_PG_SCHEMES = ("postgresql://", "postgres://")
# user:password@ in a URL, and password=... in a libpq conninfo string or a query parameter.
_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/?#@\s]*):[^@/?#\s]*@", re.IGNORECASE)
_KEY_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|[^\s&]+)", re.IGNORECASE)
HIDDEN = "***"


def redact(text: str) -> str:
    """`text` with every PostgreSQL password in it replaced by ***."""
    return _KEY_PASSWORD.sub(rf"\g<1>{HIDDEN}", _URL_PASSWORD.sub(rf"\g<1>:{HIDDEN}@", text))


@dataclass(frozen=True)
class StoreLocation:
    kind: str  # SQLITE | POSTGRESQL
    path: Path | None = None  # SQLite: the file (":memory:" for an in-memory store)
    url: str = ""  # PostgreSQL: the full URL, credentials included: never print it

    @property
    def display(self) -> str:
        return str(self.path) if self.kind == SQLITE else redact(self.url)

    def __str__(self) -> str:
        return self.display

    @property
    def spec(self) -> str:
        """What opens this store again: the URL with its password (pass it on, never print it)."""
        return str(self.path) if self.kind == SQLITE else self.url

    def exists(self) -> bool:
        """Whether a SQLite store's file exists; a server store is asked when it is opened."""
        if self.kind != SQLITE or self.path is None or str(self.path) == ":memory:":
            return True
        return self.path.exists()

    @property
    def shared(self) -> bool:
        """A server store, which other machines' runs write too."""
        return self.kind == POSTGRESQL

    @property
    def runs_home(self) -> Path:
        """Where a run's directory is looked for when the store does not say (the store file's
        directory, as `farm run` lays them out; the runs directory for a server store)."""
        if self.kind == SQLITE and self.path is not None and str(self.path) != ":memory:":
            return self.path.resolve().parent
        return RUNS_DIR


def parse_location(spec: str | os.PathLike | StoreLocation) -> StoreLocation:
    """A store location from what a person wrote (see the module's docstring)."""
    if isinstance(spec, StoreLocation):
        return spec
    text = os.fspath(spec)
    if text.lower().startswith(_PG_SCHEMES):
        parts = urlsplit(text)
        if not parts.hostname and "host=" not in parts.query:
            raise StoreError(
                f"run store {redact(text)}: no server in the URL; write "
                "postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE"
            )
        if not parts.path.strip("/"):
            raise StoreError(
                f"run store {redact(text)}: no database in the URL; add /DATABASE after the host"
            )
        # psycopg takes postgres:// too; one spelling keeps the display stable.
        return StoreLocation(POSTGRESQL, url=urlunsplit(("postgresql", *parts[1:])))
    if text.lower().startswith(("mysql:", "mariadb:", "http:", "https:")):
        raise StoreError(
            f"run store {redact(text)}: not a store the farm knows; use a SQLite file path or "
            "a postgresql:// URL"
        )
    if text.startswith("sqlite:"):
        text = text[len("sqlite:") :]
        text = text[2:] if text.startswith("//") else text  # sqlite:///abs/path
    if not text:
        raise StoreError("run store: an empty location; give a file path or a postgresql:// URL")
    return StoreLocation(SQLITE, path=Path(text))


def default_location() -> StoreLocation:
    """$FARM_STORE, else farm.sqlite in the runs directory ($FARM_RUNS or the checkout's runs/)."""
    return parse_location(os.environ.get("FARM_STORE") or RUNS_DIR / "farm.sqlite")


def store_location(spec: str | os.PathLike | StoreLocation | None) -> StoreLocation:
    """`--store` when given, else the default."""
    return default_location() if spec is None or spec == "" else parse_location(spec)
