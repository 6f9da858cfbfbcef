"""Claims in SQL: who holds a batch, whether a run changed since it was read, what a claim records.

`holder_of` asks, inside the claim's own transaction, whether a live
coordinator holds a batch (`Journal.claim` refuses a batch's run while one
does; `claim_batch` refuses the batch); who counts as a live holder is
`adws.journal.records.holders`.

A claim is also compare-and-set: whatever reads a run to decide what to do
with it (`adws resume`, `approve`, `reject`, a batch resume) claims it with
what it read (`Seen`: the run's status, its resume count and the id of its
last attempt row), and the claim's transaction refuses when any of them
changed (`changed_since`). So of two approvals, an approval and a
rejection, or two resumes started at once, exactly one acts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.journal.records.holders import Seen, alive, here

if TYPE_CHECKING:
    from adws.journal.store.backend import Connection
    from adws.journal.store.schema import Guarded

__all__ = ["baseline", "changed_since", "holder_of", "options", "seen_in"]


def holder_of(db: Connection, batch_id: str | None) -> tuple[int, str] | None:
    """Return `(pid, host)` of the live process holding a batch, if another one does.

    Called inside a transaction (`Journal.claim`, `claim_batch`): a batch
    that ended, or whose holder died on this host, is held by nobody.
    """
    if batch_id is None:
        return None
    row = db.execute(
        f"SELECT status, pid, host FROM batches WHERE batch_id = ?{db.locks_rows}",  # noqa: S608 - a fixed clause
        (batch_id,),
    ).fetchone()
    mine = row is not None and (row[1], row[2]) == here()
    if row is None or row[0] != "running" or not alive(row[1], row[2]) or mine:
        return None
    return row[1], row[2]


_SEEN = (
    "SELECT status, resumes, (SELECT MAX(id) FROM attempts WHERE attempts.run_id = runs.run_id),"
    " pid, host FROM runs WHERE run_id = ?"
)


def seen_in(db: Connection, run_id: str) -> tuple[Seen, str] | None:
    """Read what a claim compares, inside its transaction, and who holds the run.

    None: the run's row is gone. The second value names the holder of a
    running run (`, by process P on H`), else it is empty.
    """
    row = db.execute(_SEEN + db.locks_rows, (run_id,)).fetchone()
    if row is None:
        return None
    held = f", by process {row[3]} on {row[4]}" if row[0] == "running" and row[3] else ""
    return Seen(row[0], row[1], row[2]), held


def changed_since(db: Connection, run_id: str, seen: Seen) -> str | None:
    """Say how a run changed since a command read it as `seen` (None: it did not).

    Called inside the claim's transaction, so nothing changes between this
    check and the claim's own update.

    >>> import sqlite3
    >>> from adws.journal.store.sqlite import SqliteConnection
    >>> db = sqlite3.connect(":memory:", factory=SqliteConnection)
    >>> _ = db.execute("CREATE TABLE runs (run_id, status, resumes, pid, host)")
    >>> _ = db.execute("CREATE TABLE attempts (id INTEGER PRIMARY KEY, run_id)")
    >>> _ = db.execute("INSERT INTO runs VALUES ('r1', 'running', 1, 42, 'box')")
    >>> changed_since(db, "r1", Seen("running", 1, None)) is None
    True
    >>> changed_since(db, "r1", Seen("waiting", 0, None))[:72]
    'run r1 changed since this command read it (now running, by process 42 on'
    """
    now = seen_in(db, run_id)
    if now is not None and now[0] == seen:
        return None
    state = "gone from the journal" if now is None else now[0].status + now[1]
    return (
        f"run {run_id} changed since this command read it (now {state}); "
        f"look again: adws status {run_id}"
    )


_BASELINE: Final = (
    "UPDATE attempts SET fingerprint = ? WHERE run_id = ? AND step = ? AND status = 'succeeded'"
)
_OPTIONS: Final = "UPDATE runs SET options = ? WHERE run_id = ?"


def baseline(run_id: str, step: str, fingerprint: str | None) -> Guarded:
    """Make `fingerprint` the recorded one of `step`'s succeeded attempts."""
    return (_BASELINE, (fingerprint, run_id, step)), None


def options(run_id: str, encoded: str | None) -> Guarded:
    """Record the options a run goes on with (`RunOptions.to_json`)."""
    return (_OPTIONS, (encoded, run_id)), None
