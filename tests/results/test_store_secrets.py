"""A PostgreSQL password is hidden whatever characters it holds: a property over generated
passwords (every character a URL reserves, a space, %, quotes, non-ASCII; written %-encoded or as
they are), in the store's name, in any text `redact` is given, and in `farm`'s error lines; the
hidden form still names the user, host, port and database, and the URL the driver gets carries
the very password that was written."""

from __future__ import annotations

import random
import re
from urllib.parse import quote

import pytest
from psycopg.conninfo import conninfo_to_dict

from farm.cli import main
from farm.results.store import redact, store_location
from farm.results.store.location import HIDDEN, split_credentials

RESERVED = ":/?#[]@!$&'()*+,;="  # RFC 3986 gen-delims and sub-delims
OTHERS = ' %"\\<>^`{|}~-._\t'
ALPHABET = RESERVED + OTHERS + "abcXYZ0189" + "éß€密"
USER, HOST, PORT, DATABASE = "farm_ci", "db.example.org", 6543, "farm_runs"
ROUNDS = 400


def passwords(seed: int = 56, n: int = ROUNDS) -> list[str]:
    """Random passwords of 8 to 24 characters from ALPHABET, each holding at least one character
    a URL reserves; and the ones the issue names."""
    rng = random.Random(seed)
    out = ["pa/ss?w#rd", "s3cr@t", "pa ss word", "@@@@", "a@b/c@d", "%zz%2F/x"]
    while len(out) < n:
        word = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(8, 24)))
        if any(c in RESERVED for c in word) and word.strip() == word:
            out.append(word)
    return out


def spellings(password: str) -> list[str]:
    """How a person writes it in a URL: as it is, %-encoded, encoded but for what is safe."""
    return [password, quote(password, safe=""), quote(password)]


def _forms(password: str) -> set[str]:
    return {password, *spellings(password)}


@pytest.mark.parametrize("password", passwords())
def test_a_generated_password_is_hidden_in_the_stores_name(password):
    for written in spellings(password):
        for scheme in ("postgresql", "postgres"):
            url = f"{scheme}://{USER}:{written}@{HOST}:{PORT}/{DATABASE}?sslmode=require"
            location = store_location(url)
            shown = str(location)
            assert shown == (
                f"postgresql://{USER}:{HIDDEN}@{HOST}:{PORT}/{DATABASE}?sslmode=require"
            ), (written, shown)
            for form in _forms(password):
                assert form not in shown and form not in repr(location), (written, form)
            # The driver reads back the very password written (written %-encoded: its decoding).
            if written != password or not re.search(r"%[0-9A-Fa-f]{2}", password):
                assert conninfo_to_dict(location.url)["password"] == password, written


@pytest.mark.parametrize("password", passwords(seed=57, n=ROUNDS // 2))
def test_a_generated_password_is_hidden_in_any_text_that_quotes_it(password):
    for written in spellings(password):
        url = f"postgresql://{USER}:{written}@{HOST}:{PORT}/{DATABASE}"
        store_location(url)  # the farm has met it: from now on it is hidden wherever it is
        texts = [
            f"could not connect to {url}: server closed the connection",
            f"run store '{url}': timeout",
            f'invalid value "{password}" for "port"; see {written}',
            f"host={HOST} user={USER} password={written} dbname={DATABASE}",
            f"{url}\n{url} {url}",
        ]
        for text in texts:
            hidden = redact(text)
            for form in _forms(password):
                assert form not in hidden, (text, form, hidden)
            if text.startswith("could not connect"):
                assert hidden == (
                    f"could not connect to postgresql://{USER}:{HIDDEN}@{HOST}:{PORT}/"
                    f"{DATABASE}: server closed the connection"
                )


@pytest.mark.parametrize("password", ["pa/ss?w#rd", "s3cr@t", "pa ss"])
def test_a_url_the_farm_never_parsed_is_hidden_by_its_shape(password):
    """A URL in a text, before any location was made of it (a mistyped command line)."""
    written = f"postgresql://u:{password}@host:5432/db"
    assert (
        redact(f"unrecognized arguments: {written}")
        == ("unrecognized arguments: postgresql://u:***@host:5432/db")
        or " " in password
    )
    assert split_credentials(written) == ("postgresql://u", password, "host:5432/db")


def test_farm_prints_no_password_of_a_url_given_in_the_wrong_place(capsys):
    secret = "s3cr@t/pa?ss#word"
    code = main(["runs", f"postgresql://farm:{secret}@db:5432/farm"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "postgresql://farm:***@db:5432/farm" in err, err
    for piece in (secret, "s3cr", "pa?ss", "word"):
        assert piece not in err, err


@pytest.mark.parametrize(
    "url, reason",
    [
        ("postgresql://u:pa/ss?w#rd@host:5432", "no database"),
        ("postgresql://u:s3cr@t@", "no server"),
    ],
)
def test_a_store_url_refused_hides_its_password(url, reason):
    from farm.util.errors import StoreError

    with pytest.raises(StoreError) as err:
        store_location(url)
    assert reason in str(err.value)
    for piece in ("pa/ss?w#rd", "s3cr@t", "w#rd", "@t@"):
        assert piece not in str(err.value), str(err.value)
