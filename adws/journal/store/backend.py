"""The journal's backend seam: what every connection answers, over a file or a server.

The journal's SQL is written once, in words both backends take (standard
SQL, `?` placeholders: the DB-API's `qmark` style). What differs is named
on each backend's connection, in its own module, never found by rewriting
the other's text: `begin` (how a transaction takes the write lock),
`locks_rows` and `skips_locked` (a claim's row locks), `words` (the column
types and identity columns the schema is written with), `total` (a sum
that never overflows), `columns` (a table's columns), `fetch`, and `apply`
(one write transaction of several statements: on a server, one round
trip). SQLite's is `adws.journal.store.sqlite`, PostgreSQL's
`adws.journal.store.postgres`.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import attrs

from adws._exceptions import AdwsError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from adws.journal.store.schema import Statement

__all__ = [
    "ERRORS",
    "BackendError",
    "Connection",
    "Cursor",
    "JournalError",
    "JournalUrl",
    "is_url",
    "redact",
    "where",
]

SCHEMES: Final = ("postgresql://", "postgres://")


class JournalError(AdwsError, RuntimeError):
    """The journal cannot be opened or read; the message names the file."""


class BackendError(JournalError):
    """A journal server refused or failed a statement; the message never holds a password."""


ERRORS: Final = (sqlite3.Error, BackendError)
"""What a journal statement raises on either backend."""


def is_url(text: str) -> bool:
    """Tell a journal server's URL from a file's path.

    >>> is_url("postgresql://team@db/adws"), is_url(".adws/runs.db")
    (True, False)
    """
    return text.startswith(SCHEMES)


def _split(url: str) -> tuple[str, str, str, str, str]:
    """Split a URL as `urllib.parse.urlsplit` does, never refusing one (`[::1` unclosed).

    Returns what precedes the host's part (`postgresql://`), the user part
    (with its `@`), the host and port, the path, the query (with its `?`)
    and the fragment (with its `#`), glued back by `"".join`.

    >>> _split("postgresql://u:pw@[::1:54329/x?password=q")
    ('postgresql://', 'u:pw@', '[::1:54329', '/x', '?password=q')
    >>> _split("u:pw@db/adws#top")
    ('', 'u:pw@', 'db', '/adws', '#top')
    """
    head, sep, rest = url.partition("://")
    if not sep:
        head, rest = "", url
    rest, hash_, fragment = rest.partition("#")
    rest, mark, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    user, at, host = netloc.rpartition("@")
    return head + sep, user + at, host, slash + path, mark + query + hash_ + fragment


def _query_secrets(query: str) -> list[str]:
    """Return the values of `password=` in a query (`?...#...`), as written and as meant."""
    words = query.lstrip("?").partition("#")[0]
    pairs = (pair.partition("=") for pair in words.split("&"))
    found = [value for name, _, value in pairs if name.lower() == "password" and value]
    return [*found, *(urllib.parse.unquote_plus(value) for value in found)]


def redact(url: str) -> str:
    """Show a URL with its password (in the user part or the query) replaced by `***`.

    A URL no parser takes (`postgresql://u:pw@[::1:54329/x`) is redacted all the same.

    >>> redact("postgresql://team:s3cret@db:5432/adws?password=x&sslmode=require")
    'postgresql://team:***@db:5432/adws?password=***&sslmode=require'
    >>> redact("postgresql://db/adws")
    'postgresql://db/adws'
    >>> redact("postgresql://u:pw@[::1:54329/x")
    'postgresql://u:***@[::1:54329/x'
    """
    head, user, host, path, query = _split(url)
    if ":" in user:
        user = user.split(":", 1)[0] + ":***@"
    words, hash_, fragment = query.partition("#")
    if words:
        pairs = (pair.partition("=") for pair in words[1:].split("&"))
        words = "?" + "&".join(
            f"{name}{eq}***" if name.lower() == "password" else f"{name}{eq}{value}"
            for name, eq, value in pairs
        )
    return head + user + host + path + words + hash_ + fragment


@final
@attrs.frozen(repr=False)
class JournalUrl:
    """A shared journal's PostgreSQL URL: shown (str, format, repr) without its password."""

    url: str

    def __str__(self) -> str:
        """Show the URL, its password hidden."""
        return redact(self.url)

    def __repr__(self) -> str:
        """Show the URL, its password hidden."""
        return f"JournalUrl({str(self)!r})"

    def secrets(self) -> tuple[str, ...]:
        """Name the texts of the URL that must never be shown (its passwords, as written).

        >>> JournalUrl("postgresql://a:p%40ss@h/d?password=q").secrets()
        ('p%40ss', 'p@ss', 'q')
        >>> JournalUrl("postgresql://u:pw@[::1:54329/x").secrets()
        ('pw',)
        """
        user = _split(self.url)[1].removesuffix("@")
        found = [user.split(":", 1)[1]] if ":" in user else []
        found.extend(urllib.parse.unquote(text) for text in list(found))
        found.extend(_query_secrets(_split(self.url)[4]))
        return tuple(dict.fromkeys(text for text in found if text))


class Cursor(Protocol):
    """What the journal reads from a statement it ran."""

    @property
    def rowcount(self) -> int:
        """Count the rows a write changed."""

    def fetchone(self) -> Any:  # noqa: ANN401 - a row: by index and by column name
        """Return the next row, or None."""

    def fetchall(self) -> list[Any]:
        """Return the rows left."""


class Connection(Protocol):
    """What the journal asks of a connection, on either backend."""

    begin: str
    """The statement that starts a write transaction holding the write lock."""

    locks_rows: str
    """Appended to a claim's reads of the rows it will change (`FOR UPDATE` or nothing)."""

    skips_locked: str
    """Appended to a read that takes one of many rows (`FOR UPDATE SKIP LOCKED` or nothing)."""

    @property
    def words(self) -> Mapping[str, str]:
        """Name the schema's words on this backend.

        `integer`, `real`, `blob`; `id` (a key that counts up, never reused),
        `key` (a key that counts up); `rowid` (what leads every table: SQLite
        numbers rows itself); `refs` (the foreign key to `runs`, unchecked);
        `notices`, `notices_of_queued`, `notices_of_runs`, `notices_of_decisions`
        (whole statements: the triggers that notify workers of due runs, see
        `adws.journal.store.notices`; empty where there are none).
        """

    def execute(self, sql: str, params: Any = (), /) -> Cursor:  # noqa: ANN401 - as sqlite3
        """Run one statement, with `?` placeholders."""

    def executemany(self, sql: str, params: Any, /) -> object:  # noqa: ANN401 - as sqlite3
        """Run one statement for each set of values."""

    def fetch(self, sql: str, params: Any, *, plain: bool) -> list[Any]:  # noqa: ANN401 - as sqlite3
        """Fetch every row (`plain`: tuples, else rows readable by column name too)."""

    def apply(self, statements: Sequence[Statement], /) -> None:
        """Run statements in one write transaction of their own: all or nothing."""

    def columns(self, table: str) -> frozenset[str]:
        """Name a table's columns (none: no such table)."""

    def total(self, column: str) -> str:
        """Say the sum of a column as a float that never overflows (an SQL expression)."""

    def begin_migrating(self) -> None:
        """Inside the migration's transaction: keep out other migrating processes."""

    def close(self) -> None:
        """Close the connection."""


def where(text: str | Path | JournalUrl) -> Path | JournalUrl:
    """Read `--journal`: a server's URL, or a file's path."""
    if isinstance(text, str):
        return JournalUrl(text) if is_url(text) else Path(text)
    return text
