"""The journal's backend seam: one connection surface over a SQLite file or a PostgreSQL server.

The journal's SQL is written once, in SQLite's words, and runs as it is on
SQLite; `adws.journal.postgres` translates it for PostgreSQL (placeholders,
column types, an implicit `rowid` on every table, `BEGIN IMMEDIATE`) and
gives PostgreSQL the two SQLite functions the journal uses. What differs
beyond the words lives on the connection: `locks_rows` (a claim's reads
take `FOR UPDATE` on PostgreSQL; SQLite's `BEGIN IMMEDIATE` already holds
the file), `columns` (SQLite's `PRAGMA table_info`), `fetch`. So a
migration or a column added once works on both.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any, Final, Protocol, final

import attrs

from adws._exceptions import AdwsError

__all__ = [
    "ERRORS",
    "BackendError",
    "Connection",
    "Cursor",
    "JournalError",
    "JournalUrl",
    "SqliteConnection",
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


def redact(url: str) -> str:
    """Show a URL with its password (in the user part or the query) replaced by `***`.

    >>> redact("postgresql://team:s3cret@db:5432/adws?password=x&sslmode=require")
    'postgresql://team:***@db:5432/adws?password=***&sslmode=require'
    >>> redact("postgresql://db/adws")
    'postgresql://db/adws'
    """
    parts = urllib.parse.urlsplit(url)
    user, at, host = parts.netloc.rpartition("@")
    if at and ":" in user:
        user = user.split(":", 1)[0] + ":***"
    query = "&".join(
        f"{name}=***" if name.lower() == "password" else f"{name}={value}"
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    )
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}{at}{host}", query=query))


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
        """
        parts = urllib.parse.urlsplit(self.url)
        user = parts.netloc.rpartition("@")[0]
        found = [user.split(":", 1)[1]] if ":" in user else []
        found.extend(urllib.parse.unquote(text) for text in list(found))
        found.extend(
            value
            for name, value in urllib.parse.parse_qsl(parts.query)
            if name.lower() == "password"
        )
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

    locks_rows: str
    """Appended to a claim's reads of the rows it will change (`FOR UPDATE` or nothing)."""

    skips_locked: str
    """Appended to a read that takes one of many rows (`FOR UPDATE SKIP LOCKED` or nothing)."""

    def execute(self, sql: str, params: Any = (), /) -> Cursor:  # noqa: ANN401 - as sqlite3
        """Run one statement, written in SQLite's words, with `?` placeholders."""

    def executemany(self, sql: str, params: Any, /) -> object:  # noqa: ANN401 - as sqlite3
        """Run one statement for each set of values."""

    def fetch(self, sql: str, params: Any, *, plain: bool) -> list[Any]:  # noqa: ANN401 - as sqlite3
        """Fetch every row (`plain`: tuples, else rows readable by column name too)."""

    def columns(self, table: str) -> frozenset[str]:
        """Name a table's columns (none: no such table)."""

    def begin_migrating(self) -> None:
        """Inside the migration's transaction: keep out other migrating processes."""

    def close(self) -> None:
        """Close the connection."""


class SqliteConnection(sqlite3.Connection):
    """A SQLite connection that answers the journal's `Connection` questions."""

    locks_rows = ""
    skips_locked = ""

    def fetch(self, sql: str, params: Any, *, plain: bool) -> list[Any]:  # noqa: ANN401 - as sqlite3
        """Fetch every row (`plain`: tuples, cheaper when there are thousands)."""
        cursor = self.cursor()
        if plain:
            cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    def columns(self, table: str) -> frozenset[str]:
        """Name a table's columns (none: no such table)."""
        rows = self.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
        return frozenset(row[0] for row in rows)

    def begin_migrating(self) -> None:
        """Do nothing: `BEGIN IMMEDIATE` already keeps other writers out of the file."""


def where(text: str | Path | JournalUrl) -> Path | JournalUrl:
    """Read `--journal`: a server's URL, or a file's path."""
    if isinstance(text, str):
        return JournalUrl(text) if is_url(text) else Path(text)
    return text
