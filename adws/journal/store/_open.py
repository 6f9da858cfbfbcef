"""A write transaction, and the migrations that bring a journal's schema up to date.

Both backends use them: `immediate` holds a connection in one transaction
(the backend's `begin` takes the write lock), `migrate` applies the
migrations a journal lacks, written once with each backend's `words`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import TYPE_CHECKING

from adws.journal.store.backend import ERRORS
from adws.journal.store.schema import MIGRATIONS, VERSIONS

if TYPE_CHECKING:
    from collections.abc import Iterator

    from adws.journal.store.backend import Connection

__all__ = ["immediate", "migrate", "newer"]


def newer(version: int) -> sqlite3.DatabaseError:
    """Say that a journal was written by a newer adws (its schema is past this one's)."""
    return sqlite3.DatabaseError(
        f"written by a newer adws (schema {version}, this one knows {len(MIGRATIONS)})"
    )


@contextlib.contextmanager
def immediate(db: Connection) -> Iterator[Connection]:
    """Hold `db` in one write transaction: committed at the end, else rolled back."""
    db.execute(db.begin)
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        # A COMMIT that failed (a full disk) may leave the transaction open, or not.
        with contextlib.suppress(*ERRORS):
            db.execute("ROLLBACK")
        raise


def migrate(db: Connection) -> None:
    """Apply the migrations the journal lacks, in one transaction (several processes may race)."""
    with immediate(db):
        db.begin_migrating()
        db.execute(VERSIONS.format_map(db.words))
        row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = row[0] or 0
        if version > len(MIGRATIONS):
            raise newer(version)
        for number, statements in enumerate(MIGRATIONS[version:], version + 1):
            for statement in statements:
                written = statement.format_map(db.words)
                if written:  # a backend's word for what it has no need of (SQLite's notices)
                    db.execute(written)
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
