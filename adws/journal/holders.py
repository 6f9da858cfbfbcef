"""Who holds a run or a batch: a live process, by its pid and host.

A claim records the claiming process's pid and host on the row (`here`);
a holder on this host counts while its process exists, one on another host
is assumed alive (`alive`). `holder_of` asks, inside the claim's own
transaction, whether a live coordinator holds a batch (`Journal.claim`
refuses a batch's run while one does; `claim_batch` refuses the batch).
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from adws import io_ops

if TYPE_CHECKING:
    import sqlite3

__all__ = ["alive", "here", "holder_of"]


def here() -> tuple[int, str]:
    """Return this process's pid and host, as a holder is recorded."""
    return os.getpid(), socket.gethostname()


def alive(pid: int | None, host: str | None) -> bool:
    """Tell whether a holder may live: on this host, its process exists; elsewhere, assume so."""
    return pid is not None and (
        host != socket.gethostname() or pid == os.getpid() or io_ops.process_alive(pid)
    )


def holder_of(db: sqlite3.Connection, batch_id: str | None) -> tuple[int, str] | None:
    """Return `(pid, host)` of the live process holding a batch, if another one does.

    Called inside a transaction (`Journal.claim`, `claim_batch`): a batch
    that ended, or whose holder died on this host, is held by nobody.
    """
    if batch_id is None:
        return None
    row = db.execute(
        "SELECT status, pid, host FROM batches WHERE batch_id = ?", (batch_id,)
    ).fetchone()
    mine = row is not None and (row[1], row[2]) == here()
    if row is None or row[0] != "running" or not alive(row[1], row[2]) or mine:
        return None
    return row[1], row[2]
