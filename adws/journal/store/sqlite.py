"""The journal in a SQLite file: what SQLite says differently, and opening the file.

SQLite takes the journal's SQL as it is written. What is its own:
`BEGIN IMMEDIATE` takes the file's write lock as a transaction starts (so
a claim's reads need no row lock, and taking one of many queued rows needs
no `SKIP LOCKED`); its column types (`INTEGER`, `REAL`, `BLOB`); `INTEGER
PRIMARY KEY` for a key that counts up (`AUTOINCREMENT`: never reused); an
implicit `rowid` on every table; `TOTAL` for a sum that never overflows;
`pragma_table_info` for a table's columns; a write transaction of several
statements runs them one by one (no server to wait for). A file is opened in WAL mode
for writing (migrated), or only read (a private copy when its folder is
not writable, so no run in its `-wal` file is hidden).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from adws.journal.store._open import immediate, migrate, newer
from adws.journal.store.backend import JournalError
from adws.journal.store.schema import MIGRATIONS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.journal.store.schema import Statement

__all__ = ["WORDS", "SqliteConnection", "open_readonly", "open_writable"]

WORDS: Final = {
    "integer": "INTEGER",
    "real": "REAL",
    "blob": "BLOB",
    "id": "INTEGER PRIMARY KEY AUTOINCREMENT",
    "key": "INTEGER PRIMARY KEY",
    "rowid": "",
    "refs": " REFERENCES runs(run_id)",
    "notices": "",
    "notices_of_queued": "",
    "notices_of_runs": "",
    "notices_of_decisions": "",
}
"""The schema's words in SQLite (see `adws.journal.store.backend.Connection.words`).

No notices of due runs (`adws.journal.store.notices`): SQLite's workers poll.
"""

_LOCK_RETRY_DELAYS: Final = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)


class SqliteConnection(sqlite3.Connection):
    """A SQLite connection that answers the journal's `Connection` questions."""

    begin = "BEGIN IMMEDIATE"
    locks_rows = ""
    skips_locked = ""
    words = WORDS

    def fetch(self, sql: str, params: Any, *, plain: bool) -> list[Any]:  # noqa: ANN401 - as sqlite3
        """Fetch every row (`plain`: tuples, cheaper when there are thousands)."""
        cursor = self.cursor()
        if plain:
            cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    def apply(self, statements: Sequence[Statement], /) -> None:
        """Run statements in one write transaction (`BEGIN IMMEDIATE`): all or nothing."""
        with immediate(self):
            for sql, params in statements:
                self.execute(sql, params)

    def columns(self, table: str) -> frozenset[str]:
        """Name a table's columns (none: no such table)."""
        rows = self.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
        return frozenset(row[0] for row in rows)

    @staticmethod
    def total(column: str) -> str:
        """Sum a column as a float: SQLite's `SUM` raises on integer overflow, `TOTAL` never.

        >>> SqliteConnection.total("a.cost_usd")
        'TOTAL(a.cost_usd)'
        """
        return f"TOTAL({column})"

    def begin_migrating(self) -> None:
        """Do nothing: `BEGIN IMMEDIATE` already keeps other writers out of the file."""


def open_writable(
    path: Path, busy_timeout: float, sleep: Callable[[float], None]
) -> SqliteConnection:
    """Open (creating the folder and file) in WAL mode and bring the schema up to date.

    Raises `sqlite3.Error` or `OSError`; the caller names the file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        path,
        timeout=busy_timeout,
        isolation_level=None,
        check_same_thread=False,
        factory=SqliteConnection,
    )
    db.row_factory = sqlite3.Row
    _enable_wal(db, sleep)
    db.execute("PRAGMA synchronous=NORMAL")
    migrate(db)
    return db


def _enable_wal(db: sqlite3.Connection, sleep: Callable[[float], None]) -> None:
    # Switching to WAL takes a lock without waiting on the busy timeout, so two
    # processes opening a new journal at once can collide here: wait and retry.
    for delay in _LOCK_RETRY_DELAYS:
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:
            sleep(delay)
        else:
            return
    db.execute("PRAGMA journal_mode=WAL")


def open_readonly(
    path: Path, busy_timeout: float
) -> tuple[SqliteConnection, tempfile.TemporaryDirectory[str] | None]:
    """Open for reading only, whatever the folder allows; raise `JournalError` if it cannot.

    Without write access to the folder SQLite cannot make the shared
    memory file a WAL journal needs: an immutable open would then hide
    every run still in the `-wal` file (a copied artifact, a read-only
    folder). So such a journal is copied, with its WAL, into a private
    temporary folder (returned, to be removed with the journal) and read
    there; a journal without one is opened immutable.
    """
    wal = path.with_name(path.name + "-wal")
    copy = ["copy"] if wal.exists() and wal.stat().st_size > 0 else []
    problem: Exception | None = None
    for mode in ("mode=ro", *copy, "mode=ro&immutable=1"):
        folder = tempfile.TemporaryDirectory(prefix="adws-journal-") if mode == "copy" else None
        try:
            target = _private_copy(path, wal, Path(folder.name)) if folder else path
            options = "mode=ro" if folder else mode
            db = sqlite3.connect(
                f"{target.resolve().as_uri()}?{options}",
                uri=True,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                factory=SqliteConnection,
            )
            db.row_factory = sqlite3.Row
            row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        except (sqlite3.Error, OSError) as exc:
            problem = exc
            continue
        if (row[0] or 0) > len(MIGRATIONS):
            problem = newer(row[0])
            break
        return db, folder
    msg = (
        f"cannot read the run journal {path}: {problem}; move it aside or point --journal elsewhere"
    )
    raise JournalError(msg) from problem


def _private_copy(path: Path, wal: Path, folder: Path) -> Path:
    """Copy the journal and its WAL into `folder`."""
    shutil.copyfile(path, folder / path.name)
    shutil.copyfile(wal, folder / wal.name)
    return folder / path.name
