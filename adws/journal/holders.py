"""Who holds a run or a batch: a live process, by its pid and host.

A claim records the claiming process's pid and host on the row (`here`);
a holder on this host counts while its process exists, one on another host
is assumed alive (`alive`). `holder_of` asks, inside the claim's own
transaction, whether a live coordinator holds a batch (`Journal.claim`
refuses a batch's run while one does; `claim_batch` refuses the batch).

A claim is also compare-and-set: whatever reads a run to decide what to do
with it (`adws resume`, `approve`, `reject`, a batch resume) claims it with
what it read (`Seen`: the run's status, its resume count and the id of its
last attempt row), and the claim's transaction refuses when any of them
changed (`changed_since`). So of two approvals, an approval and a
rejection, or two resumes started at once, exactly one acts.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, final

import attrs

from adws import io_ops

if TYPE_CHECKING:
    from adws.journal.dialect import Connection

__all__ = ["Seen", "alive", "changed_since", "here", "holder_of", "seen_in"]


def here() -> tuple[int, str]:
    """Return this process's pid and host, as a holder is recorded."""
    return os.getpid(), socket.gethostname()


def alive(pid: int | None, host: str | None) -> bool:
    """Tell whether a holder may live: on this host, its process exists; elsewhere, assume so."""
    return pid is not None and (
        host != socket.gethostname() or pid == os.getpid() or io_ops.process_alive(pid)
    )


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


@final
@attrs.frozen
class Seen:
    """What a command read of a run before deciding what to do with it; its claim compares it.

    `last_attempt` is the id of the run's newest `attempts` row (None: none
    yet), so an attempt recorded since, by anyone, is seen as a change.
    """

    status: str
    resumes: int
    last_attempt: int | None


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
    >>> from adws.journal.dialect import SqliteConnection
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
