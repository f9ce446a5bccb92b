"""Where the run store lives: a SQLite file (the embedded default) or a PostgreSQL database (a
team's shared store), from `--store` / $FARM_STORE, and how it is named in anything people read.

    runs/farm.sqlite                   a SQLite file (a plain path)
    sqlite:runs/farm.sqlite            the same, said explicitly
    postgresql://farm:SECRET@db/farm   PostgreSQL (also postgres://; libpq's query parameters,
                                       e.g. ?sslmode=require, pass through)

A PostgreSQL URL carries credentials: `display` (and str()) hides the password, and `redact`
does the same to any text that might quote the URL (an error from the driver, a log line).

A password may hold any character. One written as it is with a character a URL reserves (`/ ? #
@`, a space) is still the password: the user part ends at the last `@` that a host and the
`/DATABASE` follow (`split_credentials`), and the URL the driver gets has it %-encoded (libpq
would read `pa/ss?w#rd` as a port and a query, `s3cr@t` as a host `t@...`). Every password a
location was made from is remembered, in each of its spellings, and `redact` hides it wherever it
appears (a driver's message may quote it in any of them).
"""

from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from farm.util.errors import StoreError
from farm.util.paths import RUNS_DIR

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
_PG_SCHEMES = ("postgresql://", "postgres://")
_SCHEME = re.compile(r"postgres(?:ql)?://", re.IGNORECASE)
# A URL in a text: the scheme, then everything up to a space (a password holding a space is
# hidden by the remembered passwords, below).
_URL = re.compile(r"postgres(?:ql)?://\S*", re.IGNORECASE)
# password=... in a libpq conninfo string or a query parameter.
_KEY_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|[^\s&]+)", re.IGNORECASE)
# After the user part's "@": the host (and port), then the database's "/" (or, for a URL that
# names its host in the query, "?"; or the end).
_HOST_THEN_DATABASE = re.compile(r"[^@/?#\s]*/")
_HOST_THEN_END = re.compile(r"[^@/?#\s]*(?:[?#]|$)")
# What a URL's user part holds as it is (RFC 3986: unreserved, sub-delims, ":"); the rest of a
# password is %-encoded, a "%" too where no two hex digits follow it.
_USERINFO_SAFE = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:")
_PERCENT_HEX = re.compile(r"%[0-9A-Fa-f]{2}")
HIDDEN = "***"
# Shorter remembered passwords are not hidden in free text (it would hide every "ab" of a
# message); in a URL, where it is, a password of any length is.
MIN_REMEMBERED = 4
_REMEMBERED: set[str] = set()


def split_credentials(url: str) -> tuple[str, str | None, str]:
    """(``scheme://user``, the password, what follows its ``@``) of a PostgreSQL URL, or
    (url, None, "") when it has no password. The password is everything between the user's
    ":" and the last "@" that a host and the database follow, whatever characters it holds."""
    scheme = _SCHEME.match(url)
    if scheme is None:
        return url, None, ""
    rest = url[scheme.end() :]
    ats = [i for i, c in enumerate(rest) if c == "@"]
    end = next((i for i in reversed(ats) if _HOST_THEN_DATABASE.match(rest, i + 1)), None)
    if end is None:
        end = next((i for i in reversed(ats) if _HOST_THEN_END.match(rest, i + 1)), None)
    if end is None:
        return url, None, ""
    user, colon, password = rest[:end].partition(":")
    if not colon:
        return url, None, ""
    return url[: scheme.end()] + user, password, rest[end + 1 :]


def _encoded(password: str) -> str:
    """The password as a URL's user part must hold it: %XX kept, every other character outside
    _USERINFO_SAFE %-encoded (so the driver reads back what was written)."""
    out = []
    for i, c in enumerate(password):
        if c in _USERINFO_SAFE or (c == "%" and _PERCENT_HEX.match(password, i)):
            out.append(c)
        else:
            out.append(quote(c, safe=""))
    return "".join(out)


def _remember(password: str) -> None:
    """Hide `password` from now on wherever `redact` meets it, in each spelling a URL, a
    conninfo string or a driver's message may give it."""
    plain = unquote(password)
    for form in (password, plain, _encoded(password), quote(plain, safe=""), quote(plain)):
        if len(form) >= MIN_REMEMBERED:
            _REMEMBERED.add(form)


def _hide_url(url: str) -> str:
    head, password, tail = split_credentials(url)
    return url if password is None else f"{head}:{HIDDEN}@{tail}"


def redact(text: str) -> str:
    """`text` with every PostgreSQL password in it replaced by ***: a URL's (whatever characters
    it holds), a conninfo string's or query's password=..., and every password a store
    location was made from, wherever it appears."""
    for secret in sorted(_REMEMBERED, key=len, reverse=True):  # first: it may hold a space
        if secret in text:
            text = text.replace(secret, HIDDEN)
    text = _URL.sub(lambda m: _hide_url(m.group()), text)
    return _KEY_PASSWORD.sub(rf"\g<1>{HIDDEN}", text)


@dataclass(frozen=True)
class StoreLocation:
    kind: str  # SQLITE | POSTGRESQL
    path: Path | None = None  # SQLite: the file (":memory:" for an in-memory store)
    # PostgreSQL: the full URL, credentials included: never print it (nor its repr)
    url: str = field(default="", repr=False)

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
        head, password, tail = split_credentials(text)
        if password is not None:  # remembered before anything can quote it
            _remember(password)
            text = f"{head}:{_encoded(password)}@{tail}"
        parts = urlsplit(text)
        for key, value in parse_qsl(parts.query):
            if key.lower() == "password":
                _remember(value)
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
