"""Open the journal: its file, for writing (in WAL mode, migrated) or only reading; its server."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws.journal.dialect import ERRORS, JournalError, SqliteConnection
from adws.journal.schema import MIGRATIONS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from adws.journal.dialect import Connection, JournalUrl

__all__ = ["JournalError", "immediate", "open_readonly", "open_server", "open_writable"]


_LOCK_RETRY_DELAYS: Final = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)


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
    _migrate(db)
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


def _newer(version: int) -> sqlite3.DatabaseError:
    return sqlite3.DatabaseError(
        f"written by a newer adws (schema {version}, this one knows {len(MIGRATIONS)})"
    )


@contextlib.contextmanager
def immediate(db: Connection) -> Iterator[Connection]:
    """Hold `db` in one write transaction: committed at the end, else rolled back."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        # A COMMIT that failed (a full disk) may leave the transaction open, or not.
        with contextlib.suppress(*ERRORS):
            db.execute("ROLLBACK")
        raise


def _migrate(db: Connection) -> None:
    """Apply the migrations the journal lacks, in one transaction (several processes may race)."""
    with immediate(db):
        db.begin_migrating()
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = row[0] or 0
        if version > len(MIGRATIONS):
            raise _newer(version)
        for number, statements in enumerate(MIGRATIONS[version:], version + 1):
            for statement in statements:
                db.execute(statement)
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))


def open_server(url: JournalUrl, busy_timeout: float, *, readonly: bool) -> Connection:
    """Connect to a journal's PostgreSQL server: migrated, unless only for reading.

    Raises `BackendError` (or `ImportError`, without the `postgres` extra)
    or `sqlite3.DatabaseError` (a newer schema); the caller names the journal.
    """
    from adws.journal.postgres import PostgresConnection  # noqa: PLC0415 - psycopg, only for a server

    db = PostgresConnection(url, busy_timeout=busy_timeout, readonly=readonly)
    try:
        if not readonly:
            _migrate(db)
        row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    except BaseException:
        db.close()
        raise
    if (row[0] or 0) > len(MIGRATIONS):
        db.close()
        raise _newer(row[0])
    return db


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
            problem = _newer(row[0])
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
